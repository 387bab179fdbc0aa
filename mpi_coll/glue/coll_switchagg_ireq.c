/* A nonblocking call's request in Open MPI (coll_switchagg_ireq.h). Its
 * staging and retained datatypes go when it ends. */
#include "coll_switchagg_ireq.h"

#include <stdlib.h>
#include <string.h>

#include "ompi/request/request.h"

static OBJ_CLASS_INSTANCE(mca_coll_switchagg_ireq_t, ompi_request_t, NULL, NULL);

/* An MPI_Iallgather's / MPI_Ibcast's staging and datatypes, once. */
void mca_coll_switchagg_ireq_free_staging(mca_coll_switchagg_ireq_t *r) {
  free(r->staged_send);
  free(r->staged_recv);
  r->staged_send = r->staged_recv = NULL;
  if (SWITCHAGG_COLL_ALLGATHER != r->call.kind &&
      SWITCHAGG_COLL_BCAST != r->call.kind)
    return;
  /* In place, the send type is not looked at (nor retained). */
  if (NULL != r->sdtype && MPI_IN_PLACE != r->sbuf) OBJ_RELEASE(r->sdtype);
  if (NULL != r->dtype) OBJ_RELEASE(r->dtype);
  r->sdtype = r->dtype = NULL;
}

static void release_request(mca_coll_switchagg_ireq_t *r) {
  mca_coll_switchagg_ireq_free_staging(r);
  OMPI_REQUEST_FINI(&r->nbc.super);
  OBJ_RELEASE(r);
}

void mca_coll_switchagg_ireq_drop(mca_coll_switchagg_ireq_t *r) {
  r->queued = false;
  release_request(r);
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

mca_coll_switchagg_ireq_t *mca_coll_switchagg_ireq_new(mca_coll_switchagg_module_t *m,
                                                       struct ompi_communicator_t *comm,
                                                       int kind) {
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
  switchagg_nb_call_init(&r->call, m->core, r, kind);
  r->m = m;
  r->comm = comm;
  r->sbuf = NULL;
  r->rbuf = NULL;
  r->count = r->scount = 0;
  r->dtype = r->sdtype = NULL;
  r->op = NULL;
  r->sub = NULL;
  r->queued = true;
  r->bytes = 0;
  r->staged_send = r->staged_recv = NULL;
  return r;
}
