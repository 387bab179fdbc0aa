// WAITING keepalives (docs/agent-protocol.md "Waiting members"): while a
// chunk waits for members, those that contributed to it and asked
// (kJoinFlagKeepalive) hear so once per data.keepalive; nobody else does,
// nothing is said once the chunk is complete or past data.member_timeout
// (the group is aborted then), and an agent with data.keepalive = 0
// refuses the flag as one that predates it.
#include "test_data_engine_fixture.h"

namespace switchagg::agent::testing {
namespace {

using wire::MsgType;
using wire::Reason;

constexpr uint32_t kFlags = wire::kJoinFlagBusy | wire::kJoinFlagKeepalive;

class EngineWaiting : public EngineTest {
 protected:
  void SetUp() override {
    EngineConfig c;
    c.keepalive_ms = 500;
    c.member_timeout_ms = 3000;
    makeEngine(c);
    t_ = addLease(1, "job", 4);
  }
  // Ticks every 50 ms (the data plane's period) for `ms`.
  void advance(int64_t ms) {
    for (int64_t end = now_ + ms; now_ < end;) {
      now_ += 50;
      engine_->tick(now_);
    }
  }
  std::vector<uint8_t> one_ = bytesOf(std::vector<int32_t>{1});
  wire::Token t_{};
};

TEST_F(EngineWaiting, ContributorsHearWhileAChunkWaitsForALateMember) {
  const uint32_t w = formGroup(t_, 5, 4, 1, 0, kFlags);
  // Ranks 0, 1, 2 contribute chunk 0; rank 3 is late.
  for (uint32_t r = 0; r < 3; ++r) contrib(1 + r, t_, 5, r, 0, w, Dtype::kInt32, Op::kSum, one_);
  advance(400);  // less than an interval: nothing yet
  EXPECT_TRUE(out_.take(MsgType::kWaiting).empty());
  advance(200);
  auto first = out_.take(MsgType::kWaiting);
  ASSERT_EQ(first.size(), 3u);
  for (uint32_t r = 0; r < 3; ++r) {
    EXPECT_EQ(first[r].to, PeerId(1 + r));
    EXPECT_EQ(first[r].msg.token, t_);
    EXPECT_EQ(first[r].msg.group_id, 5u);
    EXPECT_EQ(first[r].msg.chunk, 0u);
    EXPECT_EQ(first[r].msg.count, 1u);  // one member missing
    EXPECT_EQ(first[r].msg.rank, 3u);   // rank 3
  }
  // One per interval, not one per tick.
  advance(350);
  EXPECT_TRUE(out_.take(MsgType::kWaiting).empty());
  advance(100);
  EXPECT_EQ(out_.take(MsgType::kWaiting).size(), 3u);
  // The late member comes: the result goes out, nobody hears WAITING again.
  contrib(4, t_, 5, 3, 0, w, Dtype::kInt32, Op::kSum, one_);
  pump();
  EXPECT_EQ(out_.take(MsgType::kResult).size(), 4u);
  advance(2000);
  EXPECT_TRUE(out_.take(MsgType::kWaiting).empty());
  EXPECT_TRUE(out_.take(MsgType::kAbort).empty());
}

TEST_F(EngineWaiting, OnlyMembersThatAskedHearIt) {
  // Ranks 0 and 2 ask; rank 1 is an older client (no keepalive flag).
  join(1, t_, 6, 3, 0, 0, kFlags);
  join(2, t_, 6, 3, 1, 0, wire::kJoinFlagBusy);
  join(3, t_, 6, 3, 2, 0, kFlags);
  const auto acks = out_.take(MsgType::kJoinAck);
  ASSERT_EQ(acks.size(), 3u);
  const uint32_t w = acks[0].msg.window;
  contrib(1, t_, 6, 0, 0, w, Dtype::kInt32, Op::kSum, one_);
  contrib(2, t_, 6, 1, 0, w, Dtype::kInt32, Op::kSum, one_);
  advance(600);
  const auto heard = out_.take(MsgType::kWaiting);
  ASSERT_EQ(heard.size(), 1u);  // rank 0; rank 1 did not ask, rank 2 is the late one
  EXPECT_EQ(heard[0].to, PeerId(1));
  EXPECT_EQ(heard[0].msg.rank, 2u);
}

// The agent's own bound stays: past data.member_timeout the group is
// aborted (member_timeout, naming the rank), and WAITING stops.
TEST_F(EngineWaiting, MemberTimeoutStillEndsTheWait) {
  const uint32_t w = formGroup(t_, 7, 2, 1, 0, kFlags);
  contrib(1, t_, 7, 0, 0, w, Dtype::kInt32, Op::kSum, one_);
  advance(2900);
  EXPECT_GE(out_.take(MsgType::kWaiting).size(), 4u);
  EXPECT_TRUE(out_.take(MsgType::kAbort).empty());
  advance(300);
  const auto aborts = out_.take(MsgType::kAbort);
  ASSERT_EQ(aborts.size(), 2u);
  EXPECT_EQ(aborts[0].msg.reason, Reason::kMemberTimeout);
  EXPECT_NE(aborts[0].msg.text.find("rank(s) 1"), std::string::npos) << aborts[0].msg.text;
  out_.sent.clear();
  advance(2000);
  EXPECT_TRUE(out_.take(MsgType::kWaiting).empty());
}

// data.keepalive = 0: the agent acts as one that predates WAITING, so a JOIN
// with the flag is refused as malformed (the client joins again without).
TEST_F(EngineWaiting, OffRefusesTheFlagAsAnOlderAgent) {
  EngineConfig c;
  c.keepalive_ms = 0;
  makeEngine(c);
  join(1, t_, 8, 2, 0, 0, kFlags);
  const auto errors = out_.take(MsgType::kError);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].msg.reason, Reason::kMalformed);
  EXPECT_EQ(engine_->liveGroups(), 0u);
  // Without the flag it joins, and hears nothing while a chunk waits.
  join(1, t_, 8, 2, 0);
  join(2, t_, 8, 2, 1);
  const auto acks = out_.take(MsgType::kJoinAck);
  ASSERT_EQ(acks.size(), 2u);
  contrib(1, t_, 8, 0, 0, acks[0].msg.window, Dtype::kInt32, Op::kSum, one_);
  advance(2000);
  EXPECT_TRUE(out_.take(MsgType::kWaiting).empty());
}

}  // namespace
}  // namespace switchagg::agent::testing
