// Test fixture for the aggregation engine without UCX: fake leases, an
// output that records (and decodes) every message, and helpers that build
// client messages.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "aggregation_engine.h"
#include "reduce_pool.h"

namespace switchagg::agent::testing {

struct Sent {
  PeerId to = 0;
  wire::Message msg;
  std::vector<uint8_t> payload;  // RESULT payload copy / control body
  uint64_t serial = 0;           // RESULT: for sendDone
};

class RecordingOutput : public EngineOutput {
 public:
  void sendControl(PeerId to, wire::Frame frame) override {
    Sent s;
    s.to = to;
    s.payload = frame.body;
    EXPECT_EQ(wire::decode(frame.header.data(), frame.header_bytes, s.payload.data(),
                           s.payload.size(), &s.msg),
              wire::Reason::kNone);
    sent.push_back(std::move(s));
  }
  void sendResult(PeerId to, const uint8_t* header, size_t header_bytes, const void* payload,
                  size_t bytes, std::shared_ptr<SlotBuffers> buffers, uint64_t serial,
                  uint32_t slot) override {
    Sent s;
    s.to = to;
    const auto* p = static_cast<const uint8_t*>(payload);
    s.payload.assign(p, p + bytes);
    EXPECT_EQ(wire::decode(header, header_bytes, s.payload.data(), s.payload.size(), &s.msg),
              wire::Reason::kNone);
    s.serial = serial;
    sent.push_back(std::move(s));
    pending.push_back({serial, slot, std::move(buffers)});
  }
  struct Pending {
    uint64_t serial;
    uint32_t slot;
    std::shared_ptr<SlotBuffers> keep;
  };
  std::vector<Sent> sent;
  std::vector<Pending> pending;

  std::vector<Sent> take(wire::MsgType type) {
    std::vector<Sent> out, rest;
    for (auto& s : sent) (s.msg.type == type ? out : rest).push_back(std::move(s));
    sent.swap(rest);
    return out;
  }
};

inline wire::Token tokenOf(uint8_t seed) {
  wire::Token t{};
  for (size_t i = 0; i < t.size(); ++i) t[i] = static_cast<uint8_t>(seed * 31 + i);
  return t;
}

// A client message of `type` from member `rank` of group `gid` under lease
// `t`: the fields every message a test builds starts from.
inline wire::Message clientMessage(wire::MsgType type, const wire::Token& t, uint64_t gid = 0,
                                   uint32_t rank = 0) {
  wire::Message m;
  m.type = type;
  m.token = t;
  m.group_id = gid;
  m.rank = rank;
  return m;
}

// A RESULT's payload as values of T.
template <typename T>
std::vector<T> valuesOf(const Sent& s) {
  std::vector<T> v(s.payload.size() / sizeof(T));
  if (!v.empty()) std::memcpy(v.data(), s.payload.data(), v.size() * sizeof(T));
  return v;
}

class EngineTest : public ::testing::Test {
 protected:
  explicit EngineTest(int threads = 2) : pool_(threads) {}

  void SetUp() override { makeEngine(EngineConfig{}); }

  void makeEngine(EngineConfig c) {
    config_ = c;
    engine_ = std::make_unique<AggregationEngine>(
        c,
        [this](const LeaseToken& token) -> std::optional<LeaseInfo> {
          auto it = leases_.find(token);
          if (it == leases_.end()) return std::nullopt;
          return it->second;
        },
        out_, pool_);
  }

  wire::Token addLease(uint8_t seed, const std::string& job, uint32_t slots) {
    const wire::Token t = tokenOf(seed);
    leases_[t] = LeaseInfo{job, slots};
    return t;
  }

  void deliver(PeerId from, const wire::Message& m, const void* payload = nullptr,
               size_t bytes = 0) {
    const wire::Frame f = wire::encode(m);
    std::vector<uint8_t> body = f.body;
    if (payload) {
      const auto* p = static_cast<const uint8_t*>(payload);
      body.assign(p, p + bytes);
    }
    // As the data plane does for a rendezvous message: the body lands where
    // the engine says, if it places it.
    if (placed_ && body.size() >= AggregationEngine::kPlacedMinBytes) {
      const auto at = engine_->placeContrib(from, f.header.data(), f.header_bytes, body.size());
      if (at.data) {
        std::memcpy(at.data, body.data(), body.size());
        ++placements_;
        engine_->onMessage(from, f.header.data(), f.header_bytes, at.data, body.size(), now_,
                           at.cookie);
        return;
      }
    }
    engine_->onMessage(from, f.header.data(), f.header_bytes, body.empty() ? nullptr : body.data(),
                       body.size(), now_);
  }

  // flags: what today's client says (it understands ERROR(busy)); 0 = an
  // older client.
  void join(PeerId from, const wire::Token& t, uint64_t gid, uint32_t size, uint32_t rank,
            uint32_t window = 0, uint32_t flags = wire::kJoinFlagBusy) {
    wire::Message m = clientMessage(wire::MsgType::kJoin, t, gid, rank);
    m.size = size;
    m.window = window;
    m.flags = flags;
    deliver(from, m);
  }

  // A CONTRIB of `bytes` of chunk `chunk` (call_elems 0: the chunk is the call).
  static wire::Message contribMessage(const wire::Token& t, uint64_t gid, uint32_t rank,
                                      uint64_t chunk, uint32_t window, Dtype d, Op op,
                                      size_t bytes, uint64_t call_elems = 0) {
    wire::Message m = clientMessage(wire::MsgType::kContrib, t, gid, rank);
    m.chunk = chunk;
    m.slot = static_cast<uint32_t>(chunk % window);
    m.dtype = d;
    m.op = op;
    m.count = static_cast<uint32_t>(bytes / dtypeSize(d));
    m.call_elems = call_elems ? call_elems : m.count;
    return m;
  }

  void contrib(PeerId from, const wire::Token& t, uint64_t gid, uint32_t rank, uint64_t chunk,
               uint32_t window, Dtype d, Op op, const std::vector<uint8_t>& data,
               uint64_t call_elems = 0) {
    deliver(from, contribMessage(t, gid, rank, chunk, window, d, op, data.size(), call_elems),
            data.data(), data.size());
  }

  // Reduces what is ready and completes every recorded send.
  void pump() {
    engine_->reduceReady();
    completeSends();
  }
  void completeSends() {
    auto p = std::move(out_.pending);
    out_.pending.clear();
    for (auto& e : p) engine_->sendDone(e.serial, e.slot);
  }

  // Joins `size` members (peers 1..size) into group `gid` and returns the window.
  uint32_t formGroup(const wire::Token& t, uint64_t gid, uint32_t size, PeerId first_peer = 1,
                     uint32_t window = 0, uint32_t flags = wire::kJoinFlagBusy) {
    for (uint32_t r = 0; r < size; ++r) join(first_peer + r, t, gid, size, r, window, flags);
    auto acks = out_.take(wire::MsgType::kJoinAck);
    EXPECT_EQ(acks.size(), size);
    return acks.empty() ? 0 : acks[0].msg.window;
  }

  std::unordered_map<LeaseToken, LeaseInfo> leases_;
  RecordingOutput out_;
  ReducePool pool_;
  EngineConfig config_;
  std::unique_ptr<AggregationEngine> engine_;
  int64_t now_ = 1000;
  bool placed_ = false;     // contributions received as into the slot (placeContrib)
  size_t placements_ = 0;   // how many were
};

template <typename T>
std::vector<uint8_t> bytesOf(const std::vector<T>& v) {
  const auto* p = reinterpret_cast<const uint8_t*>(v.data());
  return std::vector<uint8_t>(p, p + v.size() * sizeof(T));
}

}  // namespace switchagg::agent::testing
