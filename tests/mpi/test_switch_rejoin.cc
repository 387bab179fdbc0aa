// RejoinSchedule (switch_rejoin.h): when a failed switch path rejoins, by
// calls or by time, with the time given in (rank 0's clock) and the
// verdicts passed around as the allgather would.
#include "switch_rejoin.h"

#include <gtest/gtest.h>

#include <vector>

namespace switchagg::coll {
namespace {

using Step = RejoinSchedule::Step;

// Runs calls `period_ms` apart from the failure at t = 0 until a rejoin;
// returns the call it came at and counts the checks (allgathers). Every
// rank follows rank 0's verdicts, so one schedule stands for all.
uint64_t callsToRejoin(RejoinSchedule& s, int64_t period_ms, uint64_t* checks, int64_t* at_ms) {
  s.failed(0);
  *checks = 0;
  for (uint64_t call = 1; call <= 10'000'000; ++call) {
    const int64_t now = int64_t(call) * period_ms;
    switch (s.next()) {
      case Step::kNothing: continue;
      case Step::kRejoin: *at_ms = now; return call;
      case Step::kCheck:
        ++*checks;
        if (s.apply(s.verdict(now))) {
          *at_ms = now;
          return call;
        }
    }
  }
  return 0;
}

TEST(RejoinSchedule, OneCallAMinuteRejoinsAfterAMinuteNotAHundred) {
  RejoinSchedule s(100, 60'000);
  uint64_t checks = 0;
  int64_t at = 0;
  EXPECT_EQ(callsToRejoin(s, 60'000, &checks, &at), 1u);
  EXPECT_EQ(at, 60'000);
  EXPECT_EQ(checks, 1u);
}

TEST(RejoinSchedule, FastCallsRejoinByCountWithFewChecks) {
  RejoinSchedule s(100, 60'000);
  uint64_t checks = 0;
  int64_t at = 0;
  EXPECT_EQ(callsToRejoin(s, 1, &checks, &at), 100u);  // 100 ms: the count comes first
  // Checks at calls 1, 2, 4, ... 64: the next check never more than doubles the calls.
  EXPECT_EQ(checks, 7u);
}

TEST(RejoinSchedule, TimeComesFirstNearTheTimeAtASteadyRate) {
  RejoinSchedule s(1000, 60'000);
  uint64_t checks = 0;
  int64_t at = 0;
  const uint64_t call = callsToRejoin(s, 700, &checks, &at);  // 86 calls to 60 s
  EXPECT_GE(at, 60'000);
  EXPECT_LE(at, 60'000 + 700);  // the first call after the time is up
  EXPECT_EQ(call, 86u);
  EXPECT_LE(checks, 9u);
}

TEST(RejoinSchedule, ABurstThenSlowCallsStillRejoinsByTime) {
  // 60 calls in the first second, then one a minute: the schedule must not
  // wait for the 100th call (40 more minutes). Checks at calls 1, 2, 4, ...
  // 32 saw a fast rate, so the next is at call 64 (the interval at most
  // doubles): the rejoin comes 4 slow calls after the burst, not at the
  // first call after the minute - the price of checking without a message
  // per call.
  RejoinSchedule s(100, 60'000);
  s.failed(0);
  int64_t now = 0;
  uint64_t call = 0;
  bool rejoined = false;
  while (!rejoined && call < 100) {
    ++call;
    now = call <= 60 ? int64_t(call) * 16 : 960 + int64_t(call - 60) * 60'000;
    const Step step = s.next();
    rejoined = step == Step::kRejoin || (step == Step::kCheck && s.apply(s.verdict(now)));
  }
  ASSERT_TRUE(rejoined);
  EXPECT_EQ(call, 64u);
  EXPECT_EQ(now, 960 + 4 * 60'000);
}

TEST(RejoinSchedule, AFailedRejoinDoublesBothLimits) {
  RejoinSchedule s(100, 60'000);
  s.failed(0);
  s.rejoinFailed(1000);
  EXPECT_EQ(s.callLimit(), 200u);
  EXPECT_EQ(s.msLimit(), 120'000);
  // Counting restarts at the failed attempt: the first check is the next call.
  EXPECT_EQ(s.next(), Step::kCheck);
  EXPECT_FALSE(s.apply(s.verdict(1000 + 119'999)));
  for (int i = 0; i < 20; ++i) s.rejoinFailed(0);
  EXPECT_EQ(s.callLimit(), uint64_t(kMaxRejoinCalls));
  EXPECT_EQ(s.msLimit(), kMaxRejoinMs);
  s.failed(5);  // a new failure after a rejoin starts from the settings again
  EXPECT_EQ(s.callLimit(), 100u);
  EXPECT_EQ(s.msLimit(), 60'000);
}

TEST(RejoinSchedule, ZeroCallsNeverRejoinsZeroTimeCountsCallsOnly) {
  RejoinSchedule never(0, 60'000);
  never.failed(0);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(never.next(), Step::kNothing);
  RejoinSchedule calls_only(5, 0);
  calls_only.failed(0);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(calls_only.next(), Step::kNothing);
  EXPECT_EQ(calls_only.next(), Step::kRejoin);
}

// Ranks whose clocks disagree (rank 1 is 50 s ahead, it left the failed
// call later) still decide alike: only rank 0's verdict is applied.
TEST(RejoinSchedule, RanksFollowRankZerosClockOnly) {
  std::vector<RejoinSchedule> ranks(3, RejoinSchedule(100, 60'000));
  const int64_t skew[3] = {0, 50'000, -20'000};
  for (int r = 0; r < 3; ++r) ranks[size_t(r)].failed(skew[r] + 10 * r);
  for (uint64_t call = 1; call <= 100; ++call) {
    const int64_t t = int64_t(call) * 1000;
    std::vector<Step> steps;
    for (RejoinSchedule& s : ranks) steps.push_back(s.next());
    ASSERT_EQ(steps[1], steps[0]);
    ASSERT_EQ(steps[2], steps[0]);
    if (steps[0] == Step::kNothing) continue;
    if (steps[0] == Step::kRejoin) FAIL() << "the count came first";
    // The allgather: every rank takes entry 0.
    const RejoinSchedule::Verdict v0 = ranks[0].verdict(t);
    std::vector<bool> rejoin;
    for (RejoinSchedule& s : ranks) rejoin.push_back(s.apply(v0));
    ASSERT_EQ(rejoin[1], rejoin[0]);
    ASSERT_EQ(rejoin[2], rejoin[0]);
    // Rank 1 alone would have said due (its clock is 50 s ahead) long before.
    if (rejoin[0]) {
      EXPECT_GE(t, 60'000);
      EXPECT_LE(t, 61'000);
      return;
    }
  }
  FAIL() << "no rejoin by time";
}

}  // namespace
}  // namespace switchagg::coll
