// Contributions received straight into the agent's slots end to end
// (docs/agent-protocol.md "Received into the slot"): members whose UCX sends
// chunks by rendezvous (UCX_RNDV_THRESH below the chunk), the real agent.
// Every result is checked bit for bit inside the members; the agent's
// counters show the bodies were placed, into mapped slot memory, and a
// member killed while its chunks stream in leaves nothing held.
#include <signal.h>
#include <stdlib.h>

#include "test_data_harness.h"

namespace switchagg::testing {
namespace {

class DataAgentPlacement : public DataAgentTest {
 protected:
  // Members started from now on send chunks of 1 KiB and more by rendezvous.
  void SetUp() override { setenv("UCX_RNDV_THRESH", "1024", 1); }
  void TearDown() override {
    unsetenv("UCX_RNDV_THRESH");
    DataAgentTest::TearDown();
  }
};

// Every dtype of the float32/int64 kind and a 16-bit float over 64 KiB
// chunks, m = 3, windows of 2: bodies placed (all but each call's first
// chunk of the member that opens it), results exact, slot memory mapped.
TEST_F(DataAgentPlacement, RendezvousContributionsAreReceivedIntoTheSlot) {
  ASSERT_NO_FATAL_FAILURE(startAgent({"data.slot_bytes=65536"}));
  const std::string token = createLease("placed", 4);
  auto g = startGroup({1,
                       3,
                       token,
                       {"--pairs", "float32/sum,int64/max,float64/sum,bfloat16/sum", "--count",
                        "40000", "--window", "2", "--iters", "3"}});
  const auto during = waitStatus(
      [](const nlohmann::json& j) { return j["counters"]["slot_memory_mapped_bytes"] > 0; },
      20000);
  EXPECT_GT(during["counters"]["slot_memory_mapped_bytes"], 0) << during.dump();
  expectAllOk(g, 60000);
  const nlohmann::json s = status();
  const uint64_t in = s["counters"]["bytes_in"], placed = s["counters"]["bytes_placed"];
  EXPECT_GT(placed, in / 2) << s.dump();
  EXPECT_EQ(s["counters"]["groups_aborted"], 0) << s.dump();
  EXPECT_EQ(s["counters"]["rejected_total"], 0) << s.dump();
}

// Case 3 of the argument: members killed while their 1 MiB chunks stream in
// by rendezvous (a kill at a random point: most land mid-receive). The
// group is aborted, the survivors told; the receives end, the buffers go:
// slot memory back to 0; a new group then runs exact.
TEST_F(DataAgentPlacement, AMemberKilledWhileItsChunksAreReceivedIntoTheSlotHoldsNothing) {
  ASSERT_NO_FATAL_FAILURE(startAgent({"data.slot_bytes=1048576"}));
  const std::string token = createLease("killed", 8);
  auto a = startGroup({1,
                       3,
                       token,
                       {"--forever", "--in-place", "--dtype", "float32", "--op", "sum", "--count",
                        "1048576", "--window", "4", "--timeout", "20000"}});
  for (auto& c : a) ASSERT_TRUE(c->waitForOutput("STREAMING", 30000)) << c->output();
  const auto streaming = waitStatus(
      [](const nlohmann::json& j) { return j["counters"]["bytes_placed"] > (8 << 20); }, 20000);
  ASSERT_GT(streaming["counters"]["bytes_placed"], 8 << 20) << streaming.dump();
  a[2]->kill(SIGKILL);
  for (size_t i = 0; i < 2; ++i) EXPECT_EQ(a[i]->wait(15000), 2) << a[i]->output();
  auto nothingHeld = [](const nlohmann::json& j) {
    const auto& c = j["counters"];
    return c["groups_active"] == 0 && c["slot_memory_bytes"] == 0 &&
           c["slot_memory_mapped_bytes"] == 0 && c["groups_aborted"] == 1;
  };
  const auto s = waitStatus(nothingHeld, 10000);
  EXPECT_TRUE(nothingHeld(s)) << s.dump();
  auto b = startGroup({2, 2, token, {"--dtype", "float32", "--op", "sum", "--count", "300000"}});
  expectAllOk(b, 60000);
}

}  // namespace
}  // namespace switchagg::testing
