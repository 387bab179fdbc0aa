/* The host of the core's nonblocking engine (nonblocking_engine.h) in
 * Open MPI: requests, the per-communicator queues, and the agreement, redo
 * and completion the engine asks for (docs/offload.md "MPI_Iallreduce").
 *
 * A queued call runs the engine's machine (QUEUED -> STREAM -> SETTLE ->
 * AGREE -> REDO -> done); here:
 *
 *   AGREE   -> the previous module's iallreduce(MAXLOC) of {outcome, rank}
 *              on a private duplicate of the communicator: the worst
 *              outcome and the lowest rank with it
 *   REDO    -> the previous module's call on the intact input, on the
 *              private communicator
 *   done    -> ompi_request_complete.
 *
 * Everything after the posting call is driven from Open MPI's progress
 * engine (a normal-priority callback registered on the first switch call),
 * so MPI_Test, MPI_Wait and MPI_Waitall progress it, and nothing here ever
 * waits. The private communicator keeps the agreements and redos, started
 * from progress at moments that differ between ranks, from mixing with the
 * user's own nonblocking collectives on the communicator (libnbc matches by
 * a per-communicator sequence). */
#include "coll_switchagg_nbc.h"

#include <pthread.h>
#include <stdio.h>

#include "ompi/request/request.h"
#include "ompi/runtime/mpiruntime.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/info.h"

/* Modules with queued calls, and the progress callback that steps them.
 * Under MPI_THREAD_MULTIPLE any thread may post on its communicator while
 * another runs Open MPI's progress: queue_lock guards the queues and this
 * list (posting takes it, the progress callback only tries it: a thread
 * that finds it taken leaves the queues to its holder). The core guards
 * itself (its steps only run when the process's gate is free). Single
 * threaded, the lock is never touched. in_progress: this thread is inside
 * the callback (no re-entry from a nested opal_progress). */

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

/* A served call's staged result into the caller's buffers (MPI_Unpack). */
static int unpack_result(mca_coll_switchagg_ireq_t *r) {
  const int size = ompi_comm_size(r->comm);
  int i;
  if (NULL == r->staged_recv) return MPI_SUCCESS;
  if (SWITCHAGG_COLL_BCAST == r->call.kind)
    return ompi_comm_rank(r->comm) == r->call.root
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

/* A call the switch served: its staged result unpacked, an MPI_Ibarrier's
 * sum every rank. */
static int served_error(mca_coll_switchagg_ireq_t *r) {
  if (MPI_SUCCESS != unpack_result(r)) return MPI_ERR_OTHER;
  if (SWITCHAGG_COLL_BARRIER == r->call.kind && r->call.entered != ompi_comm_size(r->comm)) {
    fprintf(stderr, "switchagg[coll] error: comm %s: MPI_Ibarrier through the agent counted %d "
            "ranks, expected %d\n", r->comm->c_name, (int)r->call.entered, ompi_comm_size(r->comm));
    return MPI_ERR_INTERN;
  }
  return OMPI_SUCCESS;
}

/* The engine's complete: the head of m's queue ends (under the queue lock:
 * the engine runs from enqueue or the progress callback, both holding it). */
static void complete_call(switchagg_nb_call_t *call, int end) {
  mca_coll_switchagg_ireq_t *r = (mca_coll_switchagg_ireq_t *)call->owner;
  int err = OMPI_SUCCESS;
  switch (end) {
    case SWITCHAGG_NB_SERVED: err = served_error(r); break;
    case SWITCHAGG_NB_REDONE: break;
    default: err = MPI_ERR_OTHER; break;
  }
  /* The head's release store: mca_coll_switchagg_iallreduce_drain waits
   * for it without the lock. */
  switchagg_nb_queue_pop(&r->m->iqueue);
  r->queued = false;
  mca_coll_switchagg_ireq_free_staging(r);
  /* The engine counted its own failures (SWITCHAGG_NB_FAILED). */
  if (OMPI_SUCCESS != err && SWITCHAGG_NB_FAILED != end) switchagg_nb_note(call, "error");
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

/* The engine's agree: {outcome, rank} MAXLOC on the private communicator. */
static int agree_call(switchagg_nb_call_t *call, int outcome, int *agreed, int *first_rank) {
  mca_coll_switchagg_ireq_t *r = (mca_coll_switchagg_ireq_t *)call->owner;
  (void)agreed;
  (void)first_rank;
  r->mine.value = outcome;
  r->mine.rank = ompi_comm_rank(r->comm);
  return OMPI_SUCCESS ==
                 private_iallreduce(r->m, &r->mine, &r->all, 1, MPI_2INT, MPI_MAXLOC, &r->sub)
             ? SWITCHAGG_NB_PENDING
             : SWITCHAGG_NB_ERROR;
}

/* The engine's redo: the previous module's call with the caller's
 * arguments (the input intact), on the private communicator. */
static int redo_call(switchagg_nb_call_t *call) {
  mca_coll_switchagg_ireq_t *r = (mca_coll_switchagg_ireq_t *)call->owner;
  struct ompi_communicator_t *p = r->m->iprivate;
  int rc;
  if (SWITCHAGG_COLL_BARRIER == call->kind)
    rc = p->c_coll->coll_ibarrier(p, &r->sub, p->c_coll->coll_ibarrier_module);
  else if (SWITCHAGG_COLL_ALLGATHER == r->call.kind)
    rc = p->c_coll->coll_iallgather(r->sbuf, r->scount, r->sdtype, r->rbuf, r->count, r->dtype, p,
                                    &r->sub, p->c_coll->coll_iallgather_module);
  else if (SWITCHAGG_COLL_BCAST == r->call.kind)
    rc = p->c_coll->coll_ibcast(r->rbuf, r->count, r->dtype, call->root, p, &r->sub,
                                p->c_coll->coll_ibcast_module);
  else if (SWITCHAGG_COLL_REDUCE_SCATTER_BLOCK == r->call.kind)
    rc = p->c_coll->coll_ireduce_scatter_block(r->sbuf, r->rbuf, r->count, r->dtype, r->op, p,
                                               &r->sub,
                                               p->c_coll->coll_ireduce_scatter_block_module);
  else
    rc = private_iallreduce(r->m, r->sbuf, r->rbuf, r->count, r->dtype, r->op, &r->sub);
  return OMPI_SUCCESS == rc ? SWITCHAGG_NB_PENDING : SWITCHAGG_NB_ERROR;
}

/* The engine's poll: the pending agreement or redo (libnbc's request). */
static int poll_call(switchagg_nb_call_t *call, int *agreed, int *first_rank) {
  mca_coll_switchagg_ireq_t *r = (mca_coll_switchagg_ireq_t *)call->owner;
  int err;
  if (!REQUEST_COMPLETE(r->sub)) return SWITCHAGG_NB_PENDING;
  err = r->sub->req_status.MPI_ERROR;
  (void)ompi_request_free(&r->sub);
  r->sub = NULL;
  *agreed = r->all.value;
  *first_rank = r->all.rank;
  return OMPI_SUCCESS == err ? SWITCHAGG_NB_DONE : SWITCHAGG_NB_ERROR;
}

static const switchagg_nb_host_t nbc_host = {agree_call, redo_call, poll_call, complete_call,
                                             NULL};

/* Moves the head of m's queue on as far as it can without waiting. Returns
 * true when it changed state (the caller tries again: the next call may
 * start at once). */
static bool advance(mca_coll_switchagg_module_t *m) {
  switchagg_nb_call_t *head = switchagg_nb_queue_head(&m->iqueue);
  return NULL != head && 0 != switchagg_nb_step(head, &nbc_host);
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
    if (NULL == switchagg_nb_queue_head(&m->iqueue)) {
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
  while (NULL != switchagg_nb_queue_head(&m->iqueue)) opal_progress();
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

void mca_coll_switchagg_nbc_enqueue(mca_coll_switchagg_ireq_t *r, ompi_request_t **request) {
  mca_coll_switchagg_module_t *m = r->m;
  lock_queues();
  if (!switchagg_nb_queue_push(&m->iqueue, &r->call)) switchagg_nb_note(&r->call, "queued");
  activate(m);
  *request = &r->nbc.super;
  /* Start the stream now when nothing is ahead of it (not from inside our
   * own progress callback). */
  if (switchagg_nb_queue_head(&m->iqueue) == &r->call && !in_progress) {
    in_progress = true;
    while (switchagg_nb_queue_head(&m->iqueue) == &r->call && advance(m)) {
    }
    in_progress = false;
  }
  unlock_queues();
}

int mca_coll_switchagg_nbc_prepare(mca_coll_switchagg_module_t *m,
                                   struct ompi_communicator_t *comm) {
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

bool mca_coll_switchagg_nbc_may_route(const mca_coll_switchagg_module_t *m, int count) {
  return !__atomic_load_n(&m->icreating_private, __ATOMIC_ACQUIRE) && NULL != m->core &&
         count >= 0;
}
