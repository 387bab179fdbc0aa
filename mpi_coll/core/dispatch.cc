#include "dispatch.h"

#include "peer_group_comm.h"
#include "process_runtime.h"
#include "switch_path.h"
#include "switchagg/common/log.h"
#include "switchagg/common/reduce.h"

namespace switchagg::coll {
namespace {

Status runHost(CommState& state, Algorithm a, const AllreduceArgs& args) {
  PeerGroupComm comm(state.peerGroup(), state.nextSequence(),
                     ProcessRuntime::instance().params().stall);
  switch (a) {
    case Algorithm::kRing: return allreduceRing(comm, args);
    case Algorithm::kRecursiveDoubling: return allreduceRecursiveDoubling(comm, args);
    case Algorithm::kRabenseifner: return allreduceRabenseifner(comm, args);
    case Algorithm::kHierarchical: return allreduceHierarchical(comm, args, state.layout());
    default: return Status(Code::kInternal, "not a host algorithm");
  }
}

SelectionInput describeCall(CommState& state, const AllreduceArgs& args) {
  SelectionInput in;
  in.bytes = args.count * dtypeSize(args.dtype);
  in.comm_size = state.size();
  in.ranks_per_node = state.layout().max_ranks_per_node;
  in.nodes = state.layout().nodes;
  in.dtype = args.dtype;
  in.op = args.op;
  if (SwitchPath* sw = state.switchPath()) sw->describe(args, &in);
  return in;
}

void announce(CommState& state, Algorithm a, const SelectionInput& in, const Decision& d) {
  if (state.rank() != 0) return;
  // verbose 1: the first time each path serves on this communicator;
  // verbose 2: every call.
  const bool first = state.counters().served[static_cast<size_t>(a)] == 0;
  const LogLevel level = first ? LogLevel::kInfo : LogLevel::kDebug;
  SWITCHAGG_LOG(level, "coll", "comm %s: allreduce %zu bytes (%s %s) -> %s (%s)",
                state.name().c_str(), in.bytes, dtypeName(in.dtype), opName(in.op),
                algorithmName(a), d.reason.c_str());
}

// The host algorithm the cost model rates fastest for this call.
Algorithm cheapestHost(const SelectionInput& in) {
  const CostModel& model = ProcessRuntime::instance().selector().model();
  Algorithm best = Algorithm::kRecursiveDoubling;
  double best_us = model.predictUs(best, in);
  for (const AlgorithmInfo& info : algorithmRegistry()) {
    if (!isHostAlgorithm(info.id)) continue;
    const double us = model.predictUs(info.id, in);
    if (us < best_us) {
      best = info.id;
      best_us = us;
    }
  }
  return best;
}

Outcome fail(CommState& state, Algorithm a, const Status& st) {
  state.markBroken();
  SA_ERROR("coll", "comm %s rank %d: %s allreduce failed: %s; returning MPI_ERR_OTHER (%s)",
           state.name().c_str(), state.rank(), algorithmName(a), st.toString().c_str(),
           st.code() == Code::kTimeout ? "a step stalled past coll_switchagg_stall_timeout"
                                       : "a peer failed, the result would be wrong");
  return Outcome::kFailed;
}

}  // namespace

Outcome dispatchAllreduce(CommState& state, const AllreduceArgs& args, bool previous_differs) {
  if (state.broken()) return Outcome::kFailed;
  if (args.count == 0 || state.size() == 1) {
    copyInput(args);
    state.recordLocal();
    return Outcome::kServed;
  }
  if (!reduceSupported(args.dtype, args.op)) {
    state.recordFallback("op not defined on datatype");
    return Outcome::kDeclined;
  }
  state.ensureSetup();
  const SelectionInput in = describeCall(state, args);
  const Decision& decision = state.decide(in);
  for (Algorithm a : decision.ranked) {
    if (a == Algorithm::kPrevious && previous_differs && state.hostReady() &&
        ProcessRuntime::instance().params().policy.forced != "previous") {
      // All ranks see the same flag (it depends on dtype/op only).
      a = cheapestHost(in);
    }
    if (a == Algorithm::kPrevious) {
      announce(state, a, in, decision);
      state.recordFallback(state.hostReady() ? kFallbackSelected : "host path unavailable");
      return Outcome::kDeclined;
    }
    if (a == Algorithm::kSwitch) {
      SwitchPath* sw = state.switchPath();
      if (!sw) continue;
      Status st = sw->allreduce(args);
      if (st.code() == Code::kUnsupported) continue;
      if (!st.ok()) return fail(state, a, st);
      announce(state, a, in, decision);
      state.recordServed(a);
      return Outcome::kServed;
    }
    if (!state.hostReady()) continue;
    announce(state, a, in, decision);
    Status st = runHost(state, a, args);
    if (!st.ok()) return fail(state, a, st);
    state.recordServed(a);
    return Outcome::kServed;
  }
  state.recordFallback("no candidate");
  return Outcome::kDeclined;
}

}  // namespace switchagg::coll
