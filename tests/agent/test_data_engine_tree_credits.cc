// Credits at the agent's port in a tree (docs/agent-protocol.md "Credits at
// the agent's port", case 7): a leaf's group is pinned, so it takes its
// credit when it forms and holds it for its life; with the leaves'
// data.inflight_bytes the bound, the tree's window is cut so the leaf with
// the most members fits it, that leaf's bound is hit while no call runs, and another group's call at that port is
// refused busy at once (never queued). When the spine grants a smaller
// window the leaf gives the difference back, which another call then uses;
// the tree's own calls stay exact, and the whole credit comes back when
// the tree group ends.
#include <cstring>

#include "test_data_engine_tree_fixture.h"

namespace switchagg::agent::testing {
namespace {

constexpr size_t kSlot = 64 * 1024;
// Leaf 1's 3 members x a window of 2 chunks fill a leaf's bound exactly
// (leaf 0's 2 members would fit 3: the tree's one window is the smaller).
constexpr int kFull = 1;
constexpr uint32_t kFullMembers = 3;
constexpr size_t kBound = kFullMembers * 2 * kSlot;
constexpr uint64_t kOtherGroup = 8;  // a one-member group beside the tree at leaf 1
constexpr PeerId kOtherPeer = 50;

class EngineTreeCreditTest : public EngineTreeTest {
 protected:
  // Leaves bounded at kBound, the spine unbounded with `spine_slots` slots;
  // the leaves' lease has slots to spare, so only the credit can be short.
  void buildBounded(uint32_t spine_slots) {
    EngineConfig leaf;
    leaf.slot_bytes = kSlot;
    leaf.inflight_bytes = kBound;
    EngineConfig spine;
    spine.slot_bytes = kSlot;
    spine.inflight_bytes = 0;
    build(leaf, spine_slots, spine);
    leases_[leaf_token_] = LeaseInfo{"job1", 16};
  }
  size_t granted(int leaf) const { return leaf_[leaf]->counters().inflight_granted_bytes; }
  size_t grantedMax(int leaf) const { return leaf_[leaf]->counters().inflight_granted_max; }

  // The one-member group at leaf 1 asking for `window` chunks, joined.
  void joinOther(uint32_t window) {
    Message m = clientMessage(MsgType::kJoin, leaf_token_, kOtherGroup, 0);
    m.size = 1;
    m.flags = wire::kJoinFlagBusy;
    m.window = window;
    toLeaf(kFull, kOtherPeer, m);
    pump();
    auto acks = leaf_out_[kFull].take(MsgType::kJoinAck);
    ASSERT_EQ(acks.size(), 1u);
    ASSERT_EQ(acks[0].to, kOtherPeer);
    EXPECT_EQ(acks[0].msg.window, window);
  }
  // Its call of one 2-element chunk: true when the result came back (the
  // value checked), false when it was refused busy for lack of credit.
  bool otherCall(uint64_t chunk, uint32_t window) {
    const std::vector<float> v = {2.5f, -4.f};
    Message c = clientMessage(MsgType::kContrib, leaf_token_, kOtherGroup, 0);
    c.chunk = chunk;
    c.slot = uint32_t(chunk % window);
    c.dtype = Dtype::kFloat32;
    c.op = Op::kSum;
    c.count = 2;
    c.call_elems = 2;
    toLeaf(kFull, kOtherPeer, c, bytesOf(v));
    pump();
    std::vector<Sent> errors = leaf_out_[kFull].take(MsgType::kError);
    for (const Sent& e : errors) {
      EXPECT_EQ(e.to, kOtherPeer);
      EXPECT_EQ(e.msg.reason, Reason::kBusy) << e.msg.text;
      EXPECT_NE(e.msg.text.find("inflight"), std::string::npos) << e.msg.text;
    }
    std::vector<Sent> mine;
    for (Sent& s : leaf_out_[kFull].take(MsgType::kResult))
      if (s.to == kOtherPeer) mine.push_back(std::move(s));
    if (!errors.empty()) {
      EXPECT_TRUE(mine.empty());
      return false;
    }
    EXPECT_EQ(mine.size(), 1u);
    if (mine.size() == 1) {
      EXPECT_EQ(floats(mine[0]), v);  // one member: its own input
    }
    return mine.size() == 1;
  }
  // One call of the tree (one chunk), every member's result checked
  // against the association-exact sum computed here.
  void treeCall(uint64_t chunk, uint32_t window) {
    sendEvery(chunk, window, 2);
    pump();
    const std::vector<float> want = treeSum();
    for (int i = 0; i < 2; ++i) {
      auto res = leaf_out_[i].take(MsgType::kResult);
      ASSERT_EQ(res.size(), size_t(i == 0 ? 2 : 3)) << "leaf " << i;
      for (const Sent& s : res) EXPECT_EQ(floats(s), want) << "leaf " << i << " peer " << s.to;
    }
    for (int i = 0; i < 2; ++i) EXPECT_TRUE(leaf_out_[i].take(MsgType::kAbort).empty());
  }
  // Leaf 1's members leave: the tree group ends there and gives its credit back.
  void endTree() {
    for (uint32_t r = 0; r < kFullMembers; ++r)
      toLeaf(kFull, 1 + r, clientMessage(MsgType::kLeave, leaf_token_, 7, r));
    pump();
  }
};

TEST_F(EngineTreeCreditTest, ALeafGroupHoldsItsCreditForItsLifeAndOthersAreRefusedBusy) {
  buildBounded(4);
  const uint32_t w = formTree(2, 3);
  ASSERT_EQ(w, 2u) << "leaf 1's window cut by its bound (16 slots of the lease, 2 fit)";
  // The bound is hit with no call running: the credit was taken at formation.
  EXPECT_EQ(granted(kFull), kBound);
  EXPECT_EQ(granted(0), 2 * w * kSlot) << "leaf 0 kept more than the tree's window";
  joinOther(1);
  EXPECT_FALSE(otherCall(0, 1)) << "a call past the held credit was not refused";
  EXPECT_EQ(granted(kFull), kBound);
  // The tree's calls run through it, exact, within the bound.
  treeCall(0, w);
  treeCall(1, w);
  EXPECT_EQ(granted(kFull), kBound) << "a pinned group kept its credit between calls";
  EXPECT_LE(grantedMax(kFull), kBound);
  EXPECT_FALSE(otherCall(1, 1));
  endTree();
  EXPECT_EQ(granted(kFull), 0u) << "the tree group's credit did not come back";
  EXPECT_TRUE(otherCall(2, 1)) << "the credit given back is not usable";
  EXPECT_LE(grantedMax(kFull), kBound);
}

TEST_F(EngineTreeCreditTest, ASmallerWindowFromTheSpineGivesTheDifferenceBackAtTheLeaf) {
  buildBounded(1);  // the spine's lease: one slot, so one chunk in flight
  const uint32_t w = formTree(2, 3);
  ASSERT_EQ(w, 1u);
  EXPECT_EQ(granted(kFull), kBound / 2)
      << "leaf 1 still holds the window the spine did not grant";
  EXPECT_EQ(granted(0), 2 * kSlot);
  EXPECT_LE(grantedMax(kFull), kBound);
  // The half given back serves another group's call of a window of 3.
  joinOther(3);
  EXPECT_TRUE(otherCall(0, 3));
  treeCall(0, w);
  EXPECT_EQ(granted(kFull), kBound / 2);
  endTree();
  EXPECT_EQ(granted(kFull), 0u);
  EXPECT_LE(grantedMax(kFull), kBound);
}

}  // namespace
}  // namespace switchagg::agent::testing
