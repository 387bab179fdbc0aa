// CommState: what the component keeps per communicator - its identity, the
// PeerGroup (set up lazily by one address exchange over the previous coll
// module's allgather), the node layout, the switch candidate's slot and the
// counters that tests, benchmarks and verbose output read.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "algorithm_registry.h"
#include "coll_core.h"
#include "comm_group.h"
#include "host_algorithms.h"
#include "selector.h"
#include "tuner.h"
#include "switchagg/common/status.h"

namespace switchagg::ucx {
class PeerGroup;
}

namespace switchagg::coll {

class SwitchPath;

// The fallback reason of calls the selector itself hands back: counted
// without a map lookup, since it is the common case for small messages.
inline constexpr char kFallbackSelected[] = "selected";

struct CommCounters {
  std::array<uint64_t, kNumAlgorithms> served{};  // by Algorithm; kPrevious = calls handed back
  uint64_t local = 0;       // count 0 or a single rank: nothing to communicate
  uint64_t selected_previous = 0;  // fallback reason kFallbackSelected
  std::map<std::string, uint64_t> fallback_reasons;  // every other reason
  const char* last_path = nullptr;
};

// MPI_Barrier's counters (barrier.h); per communicator, read through
// switchagg_coll_counter("barrier:*").
struct BarrierCounters {
  uint64_t local = 0;     // a single rank: nothing to wait for
  uint64_t switched = 0;  // barrier:switch, through the agent (or its agreement)
  uint64_t failed = 0;    // barrier:switch-failed, completed by the agreement
  uint64_t busy = 0;      // barrier:switch-busy, completed by the agreement
  uint64_t previous = 0;  // barrier:previous, handed to the previous module
  uint64_t selected = 0;  // barrier:previous:selected (offload auto/off: policy)
  uint64_t unavailable = 0;  // barrier:previous:unavailable (no switch path)
};

// One routed collective's counters (routed.h): per communicator and op,
// read through switchagg_coll_counter("<op>:*"), <op> = collKindName.
struct RoutedCounters {
  uint64_t local = 0;     // <op>:local, nothing to communicate (one rank, no bytes)
  uint64_t switched = 0;  // <op>:switch, served through the agent
  uint64_t failed = 0;    // <op>:switch-failed, redone on the previous module
  uint64_t busy = 0;      // <op>:switch-busy, redone on the previous module, path kept
  uint64_t previous = 0;  // <op>:previous, handed to the previous module untried
  uint64_t host = 0;      // <op>:host, on a host allreduce (the MPI's own differs: routed.cc)
  std::map<std::string, uint64_t> reasons;  // <op>:previous:<reason>
};

class CommState : public CommGroup {
 public:
  explicit CommState(const switchagg_coll_comm_info_t& info);
  ~CommState() override;
  CommState(const CommState&) = delete;
  CommState& operator=(const CommState&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  // A call's selector input as the communicator sees it: its bytes (the
  // model's n), dtype and op, the size and node layout; the switch path
  // fills its own fields (SwitchPath::describe).
  SelectionInput callShape(size_t bytes, Dtype dtype, Op op) const {
    SelectionInput in;
    in.bytes = bytes;
    in.comm_size = size();
    in.ranks_per_node = layout().max_ranks_per_node;
    in.nodes = layout().nodes;
    in.dtype = dtype;
    in.op = op;
    return in;
  }
  uint32_t contextId() const override { return context_id_; }
  // The thread domain this communicator runs on (ProcessRuntime::takeDomain).
  int domain() const override { return domain_; }
  const std::string& name() const override { return name_; }

  // Collective over the previous coll module: `bytes` from every rank into
  // recv (size * bytes) in rank order. For agreement among the ranks (the
  // address exchange; the switch path's group join). On a thread that must
  // not call MPI (ProcessRuntime::threadWithoutMpi) it runs over this
  // communicator's own transport instead (the host path must be ready).
  Status allgather(const void* send, void* recv, size_t bytes) override;
  // The online tuner's allgathers (its agreements, the start of a measuring
  // call): at MPI_THREAD_MULTIPLE over this communicator's own transport
  // when the host path is ready (the previous module's collectives run by
  // several threads are two orders of magnitude slower: docs/selection.md
  // "Threads"), else allgather(). Alike on every rank.
  Status tuningAllgather(const void* send, void* recv, size_t bytes);

  // Collective on first use: every rank calls it for the same call (the
  // decision to need it depends only on the call's arguments). Afterwards
  // hostReady() says whether every rank has a working transport.
  void ensureSetup();
  bool hostReady() const { return peer_group_ != nullptr; }
  const NodeLayout& layout() const override { return layout_; }
  // A PeerGroupComm with the next call sequence; nullptr before setup.
  std::unique_ptr<HostComm> hostComm() override;
  const std::vector<std::vector<uint8_t>>& workerAddresses() const override { return addresses_; }
  ucx::PeerGroup& peerGroup() { return *peer_group_; }
  void watchPeer(int peer) override;
  bool peerFailed(int peer) const override;
  // The switch candidate; nullptr when no switch path is built in.
  SwitchPath* switchPath() { return switch_path_.get(); }
  const SwitchPath* switchPath() const { return switch_path_.get(); }
  // Payload bytes this rank sent over the host transport (all calls).
  uint64_t hostBytesSent() const;

  // Numbers the host-algorithm calls so their tags never mix (8 bits used).
  uint32_t nextSequence() { return sequence_++ & 0xFFu; }

  const CommCounters& counters() const { return counters_; }
  // MPI_Barrier's counters (barrier.h).
  BarrierCounters& barrierCounters() { return barrier_counters_; }
  const BarrierCounters& barrierCounters() const { return barrier_counters_; }
  // The routed collectives' counters (routed.h).
  RoutedCounters& routedCounters(CollKind op) { return routed_counters_[size_t(op)]; }
  const RoutedCounters& routedCounters(CollKind op) const {
    return routed_counters_[size_t(op)];
  }
  void recordServed(Algorithm a);
  void recordLocal();
  // Counts a hand-back to the previous module; the first one per reason is
  // logged at verbose >= 1.
  void recordFallback(const char* reason);
  // The selector's decision for this call, memoised (DecisionCache):
  // decide() is a pure function of its input, and small calls should not
  // pay for it each time. Valid until the next decide().
  const Decision& decide(const SelectionInput& in);

  // Online tuning (nullptr when coll_switchagg_tune=off).
  Tuner* tuner() { return tuner_.get(); }
  const Tuner* tuner() const { return tuner_.get(); }
  // After a timed call: hands the tuner the call's local time and, when it
  // asks, runs the agreement (tuningAllgather; every rank reaches it at the
  // same call). An error: the ranks may now disagree.
  Status tunerRecord(Algorithm served, double us);
  // A tuned call handed to the previous module: the glue reports its end
  // (previousDone) so the previous module's time is measured too.
  void startPreviousTiming(double start_us) { previous_start_us_ = start_us; }
  Status previousDone();
  // The routed collectives are tuned the same way, one tuner per operation
  // (switch against the previous module; nullptr when tuning is off), with
  // their own previous-module timing (a previous module may call another
  // collective of ours while it runs).
  Tuner* routedTuner(CollKind op);
  Status routedTunerRecord(CollKind op, Algorithm served, double us);
  void startRoutedPreviousTiming(CollKind op, double start_us) {
    routed_previous_start_us_[size_t(op)] = start_us;
  }
  Status routedPreviousDone(CollKind op);

  // After a host algorithm failed mid-way the communicator is unusable.
  void markBroken() { broken_ = true; }
  bool broken() const { return broken_; }

 private:
  Status exchangeAddresses();
  Status allgatherOverTransport(const void* send, void* recv, size_t bytes);
  void logSummary() const;

  int rank_ = 0;
  int size_ = 1;
  uint32_t context_id_ = 0;
  int domain_ = 0;
  std::string name_;
  std::string node_name_;
  void* allgather_ctx_ = nullptr;
  switchagg_coll_allgather_fn allgather_ = nullptr;

  bool setup_done_ = false;
  bool broken_ = false;
  uint32_t sequence_ = 0;
  NodeLayout layout_;
  std::unique_ptr<ucx::PeerGroup> peer_group_;
  std::vector<std::vector<uint8_t>> addresses_;  // every rank's worker address
  std::unique_ptr<SwitchPath> switch_path_;
  CommCounters counters_;
  BarrierCounters barrier_counters_;
  std::array<RoutedCounters, kNumRoutedKinds> routed_counters_;
  DecisionCache decisions_;
  std::unique_ptr<Tuner> tuner_;
  double previous_start_us_ = -1;  // >= 0: a tuned call is in the previous module
  std::array<std::unique_ptr<Tuner>, kNumRoutedKinds> routed_tuners_;
  std::array<double, kNumRoutedKinds> routed_previous_start_us_{-1, -1, -1, -1, -1};
  Status record(Tuner& tuner, Algorithm served, double us);  // record + agreement
};

// Monotonic microseconds, for the tuner's timings.
double nowUs();

}  // namespace switchagg::coll
