/* A nonblocking call's request in the Open MPI glue (coll_switchagg_ireq.c):
 * an ompi_request_t laid out as libnbc's, the engine's call
 * (nonblocking_engine.h) and the caller's arguments for a redo. Made when
 * a call is queued, completed by the engine's host (coll_switchagg_nbc.c),
 * freed by MPI_Wait / MPI_Test / MPI_Request_free once complete. */
#ifndef MCA_COLL_SWITCHAGG_IREQ_H
#define MCA_COLL_SWITCHAGG_IREQ_H

#include "coll_switchagg.h"

BEGIN_C_DECLS

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
  /* The engine's call: what the core streams (the caller's buffers, or
   * byte images for MPI_Iallgather / MPI_Ibcast). */
  switchagg_nb_call_t call;
  mca_coll_switchagg_module_t *m;
  struct ompi_communicator_t *comm;
  /* The caller's arguments (a redo's): MPI_IN_PLACE or the send buffer. */
  const void *sbuf;
  void *rbuf;
  int count, scount;
  struct ompi_datatype_t *dtype, *sdtype;
  struct ompi_op_t *op;
  struct {
    int value;
    int rank;
  } mine, all; /* MPI_2INT for the MAXLOC agreement */
  ompi_request_t *sub;
  bool queued; /* still in m's queue (not complete) */
  /* MPI_Iallgather / MPI_Ibcast: one rank's block (allgather) or the
   * buffer (bcast) in bytes, and staging where the caller's datatype is not
   * one plain run of bytes (packed when posted, unpacked once served; the
   * caller's buffers stay intact until then). Their datatypes are retained
   * while the call runs (MPI lets the caller free them once posted). */
  size_t bytes;
  void *staged_send, *staged_recv;
} mca_coll_switchagg_ireq_t;

/* ThreadSanitizer (scripts/sanitize_thread.sh) sees no order between
 * the engine's host completing a request (coll_switchagg_nbc.c) on the thread that progressed it
 * and the thread whose MPI_Wait/MPI_Test saw it complete and frees it
 * (ireq_free): Open MPI orders them with a write barrier and plain loads in
 * its own, uninstrumented wait. The two annotations state that order
 * (release before ompi_request_complete, acquire when the request is freed,
 * before the caller's MPI_Wait returns and it reads its buffers); without
 * TSan they are nothing. */
#if defined(__SANITIZE_THREAD__)
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define SWITCHAGG_TSAN_ACQUIRE(addr) __tsan_acquire(addr)
#define SWITCHAGG_TSAN_RELEASE(addr) __tsan_release(addr)
#else
#define SWITCHAGG_TSAN_ACQUIRE(addr) ((void)(addr))
#define SWITCHAGG_TSAN_RELEASE(addr) ((void)(addr))
#endif

/* A request of ours on comm (kind: switchagg_nb_call_init's);
 * its call's fields are the caller's to set. NULL when out of memory. */
mca_coll_switchagg_ireq_t *mca_coll_switchagg_ireq_new(mca_coll_switchagg_module_t *m,
                                                       struct ompi_communicator_t *comm,
                                                       int kind);
/* A request that was never queued (staging failed). */
void mca_coll_switchagg_ireq_drop(mca_coll_switchagg_ireq_t *r);
/* A request's staging and retained datatypes, once it ended. */
void mca_coll_switchagg_ireq_free_staging(mca_coll_switchagg_ireq_t *r);

END_C_DECLS

#endif /* MCA_COLL_SWITCHAGG_IREQ_H */
