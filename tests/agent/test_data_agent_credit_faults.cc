// Credits at the agent's port under faults (docs/agent-protocol.md
// "Credits at the agent's port", cases 1-4), each with a real agent and
// real member processes on one node: a member dying, joining or entering
// its call late, stalling while its call holds credit, and the agent
// restarting. No deadlock (a call that finds the credit taken is refused
// busy at once, never queued), no wrong answer, every wait bounded, and
// the credit comes back.
#include <signal.h>

#include "test_data_harness.h"

namespace switchagg::testing {
namespace {

// 2 members x a window of 4 chunks of 64 KiB fill the whole 512 KiB bound:
// while one such call runs, any other call at the port is refused busy.
// The groups of a test share one lease (16 slots: room for both windows),
// so they share its home data-plane thread's port, whose bound it is.
constexpr int64_t kBound = 512 * 1024;
const std::vector<std::string> kSets = {"data.slot_bytes=65536",
                                        "data.inflight_bytes=" + std::to_string(kBound),
                                        "data.member_timeout=6s"};

class DataAgentCreditFault : public DataAgentTest {
 protected:
  std::unique_ptr<Child> member(const std::string& token, uint64_t gid, int rank,
                                std::vector<std::string> extra) {
    std::vector<std::string> argv = {binaryPath("test_data_member"), "--agent",
                                     leaseAddress(token), "--token", token, "--group",
                                     std::to_string(gid), "--size", "2", "--rank",
                                     std::to_string(rank), "--dtype", "float32", "--op", "sum",
                                     "--count", "262144", "--window", "4", "--timeout", "20000"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return Child::spawn(argv);
  }
  std::vector<std::unique_ptr<Child>> pair(const std::string& token, uint64_t gid,
                                           std::vector<std::string> extra = {}) {
    std::vector<std::unique_ptr<Child>> g;
    for (int r = 0; r < 2; ++r) g.push_back(member(token, gid, r, extra));
    return g;
  }
  int64_t granted() { return status()["counters"]["inflight_granted_bytes"]; }
  // A call in progress holds the whole bound (waited for at most 10 s).
  void expectBoundHeld() {
    const auto s = waitStatus(
        [](const nlohmann::json& j) { return j["counters"]["inflight_granted_bytes"] == kBound; },
        10000);
    ASSERT_EQ(s["counters"]["inflight_granted_bytes"], kBound) << s.dump();
  }
  // Another group's call meanwhile: refused busy within 5 s, not queued.
  // (A member that took busy leaves; its partner's chunks of the refused
  // call may reach the agent after that LEAVE: member_left for it.)
  void expectRefusedBusy(const std::string& token, uint64_t gid) {
    const int64_t t0 = testNowMs();
    const int64_t busy0 = rejectedBusy();
    auto b = pair(token, gid);
    int busy = 0;
    for (auto& m : b) {
      EXPECT_EQ(m->wait(10000), 2) << m->output();
      const bool refused = m->output().find("RESULT fail Busy") != std::string::npos;
      busy += refused ? 1 : 0;
      EXPECT_TRUE(refused || m->output().find("member_left") != std::string::npos)
          << m->output();
    }
    EXPECT_GE(busy, 1);
    EXPECT_LE(testNowMs() - t0, 5000);
    EXPECT_GT(rejectedBusy(), busy0) << status().dump();
  }
  int64_t rejectedBusy() {
    const auto r = status()["rejected"];
    return r.contains("busy") ? r["busy"].get<int64_t>() : 0;
  }
  // The credit is back: 0 granted, and a whole-bound call runs exact.
  void expectCreditBack(const std::string& token, uint64_t gid) {
    const auto s = waitStatus(
        [](const nlohmann::json& j) { return j["counters"]["inflight_granted_bytes"] == 0; },
        10000);
    EXPECT_EQ(s["counters"]["inflight_granted_bytes"], 0) << s.dump();
    auto c = pair(token, gid, {"--iters", "3"});
    expectAllOk(c, 30000);
    const auto after = status()["counters"];
    EXPECT_LE(after["inflight_granted_max"], kBound) << after.dump();
    EXPECT_LE(after["inflight_held_max"], kBound) << after.dump();
  }
};

// Case 1: a member dies while its call holds credit. The agent sees the
// connection fail (or the member silent past data.member_timeout), aborts
// the group, and its credit and held bytes go back with it.
TEST_F(DataAgentCreditFault, ACreditHeldByADeadMembersCallComesBack) {
  ASSERT_NO_FATAL_FAILURE(startAgent(kSets));
  const std::string ta = createLease("dead", 16), tb = ta;  // one lease: one port
  auto a = pair(ta, 1, {"--forever", "--in-place"});
  for (auto& m : a) ASSERT_TRUE(m->waitForOutput("STREAMING window=4", 30000)) << m->output();
  ASSERT_NO_FATAL_FAILURE(expectBoundHeld());
  a[1]->kill(SIGKILL);
  EXPECT_EQ(a[0]->wait(15000), 2) << a[0]->output();
  EXPECT_NE(a[0]->output().find("RESULT fail Aborted"), std::string::npos) << a[0]->output();
  expectCreditBack(tb, 2);
}

// Case 2: members late. A group still forming holds no credit (another
// group's calls run meanwhile); a formed group's call holds its credit from
// its first contribution while a member is late into it, and another call
// then is refused busy at once - never queued behind it - and the late
// call completes exact when its member comes.
TEST_F(DataAgentCreditFault, LateMembersNeverMakeAnotherCallWait) {
  ASSERT_NO_FATAL_FAILURE(startAgent(kSets));
  const std::string ta = createLease("late", 16), tb = ta;  // one lease: one port
  // A late joiner: rank 0 of group 3 waits for rank 1 to join.
  auto early = member(ta, 3, 0, {});
  ASSERT_TRUE(early);
  auto b = pair(tb, 1, {"--iters", "2"});
  expectAllOk(b, 30000);  // the whole bound was free for them
  EXPECT_EQ(granted(), 0);
  auto joiner = member(ta, 3, 1, {});
  EXPECT_EQ(early->wait(30000), 0) << early->output();
  EXPECT_EQ(joiner->wait(30000), 0) << joiner->output();
  // Late into a call: rank 1 of group 4 starts its call 4 s after joining.
  auto r0 = member(ta, 4, 0, {});
  auto r1 = member(ta, 4, 1, {"--delay", "4000"});
  ASSERT_TRUE(r0 && r1);
  ASSERT_NO_FATAL_FAILURE(expectBoundHeld());
  expectRefusedBusy(tb, 2);
  EXPECT_EQ(r0->wait(30000), 0) << r0->output();
  EXPECT_EQ(r1->wait(30000), 0) << r1->output();
  expectCreditBack(tb, 5);
}

// Case 3: a member stalls (sends its window, then takes nothing, as a
// SIGSTOPped or wedged process) while its call holds the credit. Others'
// calls are refused busy meanwhile; data.member_timeout ends the stalled
// group and its credit comes back.
TEST_F(DataAgentCreditFault, AStalledMembersCreditComesBackAfterTheMemberTimeout) {
  ASSERT_NO_FATAL_FAILURE(startAgent(kSets));
  const std::string ta = createLease("stall", 16), tb = ta;  // one lease: one port
  auto stalled = member(ta, 1, 1, {"--stall"});
  auto waiting = member(ta, 1, 0, {"--forever", "--delay", "500"});
  ASSERT_TRUE(stalled && waiting);
  ASSERT_TRUE(stalled->waitForOutput("STALLED", 30000)) << stalled->output();
  ASSERT_NO_FATAL_FAILURE(expectBoundHeld());
  expectRefusedBusy(tb, 2);
  EXPECT_EQ(waiting->wait(20000), 2) << waiting->output();
  EXPECT_NE(waiting->output().find("RESULT fail Aborted"), std::string::npos)
      << waiting->output();
  expectCreditBack(tb, 3);
  stalled->kill(SIGKILL);
}

// Case 4: the agent restarts. Nothing of the old credit survives: members
// of the killed agent fail within their bound with a clear error, the new
// agent (here with half the bound) starts with none granted, and members
// that join it stream within the window its JOIN_ACK grants.
TEST_F(DataAgentCreditFault, AfterARestartMembersStreamWithinTheNewAgentsGrant) {
  ASSERT_NO_FATAL_FAILURE(startAgent(kSets));
  const std::string ta = createLease("restart", 8);
  auto a = pair(ta, 1, {"--forever", "--in-place"});
  for (auto& m : a) ASSERT_TRUE(m->waitForOutput("STREAMING window=4", 30000)) << m->output();
  agent_->kill();
  for (auto& m : a) {
    EXPECT_EQ(m->wait(25000), 2) << m->output();
    EXPECT_NE(m->output().find("RESULT fail"), std::string::npos) << m->output();
  }
  std::vector<std::string> half = kSets;
  half[1] = "data.inflight_bytes=" + std::to_string(kBound / 2);
  ASSERT_NO_FATAL_FAILURE(startAgent(half));
  EXPECT_EQ(granted(), 0);
  const std::string tb = createLease("restarted", 8);
  auto b = pair(tb, 1, {"--iters", "3"});
  for (auto& m : b) EXPECT_TRUE(m->waitForOutput("STREAMING window=2", 30000)) << m->output();
  expectAllOk(b, 30000);
  const auto s = status()["counters"];
  EXPECT_EQ(s["inflight_granted_max"], kBound / 2) << s.dump();
  EXPECT_LE(s["inflight_held_max"], kBound / 2) << s.dump();
}

}  // namespace
}  // namespace switchagg::testing
