// Credits at the agent's port end to end (data.inflight_bytes,
// docs/agent-protocol.md "Credits at the agent's port"): a real agent and
// eight real member processes streaming; the agent's counters of what it
// granted and of what really converged on its port never pass the bound.
#include "test_data_harness.h"

namespace switchagg::testing {
namespace {

using DataAgentCredits = DataAgentTest;

// 8 members ask for 8 chunks of 64 KiB each: 4 MiB could converge on the
// port at once. With a 1 MiB bound the join grants 2 chunks (8 x 2 x 64
// KiB = 1 MiB), every result is exact, and neither the credit granted nor
// the contribution bytes held for unanswered chunks ever passed 1 MiB.
TEST_F(DataAgentCredits, EightMembersStreamNeverPastThePortsBound) {
  constexpr int64_t kBound = 1 << 20;
  ASSERT_NO_FATAL_FAILURE(
      startAgent({"data.slot_bytes=65536", "data.inflight_bytes=" + std::to_string(kBound)}));
  const std::string token = createLease("credits8", 8);
  auto g = startGroup({1,
                       8,
                       token,
                       {"--window", "8", "--dtype", "float32", "--op", "sum", "--count",
                        "524288", "--iters", "4", "--timeout", "30000"}});
  for (auto& m : g)
    EXPECT_TRUE(m->waitForOutput("STREAMING window=2 slot_bytes=65536", 30000)) << m->output();
  expectAllOk(g, 90000);
  const auto s = status()["counters"];
  EXPECT_EQ(s["bytes_in"], int64_t{8} * 4 * 524288 * 4) << s.dump();
  EXPECT_EQ(s["inflight_granted_max"], kBound) << s.dump();
  EXPECT_GT(s["inflight_held_max"], 0) << s.dump();
  EXPECT_LE(s["inflight_held_max"], kBound) << s.dump();
  EXPECT_EQ(s["inflight_granted_bytes"], 0) << s.dump();
}

}  // namespace
}  // namespace switchagg::testing
