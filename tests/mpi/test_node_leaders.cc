// NodeLeaders (the switch path's node leaders) over an in-memory fabric:
// ranks as threads, a CommGroup whose allgather is a shared buffer and whose
// host transport is tests' LocalComm. No agent: these are the intra-node
// steps the switch path wraps around its agent call.
#include "switch_leaders.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include "local_fabric.h"

namespace switchagg::coll {
namespace {

// All ranks' shared state: the allgather's buffer and a reusable barrier.
struct World {
  explicit World(int n) : size(n) {}
  void barrier() {
    std::unique_lock<std::mutex> lock(mu);
    const uint64_t gen = generation;
    if (++arrived == size) {
      arrived = 0;
      ++generation;
      cv.notify_all();
      return;
    }
    cv.wait(lock, [&] { return generation != gen; });
  }
  int size;
  std::mutex mu;
  std::condition_variable cv;
  int arrived = 0;
  uint64_t generation = 0;
  std::vector<char> gathered;
  testing::LocalFabric fabric;
};

class FakeComm final : public CommGroup {
 public:
  FakeComm(World& world, int rank, NodeLayout layout)
      : world_(world), rank_(rank), layout_(std::move(layout)) {}
  int rank() const override { return rank_; }
  int size() const override { return world_.size; }
  uint32_t contextId() const override { return 7; }
  const std::string& name() const override { return name_; }
  Status allgather(const void* send, void* recv, size_t bytes) override {
    {
      std::lock_guard<std::mutex> lock(world_.mu);
      if (world_.gathered.size() < bytes * size_t(world_.size))
        world_.gathered.resize(bytes * size_t(world_.size));
    }
    world_.barrier();
    std::memcpy(world_.gathered.data() + bytes * size_t(rank_), send, bytes);
    world_.barrier();
    std::memcpy(recv, world_.gathered.data(), bytes * size_t(world_.size));
    world_.barrier();
    return Status::Ok();
  }
  const NodeLayout& layout() const override { return layout_; }
  std::unique_ptr<HostComm> hostComm() override {
    return std::make_unique<testing::LocalComm>(world_.fabric, rank_, world_.size);
  }

 private:
  World& world_;
  int rank_;
  NodeLayout layout_;
  std::string name_ = "test";
};

NodeLayout layoutOf(std::vector<int> node_of) {
  std::vector<uint64_t> ids(node_of.begin(), node_of.end());
  return nodeLayoutFromHostIds(ids);
}

// Not dyadic, so the order of the additions shows in the bits.
double input(int rank, size_t i) { return 0.1 * (rank + 1) + 1e-3 * double(i % 97) + 1.0 / 3; }

template <typename F>
void runRanks(int n, F&& body) {
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) threads.emplace_back([&, r] { body(r); });
  for (std::thread& t : threads) t.join();
}

TEST(NodeLeaders, OnlyWithSeveralRanksPerNodeAndWhenEnabled) {
  World world(3);
  FakeComm spread(world, 0, layoutOf({0, 1, 2}));
  EXPECT_EQ(NodeLeaders::create(spread, true), nullptr);  // one rank per node
  FakeComm shared(world, 2, layoutOf({0, 1, 0}));  // rank 2 shares rank 0's node
  EXPECT_EQ(NodeLeaders::create(shared, false), nullptr);  // SWITCHAGG_SWITCH_LEADERS=off
  std::unique_ptr<NodeLeaders> l = NodeLeaders::create(shared, true);
  ASSERT_NE(l, nullptr);
  EXPECT_FALSE(l->leader());
  EXPECT_EQ(l->nodes(), 2);
  EXPECT_EQ(l->node(), 0);
}

// Ranks {0, 2} and {1, 3, 4} on two nodes (node index by lowest rank): the
// leaders get exactly (x0 + x2) and ((x1 + x3) + x4), the binomial tree in
// rank order, on every repeat; nobody's input changes (in place too); the
// broadcast gives each node its leader's bits.
TEST(NodeLeaders, ReduceInRankOrderKeepsInputsAndBroadcastsTheLeadersResult) {
  const std::vector<int> node_of = {0, 1, 0, 1, 1};
  const int n = int(node_of.size());
  const size_t count = 1001;
  World world(n);
  std::vector<std::vector<double>> results(static_cast<size_t>(n));
  std::vector<int> failures(static_cast<size_t>(n), 0);
  runRanks(n, [&](int r) {
    FakeComm comm(world, r, layoutOf(node_of));
    std::unique_ptr<NodeLeaders> leaders = NodeLeaders::create(comm, true);
    int& bad = failures[size_t(r)];
    if (!leaders) {
      ++bad;
      return;
    }
    for (int call = 0; call < 4; ++call) {
      const bool in_place = call % 2 == 1;
      std::vector<double> send(count), recv(count, -1.0);
      for (size_t i = 0; i < count; ++i) send[i] = input(r, i);
      if (in_place) recv = send;
      AllreduceArgs args;
      args.send = in_place ? nullptr : send.data();
      args.recv = recv.data();
      args.count = count;
      args.dtype = Dtype::kFloat64;
      Result<const void*> node = leaders->reduce(args);
      if (!node.ok() || (node.value() != nullptr) != leaders->leader()) ++bad;
      // The caller's input is intact after the reduce.
      for (size_t i = 0; i < count; ++i)
        if ((in_place ? recv[i] : send[i]) != input(r, i)) ++bad;
      if (leaders->leader() && node.ok()) {
        const auto* got = static_cast<const double*>(node.value());
        for (size_t i = 0; i < count; ++i) {
          const double want = r == 0 ? input(0, i) + input(2, i)
                                     : (input(1, i) + input(3, i)) + input(4, i);
          if (std::memcmp(&got[i], &want, sizeof want) != 0) ++bad;
          recv[i] = got[i] * 2;  // stands for the agent's result
        }
      }
      if (!leaders->broadcast(args).ok()) ++bad;
      if (call == 0) results[size_t(r)] = recv;
      else if (recv != results[size_t(r)]) ++bad;  // same bits every call
    }
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(failures[size_t(r)], 0) << "rank " << r;
    const int leader = node_of[size_t(r)] == 0 ? 0 : 1;
    EXPECT_EQ(results[size_t(r)], results[size_t(leader)]) << "rank " << r;
  }
  EXPECT_EQ(world.fabric.pending(), 0u);
}

}  // namespace
}  // namespace switchagg::coll
