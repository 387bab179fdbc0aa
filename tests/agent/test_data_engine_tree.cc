// Trees: two leaf engines and a spine engine wired in memory (what the data
// plane's parent connection carries, delivered in order). Members join their
// leaf with kJoinFlagTree; the leaves join the spine; results are reduced in
// rank order within each leaf and leaves in index order, and every member
// gets the spine's result. Anything wrong above a leaf (spine gone, silent,
// aborting) aborts the leaf's group with parent_failed, in bounded time.
#include <cstring>
#include <deque>

#include "test_data_engine_tree_fixture.h"

namespace switchagg::agent::testing {
namespace {

TEST_F(EngineTreeTest, LeavesReduceInRankOrderTheSpineInLeafOrderEveryMemberGetsIt) {
  const uint32_t w = formTree(2, 3);
  ASSERT_GT(w, 0u);
  for (uint64_t chunk = 0; chunk < 2; ++chunk) {  // two chunks of one 4-element call
    sendEvery(chunk, w, 4);
    pump();
  }
  const std::vector<float> want = treeSum();
  for (int i = 0; i < 2; ++i) {
    auto res = leaf_out_[i].take(MsgType::kResult);
    ASSERT_EQ(res.size(), size_t(i == 0 ? 2 * 2 : 2 * 3)) << "leaf " << i;
    for (const Sent& s : res) {
      const std::vector<float> got = floats(s);
      ASSERT_EQ(got.size(), 2u);
      EXPECT_EQ(got, want)
          << "leaf " << i << " peer " << s.to << ": " << got[0] << " " << got[1];
    }
  }
  // Each leaf sent each chunk up once (8 bytes), the spine reduced 2 chunks.
  EXPECT_EQ(leaf_[0]->counters().bytes_up, 16u);
  EXPECT_EQ(leaf_[1]->counters().bytes_up, 16u);
  EXPECT_EQ(spine_->counters().chunks_reduced, 2u);
  EXPECT_EQ(spine_->counters().bytes_in, 32u);  // one partial per leaf per chunk
  EXPECT_TRUE(leaf_out_[0].take(MsgType::kAbort).empty());
}

TEST_F(EngineTreeTest, MembersAreAckedOnlyOnceTheSpineTookTheLeafWithItsSmallerWindow) {
  build(EngineConfig{}, 1);  // the spine's lease: one slot
  for (uint32_t r = 0; r < 2; ++r) toLeaf(0, 1 + r, treeJoin(0, 2, r));
  pump();
  EXPECT_TRUE(leaf_out_[0].take(MsgType::kJoinAck).empty());  // the spine waits for leaf 1
  toLeaf(1, 1, treeJoin(1, 1, 0));
  pump();
  auto acks = leaf_out_[0].take(MsgType::kJoinAck);
  ASSERT_EQ(acks.size(), 2u);
  EXPECT_EQ(acks[0].msg.window, 1u);
}

TEST_F(EngineTreeTest, TheSpineLosingItsLeaseMidCallAbortsEveryLeafsMembers) {
  const uint32_t w = formTree(2, 1);
  ASSERT_GT(w, 0u);
  for (uint32_t r = 0; r < 2; ++r) send(0, r, 0, w, {1.f}, 1);
  pump();  // leaf 0's chunk waits at the spine for leaf 1
  spine_->revokeLease(spine_token_, "deleted by the admin");
  pump();
  for (int i = 0; i < 2; ++i) {
    auto aborts = leaf_out_[i].take(MsgType::kAbort);
    ASSERT_EQ(aborts.size(), i == 0 ? 2u : 1u) << "leaf " << i;
    EXPECT_EQ(aborts[0].msg.reason, Reason::kParentFailed);
    EXPECT_NE(aborts[0].msg.text.find("lease revoked"), std::string::npos) << aborts[0].msg.text;
    EXPECT_EQ(leaf_[i]->liveGroups(), 0u);
  }
}

TEST_F(EngineTreeTest, AParentConnectionFailureAbortsTheTreeGroups) {
  ASSERT_GT(formTree(1, 1), 0u);
  leaf_[0]->onParentFailed("Connection reset by remote peer");
  auto aborts = leaf_out_[0].take(MsgType::kAbort);
  ASSERT_EQ(aborts.size(), 1u);
  EXPECT_EQ(aborts[0].msg.reason, Reason::kParentFailed);
  EXPECT_NE(aborts[0].msg.text.find("Connection reset"), std::string::npos);
  EXPECT_TRUE(leaf_out_[0].up.empty());  // nothing more goes up (not even a LEAVE)
}

TEST_F(EngineTreeTest, ASilentParentAbortsTheLeafGroupPastTwiceTheMemberTimeout) {
  const uint32_t w = formTree(1, 1);
  ASSERT_GT(w, 0u);
  send(0, 0, 0, w, {1.f}, 1);
  leaf_[0]->reduceReady();
  leaf_out_[0].up.clear();  // the chunk went up and is lost: the spine never answers
  const int64_t limit = 2 * EngineConfig{}.member_timeout_ms;
  leaf_[0]->tick(now_ + limit - 10);
  EXPECT_TRUE(leaf_out_[0].take(MsgType::kAbort).empty());
  leaf_[0]->tick(now_ + limit + 10);
  auto aborts = leaf_out_[0].take(MsgType::kAbort);
  ASSERT_EQ(aborts.size(), 1u);
  EXPECT_EQ(aborts[0].msg.reason, Reason::kParentFailed);
  EXPECT_NE(aborts[0].msg.text.find("did not return chunk 0"), std::string::npos)
      << aborts[0].msg.text;
}

TEST_F(EngineTreeTest, AMemberFailingAtOneLeafFailsTheOtherLeafsCallToo) {
  const uint32_t w = formTree(2, 1);
  ASSERT_GT(w, 0u);
  send(1, 0, 0, w, {1.f}, 1);  // leaf 1's chunk goes up and waits for leaf 0
  pump();
  leaf_[0]->onPeerFailed(2, "killed");  // leaf 0's rank 1 died
  pump();  // leaf 0 leaves the spine's group while a call runs: the spine aborts it
  auto aborts = leaf_out_[1].take(MsgType::kAbort);
  ASSERT_EQ(aborts.size(), 1u);
  EXPECT_EQ(aborts[0].msg.reason, Reason::kParentFailed);
  EXPECT_EQ(spine_->liveGroups(), 0u);
}

TEST_F(EngineTreeTest, ALeafWithoutAParentRefusesTreeJoins) {
  EngineConfig c;
  c.has_parent = false;
  leaf_[0] = std::make_unique<AggregationEngine>(
      c, [this](const LeaseToken& t) -> std::optional<LeaseInfo> { return leases_.at(t); },
      leaf_out_[0], pool_);
  toLeaf(0, 1, treeJoin(0, 2, 0));
  auto errs = leaf_out_[0].take(MsgType::kError);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].msg.reason, Reason::kParentFailed);
  EXPECT_NE(errs[0].msg.text.find("no parent"), std::string::npos);
  EXPECT_EQ(leaf_[0]->liveGroups(), 0u);
}

TEST_F(EngineTreeTest, MembersDisagreeingOnTheTreeAbortTheGroup) {
  toLeaf(0, 1, treeJoin(0, 2, 0));
  Message other = treeJoin(0, 2, 1);
  other.tree_index = 1;  // says it is leaf 1 of the tree
  toLeaf(0, 2, other);
  auto aborts = leaf_out_[0].take(MsgType::kAbort);
  ASSERT_EQ(aborts.size(), 1u);
  EXPECT_EQ(aborts[0].msg.reason, Reason::kSizeMismatch);
  EXPECT_TRUE(leaf_out_[0].up.empty());
}

// docs/agent-protocol.md "Waiting members", case 11: leaf 0's members sent
// chunk 0, which went up and waits at the spine for leaf 1 (its member is
// late). The spine tells leaf 0 (the uplink JOIN asked for WAITING) and
// leaf 0 relays it to its members: one leaf missing, rank = leaf 0's
// member count (2) + leaf 1. Stale ones (the chunk answered since) are
// ignored, never an abort.
TEST_F(EngineTreeTest, ALeafRelaysTheSpinesWaitingToItsMembersWhileTheChunkWaitsAbove) {
  EngineConfig c;
  c.keepalive_ms = 500;
  c.member_timeout_ms = 3000;
  build(c, 4);
  join_flags_ |= wire::kJoinFlagKeepalive;
  const uint32_t w = formTree(2, 1);
  ASSERT_GT(w, 0u);
  for (uint32_t r = 0; r < 2; ++r) send(0, r, 0, w, {1.f}, 1);
  pump();
  ASSERT_EQ(spine_->liveGroups(), 1u);
  advance(400);  // less than an interval: nothing yet
  EXPECT_TRUE(leaf_out_[0].take(MsgType::kWaiting).empty());
  advance(200);
  auto relayed = leaf_out_[0].take(MsgType::kWaiting);
  ASSERT_EQ(relayed.size(), 2u);
  for (uint32_t r = 0; r < 2; ++r) {
    EXPECT_EQ(relayed[r].to, PeerId(1 + r));
    EXPECT_EQ(relayed[r].msg.token, leaf_token_);  // the leaf's lease, not the spine's
    EXPECT_EQ(relayed[r].msg.group_id, 7u);
    EXPECT_EQ(relayed[r].msg.chunk, 0u);
    EXPECT_EQ(relayed[r].msg.count, 1u);  // one leaf missing
    EXPECT_EQ(relayed[r].msg.rank, 2u + 1u);  // leaf 0's 2 members + leaf 1
  }
  EXPECT_EQ(leaf_[0]->counters().waiting_relayed, 1u);
  advance(500);  // still waiting: once more per interval
  EXPECT_EQ(leaf_out_[0].take(MsgType::kWaiting).size(), 2u);
  EXPECT_TRUE(leaf_out_[1].take(MsgType::kWaiting).empty());  // leaf 1 sent nothing up
  // Leaf 1's member comes: everyone gets the result, the WAITINGs stop.
  send(1, 0, 0, w, {2.f}, 1);
  pump();
  EXPECT_EQ(leaf_out_[0].take(MsgType::kResult).size(), 2u);
  EXPECT_EQ(leaf_out_[1].take(MsgType::kResult).size(), 1u);
  advance(1000);
  EXPECT_TRUE(leaf_out_[0].take(MsgType::kWaiting).empty());
  // A stale WAITING from above (chunk 0 answered): ignored, no abort.
  Message stale = clientMessage(MsgType::kWaiting, spine_token_, 7, 0);
  stale.chunk = 0;
  stale.count = 1;
  stale.rank = 1;
  const wire::Frame f = wire::encode(stale);
  leaf_[0]->onParentMessage(f.header.data(), f.header_bytes, nullptr, 0, now_);
  EXPECT_TRUE(leaf_out_[0].take(MsgType::kWaiting).empty());
  EXPECT_TRUE(leaf_out_[0].take(MsgType::kAbort).empty());
  EXPECT_EQ(leaf_[0]->liveGroups(), 1u);
}

// A spine that predates WAITING (data.keepalive = 0s answers as one)
// refuses the uplink JOIN's flag as malformed: the leaf joins again without
// it, the tree forms and serves calls; its members keep the wall-time bound
// for waits above (nothing to relay).
TEST_F(EngineTreeTest, ALeafJoinsASpineThatPredatesWaitingWithoutIt) {
  EngineConfig c, old_spine;
  c.keepalive_ms = 500;
  old_spine.keepalive_ms = 0;
  build(c, 4, old_spine);
  join_flags_ |= wire::kJoinFlagKeepalive;
  const uint32_t w = formTree(1, 1);
  ASSERT_GT(w, 0u);
  send(0, 0, 0, w, {1.f}, 1);
  send(1, 0, 0, w, {2.f}, 1);
  pump();
  auto res = leaf_out_[0].take(MsgType::kResult);
  ASSERT_EQ(res.size(), 1u);
  EXPECT_EQ(floats(res[0]), std::vector<float>{3.f});
  EXPECT_TRUE(leaf_out_[0].take(MsgType::kAbort).empty());
}

TEST(WireTreeJoin, RoundTripsAndRefusesABadBody) {
  Message m;
  m.type = MsgType::kJoin;
  m.size = 3;
  m.rank = 1;
  m.flags = wire::kJoinFlagTree | wire::kJoinFlagBusy;
  m.parent_token = tokenOf(9);
  m.tree_index = 2;
  m.tree_size = 4;
  wire::Frame f = wire::encode(m);
  ASSERT_EQ(f.body.size(), wire::kTreeJoinBodyBytes);
  Message d;
  ASSERT_EQ(wire::decode(f.header.data(), f.header_bytes, f.body.data(), f.body.size(), &d),
            Reason::kNone);
  EXPECT_EQ(d.parent_token, m.parent_token);
  EXPECT_EQ(d.tree_index, 2u);
  EXPECT_EQ(d.tree_size, 4u);
  // Short body, a leaf index beyond the leaves, a body without the flag.
  EXPECT_EQ(wire::decode(f.header.data(), f.header_bytes, f.body.data(), 8, &d), Reason::kMalformed);
  m.tree_index = 4;
  f = wire::encode(m);
  EXPECT_EQ(wire::decode(f.header.data(), f.header_bytes, f.body.data(), f.body.size(), &d),
            Reason::kRankOutOfRange);
  m.tree_index = 0;
  m.flags = wire::kJoinFlagBusy;
  f = wire::encode(m);
  const std::vector<uint8_t> body(wire::kTreeJoinBodyBytes, 0);
  EXPECT_EQ(wire::decode(f.header.data(), f.header_bytes, body.data(), body.size(), &d),
            Reason::kMalformed);
}

}  // namespace
}  // namespace switchagg::agent::testing
