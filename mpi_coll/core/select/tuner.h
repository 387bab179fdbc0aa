// Online tuning (coll_switchagg_tune=online): the cost model proposes, the
// communicator's own measurements decide. Per message-size bucket (the power
// of two below the size, and whether the switch can serve) the tuner runs
// each candidate a few times, agrees with the other ranks on what it saw,
// and from then on picks the candidate measured fastest.
//
// The first call of each algorithm on a communicator is not a sample (it
// sets up connections and buffers): it runs again as its own first sample.
//
// The schedule, per bucket:
//   round 1   every candidate twice in a row, in the model's order; a
//             rank's time for it is the faster of the two (a preemption on
//             a busy node must not condemn a path); agreement; candidates
//             slower than prune_factor x the fastest are dropped and never
//             measured again in this bucket, and so are those slower than
//             both confirm_factor x the fastest and the fastest plus
//             confirm_slack_us: a long call's round-1 time is already
//             sharp (a preemption is small beside it), so round 2 only
//             separates the close ones; a short call's noise is a few
//             scheduler slices, so below the slack prune_factor decides.
//   round 2   each survivor round2_calls times; agreement; the fastest
//             median is the choice: the bucket is settled.
//   settled   the choice runs. After check_first calls (then doubling up to
//             check_max) the ranks agree on its recent median; two checks
//             in a row slower than reopen_factor x what it was settled at
//             reopen the bucket (round 1 again). A new switch epoch (a
//             fallback, a rejoin) reopens every bucket.
//   retried   a bucket settled for retry_first calls (then twice as many
//             each time it settles on the same choice again, up to
//             retry_max) is explored again from round 1: a candidate pruned
//             while it was slow for a while (a reducer host busy with
//             another job, a brief overload) gets measured again, and wins
//             the bucket back if it is fast now. Every rank counts the same
//             calls, so the retry comes alike.
//
// Agreement is what keeps ranks identical: every decision is a function of
// the call sequence (the same on every rank: MPI requires matching counts)
// and of agreed values only. The caller performs it: after record(), if
// needsAgreement(), it allgathers payload() from every rank and passes the
// rank-major result to agree(). What is agreed:
//   exploring  the ranks synchronise before each measuring call
//              (syncBeforeCall()), so a rank's time runs from a common start
//              and the MAX over ranks of their local medians is when the
//              collective ended everywhere;
//   settled    no synchronisation (the application's own arrival skew is in
//              every rank's time but the last to arrive), so the check uses
//              the MIN over ranks: the last arriver's time, which a real
//              slowdown raises and load imbalance does not.
// Pure logic, no MPI: unit-tested with synthetic timings.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "algorithm_registry.h"
#include "cost_model.h"

namespace switchagg::coll {

struct TunerOptions {
  int round2_calls = 3;
  double prune_factor = 2.0;
  // Round 2 for long calls: only candidates within confirm_factor x the
  // fastest round-1 time, or within confirm_slack_us of it (the shared
  // cores' noise: a preemption or two), are measured again. On reducer
  // hosts at 2 MiB (~100 ms calls) prune_factor alone sent all six
  // candidates to round 2: 36 calls before the bucket settled
  // (Tuner.ReducerHostsAt2MiBSettleWithinTheBenchWarmUp).
  double confirm_factor = 1.2;
  double confirm_slack_us = 2000;
  double reopen_factor = 1.5;
  uint32_t check_first = 32;
  uint32_t check_max = 4096;
  uint32_t retry_first = 4096;     // settled calls before a bucket is explored again (0: never)
  uint32_t retry_max = 1u << 20;
  size_t recent = 16;  // settled samples kept for the periodic check
};

class Tuner {
 public:
  static constexpr size_t kAlgorithms = kNumAlgorithms;  // one slot per Algorithm value
  using Payload = std::array<double, kAlgorithms>;  // NaN: no sample

  explicit Tuner(TunerOptions options = {});

  // The candidate to run for this call of `bytes` bytes. `candidates` are
  // the eligible ones in the model's order (best first), never empty, the
  // same list on every rank for the same call. `epoch` changes (alike on
  // every rank) when the switch path fails or rejoins.
  Algorithm choose(size_t bytes, bool switch_ok, const std::vector<Algorithm>& candidates,
                   uint64_t epoch);
  // The local time of the call just chosen for; `served` is what ran (a
  // declined candidate's stand-in is not a sample of the candidate).
  void record(Algorithm served, double us);
  // After record(): the ranks must agree now (true on every rank alike).
  bool needsAgreement() const { return agreement_ != nullptr; }
  Payload payload() const;
  // `all` = every rank's payload, rank-major (ranks * kAlgorithms values).
  void agree(const std::vector<double>& all);

  // What the blocking calls of this size settled on in `epoch` (kPrevious
  // included), without touching any state: nothing while the bucket is
  // still measuring, or after the epoch moved (its buckets reopen at the
  // next choose()). Nonblocking calls, which cannot be timed per call,
  // inherit it (docs/selection.md). Alike on every rank: settling is agreed.
  std::optional<Algorithm> settledChoice(size_t bytes, bool switch_ok, uint64_t epoch) const;
  // A nonblocking call's path (kSwitch or kPrevious) from what the blocking
  // calls of this size measured, once the bucket settled in `epoch`: the
  // switch when they settled on it, or measured it no slower than every
  // other measured candidate (agreed times; a pruned candidate keeps its
  // round-1 time); else the previous module, whose nonblocking allreduce
  // runs a host schedule that its blocking choice (or switchagg's own host
  // algorithms) stands for - its blocking time alone can be a slower
  // algorithm than its nonblocking one (Open MPI tuned vs libnbc). Nothing
  // while measuring or after the epoch moved.
  std::optional<Algorithm> settledNonblocking(size_t bytes, bool switch_ok, uint64_t epoch) const;
  // The agreed time of `a` in the bucket of `bytes` (NaN: not measured).
  double agreedUs(size_t bytes, bool switch_ok, Algorithm a) const;
  // Whether the last choose() came from a settled bucket (else exploring).
  bool lastSettled() const { return last_settled_; }
  // The call just chosen for measures a candidate: start it together.
  bool syncBeforeCall() const { return current_ != nullptr && !last_settled_; }

  // What a bucket has learnt, for counters, verbose output and tune files.
  struct Learnt {
    int log2_bytes = 0;
    bool switch_ok = false;
    bool settled = false;
    Algorithm choice = Algorithm::kPrevious;
    Payload agreed_us{};  // NaN: not measured (pruned ones keep round 1)
  };
  std::vector<Learnt> learnt() const;

  struct Counters {
    uint64_t explore_calls = 0;  // calls run to measure a candidate
    uint64_t settled_calls = 0;  // calls run with a settled choice
    uint64_t agreements = 0;     // allgathers the tuner asked for
    uint64_t reopened = 0;       // buckets reopened (slowdown or new epoch)
    uint64_t retried = 0;        // buckets explored again on the retry schedule
    uint64_t cold_calls = 0;     // first calls of an algorithm, not counted as samples
  };
  const Counters& counters() const { return counters_; }
  // Buckets settled right now.
  uint64_t settledBuckets() const;

  static int bucketOf(size_t bytes);

 private:
  enum class Phase { kRound1, kRound2, kSettled };
  struct Bucket {
    Phase phase = Phase::kRound1;
    std::vector<Algorithm> candidates;  // as given when exploration began
    std::vector<Algorithm> order;  // candidates of the current round
    size_t next = 0;               // calls made in the current round
    std::array<std::vector<double>, kAlgorithms> samples;  // local, this exploration
    Payload agreed{};
    Algorithm choice = Algorithm::kPrevious;
    std::vector<double> recent;
    uint32_t since_check = 0, check_every = 0;
    bool slow_once = false;  // the last check was above reopen_factor
    // The retry schedule: settled calls since it settled, and how many
    // before it is explored again (doubling while the choice stays).
    uint32_t settled_for = 0, retry_every = 0;
    Algorithm last_choice = Algorithm::kPrevious;
    bool chosen_before = false;
  };
  void startExploring(Bucket& b, const std::vector<Algorithm>& candidates);
  void finishRound1(Bucket& b, const Payload& agreed);
  void finishRound2(Bucket& b, const Payload& agreed);
  Bucket& bucket(int log2_bytes, bool switch_ok) { return buckets_[size_t(log2_bytes) * 2 + switch_ok]; }
  const Bucket& bucket(int log2_bytes, bool switch_ok) const {
    return buckets_[size_t(log2_bytes) * 2 + switch_ok];
  }

  TunerOptions options_;
  std::array<Bucket, 64 * 2> buckets_;
  uint64_t epoch_ = 0;
  Bucket* current_ = nullptr;         // the bucket of the call in flight
  Algorithm current_pick_ = Algorithm::kPrevious;
  Bucket* agreement_ = nullptr;       // bucket waiting for agree()
  std::array<bool, kAlgorithms> warmed_{};  // ran once on this communicator
  bool last_settled_ = false;
  Counters counters_;
};

// The local median of a sample list (NaN if empty).
double medianOf(std::vector<double> v);

// Rules-file text for what a communicator of `shape` (comm_size,
// ranks_per_node, nodes) settled on: per settled bucket, an `allreduce`
// rule pinning the choice and a `measured` line with the agreed times, so
// the file can be shipped as site rules (docs/selection.md). A time the
// rules parser would refuse (beyond kMaxRulesNumber microseconds, or not a
// number >= 0) is left out, and so is a measured line left without a time:
// the file always parses back.
std::string formatTuneRules(const std::vector<Tuner::Learnt>& learnt, const SelectionInput& shape);

}  // namespace switchagg::coll
