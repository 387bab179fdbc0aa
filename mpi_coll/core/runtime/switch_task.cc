// The switch path as a collective task (switch_path.h): describe / start /
// step / settle / finish for every kind of call, each kind's own code in
// its file (switch_allreduce.cc, switch_barrier_path.cc, switch_routed*.cc).
// Here only the one contract every kind answers with: kInProgress,
// kUnsupported (declined), Ok with *how, or the error path.
#include "switch_path_internal.h"

namespace switchagg::coll::switch_detail {

namespace {

// A streamed call's Status (kInProgress, or this rank's outcome as a
// Status: Ok, kBusy, anything else failed; from a start, kUnsupported:
// declined) in the task's terms.
Status streamed(const Status& st, bool started, CallOutcome* how) {
  if (st.code() == Code::kInProgress || (started && st.code() == Code::kUnsupported)) return st;
  *how = outcomeOf(st);
  return Status::Ok();
}

}  // namespace

const char* AgentSwitchPath::describe(const SwitchCall& call, SelectionInput* in) const {
  switch (call.kind) {
    case SWITCHAGG_COLL_ALLREDUCE:
    case SWITCHAGG_COLL_BARRIER:
      if (in != nullptr) {
        if (call.stream) describeStream(call.allreduce, in);
        else if (call.kind == SWITCHAGG_COLL_ALLREDUCE) describe(call.allreduce, in);
      }
      return nullptr;
    default:
      return call.stream ? describeRoutedStream(call.routed, in) : describeRouted(call.routed, in);
  }
}

Status AgentSwitchPath::start(const SwitchCall& call, CallOutcome* how) {
  *how = CallOutcome::kFailed;
  if (call.stream) {
    if (call.kind == SWITCHAGG_COLL_ALLREDUCE || call.kind == SWITCHAGG_COLL_BARRIER)
      return streamed(startStream(call.allreduce, call.kind == SWITCHAGG_COLL_BARRIER), true,
                      how);
    return streamed(startRoutedStream(call.routed), true, how);
  }
  switch (call.kind) {
    case SWITCHAGG_COLL_ALLREDUCE: {
      Status st = allreduce(call.allreduce);
      if (st.ok()) *how = CallOutcome::kDone;
      return st;
    }
    case SWITCHAGG_COLL_BARRIER: return barrier(how);
    default: return routed(call.routed, how);
  }
}

Status AgentSwitchPath::step(CallOutcome* how) {
  *how = CallOutcome::kFailed;
  return streamed(stepStream(), false, how);
}

}  // namespace switchagg::coll::switch_detail
