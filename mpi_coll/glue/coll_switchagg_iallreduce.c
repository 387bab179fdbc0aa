/* MPI_Iallreduce, MPI_Ibarrier, MPI_Iallgather, MPI_Ibcast and
 * MPI_Ireduce_scatter_block (docs/offload.md "MPI_Iallreduce"): the
 * per-call entries.
 *
 * A call the core routes to the switch becomes a request of ours, queued on
 * its communicator (coll_switchagg_nbc.c: one switch call at a time per
 * communicator, completed in the order posted, run by the core's
 * nonblocking engine); any other goes to the previous module's (libnbc),
 * whose request the caller gets. */
#include "coll_switchagg_nbc.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "iallreduce.h"

/* The call r carries: MPI's view (a redo's arguments) and the core's. */
static void set_call(mca_coll_switchagg_ireq_t *r, const void *sbuf, void *rbuf, int count,
                     struct ompi_datatype_t *dtype, struct ompi_op_t *op, size_t sa_count,
                     int sa_dtype, int sa_op) {
  r->sbuf = sbuf;
  r->rbuf = rbuf;
  r->count = count;
  r->dtype = dtype;
  r->op = op;
  r->call.send = MPI_IN_PLACE == sbuf ? NULL : sbuf;
  r->call.recv = rbuf;
  r->call.count = sa_count;
  r->call.dtype = sa_dtype;
  r->call.op = sa_op;
}

/* How an MPI_Iallreduce or MPI_Ibarrier the core routed goes on. */
enum { IPOST_PREVIOUS, IPOST_QUEUE, IPOST_ENDED };

/* After the core's `route`: IPOST_QUEUE with *r a new request of `kind`
 * for the caller to fill and queue; IPOST_PREVIOUS, the previous module
 * takes the call; IPOST_ENDED with *rc the call's answer (LOCAL: done,
 * *request the empty request; or an MPI error). */
static int ipost(mca_coll_switchagg_module_t *m, struct ompi_communicator_t *comm, int route,
                 int kind, ompi_request_t **request, mca_coll_switchagg_ireq_t **r, int *rc) {
  *rc = OMPI_SUCCESS;
  switch (route) {
    case SWITCHAGG_COLL_IROUTE_LOCAL:
      *request = &ompi_request_empty;
      return IPOST_ENDED;
    case SWITCHAGG_COLL_IROUTE_SWITCH: break;
    case SWITCHAGG_COLL_IROUTE_PREVIOUS: return IPOST_PREVIOUS;
    default:
      *rc = MPI_ERR_OTHER;
      return IPOST_ENDED;
  }
  if (OMPI_SUCCESS != mca_coll_switchagg_nbc_prepare(m, comm)) {
    /* Collective and alike on every rank: nothing was queued anywhere. */
    switchagg_coll_inote(m->core, kind, "error");
    *rc = MPI_ERR_OTHER;
    return IPOST_ENDED;
  }
  *r = mca_coll_switchagg_ireq_new(m, comm, kind);
  if (NULL != *r) return IPOST_QUEUE;
  *rc = OMPI_ERR_OUT_OF_RESOURCE;
  return IPOST_ENDED;
}

int mca_coll_switchagg_iallreduce(const void *sbuf, void *rbuf, int count,
                                  struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                  struct ompi_communicator_t *comm, ompi_request_t **request,
                                  mca_coll_base_module_t *module) {
  mca_coll_switchagg_module_t *m = (mca_coll_switchagg_module_t *)module;
  mca_coll_switchagg_ireq_t *r = NULL;
  int sa_dtype = 0, sa_op = 0, flags = 0, scale = 1, route, rc;
  const char *why;

  if (NULL == m->previous_iallreduce) return OMPI_ERR_NOT_SUPPORTED;
  /* Open MPI's own calls while the private communicator is made (its cid
   * agreement runs on this communicator's iallreduce). */
  if (!mca_coll_switchagg_nbc_may_route(m, count))
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
    switchagg_coll_inote(m->core, SWITCHAGG_COLL_ALLREDUCE, what);
    return m->previous_iallreduce(sbuf, rbuf, count, dtype, op, comm, request,
                                  m->previous_iallreduce_module);
  }
  route = switchagg_coll_iallreduce_route(m->core, MPI_IN_PLACE == sbuf ? NULL : sbuf, rbuf,
                                          (size_t)count * (size_t)scale, sa_dtype, sa_op);
  switch (ipost(m, comm, route, SWITCHAGG_COLL_ALLREDUCE, request, &r, &rc)) {
    case IPOST_QUEUE: break;
    case IPOST_PREVIOUS:
      return m->previous_iallreduce(sbuf, rbuf, count, dtype, op, comm, request,
                                    m->previous_iallreduce_module);
    default: return rc;
  }
  set_call(r, sbuf, rbuf, count, dtype, op, (size_t)count * (size_t)scale, sa_dtype, sa_op);
  mca_coll_switchagg_nbc_enqueue(r, request);
  return OMPI_SUCCESS;
}

/* MPI_Ibarrier: through the switch path when the barrier policy puts
 * barriers there (offload on), queued with the communicator's
 * MPI_Iallreduce calls; else the previous module's. */
int mca_coll_switchagg_ibarrier(struct ompi_communicator_t *comm, ompi_request_t **request,
                                mca_coll_base_module_t *module) {
  mca_coll_switchagg_module_t *m = (mca_coll_switchagg_module_t *)module;
  mca_coll_switchagg_ireq_t *r = NULL;
  int flags = 0, scale = 1, rc;

  if (NULL == m->previous_ibarrier) return OMPI_ERR_NOT_SUPPORTED;
  if (!mca_coll_switchagg_nbc_may_route(m, 0))
    return m->previous_ibarrier(comm, request, m->previous_ibarrier_module);
  switch (ipost(m, comm, switchagg_coll_ibarrier_route(m->core), SWITCHAGG_COLL_BARRIER, request,
                &r, &rc)) {
    case IPOST_QUEUE: break;
    case IPOST_PREVIOUS: return m->previous_ibarrier(comm, request, m->previous_ibarrier_module);
    default: return rc;
  }
  (void)switchagg_mpi_classify(MPI_INT32_T, MPI_SUM, &r->call.dtype, &r->call.op, &flags,
                               &scale);
  mca_coll_switchagg_nbc_enqueue(r, request);
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
 * it, 0 for the previous module (counted), or an MPI error class (positive,
 * never 1: callers test for 1, not for "> 0"). */
static int irouted_route(mca_coll_switchagg_module_t *m, struct ompi_communicator_t *comm,
                         int routed_op, const char *why, size_t core_count, int sa_dtype,
                         int sa_op, int root) {
  if (NULL != why) {
    char what[96];
    snprintf(what, sizeof what, "previous:%s", why);
    switchagg_coll_inote(m->core, routed_op, what);
    return 0;
  }
  switch (switchagg_coll_irouted_route(m->core, routed_op, core_count, sa_dtype, sa_op, root)) {
    /* Nothing to move (count 0, one rank): counted local, the previous
     * module's trivial copy honours any datatype. */
    case SWITCHAGG_COLL_IROUTE_LOCAL: return 0;
    case SWITCHAGG_COLL_IROUTE_PREVIOUS: return 0;
    case SWITCHAGG_COLL_IROUTE_SWITCH: break;
    default: return MPI_ERR_OTHER;
  }
  if (OMPI_SUCCESS != mca_coll_switchagg_nbc_prepare(m, comm)) {
    switchagg_coll_inote(m->core, routed_op, "error");
    return MPI_ERR_OTHER;
  }
  return 1;
}

/* A routed call's front (count: the caller's, for may_route): irouted_route,
 * then, when it answers 1, *r a new request of routed_op for the caller to
 * fill and queue. irouted_route's answer, or OMPI_ERR_OUT_OF_RESOURCE. */
static int irouted_post(mca_coll_switchagg_module_t *m, struct ompi_communicator_t *comm,
                        int count, int routed_op, const char *why, size_t core_count,
                        int sa_dtype, int sa_op, int root, mca_coll_switchagg_ireq_t **r) {
  /* Open MPI's own calls while the private communicator is made. */
  const int rc = !mca_coll_switchagg_nbc_may_route(m, count)
                     ? 0
                     : irouted_route(m, comm, routed_op, why, core_count, sa_dtype, sa_op, root);
  if (1 != rc) return rc;
  *r = mca_coll_switchagg_ireq_new(m, comm, routed_op);
  return NULL == *r ? OMPI_ERR_OUT_OF_RESOURCE : rc;
}

/* An MPI_Iallgather request's byte images (the routed allgather's layout:
 * rank r's block at r * bytes; in place, ours already there). */
static int stage_allgather(mca_coll_switchagg_ireq_t *r) {
  const int rank = ompi_comm_rank(r->comm), size = ompi_comm_size(r->comm);
  const bool in_place = MPI_IN_PLACE == r->sbuf;
  if (mca_coll_switchagg_plain_bytes(r->dtype, r->count)) {
    r->call.recv = r->rbuf;
  } else {
    const ptrdiff_t stride = mca_coll_switchagg_type_extent(r->dtype) * (ptrdiff_t)r->count;
    r->staged_recv = malloc((size_t)size * r->bytes);
    if (NULL == r->staged_recv) return MPI_ERR_NO_MEM;
    r->call.recv = r->staged_recv;
    if (in_place && MPI_SUCCESS != mca_coll_switchagg_pack(
                                       (char *)r->rbuf + rank * stride, r->count, r->dtype,
                                       (char *)r->staged_recv + (size_t)rank * r->bytes,
                                       r->bytes, r->comm))
      return MPI_ERR_OTHER;
  }
  if (in_place) {
    r->call.send = NULL;
  } else if (mca_coll_switchagg_plain_bytes(r->sdtype, r->scount)) {
    r->call.send = (void *)r->sbuf;
  } else {
    r->staged_send = malloc(r->bytes);
    if (NULL == r->staged_send) return MPI_ERR_NO_MEM;
    if (MPI_SUCCESS != mca_coll_switchagg_pack(r->sbuf, r->scount, r->sdtype, r->staged_send,
                                               r->bytes, r->comm))
      return MPI_ERR_OTHER;
    r->call.send = r->staged_send;
  }
  return MPI_SUCCESS;
}

/* An MPI_Ibcast request's byte image (the root's packed input). */
static int stage_bcast(mca_coll_switchagg_ireq_t *r) {
  if (mca_coll_switchagg_plain_bytes(r->dtype, r->count)) {
    r->call.recv = r->rbuf;
    return MPI_SUCCESS;
  }
  r->staged_recv = malloc(r->bytes);
  if (NULL == r->staged_recv) return MPI_ERR_NO_MEM;
  r->call.recv = r->staged_recv;
  if (ompi_comm_rank(r->comm) == r->call.root &&
      MPI_SUCCESS != mca_coll_switchagg_pack(r->rbuf, r->count, r->dtype, r->staged_recv,
                                             r->bytes, r->comm))
    return MPI_ERR_OTHER;
  return MPI_SUCCESS;
}

/* Queues a staged MPI_Iallgather / MPI_Ibcast request (a staging error:
 * the request is dropped and the call fails on this rank). */
static int enqueue_staged(mca_coll_switchagg_ireq_t *r, int staged, ompi_request_t **request) {
  if (MPI_SUCCESS != staged) {
    switchagg_nb_note(&r->call, "error");
    mca_coll_switchagg_ireq_drop(r);
    return staged;
  }
  mca_coll_switchagg_nbc_enqueue(r, request);
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
  r->call.root = root;
  r->call.count = r->bytes = bytes;
  if (NULL != sdtype && MPI_IN_PLACE != sbuf) OBJ_RETAIN(sdtype);
  OBJ_RETAIN(dtype);
}

/* An MPI_Iallgather or MPI_Ibcast (routed_op; the caller's arguments as
 * set_routed_call takes them): through the switch when the core routes it
 * there, its buffers staged as their datatypes need. *previous is set when
 * the previous module takes the call instead; else the call's answer
 * (queued: *request is ours). */
static int iimage_post(mca_coll_switchagg_module_t *m, struct ompi_communicator_t *comm,
                       int routed_op, const void *sbuf, int scount,
                       struct ompi_datatype_t *sdtype, void *rbuf, int count,
                       struct ompi_datatype_t *dtype, int root, size_t bytes,
                       ompi_request_t **request, bool *previous) {
  mca_coll_switchagg_ireq_t *r = NULL;
  const int rc = irouted_post(m, comm, count, routed_op, irouted_why(sbuf, rbuf, bytes), bytes, 0,
                              0, root, &r);
  *previous = 0 == rc;
  if (1 != rc) return rc;
  set_routed_call(r, sbuf, scount, sdtype, rbuf, count, dtype, root, bytes);
  return enqueue_staged(r, SWITCHAGG_COLL_BCAST == routed_op ? stage_bcast(r) : stage_allgather(r),
                        request);
}

int mca_coll_switchagg_iallgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                  void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                                  struct ompi_communicator_t *comm, ompi_request_t **request,
                                  mca_coll_base_module_t *module) {
  mca_coll_switchagg_module_t *m = (mca_coll_switchagg_module_t *)module;
  bool previous = false;
  int rc;
  if (NULL == m->previous_iallgather) return OMPI_ERR_NOT_SUPPORTED;
  /* The receive side's block: every rank's signatures match, so every rank
   * sees the same byte count. */
  rc = iimage_post(m, comm, SWITCHAGG_COLL_ALLGATHER, sbuf, scount, sdtype, rbuf, rcount, rdtype,
                   0, mca_coll_switchagg_type_bytes(rdtype, rcount), request, &previous);
  return !previous ? rc
                   : m->previous_iallgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                                            request, m->previous_iallgather_module);
}

int mca_coll_switchagg_ibcast(void *buff, int count, struct ompi_datatype_t *datatype, int root,
                              struct ompi_communicator_t *comm, ompi_request_t **request,
                              mca_coll_base_module_t *module) {
  mca_coll_switchagg_module_t *m = (mca_coll_switchagg_module_t *)module;
  bool previous = false;
  int rc;
  if (NULL == m->previous_ibcast) return OMPI_ERR_NOT_SUPPORTED;
  rc = iimage_post(m, comm, SWITCHAGG_COLL_BCAST, NULL, 0, NULL, buff, count, datatype, root,
                   mca_coll_switchagg_type_bytes(datatype, count), request, &previous);
  return !previous ? rc
                   : m->previous_ibcast(buff, count, datatype, root, comm, request,
                                        m->previous_ibcast_module);
}

/* MPI_Ireduce_scatter_block: the reductions' classification as for
 * MPI_Iallreduce (predefined datatypes and ops only: no staging). */
int mca_coll_switchagg_ireduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                             struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                             struct ompi_communicator_t *comm,
                                             ompi_request_t **request,
                                             mca_coll_base_module_t *module) {
  mca_coll_switchagg_module_t *m = (mca_coll_switchagg_module_t *)module;
  mca_coll_switchagg_ireq_t *r = NULL;
  int sa_dtype = 0, sa_op = 0, flags = 0, scale = 1, rc;
  const char *why;
  if (NULL == m->previous_ireduce_scatter_block) return OMPI_ERR_NOT_SUPPORTED;
  why = switchagg_mpi_classify(dtype, op, &sa_dtype, &sa_op, &flags, &scale);
  if (NULL == why && mca_coll_switchagg_device_buffers(sbuf, rbuf)) why = "device memory";
  /* A redo on the previous module would change the result (as Iallreduce). */
  if (NULL == why && 0 != (flags & SWITCHAGG_COLL_PREVIOUS_DIFFERS))
    why = "previous module differs";
  rc = irouted_post(m, comm, rcount, SWITCHAGG_COLL_REDUCE_SCATTER_BLOCK, why,
                    (size_t)rcount * (size_t)scale, sa_dtype, sa_op, 0, &r);
  if (1 != rc)
    return 0 != rc ? rc
                   : m->previous_ireduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm, request,
                                                      m->previous_ireduce_scatter_block_module);
  set_call(r, sbuf, rbuf, rcount, dtype, op, (size_t)rcount * (size_t)scale, sa_dtype, sa_op);
  mca_coll_switchagg_nbc_enqueue(r, request);
  return OMPI_SUCCESS;
}
