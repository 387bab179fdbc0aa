/* MPI_Iallreduce (and the other nonblocking collectives) through the switch
 * path (docs/offload.md "MPI_Iallreduce").
 *
 * The glues own the requests and every call into MPI; the nonblocking
 * engine (nonblocking/nonblocking_engine.h) the per-communicator queue;
 * the core decides the route when a call is posted and runs the switch
 * stream in steps that never wait. Every step answers in the one type of
 * how a call ended (switchagg_coll_outcome, call_outcome.h). One call:
 *
 *   route()  when posted (in MPI_Iallreduce, so in the same order on every
 *            rank): LOCAL (done, result in recv), PREVIOUS (the glue hands
 *            it to the previous module's iallreduce), SWITCH (queued on the
 *            communicator, streamed when the calls before it ended) or
 *            FAILED. Depends only on the call and on state every rank had
 *            agreed before it was posted, so every rank routes alike.
 *   start() / step()  the stream, one at a time per communicator, from
 *            the engine's progress (or the posting call): PENDING (still
 *            streaming), DECLINED (alike on every rank: the path failed on
 *            an earlier call, redo on the host without an agreement),
 *            NOT_NOW (a blocking switchagg call runs on this thread: try
 *            later) or this rank's outcome (DONE, BUSY or FAILED).
 *   settle() after this rank's outcome: the outcome every rank will see,
 *            or PENDING (the ranks must agree first), NOT_NOW, ERROR.
 *   end()    the ranks' agreed outcome (settled, or the host's agreement)
 *            and the lowest rank with it: DONE = the result is committed
 *            in recv, BUSY or FAILED = redo on the host from the intact
 *            input (counted by reason).
 * Plain C: included by the glue. */
#ifndef SWITCHAGG_COLL_IALLREDUCE_H
#define SWITCHAGG_COLL_IALLREDUCE_H

#include <stddef.h>
#include <stdint.h>

#include "coll_core.h"

#ifdef __cplusplus
extern "C" {
#endif

enum switchagg_coll_iroute {
  SWITCHAGG_COLL_IROUTE_LOCAL = 0,
  SWITCHAGG_COLL_IROUTE_SWITCH = 1,
  SWITCHAGG_COLL_IROUTE_PREVIOUS = 2,
  SWITCHAGG_COLL_IROUTE_FAILED = 3
};


/* send == NULL: in place. dtype/op as for switchagg_coll_allreduce. */
int switchagg_coll_iallreduce_route(switchagg_coll_comm_t *comm, const void *send, void *recv,
                                    size_t count, int dtype, int op);
/* MPI_Ibarrier: the same stream as a one-int32 sum of ones (the result is
 * the number of ranks that entered: the glue checks it is the size), when
 * the barrier policy puts barriers on the switch (offload on). */
int switchagg_coll_ibarrier_route(switchagg_coll_comm_t *comm);
/* MPI_Iallgather, MPI_Ibcast, MPI_Ireduce_scatter_block (routed_op
 * SWITCHAGG_COLL_ALLGATHER, _BCAST or _REDUCE_SCATTER_BLOCK, coll_kind.h):
 * allgather `count` bytes per rank and bcast `count` bytes from root (byte
 * images; dtype/op unused), reduce_scatter_block `count` elements of
 * dtype/op per rank (send NULL: in place, the whole vector in recv, the
 * result at its start). The route as for MPI_Iallreduce (LOCAL:
 * count 0 or one rank, nothing copied: the glue hands it to the previous
 * module, whose trivial copy honours any datatype); the stream started by
 * istream_start (send NULL: in place; bcast: the buffer is recv), then
 * istream_step / _settle / _end as MPI_Iallreduce's. Counted as
 * iallgather:* / ibcast:* / ireduce_scatter_block:*, the same names as
 * iallreduce:*. */
int switchagg_coll_irouted_route(switchagg_coll_comm_t *comm, int routed_op, size_t count,
                                 int dtype, int op, int root);
/* A stream's start, one entry for every kind (switchagg_coll_kind):
 * SWITCHAGG_COLL_ALLREDUCE; _BARRIER, an MPI_Ibarrier's one-int32 sum of
 * ones (counted as ibarrier:*); a routed kind as above (root: bcast's). */
int switchagg_coll_istream_start(switchagg_coll_comm_t *comm, int kind, const void *send,
                                 void *recv, size_t count, int dtype, int op, int root);
int switchagg_coll_istream_step(switchagg_coll_comm_t *comm);
int switchagg_coll_istream_end(switchagg_coll_comm_t *comm, int agreed, int first_rank);
/* After this rank's outcome (DONE, BUSY or FAILED), before any agreement:
 * a small call completes on one agent round trip (docs/offload.md
 * "Completion"). Returns the settled outcome (DONE, BUSY or FAILED: what
 * every rank will see; pass it to _end with first_rank -1), PENDING (the
 * call needs the ranks' agreement), NOT_NOW (a failure must be recovered
 * and a blocking switchagg call runs on this thread: try later) or ERROR
 * (recovery could not decide: the request fails). */
int switchagg_coll_istream_settle(switchagg_coll_comm_t *comm, int outcome);
/* For a glue whose own progress thread runs the queue and never calls MPI
 * (the PMPI layer under MPICH, docs/pmpi.md "MPI_Iallreduce"):
 *   thread_without_mpi  marks the calling thread (once, before its first
 *                       call below): the core's waits on it skip the MPI
 *                       progress hook and its agreements run over the
 *                       communicator's own transport. Needs
 *                       switchagg_coll_enable_gate (two threads).
 *   host_ready          1 when the communicator's own transport is up
 *                       (alike on every rank after the route set it up):
 *                       without it the two calls below cannot run.
 *   istream_agree       the outcome agreement over that transport, for
 *                       a settle that answered PENDING: the worst outcome of all ranks
 *                       (*agreed) and the lowest rank with it; pass both to
 *                       _end. 0, or -1 when it failed (the request fails).
 *   iredo_host          the redo _end asked for (it returned 1), from the
 *                       intact input, over that transport, for a call of
 *                       `kind` (arguments as istream_start's): an
 *                       allreduce on the host algorithm the cost model
 *                       rates fastest (the same on every rank); MPI_Ibarrier
 *                       a one-int32 sum that must come to the size;
 *                       MPI_Iallgather / MPI_Ibcast / MPI_Ireduce_scatter_block
 *                       as allreduces: allgather and bcast a bytewise OR of
 *                       zero-filled images (every rank's block in its slot;
 *                       the root's buffer), reduce_scatter_block the whole
 *                       vector reduced, then this rank's block (correct,
 *                       not bandwidth-optimal: only failures take it).
 *                       0, or -1 (the request fails; the communicator is
 *                       unusable, as after a host algorithm's failure). */
void switchagg_coll_thread_without_mpi(void);
int switchagg_coll_host_ready(switchagg_coll_comm_t *comm);
int switchagg_coll_istream_agree(switchagg_coll_comm_t *comm, int outcome, int *agreed,
                                 int *first_rank);
int switchagg_coll_iredo_host(switchagg_coll_comm_t *comm, int kind, const void *send,
                              void *recv, size_t count, int dtype, int op, int root);
/* Counts a glue-side event of a nonblocking call of `kind`
 * (switchagg_coll_kind; read as iallreduce:<what>, ibarrier:<what>, ...):
 * "queued" (posted behind another switch call on the communicator), "error"
 * (an agreement or redo failed), or a reason the glue sent the call to the
 * previous module without asking ("previous:<reason>"). */
void switchagg_coll_inote(switchagg_coll_comm_t *comm, int kind, const char *what);

#ifdef __cplusplus
}

#include <map>
#include <string>

namespace switchagg::coll {

// Per communicator, read as "iallreduce:*" (docs/offload.md).
struct IallreduceCounters {
  uint64_t calls = 0;     // iallreduce:calls, every MPI_Iallreduce the core routed
  uint64_t local = 0;     // iallreduce:local, count 0 or one rank
  uint64_t switched = 0;  // iallreduce:switch, served by the agent
  uint64_t previous = 0;  // iallreduce:previous, posted to the previous module
  uint64_t redo = 0;      // iallreduce:redo, streamed or queued, then redone on the host
  uint64_t steps = 0;     // iallreduce:steps, stream steps made (progress included)
  uint64_t inherited = 0;     // iallreduce:inherited, routed by the blocking calls' settled verdict
  uint64_t agreements = 0;    // iallreduce:agreements, streams settled by the outcome agreement
  uint64_t agreement_us = 0;  // iallreduce:agreement_us, this rank's time from its own
                              // outcome to the agreement's end, summed
  std::map<std::string, uint64_t> events;  // iallreduce:<reason> (previous:*, redo:*, queued, error)
};

// `prefix`: "iallreduce:", "ibarrier:", "iallgather:", "ibcast:" or
// "ireduce_scatter_block:" (the same counters for each).
bool iallreduceCounter(const IallreduceCounters& c, const std::string& prefix,
                       const std::string& name, uint64_t* value);

}  // namespace switchagg::coll
#endif

#endif /* SWITCHAGG_COLL_IALLREDUCE_H */
