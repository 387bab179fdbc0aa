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

}  // namespace
}  // namespace switchagg::ucx
