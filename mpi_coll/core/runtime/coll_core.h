/* The C API between the Open MPI glue (C, mpi_coll/glue/) and the C++ core.
 *
 * Open MPI's internal headers are not C++-clean, so the glue stays in C and
 * talks to the core only through this header: plain C types, no MPI types.
 * Every function catches C++ exceptions before returning; none escapes.
 */
#ifndef SWITCHAGG_COLL_CORE_H
#define SWITCHAGG_COLL_CORE_H

#include <stddef.h>
#include <stdint.h>

#include "call_outcome.h"
#include "coll_kind.h"
#include "switchagg/coll/coll_params.h"

#ifdef __cplusplus
extern "C" {
#endif

/* switchagg::Dtype and switchagg::Op values (common/dtype.h, wire-stable),
 * mirrored for the C glue; coll_core.cc checks them at compile time. */
enum switchagg_coll_dtype {
  SWITCHAGG_DT_INT8 = 1, SWITCHAGG_DT_UINT8 = 2, SWITCHAGG_DT_INT16 = 3,
  SWITCHAGG_DT_UINT16 = 4, SWITCHAGG_DT_INT32 = 5, SWITCHAGG_DT_UINT32 = 6,
  SWITCHAGG_DT_INT64 = 7, SWITCHAGG_DT_UINT64 = 8, SWITCHAGG_DT_FLOAT32 = 9,
  SWITCHAGG_DT_FLOAT64 = 10, SWITCHAGG_DT_BOOL = 11, SWITCHAGG_DT_FLOAT_INT = 12,
  SWITCHAGG_DT_DOUBLE_INT = 13, SWITCHAGG_DT_LONG_INT = 14, SWITCHAGG_DT_2INT = 15,
  SWITCHAGG_DT_SHORT_INT = 16, SWITCHAGG_DT_FLOAT16 = 17, SWITCHAGG_DT_BFLOAT16 = 18
};
enum switchagg_coll_op {
  SWITCHAGG_OP_SUM = 1, SWITCHAGG_OP_PROD = 2, SWITCHAGG_OP_MIN = 3, SWITCHAGG_OP_MAX = 4,
  SWITCHAGG_OP_LAND = 5, SWITCHAGG_OP_LOR = 6, SWITCHAGG_OP_LXOR = 7, SWITCHAGG_OP_BAND = 8,
  SWITCHAGG_OP_BOR = 9, SWITCHAGG_OP_BXOR = 10, SWITCHAGG_OP_MINLOC = 11, SWITCHAGG_OP_MAXLOC = 12
};

/* The parameters the glues hand the core at open: the table's rows of
 * layer ALL (switchagg/coll/coll_params.h), one field each, named as the
 * parameter (coll_switchagg_<name>); a NULL text is its default. */
#define SWITCHAGG_COLL_CORE_FIELD_(NAME, KIND, DEF, MIN, MAX, VALUES, LAYERS, LEVEL, SCOPE, ENV, \
                                   HELP)                                                        \
  SWITCHAGG_COLL_IF_CORE_##LAYERS(SWITCHAGG_COLL_CORE_TYPE_##KIND NAME;)
typedef struct switchagg_coll_params {
  SWITCHAGG_COLL_PARAMS(SWITCHAGG_COLL_CORE_FIELD_)
} switchagg_coll_params_t;

/* Collective services the core borrows from the previous coll module. The
 * allgather gathers `bytes` from every rank into recv (size * bytes), in rank
 * order; returns 0 on success. */
typedef int (*switchagg_coll_allgather_fn)(void *ctx, const void *send, void *recv,
                                           size_t bytes);

typedef struct switchagg_coll_comm_info {
  int rank;
  int size;
  uint32_t context_id;   /* Open MPI's cid: logs and transport group id */
  const char *name;      /* communicator name, for logs */
  const char *node_name; /* this process's host name (locality) */
  void *allgather_ctx;
  switchagg_coll_allgather_fn allgather;
} switchagg_coll_comm_info_t;

typedef struct switchagg_coll_comm switchagg_coll_comm_t;

/* Component open: validates and stores the parameters. Returns 0, or -1 with
 * one error line naming the bad value. */
int switchagg_coll_open(const switchagg_coll_params_t *params);
/* MPI_THREAD_MULTIPLE (component init_query, before any communicator):
 * from now on several threads may call the functions below at once for
 * different communicators; the core serialises its shared parts and never
 * holds them while it waits. Never called: one thread at a time (MPI's
 * other thread levels), at no cost. */
void switchagg_coll_enable_threads(void);
/* A glue's own thread will call the core beside the program's (the PMPI
 * layer's progress thread): the same serialisation as
 * switchagg_coll_enable_threads, at any MPI thread level, without changing
 * any selection (the program's thread level is what the selector sees). */
void switchagg_coll_enable_gate(void);
/* Component close: destroys the process's UCX worker and context. All
 * communicators must have been destroyed. */
void switchagg_coll_close(void);

/* Per communicator (module enable / destructor). Creation is local and cheap;
 * the address exchange happens on the first call that needs it. */
switchagg_coll_comm_t *switchagg_coll_comm_create(const switchagg_coll_comm_info_t *info);
void switchagg_coll_comm_destroy(switchagg_coll_comm_t *comm);

/* Progress callback for Open MPI's progress engine (registered by the glue
 * at open): drives the component's UCX workers while the process waits in
 * another component, so that a peer's request that still needs this
 * process (a rendezvous ack, a transport buffer to drain) completes even
 * after this process left the call. Returns the number of events; never
 * re-enters a running switchagg call. */
int switchagg_coll_progress(void);
/* For a glue's own thread (the PMPI layer's answering thread): as
 * switchagg_coll_progress, but a domain is driven only while no switchagg
 * work is in flight anywhere in the process - no core call running on any
 * thread, nothing marked with switchagg_coll_mark_busy - so it answers
 * peers while the program is outside switchagg and never interleaves with
 * a running call. */
int switchagg_coll_progress_idle(void);
/* Before switchagg_coll_progress_idle's first use, at open (before any
 * call): the core counts its running calls from then on (without it, a
 * core call costs no shared atomic). */
void switchagg_coll_enable_idle_progress(void);
/* +1 / -1: work of the glue's in flight between core calls (a queued
 * nonblocking call, from its post until its end), for
 * switchagg_coll_progress_idle. */
void switchagg_coll_mark_busy(int delta);

/* The MPI library's own progress, for the core's waits (the glue sets it at
 * open; NULL: none). While a switchagg call waits - for the agent, its host
 * algorithm's peers, a recovery answer - it calls `fn` at least every
 * millisecond, outside UCX callbacks and never nested: MPI requires a rank
 * blocked in one call to progress its other pending operations (a
 * nonblocking collective on another communicator, switchagg's or the
 * previous module's, which a peer may need to finish before it can join
 * this call). Inside `fn` the component's own progress callbacks may step
 * other communicators' switch calls. */
void switchagg_coll_set_mpi_progress(void (*fn)(void));

/* Flags for switchagg_coll_allreduce. */
enum switchagg_coll_flags {
  /* The previous module is known to compute this dtype/op differently from
   * C semantics (Open MPI 4.1's op/avx saturates 8/16-bit sums; its MIN/MAX
   * treat MPI_OFFSET as unsigned): in `auto` mode serve the call on the
   * host rather than hand it back. */
  SWITCHAGG_COLL_PREVIOUS_DIFFERS = 1,
  /* switchagg_coll_reduce_scatter: the call is MPI_Reduce_scatter_block
   * (equal counts; counted as reduce_scatter_block:*). */
  SWITCHAGG_COLL_BLOCK = 2,
  /* The previous module aborts or answers wrongly (MPICH 4.0.2: 16-bit
   * floats abort, unsigned MIN/MAX compare as signed): a routed reduction
   * (reduce, reduce-scatter) the switch path does not serve runs as a host
   * allreduce instead of being handed back (<op>:host). */
  SWITCHAGG_COLL_PREVIOUS_WRONG = 4
};

/* After the glue ran the previous module for a call the core declined:
 * lets online tuning time it (and agree with the other ranks when it asks).
 * Returns 0, or -1 when that agreement failed (the call's MPI error). */
int switchagg_coll_previous_done(switchagg_coll_comm_t *comm);

/* dtype and op are switchagg::Dtype / switchagg::Op values (common/dtype.h).
 * send == NULL means MPI_IN_PLACE (input already in recv). Returns a
 * switchagg_coll_outcome (call_outcome.h): SWITCHAGG_OUTCOME_DONE (the
 * result is in the receive buffer), _DECLINED (nothing was touched: call the
 * previous module) or _ERROR (a peer failed mid-algorithm: the MPI error
 * path). Every rank of the communicator makes the same DONE/DECLINED
 * decision for the same call. */
int switchagg_coll_allreduce(switchagg_coll_comm_t *comm, const void *send, void *recv,
                             size_t count, int dtype, int op, int flags);

/* 1 when the core hands every allreduce to the previous module whatever
 * its arguments (coll_switchagg_allreduce_algorithm=previous), else 0;
 * fixed while the core is open. A glue may then count a call of more than
 * zero elements on more than one rank with switchagg_coll_allreduce_previous
 * instead of switchagg_coll_allreduce: the same counters and answer, without
 * the per-call selection or the communicator's transport setup. */
int switchagg_coll_allreduce_forced_previous(void);
/* Counts such a call as switchagg_coll_allreduce would (previous,
 * fallback:selected, or fallback:op not defined on datatype) and returns
 * DECLINED, or ERROR on a communicator a failure left unusable. */
int switchagg_coll_allreduce_previous(switchagg_coll_comm_t *comm, int dtype, int op);

/* MPI_Barrier (docs/offload.md "Barrier"): DONE when every rank entered
 * (through the switch path), DECLINED (nothing sent: call the previous
 * module's barrier), ERROR (the MPI error path). Every rank of the
 * communicator makes the same DONE/DECLINED decision for the same call. */
int switchagg_coll_barrier(switchagg_coll_comm_t *comm);

/* The routed collectives (docs/offload.md "Routed collectives"): through
 * the switch path when the policy (coll_switchagg_offload) and the path
 * allow, else DECLINED - call the previous module's function with the same
 * arguments: the input is intact (also after a busy refusal or a failure
 * the core counted). DONE: the result is in place. ERROR: the MPI error
 * path. Every rank of the communicator makes the same DONE/DECLINED
 * decision for the same call. send == NULL means MPI_IN_PLACE.
 *   reduce: count elements of dtype/op; recv significant at the root only
 *           (in place: the root's input is in recv).
 *   reduce_scatter: recvcounts[size] elements per rank (in place: the whole
 *           vector in recv, the result at its start); flags may hold
 *           SWITCHAGG_COLL_BLOCK for MPI_Reduce_scatter_block.
 *   allgather: `bytes` per rank (a contiguous byte image); in place: this
 *           rank's block already at recv + rank * bytes.
 *   bcast:  `bytes` of buf from the root. */
int switchagg_coll_reduce(switchagg_coll_comm_t *comm, const void *send, void *recv,
                          size_t count, int dtype, int op, int root, int flags);
int switchagg_coll_reduce_scatter(switchagg_coll_comm_t *comm, const void *send, void *recv,
                                  const size_t *recvcounts, int dtype, int op, int flags);
int switchagg_coll_allgather(switchagg_coll_comm_t *comm, const void *send, void *recv,
                             size_t bytes);
int switchagg_coll_bcast(switchagg_coll_comm_t *comm, void *buf, size_t bytes, int root);

/* As switchagg_coll_note_fallback, for a routed collective (routed_op: a
 * routed switchagg_coll_kind, coll_kind.h) the glue sent to the previous
 * module without asking the core: <op>:previous:<reason>. */
void switchagg_coll_note_routed_fallback(switchagg_coll_comm_t *comm, int routed_op,
                                         const char *reason);
/* After the glue ran the previous module for a routed call the core handed
 * back (online tuning times it, as switchagg_coll_previous_done does for
 * allreduce). Returns 0, or -1 when the tuning agreement failed (the call's
 * MPI error). */
int switchagg_coll_routed_previous_done(switchagg_coll_comm_t *comm, int routed_op);

/* Records that the glue sent a call to the previous module without asking
 * the core (user-defined op, derived datatype, ...). `reason` is a literal. */
void switchagg_coll_note_fallback(switchagg_coll_comm_t *comm, const char *reason);

/* Values of coll_switchagg_allreduce_algorithm: 0 is "auto", then the
 * algorithm registry in order; NULL past the end. */
const char *switchagg_coll_algorithm_choice(int index);
/* One line describing the registry (name: description; ...), for help. */
const char *switchagg_coll_algorithm_help(void);

/* Diagnostics (exported by the component, see diagnostics.h): the path that
 * served the last allreduce ("ring", ..., "previous", "local"), and counters
 * by name: an algorithm name counts calls served by it, "fallback:<reason>"
 * counts calls handed to the previous module for that reason,
 * "fallback" all of them, "host:bytes_sent" payload bytes this rank sent
 * over the host transport; the switch path adds its own ("switch:*"),
 * MPI_Barrier its own ("barrier:*"), the routed collectives theirs
 * ("reduce:*", "reduce_scatter:*", "reduce_scatter_block:*", "allgather:*",
 * "bcast:*": local, switch, switch-failed, switch-busy, previous,
 * previous:<reason>, host: a reduction the MPI's own gets wrong, served by
 * a host allreduce instead), the nonblocking calls theirs ("iallreduce:*",
 * "ibarrier:*", "iallgather:*", "ibcast:*", "ireduce_scatter_block:*":
 * iallreduce.h).
 * Unknown names count 0. */
const char *switchagg_coll_last_path(const switchagg_coll_comm_t *comm);
uint64_t switchagg_coll_counter(const switchagg_coll_comm_t *comm, const char *name);

#ifdef __cplusplus
}
#endif

#endif /* SWITCHAGG_COLL_CORE_H */
