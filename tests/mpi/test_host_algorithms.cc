// The host allreduce algorithms over an in-memory fabric (threads as ranks):
// every host algorithm of the registry on every node layout below (each its
// own test), rank counts 1..9, 13, 16, counts {0, 1, 2, odd, large},
// against references computed here independently of the kernels. Also
// checks that all ranks end bitwise identical and no message is left over.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "algorithm_registry.h"
#include "host_algorithms.h"
#include "local_fabric.h"

namespace switchagg::coll {
namespace {

using testing::LocalComm;
using testing::LocalFabric;

using Algo = std::function<Status(HostComm&, const AllreduceArgs&)>;

// Node layouts for `size` ranks (only node-aware algorithms look at them).
using LayoutFn = NodeLayout (*)(int size);
NodeLayout blocked(int size, int ppn) {
  std::vector<uint64_t> ids;
  for (int r = 0; r < size; ++r) ids.push_back(static_cast<uint64_t>(1000 + r / ppn));
  return nodeLayoutFromHostIds(ids);
}
NodeLayout scattered(int size, int nodes) {
  std::vector<uint64_t> ids;
  for (int r = 0; r < size; ++r) ids.push_back(static_cast<uint64_t>(77 * (r % nodes) + 5));
  return nodeLayoutFromHostIds(ids);
}
struct Layout {
  const char* name;
  LayoutFn make;
};
const Layout kLayouts[] = {
    {"one_node", [](int size) { return blocked(size, size); }},
    {"ppn2", [](int size) { return blocked(size, 2); }},
    {"scattered3", [](int size) { return scattered(size, 3); }},
};

// One case: a host algorithm of the registry on one node layout.
struct Named {
  std::string name;
  Algo run;
};

std::vector<Named> algorithms() {
  std::vector<Named> cases;
  for (const AlgorithmInfo& info : algorithmRegistry()) {
    if (info.run == nullptr) continue;
    for (const Layout& layout : kLayouts) {
      const HostRunFn run = info.run;
      const LayoutFn make = layout.make;
      cases.push_back({std::string(info.name) + "_" + layout.name,
                       [run, make](HostComm& c, const AllreduceArgs& a) {
                         return run(c, a, make(c.size()));
                       }});
    }
  }
  return cases;
}

// ctest and failure messages show the case by name.
void PrintTo(const Named& n, std::ostream* os) { *os << n.name; }

class HostAlgorithms : public ::testing::TestWithParam<Named> {};

std::string caseName(const ::testing::TestParamInfo<Named>& p) { return p.param.name; }

// Runs `algo` on `size` threads; rank r's input comes from fill(r, buf).
template <typename T>
std::vector<std::vector<T>> runRanks(const Algo& algo, int size, size_t count, Dtype dtype, Op op,
                                     bool in_place,
                                     const std::function<T(int, size_t)>& input) {
  LocalFabric fabric;
  std::vector<std::vector<T>> out(static_cast<size_t>(size), std::vector<T>(count));
  std::vector<std::vector<T>> in(static_cast<size_t>(size), std::vector<T>(count));
  std::vector<Status> status(static_cast<size_t>(size));
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      auto& mine_in = in[static_cast<size_t>(r)];
      auto& mine_out = out[static_cast<size_t>(r)];
      for (size_t i = 0; i < count; ++i) (in_place ? mine_out : mine_in)[i] = input(r, i);
      LocalComm comm(fabric, r, size);
      AllreduceArgs args{in_place ? nullptr : mine_in.data(), mine_out.data(), count, dtype, op};
      status[static_cast<size_t>(r)] = algo(comm, args);
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < size; ++r)
    EXPECT_TRUE(status[static_cast<size_t>(r)].ok()) << status[static_cast<size_t>(r)].toString();
  EXPECT_EQ(fabric.pending(), 0u);
  return out;
}

const int kSizes[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 16};
const size_t kCounts[] = {0, 1, 2, 7, 33, 1001, 70001};

TEST_P(HostAlgorithms, Int64SumExact) {
  const Named& a = GetParam();
  for (int size : kSizes) {
    for (size_t count : kCounts) {
      auto f = [](int r, size_t i) {
        return static_cast<int64_t>((r + 1) * 1000003LL) - static_cast<int64_t>(i * 7);
      };
      auto out = runRanks<int64_t>(a.run, size, count, Dtype::kInt64, Op::kSum,
                                   count % 2 == 1, f);
      std::vector<int64_t> want(count, 0);
      for (size_t i = 0; i < count; ++i)
        for (int q = 0; q < size; ++q) want[i] += f(q, i);
      for (int r = 0; r < size; ++r)
        ASSERT_EQ(out[static_cast<size_t>(r)], want)
            << a.name << " np=" << size << " count=" << count << " rank=" << r;
    }
  }
}

TEST_P(HostAlgorithms, DoubleSumWithinBoundAndIdenticalOnAllRanks) {
  const Named& a = GetParam();
  for (int size : {3, 5, 8}) {
    const size_t count = 40001;
    auto f = [](int r, size_t i) { return 1.0 / (1.0 + r) + 1e-3 * static_cast<double>(i % 97); };
    auto out = runRanks<double>(a.run, size, count, Dtype::kFloat64, Op::kSum, false, f);
    for (size_t i = 0; i < count; ++i) {
      double want = 0;
      for (int q = 0; q < size; ++q) want += f(q, i);
      // size-1 roundings of values of this magnitude.
      ASSERT_NEAR(out[0][i], want, 1e-12 * size * std::fabs(want)) << a.name;
      for (int r = 1; r < size; ++r)
        ASSERT_EQ(std::memcmp(&out[0][i], &out[static_cast<size_t>(r)][i], sizeof(double)), 0)
            << a.name << " ranks disagree at " << i;
    }
  }
}

TEST_P(HostAlgorithms, Uint8ProdWrapsAndInt32Max) {
  const Named& a = GetParam();
  for (int size : {2, 7}) {
    const size_t count = 301;
    auto g = [](int r, size_t i) { return static_cast<uint8_t>(3 + r + i); };
    auto prod = runRanks<uint8_t>(a.run, size, count, Dtype::kUint8, Op::kProd, true, g);
    auto h = [](int r, size_t i) { return static_cast<int32_t>((r * 7919 + i * 104729) % 1009) - 500; };
    auto max = runRanks<int32_t>(a.run, size, count, Dtype::kInt32, Op::kMax, false, h);
    for (size_t i = 0; i < count; ++i) {
      unsigned want_p = 1;
      int32_t want_m = INT32_MIN;
      for (int q = 0; q < size; ++q) {
        want_p = (want_p * g(q, i)) & 0xFFu;
        want_m = std::max(want_m, h(q, i));
      }
      ASSERT_EQ(prod[1][i], want_p) << a.name;
      ASSERT_EQ(max[1][i], want_m) << a.name;
    }
  }
}

struct DoubleInt {
  double v;
  int i;
};

TEST_P(HostAlgorithms, MinlocPrefersLowestRankOnTies) {
  const Named& a = GetParam();
  for (int size : {4, 5}) {
    const size_t count = 129;
    auto f = [](int r, size_t i) { return DoubleInt{static_cast<double>((r + i) % 3), r}; };
    auto out = runRanks<DoubleInt>(a.run, size, count, Dtype::kDoubleInt, Op::kMinloc, false, f);
    for (size_t i = 0; i < count; ++i) {
      DoubleInt want{1e300, -1};
      for (int q = 0; q < size; ++q)
        if (f(q, i).v < want.v) want = f(q, i);
      for (int r = 0; r < size; ++r) {
        ASSERT_EQ(out[static_cast<size_t>(r)][i].v, want.v) << a.name;
        ASSERT_EQ(out[static_cast<size_t>(r)][i].i, want.i) << a.name;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Registry, HostAlgorithms, ::testing::ValuesIn(algorithms()), caseName);

TEST(HostAlgorithmHelpers, NodeLayoutCountsNodesAndRanksPerNode) {
  NodeLayout l = nodeLayoutFromHostIds({9, 4, 9, 9, 4, 1});
  EXPECT_EQ(l.nodes, 3);
  EXPECT_EQ(l.max_ranks_per_node, 3);
  EXPECT_EQ(l.node_of, (std::vector<int>{0, 1, 0, 0, 1, 2}));
}

// The mpirun sweeps (tests/mpi/CMakeLists.txt) take their algorithm list
// from core/algorithms/CMakeLists.txt: it must name the registry's host rows.
TEST(HostAlgorithmHelpers, TheBuildListsTheRegistrysHostAlgorithms) {
  std::set<std::string> listed, registry;
  std::stringstream csv(SWITCHAGG_HOST_ALGORITHMS);
  for (std::string name; std::getline(csv, name, ',');) listed.insert(name);
  for (const AlgorithmInfo& info : algorithmRegistry())
    if (info.run != nullptr) registry.insert(info.name);
  EXPECT_EQ(listed, registry);
}

TEST(HostAlgorithmHelpers, BlockRangeCoversCountExactly) {
  for (size_t count : {0, 1, 5, 17, 1000}) {
    for (int blocks : {1, 3, 8}) {
      size_t next = 0;
      for (int b = 0; b < blocks; ++b) {
        BlockRange r = blockRange(count, blocks, b);
        EXPECT_EQ(r.begin, next);
        next += r.size;
      }
      EXPECT_EQ(next, count);
    }
  }
}

}  // namespace
}  // namespace switchagg::coll
