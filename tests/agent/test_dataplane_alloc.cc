// The data plane's per-chunk path allocates nothing once warm: a real
// DataPlane (UCX listener, engine, send pool) runs in this process, members
// are AggClients on threads of their own, and every operator new made on the
// data-plane thread (named "switchagg-data") is counted. This test is its
// own executable: it replaces the global operator new.
//
// Phase 1 (join and the first calls) must allocate on that thread - it
// proves the counter watches the right thread; phase 2 (40 calls of 12
// chunks from each of 3 members, results checked bit for bit: 1440
// contributions and 1440 result sends) may allocate only what the engine's
// scratch vectors need to reach a new high-water mark (a pass with more
// chunks or pieces than any before: they double, so a handful over an
// agent's life), never once per chunk, per send, per tick (the lease
// check) or per idle wait of a data-plane thread (halfway through phase 2
// the members pause). What UCX allocates with
// malloc is not seen (only the agent's own code is).
#include <gtest/gtest.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

#include "counting_new.h"
#include "data_plane.h"
#include "lease_table.h"
#include "switchagg/agent/data_client.h"
#include "test_data_util.h"

namespace {
std::atomic<bool> g_counting{false};
std::atomic<uint64_t> g_allocs{0};
}  // namespace

void countAllocation() {
  if (!g_counting.load(std::memory_order_relaxed)) return;
  char name[16] = {};
  pthread_getname_np(pthread_self(), name, sizeof name);
  if (std::strcmp(name, "switchagg-data") == 0) g_allocs.fetch_add(1, std::memory_order_relaxed);
}

namespace switchagg::agent {
namespace {

// Members wait here after each phase while the main thread switches counting.
class PhaseGate {
 public:
  explicit PhaseGate(int members) : members_(members) {}
  void arrive(int phase) {
    std::unique_lock<std::mutex> lock(mu_);
    ++arrived_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return open_ > phase; });
  }
  void waitAll(int phase) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return arrived_ >= phase * members_; });
  }
  void open(int phase) {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = phase;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  const int members_;
  int arrived_ = 0, open_ = 0;
};

TEST(DataPlaneAlloc, ThePerChunkPathAllocatesNothingOnceWarm) {
  constexpr int kMembers = 3, kWarmCalls = 4, kCalls = 40;
  constexpr size_t kCount = 48 * 1024;  // floats: 12 chunks of 16 KiB per call
  // Engine scratch (batch, later, pieces, the turnaround ring) doubling.
  constexpr uint64_t kHighWaterGrowths = 8;
  LeaseTable leases{LeaseLimits{}};
  DataPlaneConfig config;
  config.listen = "127.0.0.1:0";
  config.threads = 1;
  // Two data-plane threads (every one is named switchagg-data), the lease's
  // home the second, so the thread that is not data.listen's is counted.
  config.plane_threads = 2;
  config.sysfs_root = "";
  config.engine.slot_bytes = 16 * 1024;
  config.engine.link_mbps = 100000;
  // The live groups' lease check on every tick (50 ms), not every 250 ms:
  // what the check allocates shows up however fast the calls run.
  config.engine.lease_check_ms = 1;
  auto dp = DataPlane::start(config, "", leases);
  ASSERT_TRUE(dp.ok()) << dp.status().toString();
  ASSERT_EQ(dp.value()->threads(), 2);
  // Short job names: the lease check's lookup copies the job's name (a
  // heap allocation past 15 characters, not per chunk but per check).
  std::string token, address;
  for (int i = 0; i < 40 && address.empty(); ++i) {
    auto lease = leases.create("dpa" + std::to_string(i), getuid(), 4, 60000);
    ASSERT_TRUE(lease.ok()) << lease.status().toString();
    token = lease.value().lease.token.hex();
    if (dp.value()->addressFor(token) != dp.value()->address())
      address = dp.value()->addressFor(token);
    else
      (void)leases.remove("dpa" + std::to_string(i), "not the second thread's");
  }
  ASSERT_FALSE(address.empty()) << "no lease of 40 had the second thread for its home";

  PhaseGate gate(kMembers);
  std::atomic<int> wrong{0}, failed{0};
  auto member = [&](int rank) {
    auto client = AggClient::connect(address, token, 10000);
    if (!client.ok()) {
      ++failed;
      std::fprintf(stderr, "connect: %s\n", client.status().toString().c_str());
    }
    std::unique_ptr<AggGroup> group;
    if (client.ok()) {
      auto g = client.value()->join(7, kMembers, rank, 10000);
      if (g.ok()) group = std::move(g.value());
      else ++failed;
    }
    int iter = 0;
    for (int phase = 1; phase <= 2; ++phase) {
      const int calls = phase == 1 ? kWarmCalls : kCalls;
      for (int c = 0; c < calls && group; ++c, ++iter) {
        // Halfway, the agent idles 600 ms: its threads' loops wait out
        // their idle timeouts (12 each), which must allocate nothing either.
        if (phase == 2 && c == calls / 2) std::this_thread::sleep_for(std::chrono::milliseconds(600));
        const auto in = testing::makeInput(Dtype::kFloat32, rank, iter, kCount);
        std::vector<uint8_t> out(in.size());
        const Status st =
            group->allreduce(Dtype::kFloat32, Op::kSum, in.data(), out.data(), kCount, 10000);
        if (!st.ok()) {
          ++failed;
          std::fprintf(stderr, "allreduce: %s\n", st.toString().c_str());
          break;
        }
        const auto want = testing::referenceResult(Dtype::kFloat32, Op::kSum, kMembers, iter, kCount);
        if (!testing::sameResult(Dtype::kFloat32, out.data(), want.data(), kCount)) ++wrong;
      }
      gate.arrive(phase);
    }
    if (group) (void)group->leave(5000);
  };

  g_counting = true;  // phase 1: joins and the first calls
  std::vector<std::thread> members;
  for (int r = 0; r < kMembers; ++r) members.emplace_back(member, r);
  gate.waitAll(1);
  const uint64_t warm = g_allocs.exchange(0);
  gate.open(2);  // phase 2: counted from here
  gate.waitAll(2);
  g_counting = false;
  const uint64_t hot = g_allocs.load();
  gate.open(3);  // leave
  for (auto& t : members) t.join();

  ASSERT_EQ(failed.load(), 0);
  EXPECT_EQ(wrong.load(), 0);
  const DataPlaneCounters c = dp.value()->counters();
  std::printf("data-plane thread: %llu allocations to join and run %d calls, %llu in the next %d "
              "calls (%zu chunks each per member); %llu chunks reduced in all\n",
              static_cast<unsigned long long>(warm), kWarmCalls, static_cast<unsigned long long>(hot),
              kCalls, kCount * 4 / config.engine.slot_bytes,
              static_cast<unsigned long long>(c.chunks_reduced));
  EXPECT_GT(warm, 0u) << "the counter does not see the data-plane thread";
  EXPECT_LE(hot, kHighWaterGrowths) << "the data plane allocates on its per-chunk path";
}

}  // namespace
}  // namespace switchagg::agent
