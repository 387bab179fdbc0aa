/* MPI_Iallreduce, MPI_Ibarrier, MPI_Iallgather, MPI_Ibcast and
 * MPI_Ireduce_scatter_block (docs/offload.md "MPI_Iallreduce").
 *
 * A call the core routes to the switch becomes a request of ours, queued on
 * its communicator (one switch call at a time per communicator, completed
 * in the order posted); any other goes to the previous module's iallreduce
 * (libnbc), whose request the caller gets. A queued call runs as:
 *
 *   QUEUED  -> its stream starts (in the posting call when the queue was
 *              empty, else from progress once the calls before it ended)
 *   STREAM  -> stepped by our progress callback until this rank's outcome
 *   AGREE   -> the previous module's iallreduce(MAXLOC) of {outcome, rank}
 *              on a private duplicate of the communicator: the worst
 *              outcome and the lowest rank with it
 *   REDO    -> (anyone busy or failed, or the path declined alike on every
 *              rank) the previous module's iallreduce on the intact input,
 *              on the private communicator
 *   done    -> ompi_request_complete.
 *
 * Everything after the posting call is driven from Open MPI's progress
 * engine (a normal-priority callback registered on the first switch call),
 * so MPI_Test, MPI_Wait and MPI_Waitall progress it, and nothing here ever
 * waits. The private communicator keeps the agreements and redos, started
 * from progress at moments that differ between ranks, from mixing with the
 * user's own nonblocking collectives on the communicator (libnbc matches by
 * a per-communicator sequence). */
#include "coll_switchagg.h"

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iallreduce.h"
#include "ompi/request/request.h"
#include "ompi/runtime/mpiruntime.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/info.h"


enum { ST_QUEUED, ST_STREAM, ST_SETTLE, ST_AGREE, ST_REDO };

/* What a request carries out: the kinds share the queue and the states. */
enum { K_ALLREDUCE, K_BARRIER, K_ALLGATHER, K_BCAST, K_REDUCE_SCATTER_BLOCK };

/* The layout of Open MPI's ompi_coll_base_nbc_request_t (coll_base_util.h;
 * not included: it pulls in Fortran headers). Open MPI's bindings take
 * every nonblocking collective's request for one and retain a derived
 * datatype (or a user-defined op) through the fields after the
 * ompi_request_t (ompi_coll_base_retain_datatypes), released by the
 * completion callback they install: with a plain ompi_request_t those
 * writes land in our own fields. */
typedef struct {
  ompi_request_t super;
  union {
    ompi_request_complete_fn_t req_complete_cb;
    ompi_request_free_fn_t req_free;
  } cb;
  void *req_complete_cb_data;
  /* 4.1: two pointers; 5.0: three words and seven release arrays (room for
   * either). */
  void *data[16];
} mca_coll_switchagg_nbc_request_t;

typedef struct mca_coll_switchagg_ireq_t {
  mca_coll_switchagg_nbc_request_t nbc;
  mca_coll_switchagg_module_t *m;
  struct ompi_communicator_t *comm;
  const void *sbuf;                 /* MPI_IN_PLACE or the send buffer */
  void *rbuf;
  int count;
  struct ompi_datatype_t *dtype;
  struct ompi_op_t *op;
  size_t sa_count;
  int sa_dtype, sa_op;
  int state;
  struct {
    int value;
    int rank;
  } mine, all; /* MPI_2INT for the MAXLOC agreement */
  ompi_request_t *sub;
  struct mca_coll_switchagg_ireq_t *next;
  bool queued; /* still in m's queue (not complete) */
  int kind; /* K_* */
  /* MPI_Ibarrier: every rank adds one; the sum is how many entered. */
  int32_t one, entered;
  /* MPI_Iallgather / MPI_Ibcast (MPI_Ireduce_scatter_block: sbuf..sa_op
   * above): the caller's arguments (a redo's), and the
   * byte images the core streams: the caller's buffers where their
   * datatype is one plain run of bytes, else staging (packed when posted,
   * unpacked once served; the caller's buffers stay intact until then). */
  int scount, root;
  struct ompi_datatype_t *sdtype;
  size_t bytes;       /* allgather: one rank's block; bcast: the buffer */
  void *send_image;   /* NULL: in place (allgather) */
  void *recv_image;   /* the whole vector (bcast: the buffer) */
  void *staged_send, *staged_recv;
} mca_coll_switchagg_ireq_t;

static OBJ_CLASS_INSTANCE(mca_coll_switchagg_ireq_t, ompi_request_t, NULL, NULL);

/* Modules with queued calls, and the progress callback that steps them.
 * Under MPI_THREAD_MULTIPLE any thread may post on its communicator while
 * another runs Open MPI's progress: queue_lock guards the queues and this
 * list (posting takes it, the progress callback only tries it: a thread
 * that finds it taken leaves the queues to its holder). The core guards
 * itself (its steps only run when the process's gate is free). Single
 * threaded, the lock is never touched. in_progress: this thread is inside
 * the callback (no re-entry from a nested opal_progress). */
/* ThreadSanitizer (scripts/sanitize_thread.sh) sees no order between
 * finish() completing a request on the thread that progressed it and the
 * thread whose MPI_Wait/MPI_Test saw it complete and frees it (ireq_free):
 * Open MPI orders them with a write barrier and plain loads in its own,
 * uninstrumented wait. The two annotations state that order (release
 * before ompi_request_complete, acquire when the request is freed, before
 * the caller's MPI_Wait returns and it reads its buffers); without TSan
 * they are nothing. */
#if defined(__SANITIZE_THREAD__)
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define SWITCHAGG_TSAN_ACQUIRE(addr) __tsan_acquire(addr)
#define SWITCHAGG_TSAN_RELEASE(addr) __tsan_release(addr)
#else
#define SWITCHAGG_TSAN_ACQUIRE(addr) ((void)(addr))
#define SWITCHAGG_TSAN_RELEASE(addr) ((void)(addr))
#endif

static mca_coll_switchagg_module_t *active_modules = NULL;
static bool progress_registered = false;
static __thread bool in_progress = false;
static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;

static void lock_queues(void) {
  if (ompi_mpi_thread_multiple) pthread_mutex_lock(&queue_lock);
}
static bool try_lock_queues(void) {
  return !ompi_mpi_thread_multiple || 0 == pthread_mutex_trylock(&queue_lock);
}
static void unlock_queues(void) {
  if (ompi_mpi_thread_multiple) pthread_mutex_unlock(&queue_lock);
}

/* An MPI_Iallgather's / MPI_Ibcast's staging and datatypes (retained
 * while it runs: MPI lets the caller free them once posted), once. */
static void free_staging(mca_coll_switchagg_ireq_t *r) {
  free(r->staged_send);
  free(r->staged_recv);
  r->staged_send = r->staged_recv = NULL;
  if (K_ALLGATHER != r->kind && K_BCAST != r->kind) return;
  /* In place, the send type is not looked at (nor retained). */
  if (NULL != r->sdtype && MPI_IN_PLACE != r->sbuf) OBJ_RELEASE(r->sdtype);
  if (NULL != r->dtype) OBJ_RELEASE(r->dtype);
  r->sdtype = r->dtype = NULL;
}

static void release_request(mca_coll_switchagg_ireq_t *r) {
  free_staging(r);
  OMPI_REQUEST_FINI(&r->nbc.super);
  OBJ_RELEASE(r);
}

static int ireq_free(ompi_request_t **request) {
  mca_coll_switchagg_ireq_t *r = (mca_coll_switchagg_ireq_t *)*request;
  SWITCHAGG_TSAN_ACQUIRE(r);
  /* MPI_Request_free on a running call: refused as libnbc refuses it (the
   * same program must behave alike whichever path serves the call). */
  if (r->queued) return MPI_ERR_REQUEST;
  release_request(r);
  *request = MPI_REQUEST_NULL;
  return OMPI_SUCCESS;
}

/* A collective cannot be cancelled (libnbc answers the same). */
static int ireq_cancel(ompi_request_t *request, int complete) {
  (void)request;
  (void)complete;
  return MPI_ERR_REQUEST;
}

/* An active module holds its communicator (so neither goes away while a
 * call is queued, MPI_Comm_free included); released when the queue empties. */
static void activate(mca_coll_switchagg_module_t *m) {
  if (m->iactive) return;
  OBJ_RETAIN(m->comm);
  m->iactive = true;
  m->inext_active = active_modules;
  /* Atomic: iallreduce_progress peeks at the list without the lock. */
  __atomic_store_n(&active_modules, m, __ATOMIC_RELAXED);
}

static void deactivate(mca_coll_switchagg_module_t *m) {
  mca_coll_switchagg_module_t **p = &active_modules;
  while (*p != NULL && *p != m) p = &(*p)->inext_active;
  if (*p == m) __atomic_store_n(p, m->inext_active, __ATOMIC_RELAXED); /* as in activate */
  m->inext_active = NULL;
  m->iactive = false;
}

/* The core's routed op of a routed request kind (K_ALLGATHER, K_BCAST,
 * K_REDUCE_SCATTER_BLOCK). */
static int routed_op(int kind) {
  return K_ALLGATHER == kind ? SWITCHAGG_COLL_ALLGATHER
         : K_BCAST == kind   ? SWITCHAGG_COLL_BCAST
                             : SWITCHAGG_COLL_REDUCE_SCATTER_BLOCK;
}

/* Counts a glue-side event as <op>:<what> (iallreduce, ibarrier,
 * iallgather, ibcast, ireduce_scatter_block). */
static void note(mca_coll_switchagg_module_t *m, int kind, const char *what) {
  if (NULL == m->core) return;
  switch (kind) {
    case K_ALLREDUCE: switchagg_coll_iallreduce_note(m->core, what); break;
    case K_BARRIER: switchagg_coll_ibarrier_note(m->core, what); break;
    default: switchagg_coll_irouted_note(m->core, routed_op(kind), what); break;
  }
}

/* The head of m's queue ends with MPI error code `err`. */
static void finish(mca_coll_switchagg_ireq_t *r, int err) {
  mca_coll_switchagg_module_t *m = r->m;
  /* Atomic: mca_coll_switchagg_iallreduce_drain waits for it without the lock. */
  __atomic_store_n(&m->ihead, r->next, __ATOMIC_RELEASE);
  if (NULL == m->ihead) m->itail = NULL;
  r->next = NULL;
  r->queued = false;
  free_staging(r);
  if (OMPI_SUCCESS != err) note(m, r->kind, "error");
  r->nbc.super.req_status.MPI_ERROR = err;
  /* Last use: the request may be freed from here on. */
  SWITCHAGG_TSAN_RELEASE(r);
  ompi_request_complete(&r->nbc.super, true);
}

/* The private communicator's own iallreduce (switchagg is not on it). */
static int private_iallreduce(mca_coll_switchagg_module_t *m, const void *sbuf, void *rbuf,
                              int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                              ompi_request_t **sub) {
  struct ompi_communicator_t *p = m->iprivate;
  return p->c_coll->coll_iallreduce(sbuf, rbuf, count, dtype, op, p, sub,
                                    p->c_coll->coll_iallreduce_module);
}

/* A served call's staged result into the caller's buffers (MPI_Unpack). */
static int unpack_result(mca_coll_switchagg_ireq_t *r) {
  const int size = ompi_comm_size(r->comm);
  int i;
  if (NULL == r->staged_recv) return MPI_SUCCESS;
  if (K_BCAST == r->kind)
    return ompi_comm_rank(r->comm) == r->root
               ? MPI_SUCCESS
               : mca_coll_switchagg_unpack(r->staged_recv, r->bytes, r->rbuf, r->count, r->dtype,
                                           r->comm);
  for (i = 0; i < size; ++i)
    if (MPI_SUCCESS != mca_coll_switchagg_unpack(
                           (char *)r->staged_recv + (size_t)i * r->bytes, r->bytes,
                           (char *)r->rbuf + i * mca_coll_switchagg_type_extent(r->dtype) * r->count,
                           r->count, r->dtype, r->comm))
      return MPI_ERR_OTHER;
  return MPI_SUCCESS;
}

/* A call the switch served: an MPI_Ibarrier's sum must be every rank. */
static void finish_served(mca_coll_switchagg_ireq_t *r) {
  if (MPI_SUCCESS != unpack_result(r)) {
    finish(r, MPI_ERR_OTHER);
    return;
  }
  if (K_BARRIER == r->kind && r->entered != ompi_comm_size(r->comm)) {
    fprintf(stderr, "switchagg[coll] error: comm %s: MPI_Ibarrier through the agent counted %d "
            "ranks, expected %d\n", r->comm->c_name, (int)r->entered, ompi_comm_size(r->comm));
    finish(r, MPI_ERR_INTERN);
    return;
  }
  finish(r, OMPI_SUCCESS);
}

/* The redo: the previous module's call with the caller's arguments (the
 * input intact), on the private communicator. */
static void start_redo(mca_coll_switchagg_ireq_t *r) {
  struct ompi_communicator_t *p = r->m->iprivate;
  int rc;
  switch (r->kind) {
    case K_BARRIER: rc = p->c_coll->coll_ibarrier(p, &r->sub, p->c_coll->coll_ibarrier_module); break;
    case K_ALLGATHER:
      rc = p->c_coll->coll_iallgather(r->sbuf, r->scount, r->sdtype, r->rbuf, r->count, r->dtype,
                                      p, &r->sub, p->c_coll->coll_iallgather_module);
      break;
    case K_BCAST:
      rc = p->c_coll->coll_ibcast(r->rbuf, r->count, r->dtype, r->root, p, &r->sub,
                                  p->c_coll->coll_ibcast_module);
      break;
    case K_REDUCE_SCATTER_BLOCK:
      rc = p->c_coll->coll_ireduce_scatter_block(r->sbuf, r->rbuf, r->count, r->dtype, r->op, p,
                                                 &r->sub,
                                                 p->c_coll->coll_ireduce_scatter_block_module);
      break;
    default:
      rc = private_iallreduce(r->m, r->sbuf, r->rbuf, r->count, r->dtype, r->op, &r->sub);
      break;
  }
  if (OMPI_SUCCESS != rc) {
    finish(r, MPI_ERR_OTHER);
    return;
  }
  r->state = ST_REDO;
}

static void start_agreement(mca_coll_switchagg_ireq_t *r, int outcome) {
  int rc, agreed = 0;
  r->mine.value = outcome;
  /* A small call ends on one agent round trip, without the agreement. */
  rc = switchagg_coll_istream_settle(r->m->core, outcome, &agreed);
  if (SWITCHAGG_COLL_ISETTLE_NOT_NOW == rc) {
    r->state = ST_SETTLE; /* retried from advance() */
    return;
  }
  if (SWITCHAGG_COLL_ISETTLE_ERROR == rc) {
    finish(r, MPI_ERR_OTHER);
    return;
  }
  if (SWITCHAGG_COLL_ISETTLE_SETTLED == rc) {
    if (0 == switchagg_coll_istream_end(r->m->core, agreed, -1))
      finish_served(r);
    else
      start_redo(r);
    return;
  }
  r->mine.rank = ompi_comm_rank(r->comm);
  rc = private_iallreduce(r->m, &r->mine, &r->all, 1, MPI_2INT, MPI_MAXLOC, &r->sub);
  if (OMPI_SUCCESS != rc) {
    finish(r, MPI_ERR_OTHER);
    return;
  }
  r->state = ST_AGREE;
}

/* A finished sub-request's error, and frees it. */
static int end_sub(mca_coll_switchagg_ireq_t *r) {
  int err = r->sub->req_status.MPI_ERROR;
  (void)ompi_request_free(&r->sub);
  r->sub = NULL;
  return err;
}

/* Moves the head of m's queue on as far as it can without waiting. Returns
 * true when it changed state (the caller tries again: the next call may
 * start at once). */
static bool advance(mca_coll_switchagg_module_t *m) {
  mca_coll_switchagg_ireq_t *r = m->ihead;
  int outcome = 0, rc;
  if (NULL == r) return false;
  switch (r->state) {
    case ST_QUEUED:
      if (K_ALLGATHER == r->kind || K_BCAST == r->kind)
        rc = switchagg_coll_istream_start_routed(m->core, routed_op(r->kind), r->send_image,
                                                 r->recv_image, r->bytes, 0, 0, r->root,
                                                 &outcome);
      else if (K_REDUCE_SCATTER_BLOCK == r->kind)
        rc = switchagg_coll_istream_start_routed(
            m->core, SWITCHAGG_COLL_REDUCE_SCATTER_BLOCK, MPI_IN_PLACE == r->sbuf ? NULL : r->sbuf,
            r->rbuf, r->sa_count, r->sa_dtype, r->sa_op, 0, &outcome);
      else
        rc = switchagg_coll_istream_start(m->core, MPI_IN_PLACE == r->sbuf ? NULL : r->sbuf,
                                          r->rbuf, r->sa_count, r->sa_dtype, r->sa_op,
                                          K_BARRIER == r->kind, &outcome);
      if (SWITCHAGG_COLL_ISTREAM_NOT_NOW == rc) return false;
      if (SWITCHAGG_COLL_ISTREAM_DECLINED == rc)
        start_redo(r);
      else if (SWITCHAGG_COLL_ISTREAM_RUNNING == rc)
        r->state = ST_STREAM;
      else
        start_agreement(r, outcome);
      return true;
    case ST_STREAM:
      rc = switchagg_coll_istream_step(m->core, &outcome);
      if (SWITCHAGG_COLL_ISTREAM_OUTCOME != rc) return false;
      start_agreement(r, outcome);
      return true;
    case ST_SETTLE:
      start_agreement(r, r->mine.value);
      return ST_SETTLE != r->state;
    case ST_AGREE:
      if (!REQUEST_COMPLETE(r->sub)) return false;
      if (OMPI_SUCCESS != end_sub(r))
        finish(r, MPI_ERR_OTHER);
      else if (0 == switchagg_coll_istream_end(m->core, r->all.value, r->all.rank))
        finish_served(r);
      else
        start_redo(r);
      return true;
    case ST_REDO:
      if (!REQUEST_COMPLETE(r->sub)) return false;
      finish(r, OMPI_SUCCESS == end_sub(r) ? OMPI_SUCCESS : MPI_ERR_OTHER);
      return true;
    default:
      return false;
  }
}

static int iallreduce_progress(void) {
  enum { kReleaseBatch = 16 };
  mca_coll_switchagg_module_t *m, *next;
  struct ompi_communicator_t *done[kReleaseBatch];
  int events = 0, ndone = 0;
  if (NULL == __atomic_load_n(&active_modules, __ATOMIC_RELAXED) || in_progress) return 0;
  if (!try_lock_queues()) return 0;
  in_progress = true;
  for (m = active_modules; NULL != m; m = next) {
    next = m->inext_active;
    while (advance(m)) ++events;
    if (NULL == m->ihead) {
      struct ompi_communicator_t *comm = m->comm;
      deactivate(m);
      /* Released once the lock is let go (the last release frees the
       * communicator and m); a full batch here. */
      if (ndone < kReleaseBatch) done[ndone++] = comm;
      else OBJ_RELEASE(comm);
    }
  }
  in_progress = false;
  unlock_queues();
  for (int i = 0; i < ndone; ++i) OBJ_RELEASE(done[i]);
  return events;
}

void mca_coll_switchagg_iallreduce_drain(mca_coll_switchagg_module_t *m) {
  while (NULL != __atomic_load_n(&m->ihead, __ATOMIC_ACQUIRE)) opal_progress();
}

void mca_coll_switchagg_iallreduce_release(mca_coll_switchagg_module_t *m) {
  /* An active module holds its communicator: none is active here. */
  if (NULL != m->iprivate) (void)ompi_comm_free(&m->iprivate);
  m->iprivate = NULL;
}

void mca_coll_switchagg_iallreduce_close(void) {
  if (progress_registered) (void)opal_progress_unregister(iallreduce_progress);
  progress_registered = false;
}

/* Collective (posting order is the same on every rank): the private
 * communicator, created on the communicator's first switch call. */
static int ensure_private(mca_coll_switchagg_module_t *m, struct ompi_communicator_t *comm) {
  int rc;
  opal_info_t *info;
  if (NULL != m->iprivate) return OMPI_SUCCESS;
  info = OBJ_NEW(opal_info_t);
  if (NULL == info) return OMPI_ERR_OUT_OF_RESOURCE;
  rc = opal_info_set(info, MCA_COLL_SWITCHAGG_PRIVATE_KEY, "true");
  __atomic_store_n(&m->icreating_private, true, __ATOMIC_RELEASE);
  if (OPAL_SUCCESS == rc) rc = ompi_comm_dup_with_info(comm, info, &m->iprivate);
  __atomic_store_n(&m->icreating_private, false, __ATOMIC_RELEASE);
  OBJ_RELEASE(info);
  if (OMPI_SUCCESS != rc) m->iprivate = NULL;
  return rc;
}

/* A request of ours on comm (its call's fields are the caller's to set). */
static mca_coll_switchagg_ireq_t *new_request(mca_coll_switchagg_module_t *m,
                                              struct ompi_communicator_t *comm, int kind) {
  mca_coll_switchagg_ireq_t *r = OBJ_NEW(mca_coll_switchagg_ireq_t);
  if (NULL == r) return NULL;
  OMPI_REQUEST_INIT(&r->nbc.super, false);
  r->nbc.super.req_type = OMPI_REQUEST_COLL;
  r->nbc.super.req_state = OMPI_REQUEST_ACTIVE;
  r->nbc.super.req_free = ireq_free;
  r->nbc.super.req_cancel = ireq_cancel;
  r->nbc.super.req_mpi_object.comm = comm;
  r->nbc.super.req_status.MPI_SOURCE = MPI_ANY_SOURCE;
  r->nbc.super.req_status.MPI_TAG = MPI_ANY_TAG;
  r->nbc.super.req_status.MPI_ERROR = OMPI_SUCCESS;
  r->nbc.super.req_status._ucount = 0;
  r->nbc.super.req_status._cancelled = 0;
  r->nbc.cb.req_complete_cb = NULL;
  r->nbc.req_complete_cb_data = NULL;
  memset(r->nbc.data, 0, sizeof r->nbc.data);
  r->m = m;
  r->comm = comm;
  r->state = ST_QUEUED;
  r->sub = NULL;
  r->next = NULL;
  r->queued = true;
  r->kind = kind;
  r->sbuf = NULL;
  r->rbuf = NULL;
  r->count = 0;
  r->dtype = NULL;
  r->op = NULL;
  r->one = 1;
  r->entered = 0;
  r->scount = 0;
  r->root = 0;
  r->sdtype = NULL;
  r->bytes = 0;
  r->send_image = r->recv_image = NULL;
  r->staged_send = r->staged_recv = NULL;
  return r;
}

/* The call r carries: MPI's view (a redo's arguments) and the core's. */
static void set_call(mca_coll_switchagg_ireq_t *r, const void *sbuf, void *rbuf, int count,
                     struct ompi_datatype_t *dtype, struct ompi_op_t *op, size_t sa_count,
                     int sa_dtype, int sa_op) {
  r->sbuf = sbuf;
  r->rbuf = rbuf;
  r->count = count;
  r->dtype = dtype;
  r->op = op;
  r->sa_count = sa_count;
  r->sa_dtype = sa_dtype;
  r->sa_op = sa_op;
}

/* Queues r on m (behind the calls posted before it) and starts its stream
 * at once when nothing is ahead of it. */
static void enqueue(mca_coll_switchagg_module_t *m, mca_coll_switchagg_ireq_t *r,
                    ompi_request_t **request) {
  lock_queues();
  if (NULL != m->itail) {
    m->itail->next = r;
    note(m, r->kind, "queued");
  } else {
    __atomic_store_n(&m->ihead, r, __ATOMIC_RELEASE); /* as in finish */
  }
  m->itail = r;
  activate(m);
  *request = &r->nbc.super;
  /* Start the stream now when nothing is ahead of it (not from inside our
   * own progress callback). */
  if (m->ihead == r && !in_progress) {
    in_progress = true;
    while (m->ihead == r && advance(m)) {
    }
    in_progress = false;
  }
  unlock_queues();
}

/* Before the first call of ours on comm: the private communicator (a
 * collective, posted in the same order on every rank) and the progress
 * callback. */
static int prepare(mca_coll_switchagg_module_t *m, struct ompi_communicator_t *comm) {
  int rc = OMPI_SUCCESS;
  if (OMPI_SUCCESS != ensure_private(m, comm)) return MPI_ERR_OTHER;
  lock_queues();
  if (!progress_registered) {
    if (OPAL_SUCCESS == opal_progress_register(iallreduce_progress)) progress_registered = true;
    else rc = MPI_ERR_OTHER;
  }
  unlock_queues();
  return rc;
}

/* Whether the glue routes a nonblocking call at all (alike on every rank):
 * not Open MPI's own calls while the private communicator is made, not
 * without a core, not a negative count (the previous module reports it). */
static bool may_route(const mca_coll_switchagg_module_t *m, int count) {
  return !__atomic_load_n(&m->icreating_private, __ATOMIC_ACQUIRE) && NULL != m->core &&
         count >= 0;
}

int mca_coll_switchagg_iallreduce(const void *sbuf, void *rbuf, int count,
                                  struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                  struct ompi_communicator_t *comm, ompi_request_t **request,
                                  mca_coll_base_module_t *module) {
  mca_coll_switchagg_module_t *m = (mca_coll_switchagg_module_t *)module;
  mca_coll_switchagg_ireq_t *r;
  int sa_dtype = 0, sa_op = 0, flags = 0, scale = 1, route;
  const char *why;

  if (NULL == m->previous_iallreduce) return OMPI_ERR_NOT_SUPPORTED;
  /* Open MPI's own calls while the private communicator is made (its cid
   * agreement runs on this communicator's iallreduce). */
  if (!may_route(m, count))
    return m->previous_iallreduce(sbuf, rbuf, count, dtype, op, comm, request,
                                  m->previous_iallreduce_module);
  why = switchagg_mpi_classify(dtype, op, &sa_dtype, &sa_op, &flags, &scale);
  if (NULL == why && mca_coll_switchagg_device_buffers(sbuf, rbuf)) why = "device memory";
  /* The previous module's answer differs from the agent's here (op/avx
   * saturates small integer sums): a redo would change the result. */
  if (NULL == why && 0 != (flags & SWITCHAGG_COLL_PREVIOUS_DIFFERS))
    why = "previous module differs";
  /* Open MPI posts one-int MAX/MIN iallreduces on a communicator while it
   * creates another (the cid agreement): the first switch call creates our
   * private communicator, which must not happen inside another creation.
   * Alike on every rank (the private communicator exists everywhere or
   * nowhere). */
  if (NULL == why && NULL == m->iprivate && 1 == count && MPI_INT == dtype &&
      (MPI_MAX == op || MPI_MIN == op))
    why = "one int before the first switch call";
  if (NULL != why) {
    char what[96];
    snprintf(what, sizeof what, "previous:%s", why);
    switchagg_coll_iallreduce_note(m->core, what);
    return m->previous_iallreduce(sbuf, rbuf, count, dtype, op, comm, request,
                                  m->previous_iallreduce_module);
  }
  route = switchagg_coll_iallreduce_route(m->core, MPI_IN_PLACE == sbuf ? NULL : sbuf, rbuf,
                                          (size_t)count * (size_t)scale, sa_dtype, sa_op);
  switch (route) {
    case SWITCHAGG_COLL_IROUTE_LOCAL:
      *request = &ompi_request_empty;
      return OMPI_SUCCESS;
    case SWITCHAGG_COLL_IROUTE_SWITCH: break;
    case SWITCHAGG_COLL_IROUTE_PREVIOUS:
      return m->previous_iallreduce(sbuf, rbuf, count, dtype, op, comm, request,
                                    m->previous_iallreduce_module);
    default: return MPI_ERR_OTHER;
  }
  if (OMPI_SUCCESS != prepare(m, comm)) {
    /* Collective and alike on every rank: nothing was queued anywhere. */
    switchagg_coll_iallreduce_note(m->core, "error");
    return MPI_ERR_OTHER;
  }
  r = new_request(m, comm, K_ALLREDUCE);
  if (NULL == r) return OMPI_ERR_OUT_OF_RESOURCE;
  set_call(r, sbuf, rbuf, count, dtype, op, (size_t)count * (size_t)scale, sa_dtype, sa_op);
  enqueue(m, r, request);
  return OMPI_SUCCESS;
}

/* MPI_Ibarrier: through the switch path when the barrier policy puts
 * barriers there (offload on), queued with the communicator's
 * MPI_Iallreduce calls; else the previous module's. */
int mca_coll_switchagg_ibarrier(struct ompi_communicator_t *comm, ompi_request_t **request,
                                mca_coll_base_module_t *module) {
  mca_coll_switchagg_module_t *m = (mca_coll_switchagg_module_t *)module;
  mca_coll_switchagg_ireq_t *r;
  int sa_dtype = 0, sa_op = 0, flags = 0, scale = 1;

  if (NULL == m->previous_ibarrier) return OMPI_ERR_NOT_SUPPORTED;
  if (!may_route(m, 0))
    return m->previous_ibarrier(comm, request, m->previous_ibarrier_module);
  switch (switchagg_coll_ibarrier_route(m->core)) {
    case SWITCHAGG_COLL_IROUTE_LOCAL:
      *request = &ompi_request_empty;
      return OMPI_SUCCESS;
    case SWITCHAGG_COLL_IROUTE_SWITCH: break;
    case SWITCHAGG_COLL_IROUTE_PREVIOUS:
      return m->previous_ibarrier(comm, request, m->previous_ibarrier_module);
    default: return MPI_ERR_OTHER;
  }
  if (OMPI_SUCCESS != prepare(m, comm)) {
    switchagg_coll_ibarrier_note(m->core, "error");
    return MPI_ERR_OTHER;
  }
  r = new_request(m, comm, K_BARRIER);
  if (NULL == r) return OMPI_ERR_OUT_OF_RESOURCE;
  (void)switchagg_mpi_classify(MPI_INT32_T, MPI_SUM, &sa_dtype, &sa_op, &flags, &scale);
  set_call(r, &r->one, &r->entered, 1, MPI_INT32_T, MPI_SUM, 1, sa_dtype, sa_op);
  enqueue(m, r, request);
  return OMPI_SUCCESS;
}

/* MPI_Iallgather and MPI_Ibcast: a glue-side reason to hand the call to the
 * previous module (alike on every rank: the byte count is), or NULL. */
static const char *irouted_why(const void *sbuf, void *rbuf, size_t bytes) {
  if (bytes > INT_MAX) return "over INT_MAX bytes"; /* MPI_Pack's limit */
  if (mca_coll_switchagg_device_buffers(sbuf, rbuf)) return "device memory";
  return NULL;
}

/* Routes a posted MPI_Iallgather / MPI_Ibcast / MPI_Ireduce_scatter_block
 * (`why`: the glue's reason for the previous module, or NULL; core_count,
 * sa_dtype, sa_op: as switchagg_coll_irouted_route takes them): 1 to queue
 * it, 0 for the previous module (counted), or an MPI error. */
static int irouted_route(mca_coll_switchagg_module_t *m, struct ompi_communicator_t *comm,
                         int kind, const char *why, size_t core_count, int sa_dtype, int sa_op,
                         int root) {
  if (NULL != why) {
    char what[96];
    snprintf(what, sizeof what, "previous:%s", why);
    note(m, kind, what);
    return 0;
  }
  switch (switchagg_coll_irouted_route(m->core, routed_op(kind), core_count, sa_dtype, sa_op,
                                       root)) {
    /* Nothing to move (count 0, one rank): counted local, the previous
     * module's trivial copy honours any datatype. */
    case SWITCHAGG_COLL_IROUTE_LOCAL: return 0;
    case SWITCHAGG_COLL_IROUTE_PREVIOUS: return 0;
    case SWITCHAGG_COLL_IROUTE_SWITCH: break;
    default: return MPI_ERR_OTHER;
  }
  if (OMPI_SUCCESS != prepare(m, comm)) {
    note(m, kind, "error");
    return MPI_ERR_OTHER;
  }
  return 1;
}

/* An MPI_Iallgather request's byte images (the routed allgather's layout:
 * rank r's block at r * bytes; in place, ours already there). */
static int stage_allgather(mca_coll_switchagg_ireq_t *r) {
  const int rank = ompi_comm_rank(r->comm), size = ompi_comm_size(r->comm);
  const bool in_place = MPI_IN_PLACE == r->sbuf;
  if (mca_coll_switchagg_plain_bytes(r->dtype, r->count)) {
    r->recv_image = r->rbuf;
  } else {
    const ptrdiff_t stride = mca_coll_switchagg_type_extent(r->dtype) * (ptrdiff_t)r->count;
    r->staged_recv = malloc((size_t)size * r->bytes);
    if (NULL == r->staged_recv) return MPI_ERR_NO_MEM;
    r->recv_image = r->staged_recv;
    if (in_place && MPI_SUCCESS != mca_coll_switchagg_pack(
                                       (char *)r->rbuf + rank * stride, r->count, r->dtype,
                                       (char *)r->staged_recv + (size_t)rank * r->bytes,
                                       r->bytes, r->comm))
      return MPI_ERR_OTHER;
  }
  if (in_place) {
    r->send_image = NULL;
  } else if (mca_coll_switchagg_plain_bytes(r->sdtype, r->scount)) {
    r->send_image = (void *)r->sbuf;
  } else {
    r->staged_send = malloc(r->bytes);
    if (NULL == r->staged_send) return MPI_ERR_NO_MEM;
    if (MPI_SUCCESS != mca_coll_switchagg_pack(r->sbuf, r->scount, r->sdtype, r->staged_send,
                                               r->bytes, r->comm))
      return MPI_ERR_OTHER;
    r->send_image = r->staged_send;
  }
  return MPI_SUCCESS;
}

/* An MPI_Ibcast request's byte image (the root's packed input). */
static int stage_bcast(mca_coll_switchagg_ireq_t *r) {
  if (mca_coll_switchagg_plain_bytes(r->dtype, r->count)) {
    r->recv_image = r->rbuf;
    return MPI_SUCCESS;
  }
  r->staged_recv = malloc(r->bytes);
  if (NULL == r->staged_recv) return MPI_ERR_NO_MEM;
  r->recv_image = r->staged_recv;
  if (ompi_comm_rank(r->comm) == r->root &&
      MPI_SUCCESS != mca_coll_switchagg_pack(r->rbuf, r->count, r->dtype, r->staged_recv,
                                             r->bytes, r->comm))
    return MPI_ERR_OTHER;
  return MPI_SUCCESS;
}

/* Queues a staged MPI_Iallgather / MPI_Ibcast request (a staging error:
 * the request is dropped and the call fails on this rank). */
static int enqueue_staged(mca_coll_switchagg_module_t *m, mca_coll_switchagg_ireq_t *r,
                          int staged, ompi_request_t **request) {
  if (MPI_SUCCESS != staged) {
    note(m, r->kind, "error");
    r->queued = false;
    release_request(r);
    return staged;
  }
  enqueue(m, r, request);
  return OMPI_SUCCESS;
}

/* A routed request's call (a redo's arguments), its datatypes retained. */
static void set_routed_call(mca_coll_switchagg_ireq_t *r, const void *sbuf, int scount,
                            struct ompi_datatype_t *sdtype, void *rbuf, int count,
                            struct ompi_datatype_t *dtype, int root, size_t bytes) {
  r->sbuf = sbuf;
  r->scount = scount;
  r->sdtype = sdtype;
  r->rbuf = rbuf;
  r->count = count;
  r->dtype = dtype;
  r->root = root;
  r->bytes = bytes;
  if (NULL != sdtype && MPI_IN_PLACE != sbuf) OBJ_RETAIN(sdtype);
  OBJ_RETAIN(dtype);
}

int mca_coll_switchagg_iallgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                  void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                                  struct ompi_communicator_t *comm, ompi_request_t **request,
                                  mca_coll_base_module_t *module) {
  mca_coll_switchagg_module_t *m = (mca_coll_switchagg_module_t *)module;
  mca_coll_switchagg_ireq_t *r;
  /* The receive side's block: every rank's signatures match, so every rank
   * sees the same byte count. */
  const size_t block = mca_coll_switchagg_type_bytes(rdtype, rcount);
  int rc;
  if (NULL == m->previous_iallgather) return OMPI_ERR_NOT_SUPPORTED;
  /* Open MPI's own calls while the private communicator is made. */
  rc = !may_route(m, rcount)
           ? 0
           : irouted_route(m, comm, K_ALLGATHER, irouted_why(sbuf, rbuf, block), block, 0, 0, 0);
  if (rc <= 0)
    return rc < 0 ? rc
                  : m->previous_iallgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                                           request, m->previous_iallgather_module);
  r = new_request(m, comm, K_ALLGATHER);
  if (NULL == r) return OMPI_ERR_OUT_OF_RESOURCE;
  set_routed_call(r, sbuf, scount, sdtype, rbuf, rcount, rdtype, 0, block);
  return enqueue_staged(m, r, stage_allgather(r), request);
}

int mca_coll_switchagg_ibcast(void *buff, int count, struct ompi_datatype_t *datatype, int root,
                              struct ompi_communicator_t *comm, ompi_request_t **request,
                              mca_coll_base_module_t *module) {
  mca_coll_switchagg_module_t *m = (mca_coll_switchagg_module_t *)module;
  mca_coll_switchagg_ireq_t *r;
  const size_t bytes = mca_coll_switchagg_type_bytes(datatype, count);
  int rc;
  if (NULL == m->previous_ibcast) return OMPI_ERR_NOT_SUPPORTED;
  rc = !may_route(m, count)
           ? 0
           : irouted_route(m, comm, K_BCAST, irouted_why(NULL, buff, bytes), bytes, 0, 0, root);
  if (rc <= 0)
    return rc < 0 ? rc
                  : m->previous_ibcast(buff, count, datatype, root, comm, request,
                                       m->previous_ibcast_module);
  r = new_request(m, comm, K_BCAST);
  if (NULL == r) return OMPI_ERR_OUT_OF_RESOURCE;
  set_routed_call(r, NULL, 0, NULL, buff, count, datatype, root, bytes);
  return enqueue_staged(m, r, stage_bcast(r), request);
}

/* MPI_Ireduce_scatter_block: the reductions' classification as for
 * MPI_Iallreduce (predefined datatypes and ops only: no staging). */
int mca_coll_switchagg_ireduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                             struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                             struct ompi_communicator_t *comm,
                                             ompi_request_t **request,
                                             mca_coll_base_module_t *module) {
  mca_coll_switchagg_module_t *m = (mca_coll_switchagg_module_t *)module;
  mca_coll_switchagg_ireq_t *r;
  int sa_dtype = 0, sa_op = 0, flags = 0, scale = 1, rc = 0;
  if (NULL == m->previous_ireduce_scatter_block) return OMPI_ERR_NOT_SUPPORTED;
  if (may_route(m, rcount)) {
    const char *why = switchagg_mpi_classify(dtype, op, &sa_dtype, &sa_op, &flags, &scale);
    if (NULL == why && mca_coll_switchagg_device_buffers(sbuf, rbuf)) why = "device memory";
    /* A redo on the previous module would change the result (as Iallreduce). */
    if (NULL == why && 0 != (flags & SWITCHAGG_COLL_PREVIOUS_DIFFERS))
      why = "previous module differs";
    rc = irouted_route(m, comm, K_REDUCE_SCATTER_BLOCK, why, (size_t)rcount * (size_t)scale,
                       sa_dtype, sa_op, 0);
  }
  if (rc <= 0)
    return rc < 0 ? rc
                  : m->previous_ireduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm, request,
                                                      m->previous_ireduce_scatter_block_module);
  r = new_request(m, comm, K_REDUCE_SCATTER_BLOCK);
  if (NULL == r) return OMPI_ERR_OUT_OF_RESOURCE;
  set_call(r, sbuf, rbuf, rcount, dtype, op, (size_t)rcount * (size_t)scale, sa_dtype, sa_op);
  enqueue(m, r, request);
  return OMPI_SUCCESS;
}
