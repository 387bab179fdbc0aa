// A blocking wait spins for TransportOptions::spin_us after the last event
// before it sleeps (label ucx, one process, a real UCX worker): a wait whose
// condition comes true within the budget never arms the worker and sleeps;
// with no budget it sleeps at once; past the budget it sleeps after all (the
// spin is bounded, a wait does not burn its core to the end).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include <time.h>

#include "switchagg/ucx/transport.h"

namespace switchagg::ucx {
namespace {

struct Waited {
  bool ok = false;
  uint64_t sleeps = 0;
};

// Waits (blocking, spin_us) for a flag another thread sets after `after_ms`.
Waited waitForFlag(int64_t spin_us, int after_ms) {
  Waited w;
  auto opts = TransportOptions::fromEnvironment();
  if (!opts.ok()) return w;
  opts->wait_mode = WaitMode::kBlocking;
  opts->spin_us = spin_us;
  opts->enable_tag = false;
  auto ctx = Context::create(*opts);
  if (!ctx.ok()) return w;
  auto worker = Worker::create(*ctx.value());
  if (!worker.ok()) return w;
  std::atomic<bool> flag{false};
  std::thread setter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(after_ms));
    flag.store(true);
  });
  const uint64_t before = worker.value()->sleeps();
  w.ok = worker.value()->waitUntil([&] { return flag.load(); }, 5000).ok();
  w.sleeps = worker.value()->sleeps() - before;
  setter.join();
  return w;
}

TEST(WorkerSpin, WithoutABudgetAWaitSleepsOnItsFirstIdleRound) {
  const Waited w = waitForFlag(0, 30);
  ASSERT_TRUE(w.ok);
  EXPECT_GE(w.sleeps, 1u);
}

TEST(WorkerSpin, AnAnswerWithinTheBudgetCostsNoSleep) {
  const Waited w = waitForFlag(2000000, 30);  // 2 s budget, the flag after 30 ms
  ASSERT_TRUE(w.ok);
  EXPECT_EQ(w.sleeps, 0u);
}

TEST(WorkerSpin, PastTheBudgetTheWaitSleeps) {
  const Waited w = waitForFlag(1000, 200);  // 1 ms budget, the flag after 200 ms
  ASSERT_TRUE(w.ok);
  EXPECT_GE(w.sleeps, 1u);
}

// Worker::waitAny over two workers (a striped call's connections, each on
// its own context): a blocking wait sleeps on both workers' event fds
// together, so waiting 300 ms costs the thread little CPU; a busy wait
// spins and never sleeps.
struct WaitedAny {
  bool ok = false;
  uint64_t sleeps[2] = {0, 0};
  double cpu_ms = 0, wall_ms = 0;
};

WaitedAny waitAnyForFlag(WaitMode mode, int after_ms) {
  WaitedAny w;
  std::vector<std::unique_ptr<Context>> contexts;
  std::vector<std::unique_ptr<Worker>> workers;
  for (int i = 0; i < 2; ++i) {
    auto opts = TransportOptions::fromEnvironment();
    if (!opts.ok()) return w;
    opts->wait_mode = mode;
    opts->spin_us = 0;
    opts->enable_tag = false;
    auto ctx = Context::create(*opts);
    if (!ctx.ok()) return w;
    auto worker = Worker::create(*ctx.value());
    if (!worker.ok()) return w;
    contexts.push_back(std::move(ctx.value()));
    workers.push_back(std::move(worker.value()));
  }
  std::atomic<bool> flag{false};
  std::thread setter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(after_ms));
    flag.store(true);
  });
  const uint64_t before[2] = {workers[0]->sleeps(), workers[1]->sleeps()};
  timespec c0{}, c1{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
  const auto t0 = std::chrono::steady_clock::now();
  w.ok = Worker::waitAny({workers[0].get(), workers[1].get()}, [&] { return flag.load(); }, 5000)
             .ok();
  w.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
  w.cpu_ms = (c1.tv_sec - c0.tv_sec) * 1e3 + (c1.tv_nsec - c0.tv_nsec) / 1e6;
  for (int i = 0; i < 2; ++i) w.sleeps[i] = workers[size_t(i)]->sleeps() - before[i];
  setter.join();
  return w;
}

TEST(WorkerSpin, WaitAnySleepsOnEveryWorkerAtOnce) {
  const WaitedAny w = waitAnyForFlag(WaitMode::kBlocking, 300);
  ASSERT_TRUE(w.ok);
  EXPECT_GE(w.sleeps[0], 1u);
  EXPECT_GE(w.sleeps[1], 1u);
  EXPECT_GE(w.wall_ms, 250);
  // Asleep but for the idle ticks' bursts: a spinning wait uses ~all of it.
  EXPECT_LT(w.cpu_ms, 0.3 * w.wall_ms) << "cpu " << w.cpu_ms << " ms of " << w.wall_ms;
}

TEST(WorkerSpin, WaitAnyInBusyModeSpinsAndNeverSleeps) {
  const WaitedAny w = waitAnyForFlag(WaitMode::kBusyPoll, 100);
  ASSERT_TRUE(w.ok);
  EXPECT_EQ(w.sleeps[0], 0u);
  EXPECT_EQ(w.sleeps[1], 0u);
}

// No worker at all (every stripe's connection closed): a bounded wait on
// the predicate alone, no crash, and its timeout still ends it.
TEST(WorkerSpin, WaitAnyOverNoWorkerWaitsOnThePredicateAndTimesOut) {
  std::atomic<bool> flag{false};
  std::thread setter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    flag.store(true);
  });
  EXPECT_TRUE(Worker::waitAny({}, [&] { return flag.load(); }, 5000).ok());
  setter.join();
  const Status st = Worker::waitAny({}, [] { return false; }, 50);
  EXPECT_EQ(st.code(), Code::kTimeout) << st.toString();
}

}  // namespace
}  // namespace switchagg::ucx
