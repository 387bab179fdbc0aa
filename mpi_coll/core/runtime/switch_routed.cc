// The routed collectives through the switch path (docs/offload.md "Routed
// collectives"): reduce, reduce-scatter, allgather, bcast, every rank a
// member (the call, its completion, the nonblocking stream); what a call
// looks like on the path (describe, placement, this rank's agent call):
// switch_routed_plan.cc; with node leaders: switch_routed_leaders.cc.
#include "switch_path_internal.h"

#include <cinttypes>
#include <cstring>

#include "process_runtime.h"
#include "switchagg/common/log.h"
#include "switchagg/common/reduce.h"

namespace switchagg::coll::switch_detail {

// Allgather and bcast leave the same vector on every rank, so a member
// that missed it can copy it from one that has it: one round trip
// ("Completion").
Status AgentSwitchPath::routedForwardOneRoundTrip(const RoutedArgs& args, const RoutedPlan& plan,
                                                  size_t vector_bytes, CallOutcome* how) {
  ledger_->begin();
  const Status mine = streamRouted(plan.call, vector_bytes);
  if (mine.ok()) unplace(args, plan);
  void* whole = routedWhole(args, mine, vector_bytes);
  int source = -1;
  Result<CallOutcome> end = settle(mine, whole, vector_bytes, &source, collKindName(args.op));
  if (!end.ok()) return end.status();
  if (*end == CallOutcome::kDone) {
    ++routed_calls_;
    ++one_trip_;
    *how = CallOutcome::kDone;
    return Status::Ok();
  }
  if (plan.restore && plan.commit_bytes)
    std::memcpy(plan.restore, scratch_.data(), plan.commit_bytes);
  if (*end == CallOutcome::kBusy) {
    ++busy_;
    *how = CallOutcome::kBusy;
    return Status::Ok();
  }
  giveUp(mine, firstFailed(mine, source), collKindName(args.op),
         "no member had the result (all asked); redone on the previous module");
  *how = CallOutcome::kFailed;
  return Status::Ok();
}

// One routed call: the RoutedCall for this rank (planRouted), the client's
// stream (all stripes), then the allreduce's one-byte outcome agreement (or
// one round trip: "Completion").
Status AgentSwitchPath::routed(const RoutedArgs& args, CallOutcome* how) {
  if (describeRouted(args, nullptr) != nullptr || (!leaders_ && !group_))
    return Status(Code::kUnsupported, "switch path cannot route this call");
  if (leaders_) return routedLeaders(args, how);
  const int size = comm_.size();
  const RoutedPlan plan = planRouted(args);
  const agent::RoutedCall& call = plan.call;
  last_bytes_sent_ = 0;
  const size_t vector_bytes = routedVectorBytes(args, size);
  // Reduce and reduce-scatter: a result per rank, recovered from the
  // members' inputs after a failure; one round trip ("Completion").
  if (ledger_ && oneRoundTrip(vector_bytes) && isReduction(args.op))
    return routedReduction(args, call, plan.lo, plan.hi, plan.commit, how);
  if (ledger_ && oneRoundTrip(vector_bytes) &&
      (args.op == SWITCHAGG_COLL_ALLGATHER || args.op == SWITCHAGG_COLL_BCAST))
    return routedForwardOneRoundTrip(args, plan, vector_bytes, how);
  const Status mine = streamRouted(call, vector_bytes);
  if (mine.ok()) unplace(args, plan);  // recv is only output: written before the agreement
  std::vector<uint8_t> oks;
  SWITCHAGG_RETURN_IF_ERROR(agree(mine, &oks));
  if (allDone(oks)) {
    if (plan.commit && plan.commit_bytes)
      std::memcpy(plan.commit, scratch_.data(), plan.commit_bytes);
    ++routed_calls_;
    *how = CallOutcome::kDone;
    return Status::Ok();
  }
  if (plan.restore && plan.commit_bytes)
    std::memcpy(plan.restore, scratch_.data(), plan.commit_bytes);
  return endRoutedUnserved(mine, oks, args.op, how);
}

// A routed reduction in one round trip. Success: this member's input is
// kept (a member whose call failed may need its part), its result
// committed. Failure here: the parts [lo, hi) of every member's input,
// folded in member order with the agent's kernel, give the agent's bits
// whenever some member is done (docs/offload.md "Completion").
Status AgentSwitchPath::routedReduction(const RoutedArgs& args, const agent::RoutedCall& call,
                                        size_t lo, size_t hi, void* commit, CallOutcome* how) {
  const size_t vector_bytes = call.total * dtypeSize(args.dtype);
  ledger_->begin();
  Status mine = streamRouted(call, vector_bytes);
  mine = testCut(mine);
  // The result: the caller's buffer, or scratch until committed (in place).
  uint8_t* out = static_cast<uint8_t*>(commit ? scratch_.data() : call.out);
  Result<CallOutcome> end = settleReduction(mine, args, call.in, vector_bytes, out, lo, hi);
  if (!end.ok()) return end.status();
  if (*end == CallOutcome::kDone && commit && hi > lo) std::memcpy(commit, out, hi - lo);
  return endRoutedOneRoundTrip(*end, mine, args.op, how);
}

Result<CallOutcome> AgentSwitchPath::settleReduction(const Status& mine, const RoutedArgs& args,
                                                     const void* input, size_t vector_bytes,
                                                     uint8_t* out, size_t lo, size_t hi) {
  const char* what = collKindName(args.op);
  if (std::optional<CallOutcome> here = settledHere(mine, input, vector_bytes)) return *here;
  // No input here (the node's reduce failed first): this member sent
  // nothing, so nobody can be done and nobody needs its part.
  ledger_->failed(input, input ? vector_bytes : 0);
  logFailedHere(mine, what);
  std::vector<std::vector<uint8_t>> parts;
  Result<Recovery> r = ledger_->gatherInputs(lo, input ? hi : lo, &parts,
                                             ProcessRuntime::instance().params().stall);
  if (!r.ok()) return r.status();
  if (r->outcome != CallOutcome::kDone) return r->outcome;
  if (hi > lo)  // the agent's order: rank order, or a tree's (leaf by leaf)
    SWITCHAGG_RETURN_IF_ERROR(
        tree_.fold(args.dtype, args.reduce_op, out, parts, (hi - lo) / dtypeSize(args.dtype)));
  ++recovered_;
  SA_INFO("coll",
          "comm %s rank %d: switch %s call %" PRIu64 " failed here (%s); rank %d had finished "
          "it, so its result was folded from the members' inputs in the agent's order "
          "(switch:recovered), switch path kept",
          comm_.name().c_str(), comm_.rank(), what, ledger_->seq(), mine.toString().c_str(),
          r->source);
  return CallOutcome::kDone;
}

// A one-round-trip routed call's outcome on every rank, counted.
Status AgentSwitchPath::endRoutedOneRoundTrip(CallOutcome outcome, const Status& mine,
                                              CollKind op, CallOutcome* how) {
  if (outcome == CallOutcome::kDone) {
    ++routed_calls_;
    ++one_trip_;
    *how = CallOutcome::kDone;
  } else if (outcome == CallOutcome::kBusy) {
    ++busy_;
    *how = CallOutcome::kBusy;
  } else {
    giveUp(mine, firstFailed(mine, -1), collKindName(op),
           "no member had finished the call (all asked); redone on the previous module");
    *how = CallOutcome::kFailed;
  }
  return Status::Ok();
}

// A client's decline of a routed call is unexpected (checked before, alike
// everywhere): no harm done, redo the call, keep the path.
Status routedDecline(const Status& st) {
  if (st.code() == Code::kUnsupported || st.code() == Code::kInvalidArgument)
    return Status(Code::kBusy, "client declined the routed call: " + st.message());
  return st;
}

Status AgentSwitchPath::streamRouted(const agent::RoutedCall& call, size_t bytes) {
  const agent::ClientCounters before = group_->counters();
  Status st = group_->routed(tree_.localize(call), timeoutFor(bytes));
  countStream(before);
  return routedDecline(st);
}

// The whole vector of an allgather or bcast, kept for peers or recovered
// into: recv (a bcast root's own buffer, only read; after a failure there
// its copy goes to scratch).
void* AgentSwitchPath::routedWhole(const RoutedArgs& args, const Status& mine, size_t bytes) {
  return args.op == SWITCHAGG_COLL_BCAST && comm_.rank() == args.root && !mine.ok()
             ? scratchFor(bytes)
             : args.recv;
}

// MPI_Iallgather, MPI_Ibcast, MPI_Ireduce_scatter_block, every rank a
// member or with node leaders (switch_istream_leaders.cc). Decided when
// posted: not joined_.
const char* AgentSwitchPath::describeRoutedStream(const RoutedArgs& args,
                                                  SelectionInput* in) const {
  if (leaders_ && leaders_->nodes() == 1) return "one-node";
  if (!routed_) return "agent-not-routed";
  if (isReduction(args.op) && !info_.caps.supports(args.dtype, args.reduce_op)) return "dtype-op";
  if (in) fill(in);
  return nullptr;
}

// As routed() without the blocking parts: the stream runs from progress
// (stepStream), ends in one round trip up to the keep limit (settle,
// the same recovery as the blocking call) or on the glue's agreement.
Status AgentSwitchPath::startRoutedStream(const RoutedArgs& args) {
  // Alike on every rank: joined_ (an earlier call's failure, agreed before
  // this one started), leaders_, routed_ (a non-leader never holds a group).
  if (describeRouted(args, nullptr) != nullptr || (!leaders_ && !group_))
    return Status(Code::kUnsupported, "switch path cannot stream this routed call");
  stream_ = Stream{};
  stream_.routed = true;
  stream_.rargs = args;
  if (args.counts) {
    // The caller's counts may not outlive the posting call.
    stream_.counts.assign(args.counts, args.counts + comm_.size());
    stream_.rargs.counts = stream_.counts.data();
  }
  stream_.bytes = routedVectorBytes(args, comm_.size());
  stream_.deadline_ms = steadyMs() + timeoutFor(stream_.bytes);
  stream_.out = args.recv;
  stream_.one_trip = oneRoundTrip(stream_.bytes) && (leaders_ || ledger_);
  if (stream_.one_trip && ledger_) ledger_->begin();
  last_bytes_sent_ = 0;
  if (leaders_) return startRoutedLeadersStream();
  stream_.plan = planRouted(stream_.rargs);
  stream_.before = group_->counters();
  Status st = group_->startRouted(tree_.localize(stream_.plan.call));
  if (st.code() == Code::kInProgress) return st;
  countStream(stream_.before);
  stream_.mine = routedDecline(st);
  return stream_.mine;
}

// A routed stream's one-round-trip end (settle): allgather and bcast
// as the blocking calls (the whole vector kept or copied), reductions with
// their inputs kept and folded (settleReduction).
Result<CallOutcome> AgentSwitchPath::settleRoutedStream(const Status& mine, int* source) {
  const RoutedArgs& args = stream_.rargs;
  if (!isReduction(args.op))
    return settle(mine, routedWhole(args, mine, stream_.bytes), stream_.bytes, source,
                  collKindName(args.op));
  const agent::RoutedCall& call = stream_.plan.call;
  uint8_t* out = static_cast<uint8_t*>(stream_.plan.commit ? scratch_.data() : call.out);
  return settleReduction(mine, args, call.in, stream_.bytes, out, stream_.plan.lo,
                         stream_.plan.hi);
}

CallOutcome AgentSwitchPath::endRoutedStream(CallOutcome agreed, int first_rank) {
  const RoutedPlan& plan = stream_.plan;
  const char* what = collKindName(stream_.rargs.op);
  if (agreed == CallOutcome::kDone) {
    if (leaders_) deliverRoutedLeaders();
    else if (plan.commit && plan.commit_bytes)
      std::memcpy(plan.commit, scratch_.data(), plan.commit_bytes);
    ++routed_calls_;
    return CallOutcome::kDone;
  }
  if (plan.restore && plan.commit_bytes)
    std::memcpy(plan.restore, scratch_.data(), plan.commit_bytes);
  if (agreed == CallOutcome::kBusy) {  // redone on the previous module
    ++busy_;
    return CallOutcome::kBusy;
  }
  giveUp(stream_.mine, first_rank, what,
         stream_.settled ? "no member had the result (all asked); redone on the previous module"
                         : "redone on the previous module");
  return CallOutcome::kFailed;  // redone on the previous module
}

Status AgentSwitchPath::endRoutedUnserved(const Status& mine, const std::vector<uint8_t>& oks,
                                          CollKind op, CallOutcome* how) {
  if (!anyFailed(oks)) {
    ++busy_;
    *how = CallOutcome::kBusy;
    return Status::Ok();
  }
  giveUp(mine, firstFailedRank(oks), collKindName(op), "redone on the previous module");
  *how = CallOutcome::kFailed;
  return Status::Ok();
}

void* AgentSwitchPath::scratchFor(size_t bytes) {
  if (scratch_.size() < bytes) scratch_.resize(bytes);
  return bytes ? static_cast<void*>(scratch_.data()) : no_output_;
}

}  // namespace switchagg::coll::switch_detail
