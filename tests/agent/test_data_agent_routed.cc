// Routed calls end to end: the real switchagg-agent, leases from its control
// API, members as real test_data_member processes running reduce-to-root,
// reduce-scatter (uneven blocks), allgather and bcast over many 4 KiB
// chunks, in place and not; every wanted element is checked bit for bit in
// the member, and the agent's byte counters show the routing (payload only
// to destinations, pieces only from owners).
#include <string>

#include "test_data_harness.h"

namespace switchagg::testing {
namespace {

class RoutedAgentTest : public DataAgentTest {
 protected:
  std::vector<std::unique_ptr<Child>> run(uint64_t gid, int size, const std::string& token,
                                          std::vector<std::string> extra) {
    return startGroup({gid, size, token, std::move(extra)});
  }
};

TEST_F(RoutedAgentTest, EveryShapeInPlaceAndNotWithOneToFourMembers) {
  ASSERT_NO_FATAL_FAILURE(startAgent());
  // One slot per group (window 1) and a slot for each of the 8 groups of
  // one size streaming at once, so no call is refused busy.
  const std::string token = createLease("routed", 8);
  uint64_t gid = 100;
  // 3001 elements: several 4 KiB chunks, a last one cut short, blocks that
  // straddle chunks; float sums (rank order matters), int max, pairs.
  const std::string pairs = "float32/sum,int32/max,float64/prod,double_int/minloc";
  for (int size : {1, 3, 4}) {
    std::vector<std::unique_ptr<Child>> all;
    for (const std::string& kind :
         {std::string("reduce:") + std::to_string(size - 1), std::string("scatter"),
          std::string("allgather"), std::string("bcast:") + std::to_string(size / 2)}) {
      for (bool in_place : {false, true}) {
        std::vector<std::string> x = {"--routed", kind,   "--count", "3001",
                                      "--pairs",  pairs,  "--iters", "2",
                                      "--window", "1"};
        if (in_place) x.push_back("--in-place");
        for (auto& c : run(gid++, size, token, x)) all.push_back(std::move(c));
      }
    }
    expectAllOk(all, 60000);
  }
  const auto s = status();
  EXPECT_EQ(s["counters"]["groups_aborted"], 0) << s.dump();
  EXPECT_EQ(s["counters"]["rejected_total"], 0) << s.dump();
}

// Bytes at the agent show the routes: an allgather of n elements per member
// takes n from each (p·n in) and sends each member the (p−1)·n it lacks
// (plus the parts of chunks its block shares with a neighbour's); a bcast
// takes n from the root alone and sends n to each other member; a reduce
// to the root sends n to the root alone, and (int32: any operand order gives
// the same bits) the root keeps its own part, so only the others send; in a
// reduce-scatter each member keeps the chunks that lie in its block alone.
TEST_F(RoutedAgentTest, TheAgentCarriesOnlyWhatEachShapeNeeds) {
  ASSERT_NO_FATAL_FAILURE(startAgent());
  const std::string token = createLease("bytes", 8);
  const uint64_t n = 3000, e = 4;  // int32
  struct Shape {
    std::string kind;
    uint64_t in, out;
  };
  const Shape shapes[] = {{"allgather", 3 * n * e, 6 * n * e},
                          {"bcast:1", n * e, 2 * n * e},
                          {"reduce:2", 2 * n * e, n * e},
                          {"scatter", 2 * n * e, n * e}};
  uint64_t gid = 200;
  for (const Shape& sh : shapes) {
    const auto before = status()["counters"];
    auto g = run(gid++, 3, token,
                 {"--routed", sh.kind, "--count", std::to_string(n), "--dtype", "int32", "--op",
                  "sum"});
    expectAllOk(g, 60000);
    const auto after = status()["counters"];
    const uint64_t in = after["bytes_in"].get<uint64_t>() - before["bytes_in"].get<uint64_t>();
    if (sh.kind == "scatter") {  // chunks shared by two blocks come from every member
      EXPECT_GE(in, sh.in) << sh.kind;
      EXPECT_LE(in, sh.in + 3 * 2 * 4096) << sh.kind;
    } else {
      EXPECT_EQ(in, sh.in) << sh.kind;
    }
    // A chunk that straddles two blocks goes to both members.
    const uint64_t out = after["bytes_out"].get<uint64_t>() - before["bytes_out"].get<uint64_t>();
    if (sh.kind == "scatter" || sh.kind == "allgather") {
      EXPECT_GE(out, sh.out) << sh.kind;
      EXPECT_LE(out, sh.out + 2 * 4096) << sh.kind;
    } else {
      EXPECT_EQ(out, sh.out) << sh.kind;
    }
  }
}

// An agent that predates routed calls (data.routed=false) refuses the
// routed JOIN flag as malformed: members join again without it, allreduce
// still works, and a routed call is declined (kUnsupported) without
// touching the agent - no group is aborted.
TEST_F(RoutedAgentTest, AnOlderAgentWithoutRoutedCallsIsDeclinedCleanly) {
  ASSERT_NO_FATAL_FAILURE(startAgent({"data.routed=false"}));
  const std::string token = createLease("older", 4);
  auto g = run(1, 3, token, {"--routed", "bcast:0", "--count", "3000"});
  for (auto& c : g) {
    EXPECT_EQ(c->wait(60000), 6) << c->output();
    EXPECT_NE(c->output().find("RESULT unsupported the agent predates routed calls"),
              std::string::npos)
        << c->output();
  }
  auto h = run(2, 3, token, {"--count", "3000", "--iters", "2"});
  expectAllOk(h, 60000);
  const auto s = status();
  EXPECT_EQ(s["counters"]["groups_aborted"], 0) << s.dump();
  // Two routed JOINs per member: with keepalive (which an agent before
  // routed calls predates too), then without.
  EXPECT_EQ(s["rejected"]["malformed"], 12) << s.dump();
}

}  // namespace
}  // namespace switchagg::testing
