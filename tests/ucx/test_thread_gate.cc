// ThreadGate's domains: threads on different domains hold them at once, a
// domain admits one thread at a time, Hold on a second domain lets the
// first go, TryHold(nest) holds both and lets neither go, poll sleeps
// without the domain and is woken by progress on that domain only.
#include "switchagg/ucx/thread_gate.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <optional>
#include <thread>

namespace switchagg::ucx {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kBound = std::chrono::seconds(10);

// Whether another thread can take `d` right now (it never blocks).
bool freeForOthers(ThreadGate::Domain& d) {
  return std::async(std::launch::async, [&d] { return ThreadGate::TryHold(d).held(); }).get();
}

// Must run first in the process: the gate cannot be turned off again.
TEST(ThreadGate, OffHoldsNothingAndTryHoldAlwaysHolds) {
  ASSERT_FALSE(ThreadGate::enabled()) << "must run first in its process (ctest runs it alone)";
  ThreadGate::Domain d;
  ThreadGate::Hold hold(d);
  EXPECT_TRUE(ThreadGate::TryHold(d).held());
  EXPECT_TRUE(freeForOthers(d));
}

TEST(ThreadGate, ThreadsOnDifferentDomainsHoldThemAtOnce) {
  ThreadGate::enable();
  ThreadGate::Domain a, b;
  std::promise<void> a_held, b_held;
  std::thread other([&] {
    ThreadGate::Hold hold(b);
    b_held.set_value();
    // Still holding b while the main thread holds a.
    ASSERT_EQ(a_held.get_future().wait_for(kBound), std::future_status::ready);
  });
  ASSERT_EQ(b_held.get_future().wait_for(kBound), std::future_status::ready);
  {
    ThreadGate::Hold hold(a);
    a_held.set_value();
    EXPECT_FALSE(freeForOthers(a));
  }
  other.join();
  EXPECT_GE(ThreadGate::peakHeld(), 2);
}

TEST(ThreadGate, OneDomainAdmitsOneThreadAtATime) {
  ThreadGate::enable();
  ThreadGate::Domain d;
  std::atomic<bool> released{false};
  std::optional<ThreadGate::Hold> hold;
  hold.emplace(d);
  EXPECT_FALSE(freeForOthers(d));
  auto waiter = std::async(std::launch::async, [&] {
    ThreadGate::Hold h(d);
    return released.load();
  });
  EXPECT_EQ(waiter.wait_for(std::chrono::milliseconds(100)), std::future_status::timeout);
  released = true;
  hold.reset();
  ASSERT_EQ(waiter.wait_for(kBound), std::future_status::ready);
  EXPECT_TRUE(waiter.get()) << "the second thread got the domain while the first held it";
}

TEST(ThreadGate, HoldOnASecondDomainLetsTheFirstGoForItsScope) {
  ThreadGate::enable();
  ThreadGate::Domain a, b;
  ThreadGate::Hold outer(a);
  {
    ThreadGate::Hold same(a);  // re-entrant
    EXPECT_FALSE(freeForOthers(a));
  }
  {
    ThreadGate::Hold inner(b);
    EXPECT_TRUE(freeForOthers(a));
    EXPECT_FALSE(freeForOthers(b));
  }
  EXPECT_FALSE(freeForOthers(a));
  EXPECT_TRUE(freeForOthers(b));
}

TEST(ThreadGate, TryHoldNestsOnlyWhenAskedAndThenLetsNeitherGo) {
  ThreadGate::enable();
  ThreadGate::Domain a, b;
  ThreadGate::Hold outer(a);
  EXPECT_FALSE(ThreadGate::TryHold(a).held()) << "its own domain: already held here";
  EXPECT_FALSE(ThreadGate::TryHold(b).held()) << "a second domain without nest";
  {
    ThreadGate::TryHold nested(b, /*nest=*/true);
    ASSERT_TRUE(nested.held());
    ThreadGate::Release release;  // a no-op inside a nested TryHold
    EXPECT_FALSE(freeForOthers(a));
    EXPECT_FALSE(freeForOthers(b));
    const auto t0 = Clock::now();
    EXPECT_EQ(ThreadGate::poll(nullptr, 0, 20), 0);  // a plain bounded sleep
    EXPECT_GE(Clock::now() - t0, std::chrono::milliseconds(15));
  }
  EXPECT_TRUE(freeForOthers(b));
  EXPECT_FALSE(freeForOthers(a));
  {
    ThreadGate::Release release;
    EXPECT_TRUE(freeForOthers(a));
  }
  EXPECT_FALSE(freeForOthers(a));
}

TEST(ThreadGate, ANestedDomainIsNotCountedAsAnotherThread) {
  ThreadGate::enable();
  ThreadGate::Domain a, b;
  ThreadGate::Hold outer(a);
  ASSERT_EQ(ThreadGate::heldNow(), 1);
  {
    ThreadGate::TryHold nested(b, /*nest=*/true);
    ASSERT_TRUE(nested.held());
    EXPECT_EQ(ThreadGate::heldNow(), 1) << "one thread, two domains: still one holder";
  }
  EXPECT_EQ(ThreadGate::heldNow(), 1);
}

TEST(ThreadGate, HoldInsideANestedTryHoldKeepsBothAndRestoresThem) {
  ThreadGate::enable();
  ThreadGate::Domain a, b, c;
  ThreadGate::Hold outer(a);
  {
    ThreadGate::TryHold nested(b, /*nest=*/true);
    ASSERT_TRUE(nested.held());
    EXPECT_FALSE(ThreadGate::TryHold(c, /*nest=*/true).held()) << "at most one nested domain";
    EXPECT_FALSE(ThreadGate::TryHold(a, /*nest=*/true).held()) << "its own outer domain";
    {
      ThreadGate::Hold third(c);
      EXPECT_FALSE(freeForOthers(a));
      EXPECT_FALSE(freeForOthers(b));
      EXPECT_FALSE(freeForOthers(c));
    }
    EXPECT_TRUE(freeForOthers(c));
    EXPECT_FALSE(freeForOthers(b));
    {
      ThreadGate::Hold same(b);  // the nested domain itself: re-entrant
      EXPECT_FALSE(freeForOthers(b));
    }
    EXPECT_FALSE(freeForOthers(b));
  }
  EXPECT_TRUE(freeForOthers(b));
  EXPECT_FALSE(freeForOthers(a));
}

TEST(ThreadGate, PollSleepsWithoutTheDomainAndWakesOnItsProgressOnly) {
  ThreadGate::enable();
  ThreadGate::Domain a, b;
  std::atomic<int> phase{0};
  std::thread progress([&] {
    while (phase.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    {
      ThreadGate::Hold hold(b);  // progress on another domain: wakes nobody on a
      ThreadGate::wakeSleepers();
    }
    while (phase.load() == 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ThreadGate::Hold hold(a);  // it can: the sleeper let a go
    ThreadGate::wakeSleepers();
  });
  ThreadGate::Hold hold(a);
  phase = 1;
  auto t0 = Clock::now();
  EXPECT_EQ(ThreadGate::poll(nullptr, 0, 400), 0) << "woken by progress on another domain";
  EXPECT_GE(Clock::now() - t0, std::chrono::milliseconds(350));
  phase = 2;
  t0 = Clock::now();
  EXPECT_GT(ThreadGate::poll(nullptr, 0, 10000), 0);
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(5)) << "not woken by progress on its domain";
  progress.join();
}

}  // namespace
}  // namespace switchagg::ucx
