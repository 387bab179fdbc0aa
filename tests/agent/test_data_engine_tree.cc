// Trees: two leaf engines and a spine engine wired in memory (what the data
// plane's parent connection carries, delivered in order). Members join their
// leaf with kJoinFlagTree; the leaves join the spine; results are reduced in
// rank order within each leaf and leaves in index order, and every member
// gets the spine's result. Anything wrong above a leaf (spine gone, silent,
// aborting) aborts the leaf's group with parent_failed, in bounded time.
#include <cstring>
#include <deque>

#include "test_data_engine_fixture.h"

namespace switchagg::agent::testing {
namespace {

using wire::Message;
using wire::MsgType;
using wire::Reason;

constexpr PeerId kLeafPeer = 100;  // the spine's peer id of leaf i: kLeafPeer + i

struct Wire {
  PeerId from;
  wire::Frame frame;
  std::vector<uint8_t> body;
};

// A leaf's output: members' messages recorded, messages up queued.
class LeafOutput : public RecordingOutput {
 public:
  bool sendUp(wire::Frame frame, const void* payload, size_t bytes,
              std::shared_ptr<SlotBuffers>) override {
    if (!parent_up) return false;
    Wire w{peer, frame, frame.body};
    if (payload) {
      const auto* p = static_cast<const uint8_t*>(payload);
      w.body.assign(p, p + bytes);
    }
    up.push_back(std::move(w));
    return true;
  }
  PeerId peer = 0;
  bool parent_up = true;
  std::deque<Wire> up;
};

class EngineTreeTest : public ::testing::Test {
 protected:
  EngineTreeTest() : pool_(2) {}

  void SetUp() override { build(EngineConfig{}, 4); }

  void build(EngineConfig c, uint32_t spine_slots) {
    leaf_token_ = tokenOf(1);
    spine_token_ = tokenOf(2);
    leases_[leaf_token_] = LeaseInfo{"job1", 4};
    spine_leases_[spine_token_] = LeaseInfo{"job1", spine_slots};
    EngineConfig lc = c;
    lc.has_parent = true;
    for (int i = 0; i < 2; ++i) {
      leaf_out_[i].peer = kLeafPeer + PeerId(i);
      leaf_[i] = std::make_unique<AggregationEngine>(
          lc,
          [this](const LeaseToken& t) -> std::optional<LeaseInfo> {
            auto it = leases_.find(t);
            return it == leases_.end() ? std::nullopt : std::optional<LeaseInfo>(it->second);
          },
          leaf_out_[i], pool_);
    }
    spine_ = std::make_unique<AggregationEngine>(
        c,
        [this](const LeaseToken& t) -> std::optional<LeaseInfo> {
          auto it = spine_leases_.find(t);
          return it == spine_leases_.end() ? std::nullopt : std::optional<LeaseInfo>(it->second);
        },
        spine_out_, pool_);
  }

  // Member `rank` of `size` at leaf `leaf` (peer 1 + rank there).
  Message treeJoin(int leaf, uint32_t size, uint32_t rank, uint32_t leaves = 2) {
    Message m = clientMessage(MsgType::kJoin, leaf_token_, 7, rank);
    m.size = size;
    m.flags = wire::kJoinFlagBusy | wire::kJoinFlagTree;
    m.parent_token = spine_token_;
    m.tree_index = uint32_t(leaf);
    m.tree_size = leaves;
    return m;
  }
  void toLeaf(int leaf, PeerId from, const Message& m, const std::vector<uint8_t>& payload = {}) {
    const wire::Frame f = wire::encode(m);
    const std::vector<uint8_t> body = payload.empty() ? f.body : payload;
    leaf_[leaf]->onMessage(from, f.header.data(), f.header_bytes,
                           body.empty() ? nullptr : body.data(), body.size(), now_);
  }
  // Runs the three engines until nothing moves: reductions, sends up, the
  // spine's answers down, every send completed.
  void pump() {
    for (int round = 0; round < 64; ++round) {
      bool moved = false;
      for (int i = 0; i < 2; ++i) {
        leaf_[i]->reduceReady();
        while (!leaf_out_[i].up.empty()) {
          Wire w = std::move(leaf_out_[i].up.front());
          leaf_out_[i].up.pop_front();
          spine_->onMessage(w.from, w.frame.header.data(), w.frame.header_bytes,
                            w.body.empty() ? nullptr : w.body.data(), w.body.size(), now_);
          moved = true;
        }
      }
      spine_->reduceReady();
      for (Sent& s : spine_out_.sent) {
        const int i = int(s.to - kLeafPeer);
        const wire::Frame f = wire::encode(s.msg);
        leaf_[i]->onParentMessage(f.header.data(), f.header_bytes,
                                  s.payload.empty() ? (f.body.empty() ? nullptr : f.body.data())
                                                    : s.payload.data(),
                                  s.payload.empty() ? f.body.size() : s.payload.size(), now_);
        moved = true;
      }
      spine_out_.sent.clear();
      for (auto& p : spine_out_.pending) spine_->sendDone(p.serial, p.slot);
      spine_out_.pending.clear();
      for (int i = 0; i < 2; ++i) {
        for (auto& p : leaf_out_[i].pending) leaf_[i]->sendDone(p.serial, p.slot);
        moved = moved || !leaf_out_[i].pending.empty();
        leaf_out_[i].pending.clear();
      }
      if (!moved) return;
    }
  }
  // Leaf 0 has members 0..a-1, leaf 1 members 0..b-1; returns the window
  // every member was granted (0 if any JOIN_ACK is missing).
  uint32_t formTree(uint32_t a, uint32_t b) {
    for (uint32_t r = 0; r < a; ++r) toLeaf(0, 1 + r, treeJoin(0, a, r));
    for (uint32_t r = 0; r < b; ++r) toLeaf(1, 1 + r, treeJoin(1, b, r));
    pump();
    auto acks0 = leaf_out_[0].take(MsgType::kJoinAck);
    auto acks1 = leaf_out_[1].take(MsgType::kJoinAck);
    if (acks0.size() != a || acks1.size() != b) return 0;
    EXPECT_EQ(acks0[0].msg.window, acks1[0].msg.window);
    return acks0[0].msg.window;
  }
  void send(int leaf, uint32_t rank, uint64_t chunk, uint32_t window, const std::vector<float>& v,
            uint64_t call_elems) {
    Message m = clientMessage(MsgType::kContrib, leaf_token_, 7, rank);
    m.chunk = chunk;
    m.slot = uint32_t(chunk % window);
    m.dtype = Dtype::kFloat32;
    m.op = Op::kSum;
    m.count = uint32_t(v.size());
    m.call_elems = call_elems;
    toLeaf(leaf, 1 + rank, m, bytesOf(v));
  }
  static std::vector<float> floats(const Sent& s) {
    std::vector<float> v(s.payload.size() / 4);
    if (!v.empty()) std::memcpy(v.data(), s.payload.data(), s.payload.size());
    return v;
  }

  std::unordered_map<LeaseToken, LeaseInfo> leases_, spine_leases_;
  wire::Token leaf_token_, spine_token_;
  LeafOutput leaf_out_[2];
  RecordingOutput spine_out_;
  ReducePool pool_;
  std::unique_ptr<AggregationEngine> leaf_[2];
  std::unique_ptr<AggregationEngine> spine_;
  int64_t now_ = 1000;
};

TEST_F(EngineTreeTest, LeavesReduceInRankOrderTheSpineInLeafOrderEveryMemberGetsIt) {
  const uint32_t w = formTree(2, 3);
  ASSERT_GT(w, 0u);
  // Values whose float sum depends on the association: leaf 0 = {1e8, 1},
  // leaf 1 = {-1e8, 1, 1}. Tree order: (1e8 + 1) + ((-1e8 + 1) + 1).
  const std::vector<float> a[2] = {{1e8f, 3.f}, {1.f, 5.f}};
  const std::vector<float> b[3] = {{-1e8f, -3.f}, {1.f, 7.f}, {1.f, 11.f}};
  for (uint64_t chunk = 0; chunk < 2; ++chunk) {  // two chunks of one 4-element call
    for (uint32_t r = 0; r < 3; ++r) send(1, r, chunk, w, b[r], 4);
    for (uint32_t r = 0; r < 2; ++r) send(0, r, chunk, w, a[r], 4);
    pump();
  }
  float want[2];
  for (int e = 0; e < 2; ++e) {
    volatile float left = a[0][e];
    left = left + a[1][e];
    volatile float right = b[0][e];
    right = right + b[1][e];
    right = right + b[2][e];
    want[e] = left + right;
  }
  for (int i = 0; i < 2; ++i) {
    auto res = leaf_out_[i].take(MsgType::kResult);
    ASSERT_EQ(res.size(), size_t(i == 0 ? 2 * 2 : 2 * 3)) << "leaf " << i;
    for (const Sent& s : res) {
      const std::vector<float> got = floats(s);
      ASSERT_EQ(got.size(), 2u);
      EXPECT_EQ(std::memcmp(got.data(), want, sizeof want), 0)
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
