// The slot for the switch candidate (offload to the switch agent), shaped
// as a collective task: one SwitchCall names the kind of collective
// (allreduce, barrier, a routed reduce / reduce_scatter(_block) /
// allgather / bcast) and whether it is blocking or streamed; the callers
// (dispatch, barrier, routed, iallreduce) ask the path:
//
//   rejoinIfDue() once per call, first: after a failure, rejoins the agent
//                when due (collective: the only communication outside a
//                call);
//   describe()   fills SelectionInput's switch fields (available, window,
//                slot bytes) so the selector can rank `switch`, or says
//                why the path cannot serve the call; local;
//   start()      runs the call: a blocking call ends in start(); a
//                streamed one returns kInProgress, then
//   step()       until it ends, and
//   settle()     / finish(): the ranks' outcome and the commit or restore.
//
// How a call ended is one CallOutcome (call_outcome.h) for every kind and
// both shapes. All must give the same answer on every rank of the
// communicator for the same call, as every candidate must (see
// dispatch.cc). The path sees its communicator only as a CommGroup.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "call_outcome.h"
#include "comm_group.h"
#include "cost_model.h"
#include "host_algorithms.h"
#include "switchagg/common/status.h"

namespace switchagg::coll {

// One routed collective (docs/offload.md "Routed collectives"), as the
// glue hands it over: reductions in the call's dtype/op, forwards
// (allgather, bcast) as bytes.
struct RoutedArgs {
  CollKind op = SWITCHAGG_COLL_REDUCE;
  const void* send = nullptr;  // nullptr: MPI_IN_PLACE (root / every rank)
  void* recv = nullptr;        // reduce: significant at the root only
  // reduce: elements; allgather: bytes of one rank's block; bcast: bytes.
  size_t count = 0;
  const size_t* counts = nullptr;  // reduce_scatter(_block): elements per rank, size entries
  Dtype dtype = Dtype::kUint8;     // reductions only
  Op reduce_op = Op::kSum;
  int root = 0;  // reduce, bcast
};

// Bytes of the routed vector (reduce, reduce_scatter: every element;
// allgather: all blocks; bcast: the buffer) for a communicator of `size`.
size_t routedVectorBytes(const RoutedArgs& args, int size);

// One call on the switch path: the kind of collective and its arguments.
struct SwitchCall {
  // SWITCHAGG_COLL_ALLREDUCE, _BARRIER, or a routed kind (routed.op).
  CollKind kind = SWITCHAGG_COLL_ALLREDUCE;
  // allreduce; a streamed barrier: the one-int32 sum of ones whose result
  // is the number of ranks that entered (a blocking barrier: unused).
  AllreduceArgs allreduce;
  RoutedArgs routed;  // the routed kinds
  // A nonblocking call: decided when it is posted and run later in steps
  // from progress (iallreduce.h), the agreement left to the caller.
  bool stream = false;

  static SwitchCall ofAllreduce(const AllreduceArgs& args, bool stream) {
    SwitchCall c;
    c.allreduce = args;
    c.stream = stream;
    return c;
  }
  static SwitchCall ofBarrier(const AllreduceArgs& sum_of_ones, bool stream) {
    SwitchCall c = ofAllreduce(sum_of_ones, stream);
    c.kind = SWITCHAGG_COLL_BARRIER;
    return c;
  }
  static SwitchCall ofRouted(const RoutedArgs& args, bool stream) {
    SwitchCall c;
    c.kind = args.op;
    c.routed = args;
    c.stream = stream;
    return c;
  }
};

class SwitchPath {
 public:
  virtual ~SwitchPath() = default;
  // Every rank calls it for the same calls in the same order.
  virtual void rejoinIfDue() {}
  // Null after filling `in`'s switch fields (`in` may be null for a routed
  // call) when the path can serve the call, else why not, alike on every
  // rank. Allreduce: always null (blocking: `in` says whether the path is
  // available; streamed: `in` is left alone when the path cannot stream
  // it). A blocking barrier: null (start() declines when it cannot). A
  // routed call: "unavailable" (failed, not rejoined; blocking only),
  // "one-node" (node leaders with every rank on one node: nothing to
  // route), "agent-not-routed" (an agent predates routed calls),
  // "dtype-op" (the agent does not reduce the pair). A streamed call is
  // decided when it is posted and streamed later, so describe() must not
  // depend on an outcome some ranks have not seen yet (a failure being
  // agreed; not whether the path is joined now).
  virtual const char* describe(const SwitchCall& call, SelectionInput* in) const = 0;
  // Starts the call. Every kind, both shapes, answers alike:
  //   kInProgress  a streamed call runs: step() until something else;
  //   kUnsupported declined on every rank alike, nothing sent or touched
  //                (blocking: the next candidate or the previous module
  //                serves; streamed: the path failed on an earlier call, the
  //                caller redoes the call on the host);
  //   Ok           it ended, *how says how: blocking, the ranks' agreed
  //                outcome (kDone: the result is in place; kBusy, kFailed:
  //                nothing committed, the input intact, the caller redoes
  //                the call; a failure disables the path until it rejoins;
  //                a blocking barrier's kBusy/kFailed: every rank entered,
  //                proven by the agreement itself); streamed, this rank's
  //                own outcome, for settle() or the caller's agreement;
  //   other error  the call failed (blocking: the agreement itself failed,
  //                the ranks may disagree: the MPI error path).
  // A blocking allreduce ends with kDone or declines: a failure it can
  // recover from on the host is kUnsupported (the next candidate serves).
  virtual Status start(const SwitchCall& call, CallOutcome* how) = 0;
  // One step of the streamed call start() left running: as start().
  virtual Status step(CallOutcome* how) {
    *how = CallOutcome::kFailed;
    return Status(Code::kInternal, "no stream running");
  }
  // One-round-trip completion of the streamed call (docs/offload.md
  // "Completion"), once it has this rank's outcome: Ok with *agreed (this
  // rank's outcome, or after a failure what recovery learnt from the other
  // members: kDone, kBusy or kFailed) for finish(agreed, -1). settles()
  // says, alike on every rank, whether it applies; when it does not the
  // caller agrees the ranks' outcomes itself. An error: recovery could not
  // decide.
  virtual bool settles() const { return false; }
  virtual Status settle(CallOutcome outcome, CallOutcome* agreed) {
    (void)outcome;
    (void)agreed;
    return Status(Code::kInternal, "no switch stream");
  }
  // The streamed call's end: the ranks' agreed outcome (kDone, kBusy,
  // kFailed: the worst) and the lowest rank with it (-1 after settle()).
  // kDone: the result is in place; kBusy or kFailed: redo on the host, the
  // input intact (an in-place allgather's own block restored; counted, a
  // failure disables the path as for a blocking call).
  virtual CallOutcome finish(CallOutcome agreed, int first_rank) {
    (void)agreed;
    (void)first_rank;
    return CallOutcome::kFailed;
  }
  // Counters the switch path keeps ("switch:bytes_sent",
  // "fallback:switch-failed", "fallback:switch-busy", ...; docs/offload.md). False: not one of its
  // names, the caller looks elsewhere.
  virtual bool counter(const std::string& /*name*/, uint64_t* /*value*/) const { return false; }
  // Changes, alike on every rank, whenever the path fails or rejoins: what
  // online tuning measured of it before no longer holds.
  virtual uint64_t epoch() const { return 0; }
};

// The switch path for a communicator, or nullptr when this build or this
// job has none (no lease in the environment). Called once per communicator,
// after its address exchange.
std::unique_ptr<SwitchPath> createSwitchPath(CommGroup& comm);

}  // namespace switchagg::coll
