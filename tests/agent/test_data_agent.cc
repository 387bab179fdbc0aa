// Data plane end to end: the real switchagg-agent, leases from its control
// API, members as real processes. Every result is checked bit for bit
// against the rank-ordered reference inside the member.
#include <chrono>
#include <csignal>
#include <string>
#include <thread>

#include "switchagg/common/reduce.h"
#include "test_data_harness.h"

namespace switchagg::testing {
namespace {

TEST_F(DataAgentTest, EveryDtypeAndOpWithOneToEightMembers) {
  ASSERT_NO_FATAL_FAILURE(startAgent());
  const std::string token = createLease("dtypes", 4);
  // Groups of 1, 2, 3 and 8 at once; 3000 elements span several 4 KiB chunks.
  std::vector<std::unique_ptr<Child>> all;
  uint64_t gid = 10;
  for (int size : {1, 2, 3, 8}) {
    auto g = startGroup(
        {gid++, size, token, {"--pairs", allPairs(), "--count", "3000", "--window", "1"}});
    for (auto& c : g) all.push_back(std::move(c));
  }
  expectAllOk(all, 100000);
  expectCounters({{"groups_created", 4}, {"groups_aborted", 0}, {"rejected_total", 0}});
}

TEST_F(DataAgentTest, TheAgentTellsItsCapacityAndAnOlderAgentIsServedWithout) {
  ASSERT_NO_FATAL_FAILURE(startAgent({"data.link_mbps=400"}));
  const std::string token = createLease("capacity", 4);
  auto g = startGroup({1, 2, token, {"--count", "3000", "--iters", "3"}});
  expectAllOk(g, 60000);
  const std::string out = g[0]->output();
  EXPECT_NE(out.find("link_mbps=400 "), std::string::npos) << out;
  EXPECT_EQ(out.find("CAPACITY reduce_mbps=0 "), std::string::npos) << out;  // measured
  TearDown();
  // An agent that does not answer CAPACITY (as before the message existed):
  // members connect, stream and get right answers; the figures are unknown.
  ASSERT_NO_FATAL_FAILURE(startAgent({"data.advertise_capacity=false"}));
  const std::string old_token = createLease("older", 4);
  auto h = startGroup({2, 2, old_token, {"--count", "3000", "--iters", "3"}});
  expectAllOk(h, 60000);
  EXPECT_NE(h[0]->output().find("CAPACITY reduce_mbps=0 link_mbps=0 turnaround_us=0"),
            std::string::npos)
      << h[0]->output();
}

// With data.link_mbps 0 the agent reads its data link's rate from sysfs for
// the interface of its data address (loopback here: lo's speed in the
// shipped tree, tests/agent/sysfs), logs where it came from and tells
// members in CAPACITY; a configured rate wins over sysfs.
TEST_F(DataAgentTest, TheAgentTellsTheLinkRateSysfsGivesUnlessConfigured) {
  const std::string tree = SWITCHAGG_SOURCE_DIR "/tests/agent/sysfs";
  ASSERT_NO_FATAL_FAILURE(startAgent({"data.sysfs_root=" + tree}));
  auto g = startGroup({1, 2, createLease("sysfs", 4), {"--count", "3000", "--iters", "2"}});
  expectAllOk(g, 60000);
  EXPECT_NE(g[0]->output().find("link_mbps=40000 "), std::string::npos) << g[0]->output();
  EXPECT_NE(agent_->stderrText().find("link 40000 Mbit/s (sysfs " + tree + "/class/net/lo/speed)"),
            std::string::npos)
      << agent_->stderrText();
  TearDown();
  ASSERT_NO_FATAL_FAILURE(startAgent({"data.sysfs_root=" + tree, "data.link_mbps=400"}));
  auto h = startGroup({2, 2, createLease("configured", 4), {"--count", "3000", "--iters", "2"}});
  expectAllOk(h, 60000);
  EXPECT_NE(h[0]->output().find("link_mbps=400 "), std::string::npos) << h[0]->output();
  EXPECT_NE(agent_->stderrText().find("link 400 Mbit/s (config)"), std::string::npos)
      << agent_->stderrText();
}

// An agent that predates JOIN flags refuses a flagged JOIN as malformed
// (data.join_flags=false emulates it): every member joins again without
// flags and is served; each refusal is counted once.
// policy.idle_reclaim (docs/admin.md): a lease no member used for the idle
// time is reclaimed and logged with its job (an mpirun job that died without
// deleting its lease); a lease whose group lives is kept however long the
// group runs (its lease checks count as use), and goes once its members do.
TEST_F(DataAgentTest, AnIdleLeaseIsReclaimedALiveGroupsLeaseIsKept) {
  ASSERT_NO_FATAL_FAILURE(startAgent({"policy.idle_reclaim=1s", "agent.reaper_interval=100ms"}));
  const std::string token = createLease("busy", 4);
  createLease("idle", 4);
  auto g = startGroup({1, 2, token, {"--count", "3000", "--forever"}});
  auto slots = [](int n) {
    return [n](const nlohmann::json& s) { return s.value("slots_in_use", -1) == n; };
  };
  EXPECT_TRUE(slots(4)(waitStatus(slots(4), 10000))) << "the idle lease was not reclaimed";
  // Three idle times more: the live group's lease stays, the group streams.
  std::this_thread::sleep_for(std::chrono::seconds(3));
  EXPECT_EQ(status().value("slots_in_use", -1), 4) << "the live group's lease was reclaimed";
  expectCounters({{"groups_aborted", 0}});
  for (auto& c : g) EXPECT_EQ(c->wait(0), -1) << "a member ended: " << c->output();
  const std::string log = agent_->stderrText();
  EXPECT_NE(log.find("lease of job idle ("), std::string::npos) << log;
  EXPECT_NE(log.find("reclaimed: no member used it for"), std::string::npos) << log;
  EXPECT_EQ(log.find("lease of job busy ("), std::string::npos) << log;
  // Its members gone, the busy lease goes after the idle time too.
  for (auto& c : g) c->kill(SIGKILL);
  EXPECT_TRUE(slots(0)(waitStatus(slots(0), 10000))) << "the lease outlived its members";
  EXPECT_NE(agent_->stderrText().find("lease of job busy ("), std::string::npos);
}

TEST_F(DataAgentTest, AnOlderAgentRefusingJoinFlagsIsJoinedWithout) {
  ASSERT_NO_FATAL_FAILURE(startAgent({"data.join_flags=false"}));
  const std::string token = createLease("noflags", 4);
  auto g = startGroup({1, 3, token, {"--count", "3000", "--iters", "3"}});
  expectAllOk(g, 60000);
  const auto s = status();
  EXPECT_EQ(s["counters"]["groups_created"], 1);
  EXPECT_EQ(s["counters"]["groups_aborted"], 0);
  // Each member's JOIN is refused three times: with the keepalive, routed
  // and busy flags, with routed and busy, then with busy alone; the fourth,
  // without flags, is served.
  EXPECT_EQ(s["rejected"]["malformed"], 9) << s.dump();
  EXPECT_EQ(s["counters"]["rejected_total"], 9) << s.dump();
}

// data.slot_memory reaches the engine: 3 members of 64 KiB slots hold
// 4 x 64 KiB per window slot, so a 1 MiB budget grants a window of 4 where
// the lease's 16 slots would allow 16; the results stay exact.
TEST_F(DataAgentTest, SlotMemoryBoundsTheWindowAGroupGets) {
  ASSERT_NO_FATAL_FAILURE(startAgent({"data.slot_bytes=64K", "data.slot_memory=1M"}));
  const std::string token = createLease("memory", 16);
  auto g = startGroup({1, 3, token,
                       {"--dtype", "float64", "--op", "sum", "--count", "100000", "--iters", "2",
                        "--window", "0"}});
  expectAllOk(g, 60000);
  EXPECT_NE(g[0]->output().find("window=4 "), std::string::npos) << g[0]->output();
}

TEST_F(DataAgentTest, ManyChunksThroughWindowsOneToN) {
  ASSERT_NO_FATAL_FAILURE(startAgent());
  const std::string token = createLease("windows", 16);
  // 40000 doubles = 320 KB = 79 chunks of 4 KiB, in place and not, windows 1, 3, 16.
  std::vector<std::unique_ptr<Child>> all;
  uint64_t gid = 1;
  for (const char* w : {"1", "3", "0"}) {
    for (bool in_place : {false, true}) {
      std::vector<std::string> extra = {"--dtype", "float64", "--op", "sum",      "--count",
                                        "40000",   "--iters", "2",    "--window", w};
      if (in_place) extra.push_back("--in-place");
      auto g = startGroup({gid++, 3, token, extra});
      // The lease has 16 slots: run one group at a time so each gets its window.
      expectAllOk(g, 60000);
      if (std::string(w) == "0") {
        EXPECT_NE(g[0]->output().find("window=16"), std::string::npos) << g[0]->output();
      } else {
        EXPECT_NE(g[0]->output().find(std::string("window=") + w + " "), std::string::npos)
            << g[0]->output();
      }
      EXPECT_NE(g[0]->output().find("chunks_sent=158"), std::string::npos) << g[0]->output();
    }
  }
  expectCounters({{"chunks_reduced", 6 * 158}, {"slots_reserved", 0}, {"slots_busy", 0}});
}

TEST_F(DataAgentTest, EightJobsOfFourMembersAtOnce) {
  ASSERT_NO_FATAL_FAILURE(startAgent({"data.member_timeout=20s"}));
  std::vector<std::unique_ptr<Child>> all;
  for (int job = 0; job < 8; ++job) {
    const std::string token = createLease("job" + std::to_string(job), 2);
    // Every job uses group id 1: ids are per lease, jobs never mix.
    auto g = startGroup(
        {1,
         4,
         token,
         {"--pairs", job % 2 ? "int32/sum,float32/max" : "float64/sum,int64/bxor", "--count",
          std::to_string(1500 + 100 * job), "--iters", "3", "--timeout", "60000"}});
    for (auto& c : g) all.push_back(std::move(c));
  }
  expectAllOk(all, 110000);
  expectCounters(
      {{"groups_created", 8}, {"groups_aborted", 0}, {"groups_active", 0}, {"slots_reserved", 0}});
}

TEST_F(DataAgentTest, BadTokenIsRefusedAndCounted) {
  ASSERT_NO_FATAL_FAILURE(startAgent());
  auto g = startGroup({1, 1, "0123456789abcdef0123456789abcdef", {"--timeout", "5000"}});
  ASSERT_EQ(g[0]->wait(20000), 4) << g[0]->output();
  EXPECT_NE(g[0]->output().find("RESULT fail Denied connect"), std::string::npos) << g[0]->output();
  const auto s = status();
  EXPECT_GE(s["rejected"].value("bad_token", 0), 1) << s.dump();
}

}  // namespace
}  // namespace switchagg::testing
