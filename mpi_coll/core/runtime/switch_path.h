// The slot for the switch candidate (offload to the switch agent). Dispatch
// asks it three things per call and knows nothing else about it:
//
//   rejoinIfDue() once per call, first: after a failure, rejoins the agent
//                when due (collective: the only communication outside
//                allreduce());
//   describe()   fills SelectionInput's switch fields (available, window,
//                slot bytes) so the selector can rank `switch`; local;
//   allreduce()  runs the call when `switch` is tried.
//
// All must give the same answer on every rank of the communicator for the
// same call, as every candidate must (see dispatch.cc). The path sees its
// communicator only as a CommGroup.
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

class SwitchPath {
 public:
  virtual ~SwitchPath() = default;
  // Every rank calls it for the same calls in the same order.
  virtual void rejoinIfDue() {}
  virtual void describe(const AllreduceArgs& args, SelectionInput* in) const = 0;
  // Ok: the result is in args.recv. kUnsupported: declined before anything
  // was touched, on every rank alike -> dispatch tries the next candidate.
  // Anything else: the call failed and dispatch reports it (a failure the
  // path can recover from on the host is returned as kUnsupported).
  virtual Status allreduce(const AllreduceArgs& args) = 0;
  // MPI_Barrier through the agent (barrier.h, docs/offload.md "Barrier").
  // Ok: every rank entered (through the agent, or - after a failure or a
  // busy refusal, counted - proven by the outcome agreement itself); *how
  // says which (CallOutcome kDone, kBusy, kFailed), alike on every rank.
  // kUnsupported: declined on every rank alike, nothing sent.
  virtual Status barrier(CallOutcome* how) {
    (void)how;
    return Status(Code::kUnsupported, "no switch barrier");
  }
  // A routed collective (routed.h, docs/offload.md "Routed collectives").
  // describeRouted: null after filling `in`'s switch fields (as describe;
  // `in` may be null) when the path can serve the call, else why not, alike
  // on every rank: "unavailable" (failed, not rejoined), "one-node"
  // (node leaders with every rank on one node: nothing to route),
  // "agent-not-routed" (an agent predates routed calls), "dtype-op" (the
  // agent does not reduce the pair). routed(): Ok with *how kDone:
  // the result is in place (the agreement saw every rank ok); Ok with kBusy
  // or kFailed: nothing committed, the input intact, the caller redoes the
  // call on the previous module (a failure disables the path as for
  // allreduce); kUnsupported: declined alike on every rank, nothing sent;
  // any other error: the agreement itself failed.
  virtual const char* describeRouted(const RoutedArgs& /*args*/, SelectionInput* /*in*/) const {
    return "unavailable";
  }
  virtual Status routed(const RoutedArgs& /*args*/, CallOutcome* /*how*/) {
    return Status(Code::kUnsupported, "no switch routing");
  }
  // MPI_Iallreduce (iallreduce.h, docs/offload.md "MPI_Iallreduce"): the
  // same call in steps, driven from Open MPI's progress callback, the
  // agreement left to the caller. describeStream: as describe, for a call
  // decided when it is posted and streamed later, so it must not depend on
  // an outcome some ranks have not seen yet (a failure being agreed); a
  // path that cannot stream the call leaves `in` alone. startStream: kInProgress (call stepStream until it returns
  // something else), kUnsupported (declined alike on every rank, nothing
  // sent: the caller redoes the call on the host), or this rank's outcome.
  // endStream(agreed, first): the ranks' agreed outcome (kDone, kBusy,
  // kFailed: the worst) and the lowest rank with it. kDone: the result is
  // in args.recv; kBusy or kFailed: redo on the host (counted, a failure
  // disables the path as for allreduce).
  virtual void describeStream(const AllreduceArgs& /*args*/, SelectionInput* /*in*/) const {}
  // barrier: the stream is an MPI_Ibarrier (a one-int32 sum of ones whose
  // result is the number of ranks that entered), counted as a barrier.
  virtual Status startStream(const AllreduceArgs& /*args*/, bool /*barrier*/ = false) {
    return Status(Code::kUnsupported, "no switch stream");
  }
  virtual Status stepStream() { return Status(Code::kInternal, "no stream running"); }
  virtual CallOutcome endStream(CallOutcome /*agreed*/, int /*first_rank*/) {
    return CallOutcome::kFailed;
  }
  // One-round-trip completion of the stream (docs/offload.md "Completion"):
  // streamSettles() says, alike on every rank, that the running stream ends
  // without the agreement; settleStream(outcome) then gives *agreed (this
  // rank's outcome, or after a failure what recovery learnt from the other
  // members: kDone, kBusy or kFailed) for endStream(agreed, -1). An error:
  // recovery could not decide.
  virtual bool streamSettles() const { return false; }
  virtual Status settleStream(CallOutcome /*outcome*/, CallOutcome* /*agreed*/) {
    return Status(Code::kInternal, "no switch stream");
  }
  // MPI_Iallgather, MPI_Ibcast, MPI_Ireduce_scatter_block (iallreduce.h): a
  // routed call streamed as
  // the MPI_Iallreduce stream is (stepStream, streamSettles, settleStream,
  // endStream are the same). describeRoutedStream: as describeRouted, for a
  // call decided when it is posted (so nothing a pending outcome changes:
  // not whether the path is joined now): null after filling `in`, else why
  // not ("one-node": node leaders with every rank on one node, "agent-not-routed", "dtype-op"). startRoutedStream:
  // as startStream (kUnsupported: the path failed on an earlier call, alike
  // on every rank, nothing sent). endStream's Ok: the result is in place
  // (an in-place allgather's own block restored before a redo).
  virtual const char* describeRoutedStream(const RoutedArgs& /*args*/,
                                           SelectionInput* /*in*/) const {
    return "no switch stream";
  }
  virtual Status startRoutedStream(const RoutedArgs& /*args*/) {
    return Status(Code::kUnsupported, "no switch stream");
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
