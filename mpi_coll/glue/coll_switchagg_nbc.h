/* The Open MPI glue's host of the core's nonblocking engine
 * (nonblocking_engine.h, coll_switchagg_nbc.c): the per-communicator
 * queues of requests (coll_switchagg_ireq.h), the progress callback that
 * steps them, and the agreement, redo and completion the engine asks for.
 * The per-call entries (coll_switchagg_iallreduce.c) make a request, fill
 * it and queue it here. */
#ifndef MCA_COLL_SWITCHAGG_NBC_H
#define MCA_COLL_SWITCHAGG_NBC_H

#include "coll_switchagg_ireq.h"

BEGIN_C_DECLS

/* Whether the glue routes a nonblocking call at all (alike on every rank):
 * not Open MPI's own calls while the private communicator is made, not
 * without a core, not a negative count (the previous module reports it). */
bool mca_coll_switchagg_nbc_may_route(const mca_coll_switchagg_module_t *m, int count);
/* Before the first call of ours on comm (collective: posted in the same
 * order on every rank): the private communicator and the progress
 * callback. OMPI_SUCCESS or an MPI error. */
int mca_coll_switchagg_nbc_prepare(mca_coll_switchagg_module_t *m,
                                   struct ompi_communicator_t *comm);
/* Queues r behind the calls posted before it and starts its stream at once
 * when nothing is ahead of it; *request is r's. */
void mca_coll_switchagg_nbc_enqueue(mca_coll_switchagg_ireq_t *r, ompi_request_t **request);

END_C_DECLS

#endif /* MCA_COLL_SWITCHAGG_NBC_H */
