// Data-plane faults end to end: a member SIGKILLed mid-stream, a lease
// deleted or expired mid-stream, the agent killed mid-stream. Survivors get
// a clean error quickly (never a hang, never a wrong answer, input intact),
// other jobs carry on, and the slots come back.
#include <signal.h>

#include "test_data_harness.h"

namespace switchagg::testing {
namespace {

using DataAgentFault = DataAgentTest;

// Long-running members: stream until something breaks.
MemberSpec streaming(uint64_t gid, int size, const std::string& token) {
  return {gid,
          size,
          token,
          {"--forever", "--in-place", "--dtype", "float32", "--op", "sum", "--count", "20000",
           "--timeout", "20000"}};
}

void expectAllStreaming(std::vector<std::unique_ptr<Child>>& g) {
  for (auto& c : g) ASSERT_TRUE(c->waitForOutput("STREAMING", 30000)) << c->output();
}

// Each survivor exits 2 ("RESULT fail <code> ...") within `bound_ms`.
void expectFailed(std::vector<std::unique_ptr<Child>>& g, const std::string& code,
                  const std::string& detail, int64_t bound_ms, size_t skip = SIZE_MAX) {
  const int64_t t0 = testNowMs();
  for (size_t i = 0; i < g.size(); ++i) {
    if (i == skip) continue;
    const int rc = g[i]->wait(bound_ms - (testNowMs() - t0));
    EXPECT_EQ(rc, 2) << "member " << i << ":\n" << g[i]->output();
    EXPECT_NE(g[i]->output().find("RESULT fail " + code), std::string::npos) << g[i]->output();
    EXPECT_NE(g[i]->output().find(detail), std::string::npos) << g[i]->output();
  }
  EXPECT_LE(testNowMs() - t0, bound_ms);
}

TEST_F(DataAgentFault, MemberKilledMidStreamAbortsOnlyItsGroup) {
  ASSERT_NO_FATAL_FAILURE(startAgent());
  const std::string ta = createLease("victim", 4);
  const std::string tb = createLease("bystander", 4);
  auto a = startGroup(streaming(1, 3, ta));
  auto b = startGroup({1,
                       3,
                       tb,
                       {"--dtype", "int64", "--op", "sum", "--count", "20000", "--iters", "150",
                        "--timeout", "20000"}});
  expectAllStreaming(a);
  ASSERT_TRUE(a[1]->waitForOutput("STREAMING", 1000));
  a[1]->kill(SIGKILL);
  // member_failed when the agent sees the connection drop, member_timeout if not first.
  expectFailed(a, "Aborted", "member_", 15000, 1);
  expectAllOk(b, 90000);
  const auto s = waitStatus(
      [](const nlohmann::json& j) {
        return j["counters"]["slots_reserved"] == 0 && j["counters"]["groups_active"] == 0;
      },
      5000);
  EXPECT_EQ(s["counters"]["slots_reserved"], 0) << s.dump();
  EXPECT_EQ(s["counters"]["slots_busy"], 0) << s.dump();
  EXPECT_EQ(s["counters"]["groups_aborted"], 1) << s.dump();
}

// A member that stops taking anything (wedged, or SIGSTOPped: its kernel
// still answers, so its connection does not fail) after contributing a call
// whose results (8 chunks of 4 MiB) are more than its socket takes. The
// agent's sends to it make no progress; after data.member_timeout (3 s) it
// is dropped (peers_stalled), which aborts its group and cancels those
// sends, so the slot buffers they held are let go (slot_memory_bytes back
// to 0: without the drop they would stay held, in the budget, for ever) and
// the other member's next call fails within the bound.
TEST_F(DataAgentFault, AStalledMemberIsDroppedAndTheBuffersItsSendsHeldAreFreed) {
  ASSERT_NO_FATAL_FAILURE(startAgent({"data.member_timeout=3s", "data.slot_bytes=4194304",
                                      "data.slot_memory=536870912"}));
  const std::string token = createLease("stalled", 16);
  auto member = [&](int rank, std::vector<std::string> extra) {
    std::vector<std::string> argv = {binaryPath("test_data_member"), "--agent",
                                     leaseAddress(token), "--token", token, "--group", "9",
                                     "--size", "2", "--rank", std::to_string(rank), "--dtype",
                                     "float32", "--op", "sum", "--count", "8388608", "--window",
                                     "8", "--timeout", "30000"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return Child::spawn(argv);
  };
  // Rank 1 contributes the whole call (8 chunks, 32 MiB), then stops taking
  // anything; rank 0 starts its call 1.5 s after joining, so every result
  // goes to a member that no longer takes it.
  auto stalled = member(1, {"--stall"});
  auto other = member(0, {"--forever", "--delay", "1500"});
  ASSERT_TRUE(stalled && other);
  ASSERT_TRUE(stalled->waitForOutput("STALLED", 30000)) << stalled->output();
  const auto in = waitStatus(
      [](const nlohmann::json& j) { return j["counters"]["bytes_in"] >= 33554432; }, 5000);
  ASSERT_GE(in["counters"]["bytes_in"], 33554432) << "rank 1's call did not all arrive";
  EXPECT_EQ(other->wait(30000), 2) << other->output();
  EXPECT_NE(other->output().find("RESULT fail Aborted"), std::string::npos) << other->output();
  const auto s = waitStatus(
      [](const nlohmann::json& j) {
        return j["counters"]["groups_active"] == 0 && j["counters"]["slot_memory_bytes"] == 0 &&
               j["counters"]["peers_stalled"] >= 1;
      },
      15000);
  EXPECT_GE(s["counters"]["peers_stalled"], 1)
      << s["counters"].dump() << "\nstalled: " << stalled->output()
      << "\nother: " << other->output();
  EXPECT_EQ(s["counters"]["slot_memory_bytes"], 0) << s.dump();
  EXPECT_EQ(s["counters"]["groups_active"], 0) << s.dump();
  stalled->kill(SIGKILL);
}

TEST_F(DataAgentFault, LeaseDeletedMidStream) {
  ASSERT_NO_FATAL_FAILURE(startAgent());
  const std::string token = createLease("deleted", 4);
  auto g = startGroup(streaming(5, 3, token));
  expectAllStreaming(g);
  ASSERT_TRUE(deleteLease("deleted"));
  expectFailed(g, "Aborted", "lease_revoked", 10000);
  const auto s = waitStatus(
      [](const nlohmann::json& j) { return j["counters"]["slots_reserved"] == 0; }, 5000);
  EXPECT_EQ(s["counters"]["slots_reserved"], 0) << s.dump();
  EXPECT_EQ(s["leases"], 0);
}

TEST_F(DataAgentFault, LeaseExpiredMidStream) {
  ASSERT_NO_FATAL_FAILURE(startAgent({"agent.reaper_interval=100ms"}));
  const std::string token = createLease("expiring", 4, /*ttl_s=*/3);
  auto g = startGroup(streaming(6, 2, token));
  expectAllStreaming(g);
  expectFailed(g, "Aborted", "lease_revoked", 20000);
  EXPECT_EQ(g[0]->output().find("(after 0 calls)"), std::string::npos) << g[0]->output();
}

TEST_F(DataAgentFault, AgentKilledMidStreamFailsFastWithInputIntact) {
  ASSERT_NO_FATAL_FAILURE(startAgent());
  const std::string token = createLease("orphans", 4);
  auto g = startGroup(streaming(7, 3, token));
  expectAllStreaming(g);
  ASSERT_TRUE(g[0]->waitForOutput("STREAMING", 1000));
  agent_->kill();
  // Each member: a clean PeerFailed (or Timeout) exit, in-place input intact
  // (the member exits 3 otherwise), well within its 20 s call timeout.
  const int64_t t0 = testNowMs();
  for (auto& c : g) {
    const int rc = c->wait(15000);
    EXPECT_EQ(rc, 2) << c->output();
    const bool clean = c->output().find("RESULT fail PeerFailed") != std::string::npos ||
                       c->output().find("RESULT fail Timeout") != std::string::npos;
    EXPECT_TRUE(clean) << c->output();
  }
  EXPECT_LT(testNowMs() - t0, 15000);
}

TEST_F(DataAgentFault, AgentGoneBeforeConnectFailsFast) {
  ASSERT_NO_FATAL_FAILURE(startAgent());
  const std::string token = createLease("late", 2);
  const std::string address = leaseAddress(token);
  agent_->kill();
  const int64_t t0 = testNowMs();
  auto c = Child::spawn(
      {binaryPath("test_data_member"), "--agent", address, "--token", token, "--timeout", "3000"});
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->wait(15000), 4) << c->output();
  EXPECT_NE(c->output().find("RESULT fail"), std::string::npos) << c->output();
  EXPECT_LT(testNowMs() - t0, 10000);
}

}  // namespace
}  // namespace switchagg::testing
