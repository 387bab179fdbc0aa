// MPI_Barrier through the switch path (docs/offload.md "Barrier").
#include "switch_path_internal.h"

#include <cinttypes>
#include <cstring>

#include "process_runtime.h"
#include "switchagg/common/log.h"

namespace switchagg::coll::switch_detail {

// One agent round trip (a one-element int32 sum: the members' count comes
// back only once every member sent), then the same one-byte outcome
// agreement as an allreduce. The agreement is what keeps a failure safe: a
// rank whose agent call failed cannot know whether the others left, and the
// agreement cannot complete before every rank entered, so once it is done
// the barrier is complete on every rank whatever the agent did. A failure
// then only disables the path (giveUp: same rejoin rules as allreduce).
// With node leaders only the leaders call the agent; the agreement spans
// every rank, so it also releases each node.
Status AgentSwitchPath::barrier(CallOutcome* how) {
  if (!joined_ || !info_.caps.supports(Dtype::kInt32, Op::kSum))
    return Status(Code::kUnsupported, "switch path cannot serve a barrier");
  if (oneRoundTrip(0)) return barrierOneRoundTrip(how);
  Status mine;
  if (group_) {
    const int32_t one = 1;
    int32_t entered = 0;
    mine = group_->allreduce(Dtype::kInt32, Op::kSum, &one, &entered, 1, timeoutFor(0));
    const int32_t members = leaders_ ? leaders_->nodes() : comm_.size();
    if (mine.ok() && entered != members)
      mine = Status(Code::kInternal, "agent barrier counted " + std::to_string(entered) +
                                         " members, expected " + std::to_string(members));
  }
  std::vector<uint8_t> oks;
  SWITCHAGG_RETURN_IF_ERROR(agree(mine, &oks));
  if (allDone(oks)) {
    ++barriers_;
    *how = CallOutcome::kDone;
    return Status::Ok();
  }
  if (!anyFailed(oks)) {
    ++barrier_busy_;
    ++busy_;
    *how = CallOutcome::kBusy;
    return Status::Ok();
  }
  ++barrier_failed_;
  giveUp(mine, firstFailedRank(oks), "barrier", "barrier completed by the agreement");
  *how = CallOutcome::kFailed;
  return Status::Ok();
}

// One agent round trip: a member that got the count of every member back
// knows that every rank entered (with node leaders, each leader joined the
// agent only after its node's ranks reached it: the node reduce). If this
// member's call failed, another member that got the count proves the same
// (recovery). Only when no member has it - busy or failed - is the barrier
// completed on the host, by the outcome agreement (an allgather every rank
// reaches, so it is a barrier itself).
Status AgentSwitchPath::barrierOneRoundTrip(CallOutcome* how) {
  Status mine;
  const int32_t one = 1;
  if (leaders_) {
    AllreduceArgs node;
    node.send = &one;
    node.recv = &barrier_sink_;
    node.count = 1;
    node.dtype = Dtype::kInt32;
    node.op = Op::kSum;
    mine = leaders_->reduce(node).status();
  }
  int source = -1;
  if (ledger_) {
    ledger_->begin();
    int32_t entered = 0;
    if (mine.ok())
      mine = group_ ? group_->allreduce(Dtype::kInt32, Op::kSum, &one, &entered, 1, timeoutFor(0))
                    : Status(Code::kAborted, "the switch group was lost in an earlier call");
    const int32_t members = leaders_ ? leaders_->nodes() : comm_.size();
    if (mine.ok() && entered != members)
      mine = Status(Code::kInternal, "agent barrier counted " + std::to_string(entered) +
                                         " members, expected " + std::to_string(members));
  }
  Result<CallOutcome> end = endOneRoundTrip(mine, nullptr, nullptr, 0, &source, "barrier");
  if (!end.ok()) return end.status();
  const CallOutcome outcome = *end;
  if (outcome == CallOutcome::kDone) {
    ++barriers_;
    ++one_trip_;
    *how = CallOutcome::kDone;
    return Status::Ok();
  }
  std::vector<uint8_t> oks;
  SWITCHAGG_RETURN_IF_ERROR(agree(mine, &oks));
  if (outcome == CallOutcome::kBusy) {
    ++barrier_busy_;
    ++busy_;
    *how = CallOutcome::kBusy;
    return Status::Ok();
  }
  ++barrier_failed_;
  giveUp(mine, firstFailed(mine, source), "barrier", "barrier completed by the agreement");
  *how = CallOutcome::kFailed;
  return Status::Ok();
}

}  // namespace switchagg::coll::switch_detail
