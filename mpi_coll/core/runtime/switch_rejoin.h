// When a communicator whose switch path failed runs the collective join
// again (docs/offload.md "Failure semantics"): after `calls` more blocking
// calls or `ms` milliseconds, whichever comes first; a failed rejoin
// doubles both.
//
// The join is collective, so every rank must decide it at the same call.
// The count of calls is the same on every rank; time is not (each rank has
// its own clock and left the failed call at its own moment). So only rank
// 0's clock counts, and it reaches the others at *checks*: at check calls
// every rank allgathers a Verdict and all take rank 0's - rejoin now, or
// how many calls until the next check. The first check is the first call
// after the failure; rank 0 then places the next one where the rate the
// calls came at since the failure says the time will be up, but never more
// than doubling the calls since the failure (a job that slows down is
// still checked). So a check is either due (the join follows) or costs one
// small allgather, about log2 of the calls to the rejoin of them per
// failure. No rank decides anything from its own clock.
//
// Pure logic, with the time passed in (tests inject it).
#pragma once

#include <algorithm>
#include <cstdint>

#include "switchagg/coll/switch_settings.h"

namespace switchagg::coll {

class RejoinSchedule {
 public:
  // rank 0's word at a check (allgathered: the same layout on every rank).
  struct Verdict {
    uint8_t due = 0;  // rejoin at this call
    uint8_t pad[3] = {};
    uint32_t next_in = 1;  // else: the next check, this many calls on
  };

  // calls: 0 never rejoins; ms: 0 counts calls only.
  RejoinSchedule(uint64_t calls, int64_t ms) : base_calls_(calls), base_ms_(ms) {}

  // The path failed at `now_ms` (this rank's clock): counting starts again
  // from the configured limits.
  void failed(int64_t now_ms) {
    calls_ = base_calls_;
    ms_ = base_ms_;
    restart(now_ms);
  }
  // A rejoin attempt failed: both limits double.
  void rejoinFailed(int64_t now_ms) {
    calls_ = std::min<uint64_t>(calls_ * 2, uint64_t(kMaxRejoinCalls));
    ms_ = std::min<int64_t>(ms_ * 2, kMaxRejoinMs);
    restart(now_ms);
  }

  enum class Step { kNothing, kCheck, kRejoin };
  // Once per blocking call while the path is off, alike on every rank.
  Step next() {
    if (calls_ == 0) return Step::kNothing;
    if (++since_ >= calls_) return Step::kRejoin;
    return ms_ > 0 && since_ == next_check_ ? Step::kCheck : Step::kNothing;
  }
  // Rank 0 at a check: due, or the calls until the next one.
  Verdict verdict(int64_t now_ms) const {
    Verdict v;
    const int64_t elapsed = std::max<int64_t>(0, now_ms - start_ms_);
    if (elapsed >= ms_) {
      v.due = 1;
      return v;
    }
    // Calls until the time is up at the rate seen so far (since_ >= 1),
    // between 1 and the calls made so far.
    uint64_t left = since_;
    if (elapsed > 0) {
      const double per_call = double(elapsed) / double(since_);
      left = uint64_t(double(ms_ - elapsed) / per_call) + 1;
    }
    v.next_in = uint32_t(std::clamp<uint64_t>(left, 1, std::min<uint64_t>(since_, UINT32_MAX)));
    return v;
  }
  // Every rank with rank 0's verdict: true - rejoin at this call.
  bool apply(const Verdict& v) {
    if (v.due) return true;
    next_check_ = since_ + std::max<uint32_t>(1, v.next_in);
    return false;
  }

  uint64_t callLimit() const { return calls_; }
  int64_t msLimit() const { return ms_; }

 private:
  void restart(int64_t now_ms) {
    since_ = 0;
    next_check_ = 1;
    start_ms_ = now_ms;
  }

  uint64_t base_calls_;
  int64_t base_ms_;
  uint64_t calls_ = 0;  // rejoin at this many calls since the failure (0: never)
  int64_t ms_ = 0;      // or once rank 0 saw this many ms pass (0: calls only)
  uint64_t since_ = 0, next_check_ = 1;
  int64_t start_ms_ = 0;  // this rank's clock at the failure (only rank 0's is read)
};

}  // namespace switchagg::coll
