/* MPI_Iallreduce (docs/offload.md "MPI_Iallreduce").
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

#include <stdbool.h>
#include <stdio.h>

#include "iallreduce.h"
#include "ompi/request/request.h"
#include "ompi/runtime/mpiruntime.h"
#include "opal/runtime/opal_progress.h"


enum { ST_QUEUED, ST_STREAM, ST_SETTLE, ST_AGREE, ST_REDO };

/* A request's call: MPI's view (a redo's arguments) and the core's (sa_*:
 * its count, dtype and op). */
typedef struct {
  const void *sbuf; /* MPI_IN_PLACE or the send buffer */
  void *rbuf;
  int count;
  struct ompi_datatype_t *dtype;
  struct ompi_op_t *op;
  size_t sa_count;
  int sa_dtype, sa_op;
} call_args_t;

typedef struct mca_coll_switchagg_ireq_t {
  ompi_request_t super;
  mca_coll_switchagg_module_t *m;
  struct ompi_communicator_t *comm;
  call_args_t call;
  int state;
  struct {
    int value;
    int rank;
  } mine, all; /* MPI_2INT for the MAXLOC agreement */
  ompi_request_t *sub;
  struct mca_coll_switchagg_ireq_t *next;
  bool queued; /* still in m's queue (not complete) */
  /* MPI_Ibarrier: every rank adds one; the sum is how many entered. */
  bool barrier;
  int32_t one, entered;
} mca_coll_switchagg_ireq_t;

static OBJ_CLASS_INSTANCE(mca_coll_switchagg_ireq_t, ompi_request_t, NULL, NULL);

bool mca_coll_switchagg_creating_private = false;

/* Modules with queued calls, and the progress callback that steps them. */
static mca_coll_switchagg_module_t *active_modules = NULL;
static bool progress_registered = false;
static bool in_progress = false;

static void release_request(mca_coll_switchagg_ireq_t *r) {
  OMPI_REQUEST_FINI(&r->super);
  OBJ_RELEASE(r);
}

static int ireq_free(ompi_request_t **request) {
  mca_coll_switchagg_ireq_t *r = (mca_coll_switchagg_ireq_t *)*request;
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
  active_modules = m;
}

static void deactivate(mca_coll_switchagg_module_t *m) {
  mca_coll_switchagg_module_t **p = &active_modules;
  while (*p != NULL && *p != m) p = &(*p)->inext_active;
  if (*p == m) *p = m->inext_active;
  m->inext_active = NULL;
  m->iactive = false;
}

/* Counts a glue-side event as iallreduce:<what> or ibarrier:<what>. */
static void note(mca_coll_switchagg_module_t *m, bool barrier, const char *what) {
  if (NULL == m->core) return;
  if (barrier) switchagg_coll_ibarrier_note(m->core, what);
  else switchagg_coll_iallreduce_note(m->core, what);
}

/* The head of m's queue ends with MPI error code `err`. */
static void finish(mca_coll_switchagg_ireq_t *r, int err) {
  mca_coll_switchagg_module_t *m = r->m;
  m->ihead = r->next;
  if (NULL == m->ihead) m->itail = NULL;
  r->next = NULL;
  r->queued = false;
  if (OMPI_SUCCESS != err) note(m, r->barrier, "error");
  r->super.req_status.MPI_ERROR = err;
  /* Last use: the request may be freed from here on. */
  ompi_request_complete(&r->super, true);
}

/* The private communicator's own iallreduce (switchagg is not on it). */
static int private_iallreduce(mca_coll_switchagg_module_t *m, const void *sbuf, void *rbuf,
                              int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                              ompi_request_t **sub) {
  struct ompi_communicator_t *p = m->iprivate;
  return p->c_coll->coll_iallreduce(sbuf, rbuf, count, dtype, op, p, sub,
                                    p->c_coll->coll_iallreduce_module);
}

/* A call the switch served: an MPI_Ibarrier's sum must be every rank. */
static void finish_served(mca_coll_switchagg_ireq_t *r) {
  if (r->barrier && r->entered != ompi_comm_size(r->comm)) {
    fprintf(stderr, "switchagg[coll] error: comm %s: MPI_Ibarrier through the agent counted %d "
            "ranks, expected %d\n", r->comm->c_name, (int)r->entered, ompi_comm_size(r->comm));
    finish(r, MPI_ERR_INTERN);
    return;
  }
  finish(r, OMPI_SUCCESS);
}

static void start_redo(mca_coll_switchagg_ireq_t *r) {
  struct ompi_communicator_t *p = r->m->iprivate;
  const call_args_t *c = &r->call;
  int rc = r->barrier ? p->c_coll->coll_ibarrier(p, &r->sub, p->c_coll->coll_ibarrier_module)
                      : private_iallreduce(r->m, c->sbuf, c->rbuf, c->count, c->dtype, c->op,
                                           &r->sub);
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
      rc = switchagg_coll_istream_start(m->core,
                                        MPI_IN_PLACE == r->call.sbuf ? NULL : r->call.sbuf,
                                        r->call.rbuf, r->call.sa_count, r->call.sa_dtype,
                                        r->call.sa_op, r->barrier,
                                        &outcome);
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
  mca_coll_switchagg_module_t *m, *next;
  int events = 0;
  if (NULL == active_modules || in_progress) return 0;
  in_progress = true;
  for (m = active_modules; NULL != m; m = next) {
    next = m->inext_active;
    while (advance(m)) ++events;
    if (NULL == m->ihead) {
      struct ompi_communicator_t *comm = m->comm;
      deactivate(m);
      OBJ_RELEASE(comm); /* may free the communicator and m: last use */
    }
  }
  in_progress = false;
  return events;
}

void mca_coll_switchagg_iallreduce_drain(mca_coll_switchagg_module_t *m) {
  while (NULL != m->ihead) opal_progress();
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
  if (NULL != m->iprivate) return OMPI_SUCCESS;
  mca_coll_switchagg_creating_private = true;
  rc = ompi_comm_dup(comm, &m->iprivate);
  mca_coll_switchagg_creating_private = false;
  if (OMPI_SUCCESS != rc) m->iprivate = NULL;
  return rc;
}

/* A request of ours on comm (its call's fields are the caller's to set). */
static mca_coll_switchagg_ireq_t *new_request(mca_coll_switchagg_module_t *m,
                                              struct ompi_communicator_t *comm, bool barrier) {
  mca_coll_switchagg_ireq_t *r = OBJ_NEW(mca_coll_switchagg_ireq_t);
  if (NULL == r) return NULL;
  OMPI_REQUEST_INIT(&r->super, false);
  r->super.req_type = OMPI_REQUEST_COLL;
  r->super.req_state = OMPI_REQUEST_ACTIVE;
  r->super.req_free = ireq_free;
  r->super.req_cancel = ireq_cancel;
  r->super.req_mpi_object.comm = comm;
  r->super.req_status.MPI_SOURCE = MPI_ANY_SOURCE;
  r->super.req_status.MPI_TAG = MPI_ANY_TAG;
  r->super.req_status.MPI_ERROR = OMPI_SUCCESS;
  r->super.req_status._ucount = 0;
  r->super.req_status._cancelled = 0;
  r->m = m;
  r->comm = comm;
  r->state = ST_QUEUED;
  r->sub = NULL;
  r->next = NULL;
  r->queued = true;
  r->barrier = barrier;
  r->one = 1;
  r->entered = 0;
  return r;
}

/* Queues r on m (behind the calls posted before it) and starts its stream
 * at once when nothing is ahead of it. */
static void enqueue(mca_coll_switchagg_module_t *m, mca_coll_switchagg_ireq_t *r,
                    ompi_request_t **request) {
  if (NULL != m->itail) {
    m->itail->next = r;
    note(m, r->barrier, "queued");
  } else {
    m->ihead = r;
  }
  m->itail = r;
  activate(m);
  *request = &r->super;
  /* Start the stream now when nothing is ahead of it (not from inside our
   * own progress callback). */
  if (m->ihead == r && !in_progress) {
    in_progress = true;
    while (m->ihead == r && advance(m)) {
    }
    in_progress = false;
  }
}

/* Before the first call of ours on comm: the private communicator (a
 * collective, posted in the same order on every rank) and the progress
 * callback. */
static int prepare(mca_coll_switchagg_module_t *m, struct ompi_communicator_t *comm) {
  if (OMPI_SUCCESS != ensure_private(m, comm)) return MPI_ERR_OTHER;
  if (!progress_registered) {
    if (OPAL_SUCCESS != opal_progress_register(iallreduce_progress)) return MPI_ERR_OTHER;
    progress_registered = true;
  }
  return OMPI_SUCCESS;
}

/* The core's route for one MPI_Iallreduce (`a`) or MPI_Ibarrier (barrier,
 * a = NULL: one int32 sum of the request's own fields), taken: LOCAL
 * completes at once, SWITCH queues a request for the call (the
 * communicator prepared first), PREVIOUS sets *hand_on: the caller hands
 * the call to the previous module (each has its own signature). */
static int take_route(mca_coll_switchagg_module_t *m, struct ompi_communicator_t *comm, int route,
                      bool barrier, const call_args_t *a, ompi_request_t **request,
                      bool *hand_on) {
  mca_coll_switchagg_ireq_t *r;
  int sa_dtype = 0, sa_op = 0, flags = 0, scale = 1;

  switch (route) {
    case SWITCHAGG_COLL_IROUTE_LOCAL:
      *request = &ompi_request_empty;
      return OMPI_SUCCESS;
    case SWITCHAGG_COLL_IROUTE_SWITCH: break;
    case SWITCHAGG_COLL_IROUTE_PREVIOUS:
      *hand_on = true;
      return OMPI_SUCCESS;
    default: return MPI_ERR_OTHER;
  }
  if (OMPI_SUCCESS != prepare(m, comm)) {
    /* Collective and alike on every rank: nothing was queued anywhere. */
    note(m, barrier, "error");
    return MPI_ERR_OTHER;
  }
  r = new_request(m, comm, barrier);
  if (NULL == r) return OMPI_ERR_OUT_OF_RESOURCE;
  if (barrier) {
    (void)switchagg_mpi_classify(MPI_INT32_T, MPI_SUM, &sa_dtype, &sa_op, &flags, &scale);
    const call_args_t one = {&r->one, &r->entered, 1, MPI_INT32_T, MPI_SUM, 1, sa_dtype, sa_op};
    r->call = one;
  } else {
    r->call = *a;
  }
  enqueue(m, r, request);
  return OMPI_SUCCESS;
}

int mca_coll_switchagg_iallreduce(const void *sbuf, void *rbuf, int count,
                                  struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                  struct ompi_communicator_t *comm, ompi_request_t **request,
                                  mca_coll_base_module_t *module) {
  mca_coll_switchagg_module_t *m = (mca_coll_switchagg_module_t *)module;
  int sa_dtype = 0, sa_op = 0, flags = 0, scale = 1, route, rc;
  bool hand_on = false;
  const char *why;

  if (NULL == m->previous_iallreduce) return OMPI_ERR_NOT_SUPPORTED;
  /* Open MPI's own calls while the private communicator is made (its cid
   * agreement runs on this communicator's iallreduce). */
  if (mca_coll_switchagg_creating_private || NULL == m->core || count < 0)
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
  /* The queue and the progress callback are not thread-safe. */
  if (NULL == why && ompi_mpi_thread_multiple) why = "MPI_THREAD_MULTIPLE";
  if (NULL != why) {
    char what[96];
    snprintf(what, sizeof what, "previous:%s", why);
    switchagg_coll_iallreduce_note(m->core, what);
    return m->previous_iallreduce(sbuf, rbuf, count, dtype, op, comm, request,
                                  m->previous_iallreduce_module);
  }
  route = switchagg_coll_iallreduce_route(m->core, MPI_IN_PLACE == sbuf ? NULL : sbuf, rbuf,
                                          (size_t)count * (size_t)scale, sa_dtype, sa_op);
  const call_args_t call = {sbuf, rbuf, count, dtype, op, (size_t)count * (size_t)scale,
                           sa_dtype, sa_op};
  rc = take_route(m, comm, route, false, &call, request, &hand_on);
  if (!hand_on) return rc;
  return m->previous_iallreduce(sbuf, rbuf, count, dtype, op, comm, request,
                                m->previous_iallreduce_module);
}

/* MPI_Ibarrier: through the switch path when the barrier policy puts
 * barriers there (offload on), queued with the communicator's
 * MPI_Iallreduce calls; else the previous module's. */
int mca_coll_switchagg_ibarrier(struct ompi_communicator_t *comm, ompi_request_t **request,
                                mca_coll_base_module_t *module) {
  mca_coll_switchagg_module_t *m = (mca_coll_switchagg_module_t *)module;
  bool hand_on = false;
  int rc;

  if (NULL == m->previous_ibarrier) return OMPI_ERR_NOT_SUPPORTED;
  if (mca_coll_switchagg_creating_private || NULL == m->core)
    return m->previous_ibarrier(comm, request, m->previous_ibarrier_module);
  /* The queue and the progress callback are not thread-safe. */
  if (ompi_mpi_thread_multiple) {
    switchagg_coll_ibarrier_note(m->core, "previous:MPI_THREAD_MULTIPLE");
    return m->previous_ibarrier(comm, request, m->previous_ibarrier_module);
  }
  rc = take_route(m, comm, switchagg_coll_ibarrier_route(m->core), true, NULL, request,
                  &hand_on);
  if (!hand_on) return rc;
  return m->previous_ibarrier(comm, request, m->previous_ibarrier_module);
}
