// Late members and the WAITING keepalive end to end (docs/agent-protocol.md
// "Waiting members", its numbered cases): a real agent, members as real
// processes. A member late for I/O must not fail the others' calls; a dead,
// stopped or never-coming member, a dead agent, a wedged agent and an agent
// that says "waiting" for ever must each still end the others' calls in a
// bounded error naming what they waited for.
#include <signal.h>
#include <unistd.h>

#include <cstdlib>

#include "test_data_harness.h"

namespace switchagg::testing {
namespace {

using DataAgentFault = DataAgentTest;

// Member `rank` of group `gid` (size `size`): float32 sums of 1000 elements,
// a 1 s call bound, `extra` flags (--delay, --iters, --wait-limit).
std::unique_ptr<Child> member(const std::string& address, const std::string& token, uint64_t gid,
                              int size, int rank, std::vector<std::string> extra) {
  std::vector<std::string> argv = {binaryPath("test_data_member"), "--agent", address,
                                   "--token", token, "--group", std::to_string(gid), "--size",
                                   std::to_string(size), "--rank", std::to_string(rank),
                                   "--dtype", "float32", "--op", "sum", "--count", "1000",
                                   "--timeout", "1000"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return Child::spawn(argv);
}

// Members 0 (early, `early_extra` flags) and 1 of group `gid`, the second
// late by `late_ms` (it sleeps after joining, outside any call), under a
// new lease for `job`; returns once the early one streams.
struct Pair {
  std::unique_ptr<Child> early, late;
};
// `addresses`: the lease's data address by token (DataAgentTest::lease_addresses_).
Pair startPair(const std::map<std::string, std::string>& addresses, const std::string& token,
               uint64_t gid, int late_ms, std::vector<std::string> early_extra = {}) {
  const std::string& address = addresses.at(token);
  Pair p{member(address, token, gid, 2, 0, std::move(early_extra)),
         member(address, token, gid, 2, 1, {"--delay", std::to_string(late_ms)})};
  EXPECT_TRUE(p.early && p.late);
  if (p.early) {
    EXPECT_TRUE(p.early->waitForOutput("STREAMING", 30000)) << p.early->output();
  }
  return p;
}

// Waits 2 s, twice the early member's bound: WAITING must have carried it.
void pastItsBound(Child& early) {
  usleep(2000 * 1000);
  EXPECT_EQ(early.wait(0), -1) << early.output();
}

// The keepalives=K count at the end of a member's RESULT line.
long keepalives(const Child& c) {
  const size_t at = c.output().rfind("keepalives=");
  return at == std::string::npos ? -1 : std::atol(c.output().c_str() + at + 11);
}

// Case 1: rank 2 comes 3 s late to the first of three calls (outside any
// call: its I/O), three times the others' 1 s bound. The agent's WAITING
// (every 500 ms) carries ranks 0 and 1 through; every call is exact.
TEST_F(DataAgentFault, ALateMemberDoesNotFailTheOthersCalls) {
  ASSERT_NO_FATAL_FAILURE(startAgent());
  const std::string token = createLease("late", 4);
  std::vector<std::unique_ptr<Child>> g;
  for (int r = 0; r < 3; ++r)
    g.push_back(member(leaseAddress(token), token, 11, 3, r,
                       r == 2 ? std::vector<std::string>{"--iters", "3", "--delay", "3000"}
                              : std::vector<std::string>{"--iters", "3"}));
  for (auto& c : g) ASSERT_NE(c, nullptr);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(g[r]->wait(30000), 0) << "rank " << r << ":\n" << g[r]->output();
    EXPECT_NE(g[r]->output().find("RESULT ok calls=3"), std::string::npos) << g[r]->output();
  }
  EXPECT_GE(keepalives(*g[0]), 3) << g[0]->output();  // ~5 in 3 s
  EXPECT_GE(keepalives(*g[1]), 3) << g[1]->output();
  EXPECT_EQ(keepalives(*g[2]), 0) << g[2]->output();  // nobody waited for it to come
}

// Case 9 (an older agent): with data.keepalive = 0 the agent refuses the
// JOIN flag as one that predates it; the members join without it and keep
// the wall-time bound, so the same late member fails the others' call at
// 1 s (Timeout), as before keepalives.
TEST_F(DataAgentFault, WithoutKeepalivesALateMemberFailsTheOthersAtTheirBound) {
  ASSERT_NO_FATAL_FAILURE(startAgent({"data.keepalive=0s"}));
  auto [early, late] = startPair(lease_addresses_, createLease("old", 4), 12, 3000);
  ASSERT_TRUE(early && late);
  const int64_t t0 = testNowMs();
  EXPECT_EQ(early->wait(10000), 2) << early->output();
  EXPECT_NE(early->output().find("RESULT fail Timeout"), std::string::npos) << early->output();
  EXPECT_EQ(keepalives(*early), 0) << early->output();
  EXPECT_LT(testNowMs() - t0, 2900);  // its own bound, not the late member's arrival
}

// Case 2: a late member that dies while the others wait: its connection
// drops, the agent aborts the group (member_failed) at once.
TEST_F(DataAgentFault, ALateMemberThatDiesEndsTheWaitAtOnce) {
  ASSERT_NO_FATAL_FAILURE(startAgent());
  auto [early, late] = startPair(lease_addresses_, createLease("dies", 4), 13, 60000);
  ASSERT_TRUE(early && late);
  pastItsBound(*early);
  late->kill(SIGKILL);
  const int64_t t0 = testNowMs();
  EXPECT_EQ(early->wait(10000), 2) << early->output();
  EXPECT_NE(early->output().find("RESULT fail Aborted"), std::string::npos) << early->output();
  EXPECT_NE(early->output().find("member_failed"), std::string::npos) << early->output();
  EXPECT_LT(testNowMs() - t0, 3000);
}

// Case 3: a member stopped (SIGSTOP) before it contributed: its connection
// stays up, so only the agent's silent-member bound (data.member_timeout,
// 3 s here) ends the wait: ABORT member_timeout naming rank 1.
TEST_F(DataAgentFault, AStoppedMemberEndsTheWaitAtTheAgentsMemberTimeout) {
  ASSERT_NO_FATAL_FAILURE(startAgent({"data.member_timeout=3s"}));
  auto [early, late] = startPair(lease_addresses_, createLease("stopped", 4), 14, 60000);
  ASSERT_TRUE(early && late);
  const int64_t t0 = testNowMs();  // the early member's call began at about this
  ASSERT_TRUE(late->waitForOutput("STREAMING", 30000)) << late->output();
  late->kill(SIGSTOP);
  EXPECT_EQ(early->wait(15000), 2) << early->output();
  const int64_t waited = testNowMs() - t0;
  EXPECT_NE(early->output().find("RESULT fail Aborted"), std::string::npos) << early->output();
  EXPECT_NE(early->output().find("member_timeout"), std::string::npos) << early->output();
  EXPECT_NE(early->output().find("rank(s) 1"), std::string::npos) << early->output();
  EXPECT_GE(waited, 2500);   // past its own 1 s bound: carried by WAITING ...
  EXPECT_LT(waited, 7000);   // ... up to the agent's bound, not for ever
  EXPECT_GE(keepalives(*early), 3) << early->output();
  late->kill(SIGKILL);
}

// Case 4: the agent dies while the members wait for a late one: the
// connection fails and the waiting member fails at once.
TEST_F(DataAgentFault, AnAgentKilledWhileMembersWaitFailsThemFast) {
  ASSERT_NO_FATAL_FAILURE(startAgent());
  auto [early, late] = startPair(lease_addresses_, createLease("agentdies", 4), 15, 60000);
  ASSERT_TRUE(early && late);
  pastItsBound(*early);
  agent_->kill();
  const int64_t t0 = testNowMs();
  EXPECT_EQ(early->wait(10000), 2) << early->output();
  const bool clean = early->output().find("RESULT fail PeerFailed") != std::string::npos ||
                     early->output().find("RESULT fail Timeout") != std::string::npos;
  EXPECT_TRUE(clean) << early->output();
  EXPECT_LT(testNowMs() - t0, 3000);  // within a call bound of the last WAITING
}

// Case 5: the agent wedged (SIGSTOPped: its connection stays up, it sends
// nothing) while the members wait: no more WAITING, so the member's call
// ends within its bound of the last one, with a Timeout that says what the
// agent last said it waited for.
TEST_F(DataAgentFault, AWedgedAgentStillEndsTheCallAtItsBound) {
  ASSERT_NO_FATAL_FAILURE(startAgent());
  auto [early, late] = startPair(lease_addresses_, createLease("wedged", 4), 16, 60000);
  ASSERT_TRUE(early && late);
  pastItsBound(*early);
  ::kill(agent_->pid(), SIGSTOP);
  const int64_t t0 = testNowMs();
  const int rc = early->wait(10000);
  const int64_t waited = testNowMs() - t0;
  ::kill(agent_->pid(), SIGCONT);
  EXPECT_EQ(rc, 2) << early->output();
  EXPECT_NE(early->output().find("RESULT fail Timeout"), std::string::npos) << early->output();
  EXPECT_NE(early->output().find("the agent last said chunk waited for 1 member(s), rank 1"),
            std::string::npos)
      << early->output();
  // At most the 1 s bound after the last WAITING, then the member's LEAVE
  // and drain (bounded by AggClient::kDrainMs each).
  EXPECT_LT(waited, 4500);
}

// Case 6 (the member's hard bound): an agent that keeps saying it waits
// (member_timeout 60 s, a member that never comes) cannot hold a member
// past its wait limit (coll_switchagg_stall_timeout in MPI; 2 s here):
// the call ends at 1 s + 2 s.
TEST_F(DataAgentFault, TheWaitLimitBoundsAnAgentThatSaysItWaitsForEver) {
  ASSERT_NO_FATAL_FAILURE(startAgent({"data.member_timeout=60s"}));
  auto [early, late] = startPair(lease_addresses_, createLease("forever", 4), 17, 60000,
                                 {"--wait-limit", "2000"});
  ASSERT_TRUE(early && late);
  const int64_t t0 = testNowMs();
  EXPECT_EQ(early->wait(15000), 2) << early->output();
  const int64_t waited = testNowMs() - t0;
  EXPECT_NE(early->output().find("RESULT fail Timeout"), std::string::npos) << early->output();
  EXPECT_NE(early->output().find("wait timed out after"), std::string::npos) << early->output();
  EXPECT_GE(waited, 2800);
  EXPECT_LT(waited, 5000);
  EXPECT_GE(keepalives(*early), 3) << early->output();
}

}  // namespace
}  // namespace switchagg::testing
