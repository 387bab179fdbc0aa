#include "routed.h"

#include <strings.h>

#include <cstring>

#include "counter_names.h"
#include "process_runtime.h"
#include "switchagg/common/log.h"

namespace switchagg::coll {
namespace {

// One rank: what the call leaves in recv is its own input.
void copyLocal(const RoutedArgs& args) {
  if (args.send == nullptr || args.recv == nullptr || args.send == args.recv) return;
  size_t bytes = 0;
  switch (args.op) {
    case SWITCHAGG_COLL_REDUCE: bytes = args.count * dtypeSize(args.dtype); break;
    case SWITCHAGG_COLL_REDUCE_SCATTER:
    case SWITCHAGG_COLL_REDUCE_SCATTER_BLOCK: bytes = args.counts[0] * dtypeSize(args.dtype); break;
    case SWITCHAGG_COLL_ALLGATHER: bytes = args.count; break;
    case SWITCHAGG_COLL_BCAST:
    case SWITCHAGG_COLL_ALLREDUCE:  // not routed
    case SWITCHAGG_COLL_BARRIER:
      return;
  }
  if (bytes) std::memcpy(args.recv, args.send, bytes);
}

CallOutcome routedOnHost(CommState& state, const RoutedArgs& args);

bool reduction(CollKind op) {
  return op == SWITCHAGG_COLL_REDUCE || op == SWITCHAGG_COLL_REDUCE_SCATTER ||
         op == SWITCHAGG_COLL_REDUCE_SCATTER_BLOCK;
}

// Not served here: the previous module's, or (a reduction it gets wrong:
// previous_wrong) a host allreduce's.
CallOutcome previous(CommState& state, const RoutedArgs& args, bool wrong, const char* reason) {
  if (wrong && reduction(args.op)) {
    const CallOutcome host = routedOnHost(state, args);
    if (host != CallOutcome::kDeclined) return host;
  }
  recordRoutedFallback(state, args.op, reason);
  return CallOutcome::kDeclined;
}

// The first time each op takes the switch on this communicator (verbose 1),
// every call at verbose 2, as dispatch announces allreduce paths.
void announce(const CommState& state, const RoutedArgs& args, size_t bytes, const char* reason) {
  if (state.rank() != 0) return;
  const bool first = state.routedCounters(args.op).switched == 0;
  SWITCHAGG_LOG(first ? LogLevel::kInfo : LogLevel::kDebug, "coll",
                "comm %s: %s %zu bytes -> switch (%s)", state.name().c_str(),
                collKindName(args.op), bytes, reason);
}

// Online tuning's agreement failed: the ranks may now disagree.
CallOutcome tuningFailed(CommState& state, CollKind op, const Status& st) {
  state.markBroken();
  SA_ERROR("coll", "comm %s rank %d: %s: online tuning could not agree with the other ranks: %s",
           state.name().c_str(), state.rank(), collKindName(op), st.toString().c_str());
  return CallOutcome::kError;
}

}  // namespace

void recordRoutedFallback(CommState& state, CollKind op, const char* reason) {
  RoutedCounters& c = state.routedCounters(op);
  ++c.previous;
  if (c.reasons[reason]++ == 0 && state.rank() == 0)
    SA_INFO("coll", "comm %s: %s handed to the previous module: %s", state.name().c_str(),
            collKindName(op), reason);
}

namespace {

// A routed reduction the MPI's own call gets wrong or aborts on
// (previous_wrong: 16-bit floats and unsigned MIN/MAX under MPICH 4.0.2)
// is not handed back when the switch path did not serve it: the cheapest
// host allreduce of the whole vector runs here and every rank keeps its
// part (reduce: the root the vector; reduce-scatter: its block), counted
// <op>:host. It moves the whole vector where a reduce-scatter needs a part,
// only for the calls the switch path did not take. Alike on every rank:
// the flag is a function of dtype and op, the set-up is collective.
CallOutcome routedOnHost(CommState& state, const RoutedArgs& args) {
  state.ensureSetup();
  const int size = state.size(), rank = state.rank();
  size_t total = args.count, at = 0, mine = args.count;
  if (args.op != SWITCHAGG_COLL_REDUCE) {
    total = 0;
    for (int r = 0; r < size; ++r) {
      if (r == rank) at = total;
      total += args.counts[r];
    }
    mine = args.counts[rank];
  }
  const bool keeps = args.op != SWITCHAGG_COLL_REDUCE || rank == args.root;
  const Status st = runPartOnHost(state, args.send ? args.send : args.recv, args.recv, total, at,
                                  keeps ? mine : 0, args.dtype, args.reduce_op);
  if (st.code() == Code::kUnsupported) return CallOutcome::kDeclined;  // no host transport
  if (!st.ok()) {
    state.markBroken();
    SA_ERROR("coll", "comm %s rank %d: %s on a host allreduce failed: %s; returning MPI_ERR_OTHER",
             state.name().c_str(), rank, collKindName(args.op), st.toString().c_str());
    return CallOutcome::kError;
  }
  ++state.routedCounters(args.op).host;
  return CallOutcome::kDone;
}

}  // namespace

CallOutcome dispatchRouted(CommState& state, const RoutedArgs& args, bool previous_differs,
                           bool previous_wrong) {
  RoutedCounters& c = state.routedCounters(args.op);
  if (state.broken()) return CallOutcome::kError;
  const size_t bytes = routedVectorBytes(args, state.size());
  if (state.size() == 1 || bytes == 0) {
    copyLocal(args);
    ++c.local;
    return CallOutcome::kDone;
  }
  const SelectionPolicy& policy = ProcessRuntime::instance().params().policy;
  if (policy.offload == Offload::kOff)
    return previous(state, args, previous_wrong, "selected");  // offload=off: no setup, no agent
  // Collective on first use, as for an allreduce: every rank calls it.
  state.ensureSetup();
  SwitchPath* sw = state.switchPath();
  if (sw == nullptr) return previous(state, args, previous_wrong, "unavailable");
  sw->rejoinIfDue();
  // The model's n: one rank's block for allgather, else the whole vector.
  SelectionInput in = state.callShape(args.op == SWITCHAGG_COLL_ALLGATHER ? args.count : bytes,
                                      args.dtype, args.reduce_op);
  if (const char* why = sw->describe(SwitchCall::ofRouted(args, /*stream=*/false), &in))
    return previous(state, args, previous_wrong, why);
  const RoutedChoice choice = chooseRouted(args.op, in, ProcessRuntime::instance().selector().model(),
                                           policy, previous_differs);
  // offload=auto with online tuning: the model only orders the two
  // candidates; the communicator measures both per size bucket and keeps
  // the faster (tuner.h), so auto never stays on a slower switch.
  Tuner* tuner = choice.tunable ? state.routedTuner(args.op) : nullptr;
  bool use_switch = choice.use_switch;
  const char* reason = choice.reason;
  double start = 0;
  if (tuner) {
    const std::vector<Algorithm> candidates =
        use_switch ? std::vector<Algorithm>{Algorithm::kSwitch, Algorithm::kPrevious}
                   : std::vector<Algorithm>{Algorithm::kPrevious, Algorithm::kSwitch};
    use_switch = tuner->choose(in.bytes, true, candidates, sw->epoch()) == Algorithm::kSwitch;
    reason = tuner->lastSettled() ? "tuned: measured fastest" : "tuned: measuring";
    if (tuner->syncBeforeCall()) {
      // A measuring call starts together on every rank (tuner.h).
      uint8_t mine = 1;
      std::vector<uint8_t> all(size_t(state.size()));
      Status st = state.tuningAllgather(&mine, all.data(), 1);
      if (!st.ok()) return tuningFailed(state, args.op, st);
    }
    start = nowUs();
  }
  // The previous module serves: a tuned call's time is taken when the glue
  // reports its end (switchagg_coll_routed_previous_done).
  auto handBack = [&](const char* why) {
    if (tuner) state.startRoutedPreviousTiming(args.op, start);
    return previous(state, args, previous_wrong, why);
  };
  if (!use_switch) return handBack(tuner ? "tuned" : "selected");
  CallOutcome how = CallOutcome::kDone;
  Status st = sw->start(SwitchCall::ofRouted(args, /*stream=*/false), &how);
  if (st.code() == Code::kUnsupported) return handBack("unavailable");
  if (!st.ok()) {
    // The agreement itself failed: the ranks may now disagree.
    state.markBroken();
    SA_ERROR("coll", "comm %s rank %d: switch %s failed: %s; returning MPI_ERR_OTHER",
             state.name().c_str(), state.rank(), collKindName(args.op), st.toString().c_str());
    return CallOutcome::kError;
  }
  switch (how) {
    case CallOutcome::kDone:
      announce(state, args, bytes, reason);
      ++c.switched;
      if (tuner) {
        st = state.routedTunerRecord(args.op, Algorithm::kSwitch, nowUs() - start);
        if (!st.ok()) return tuningFailed(state, args.op, st);
      }
      return CallOutcome::kDone;
    case CallOutcome::kBusy: ++c.busy; break;
    default: ++c.failed; break;  // kFailed (a path says done, busy or failed)
  }
  // Redone on the previous module from the intact input (its time is not a
  // sample of the switch: the tuner keeps only the pick's own times).
  if (tuner) state.startRoutedPreviousTiming(args.op, start);
  if (previous_wrong && reduction(args.op)) return routedOnHost(state, args);
  return CallOutcome::kDeclined;
}

bool routedCounter(const CommState& state, const std::string& name, uint64_t* value) {
  for (size_t i = 0; i < kNumRoutedKinds; ++i) {
    const CollKind op = static_cast<CollKind>(i);
    using R = RoutedCounters;
    std::string key, reason;
    if (!counterKey(name, std::string(collKindName(op)) + ":", &key)) continue;
    const R& c = state.routedCounters(op);
    if (!counterField<R>(c, key,
                         {{"local", &R::local}, {"switch", &R::switched},
                          {"switch-failed", &R::failed}, {"switch-busy", &R::busy},
                          {"previous", &R::previous}, {"host", &R::host}},
                         value))
      *value = counterKey(key, "previous:", &reason) ? countOf(c.reasons, reason) : 0;
    return true;
  }
  return false;
}

}  // namespace switchagg::coll
