// Trees in memory: two leaf engines and a spine engine wired together
// (what the data plane's parent connection carries, delivered in order),
// for test_data_engine_tree*.cc.
#pragma once

#include <cstring>
#include <deque>

#include "test_data_engine_fixture.h"

namespace switchagg::agent::testing {

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

  // spine: the spine's own configuration (default: the leaves').
  void build(EngineConfig c, uint32_t spine_slots, std::optional<EngineConfig> spine = {}) {
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
        spine.value_or(c),
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
    m.flags = join_flags_;
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
        leaf_[i]->onParentMessage(
            f.header.data(), f.header_bytes,
            s.payload.empty() ? (f.body.empty() ? nullptr : f.body.data()) : s.payload.data(),
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
  // Ticks the three engines every 50 ms (the data plane's period) for `ms`,
  // delivering what they send.
  void advance(int64_t ms) {
    for (int64_t end = now_ + ms; now_ < end;) {
      now_ += 50;
      spine_->tick(now_);
      for (auto& l : leaf_) l->tick(now_);
      pump();
    }
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
  // Chunk `chunk` of a call of `call_elems` elements from every member,
  // leaf 1's members first: in1_ and in0_.
  void sendEvery(uint64_t chunk, uint32_t window, uint64_t call_elems) {
    for (uint32_t r = 0; r < 3; ++r) send(1, r, chunk, window, in1_[r], call_elems);
    for (uint32_t r = 0; r < 2; ++r) send(0, r, chunk, window, in0_[r], call_elems);
  }
  // Two elements per member whose float sum depends on the association:
  // leaf 0's members {1e8, 1}, leaf 1's {-1e8, 1, 1} (first element); the
  // tree's order is (1e8 + 1) + ((-1e8 + 1) + 1). treeSum(): that sum.
  const std::vector<float> in0_[2] = {{1e8f, 3.f}, {1.f, 5.f}};
  const std::vector<float> in1_[3] = {{-1e8f, -3.f}, {1.f, 7.f}, {1.f, 11.f}};
  std::vector<float> treeSum() const {
    std::vector<float> want(2);
    for (size_t e = 0; e < 2; ++e) {
      volatile float left = in0_[0][e];
      left = left + in0_[1][e];
      volatile float right = in1_[0][e];
      right = right + in1_[1][e];
      right = right + in1_[2][e];
      want[e] = left + right;
    }
    return want;
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
  uint32_t join_flags_ = wire::kJoinFlagBusy | wire::kJoinFlagTree;  // the members' JOIN
};

}  // namespace switchagg::agent::testing
