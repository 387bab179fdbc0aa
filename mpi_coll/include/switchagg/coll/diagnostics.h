/* Diagnostics exported by mca_coll_switchagg.so, for tests and benchmarks.
 *
 * The component is loaded by Open MPI at MPI_Init (dlopen, global symbols),
 * so a program finds these with dlsym(RTLD_DEFAULT, name) without linking
 * against it; a NULL lookup means the component was not loaded.
 *
 *   const char *switchagg_coll_last_algorithm(MPI_Comm comm);
 *     Name of the path that served the last MPI_Allreduce on comm: an
 *     algorithm's name in the registry (mpi_coll/core/select/
 *     algorithm_registry.cc; `switchagg-info --select` prints them as its
 *     candidate columns), "local" for count 0 or one rank; NULL when
 *     switchagg does not serve allreduce on comm or none ran yet.
 *
 *   uint64_t switchagg_coll_comm_counter(MPI_Comm comm, const char *name);
 *     Calls served by algorithm `name`; "local"; "fallback" (all calls
 *     handed to the previous module) or "fallback:<reason>" (reasons:
 *     "user-defined op", "derived datatype", "selected", ...); the switch
 *     path's "switch:*", "fallback:switch-failed" and "fallback:switch-busy";
 *     the nonblocking calls' "iallreduce:*", "ibarrier:*", "iallgather:*",
 *     "ibcast:*", "ireduce_scatter_block:*" and the routed calls' "<op>:*"
 *     (docs/offload.md).
 *     UINT64_MAX when switchagg does not serve allreduce on comm.
 */
#ifndef SWITCHAGG_COLL_DIAGNOSTICS_H
#define SWITCHAGG_COLL_DIAGNOSTICS_H

#include <mpi.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef const char *(*switchagg_coll_last_algorithm_fn)(MPI_Comm comm);
typedef uint64_t (*switchagg_coll_comm_counter_fn)(MPI_Comm comm, const char *name);

#define SWITCHAGG_COLL_LAST_ALGORITHM_SYMBOL "switchagg_coll_last_algorithm"
#define SWITCHAGG_COLL_COMM_COUNTER_SYMBOL "switchagg_coll_comm_counter"

#ifdef __cplusplus
}
#endif

#endif /* SWITCHAGG_COLL_DIAGNOSTICS_H */
