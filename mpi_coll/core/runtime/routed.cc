#include "routed.h"

#include <strings.h>

#include <cstring>

#include "process_runtime.h"
#include "switchagg/common/log.h"

namespace switchagg::coll {
namespace {

// One rank: what the call leaves in recv is its own input.
void copyLocal(const RoutedArgs& args) {
  if (args.send == nullptr || args.recv == nullptr || args.send == args.recv) return;
  size_t bytes = 0;
  switch (args.op) {
    case RoutedOp::kReduce: bytes = args.count * dtypeSize(args.dtype); break;
    case RoutedOp::kReduceScatter:
    case RoutedOp::kReduceScatterBlock: bytes = args.counts[0] * dtypeSize(args.dtype); break;
    case RoutedOp::kAllgather: bytes = args.count; break;
    case RoutedOp::kBcast: return;
  }
  if (bytes) std::memcpy(args.recv, args.send, bytes);
}

Outcome previous(CommState& state, RoutedOp op, const char* reason) {
  recordRoutedFallback(state, op, reason);
  return Outcome::kDeclined;
}

// The first time each op takes the switch on this communicator (verbose 1),
// every call at verbose 2, as dispatch announces allreduce paths.
void announce(const CommState& state, const RoutedArgs& args, size_t bytes, const char* reason) {
  if (state.rank() != 0) return;
  const bool first = state.routedCounters(args.op).switched == 0;
  SWITCHAGG_LOG(first ? LogLevel::kInfo : LogLevel::kDebug, "coll",
                "comm %s: %s %zu bytes -> switch (%s)", state.name().c_str(),
                routedOpName(args.op), bytes, reason);
}

}  // namespace

void recordRoutedFallback(CommState& state, RoutedOp op, const char* reason) {
  RoutedCounters& c = state.routedCounters(op);
  ++c.previous;
  if (c.reasons[reason]++ == 0 && state.rank() == 0)
    SA_INFO("coll", "comm %s: %s handed to the previous module: %s", state.name().c_str(),
            routedOpName(op), reason);
}

Outcome dispatchRouted(CommState& state, const RoutedArgs& args, bool previous_differs) {
  RoutedCounters& c = state.routedCounters(args.op);
  if (state.broken()) return Outcome::kFailed;
  const size_t bytes = routedVectorBytes(args, state.size());
  if (state.size() == 1 || bytes == 0) {
    copyLocal(args);
    ++c.local;
    return Outcome::kServed;
  }
  const SelectionPolicy& policy = ProcessRuntime::instance().params().policy;
  if (strcasecmp(policy.offload.c_str(), "off") == 0)
    return previous(state, args.op, "selected");  // offload=off: no setup, no agent
  // Collective on first use, as for an allreduce: every rank calls it.
  state.ensureSetup();
  SwitchPath* sw = state.switchPath();
  if (sw == nullptr) return previous(state, args.op, "unavailable");
  sw->rejoinIfDue();
  SelectionInput in;
  // The model's n: one rank's block for allgather, else the whole vector.
  in.bytes = args.op == RoutedOp::kAllgather ? args.count : bytes;
  in.comm_size = state.size();
  in.ranks_per_node = state.layout().max_ranks_per_node;
  in.nodes = state.layout().nodes;
  in.dtype = args.dtype;
  in.op = args.reduce_op;
  if (const char* why = sw->describeRouted(args, &in)) return previous(state, args.op, why);
  const RoutedChoice choice = chooseRouted(args.op, in, ProcessRuntime::instance().selector().model(),
                                           policy, previous_differs);
  if (!choice.use_switch) return previous(state, args.op, "selected");
  SwitchPath::RoutedEnd how = SwitchPath::RoutedEnd::kSwitched;
  Status st = sw->routed(args, &how);
  if (st.code() == Code::kUnsupported) return previous(state, args.op, "unavailable");
  if (!st.ok()) {
    // The agreement itself failed: the ranks may now disagree.
    state.markBroken();
    SA_ERROR("coll", "comm %s rank %d: switch %s failed: %s; returning MPI_ERR_OTHER",
             state.name().c_str(), state.rank(), routedOpName(args.op), st.toString().c_str());
    return Outcome::kFailed;
  }
  switch (how) {
    case SwitchPath::RoutedEnd::kSwitched:
      announce(state, args, bytes, choice.reason);
      ++c.switched;
      return Outcome::kServed;
    case SwitchPath::RoutedEnd::kBusy: ++c.busy; break;
    case SwitchPath::RoutedEnd::kFailed: ++c.failed; break;
  }
  return Outcome::kDeclined;  // redone on the previous module from the intact input
}

bool routedCounter(const CommState& state, const std::string& name, uint64_t* value) {
  for (size_t i = 0; i < kNumRoutedOps; ++i) {
    const RoutedOp op = static_cast<RoutedOp>(i);
    const std::string prefix = std::string(routedOpName(op)) + ":";
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    const RoutedCounters& c = state.routedCounters(op);
    const std::string rest = name.substr(prefix.size());
    if (rest == "local") *value = c.local;
    else if (rest == "switch") *value = c.switched;
    else if (rest == "switch-failed") *value = c.failed;
    else if (rest == "switch-busy") *value = c.busy;
    else if (rest == "previous") *value = c.previous;
    else if (rest.compare(0, 9, "previous:") == 0) {
      auto it = c.reasons.find(rest.substr(9));
      *value = it == c.reasons.end() ? 0 : it->second;
    } else {
      *value = 0;
    }
    return true;
  }
  return false;
}

}  // namespace switchagg::coll
