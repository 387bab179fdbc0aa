// The engine's per-chunk path allocates nothing once warm: every operator
// new of this process is counted (this test is its own executable), and a
// group streams calls of 4 and of 64 chunks through the engine from
// pre-encoded messages, members in rank order and out of it; the calls of
// 64 chunks must cost exactly the allocations of the calls of 4 (none per
// chunk), and the count per call is reported.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <new>
#include <vector>

#include "aggregation_engine.h"
#include "counting_new.h"
#include "reduce_pool.h"

namespace {
std::atomic<bool> g_counting{false};
std::atomic<uint64_t> g_allocs{0};
}  // namespace

void countAllocation() {
  if (g_counting.load(std::memory_order_relaxed)) g_allocs.fetch_add(1, std::memory_order_relaxed);
}

namespace switchagg::agent {
namespace {

using wire::Message;
using wire::MsgType;

// Completes sends at once (into a reserved list) and keeps nothing else.
class QuietOutput : public EngineOutput {
 public:
  explicit QuietOutput(size_t most) { done.reserve(most); }
  void sendControl(PeerId, wire::Frame) override { ++control; }
  void sendResult(PeerId, const uint8_t*, size_t, const void*, size_t,
                  std::shared_ptr<SlotBuffers>, uint64_t serial, uint32_t slot) override {
    done.emplace_back(serial, slot);
    ++results;
  }
  std::vector<std::pair<uint64_t, uint32_t>> done;
  uint64_t control = 0, results = 0;
};

struct Encoded {
  PeerId from;
  wire::Frame frame;
};

class EngineAlloc : public ::testing::Test {
 protected:
  static constexpr uint32_t kMembers = 5, kWindow = 4;
  static constexpr size_t kCount = 2048;  // 8 KiB float32 chunks

  void SetUp() override {
    token_ = wire::Token{};
    for (size_t i = 0; i < token_.size(); ++i) token_[i] = uint8_t(i * 7 + 3);
    EngineConfig c;
    c.slot_bytes = kCount * sizeof(float);
    engine_ = std::make_unique<AggregationEngine>(
        c,
        [this](const LeaseToken& t) -> std::optional<LeaseInfo> {
          if (t != token_) return std::nullopt;
          return LeaseInfo{"job-with-a-long-name-past-sso", kWindow};
        },
        out_, pool_);
    for (uint32_t r = 0; r < kMembers; ++r) {
      Message j;
      j.type = MsgType::kJoin;
      j.token = token_;
      j.group_id = 9;
      j.rank = r;
      j.size = kMembers;
      j.window = kWindow;
      j.flags = wire::kJoinFlagBusy;
      const wire::Frame f = wire::encode(j);
      engine_->onMessage(1 + r, f.header.data(), f.header_bytes, nullptr, 0, 1000);
    }
    EXPECT_EQ(out_.control, kMembers);  // the JOIN_ACKs
    out_.control = 0;
    data_.assign(kMembers, std::vector<float>(kCount));
    for (uint32_t r = 0; r < kMembers; ++r)
      for (size_t i = 0; i < kCount; ++i) data_[r][i] = float(r + 1) * 0.5f + float(i % 7);
  }

  // A call of `chunks` chunks, every member's messages encoded up front;
  // `shuffle`: members of each chunk arrive in the order 3, 0, 4, 1, 2.
  std::vector<Encoded> encodeCall(uint64_t first_chunk, uint64_t chunks, bool shuffle) {
    std::vector<Encoded> msgs;
    static const uint32_t kOrder[] = {3, 0, 4, 1, 2};
    for (uint64_t c = 0; c < chunks; ++c)
      for (uint32_t k = 0; k < kMembers; ++k) {
        const uint32_t r = shuffle ? kOrder[k] : k;
        Message m;
        m.type = MsgType::kContrib;
        m.token = token_;
        m.group_id = 9;
        m.rank = r;
        m.chunk = first_chunk + c;
        m.slot = uint32_t(m.chunk % kWindow);
        m.dtype = dtype_;
        m.op = Op::kSum;
        m.count = kCount;
        m.call_elems = kCount * chunks;
        msgs.push_back({1 + r, wire::encode(m)});
      }
    return msgs;
  }

  // Feeds a call through the engine as the data plane would: a window's
  // chunks in flight, reduce passes, sends completed. Returns allocations.
  uint64_t runCall(const std::vector<Encoded>& msgs, uint64_t chunks) {
    const uint64_t before = g_allocs.load();
    g_counting.store(true);
    size_t at = 0;
    const uint64_t results0 = out_.results;
    uint64_t sent = 0;
    while (sent < chunks && out_.control == 0) {
      // Up to a window of chunks in flight.
      while (at < msgs.size() && (at / kMembers) < sent + kWindow) {
        const Encoded& e = msgs[at];
        const uint32_t r = uint32_t(e.from - 1);
        engine_->onMessage(e.from, e.frame.header.data(), e.frame.header_bytes, data_[r].data(),
                           kCount * dtypeSize(dtype_), now_);
        ++at;
      }
      engine_->reduceReady();
      for (auto& [serial, slot] : out_.done) engine_->sendDone(serial, slot);
      sent = (out_.results - results0) / kMembers;
      out_.done.clear();
    }
    g_counting.store(false);
    return g_allocs.load() - before;
  }

  wire::Token token_{};
  ReducePool pool_{2};
  QuietOutput out_{4096};
  std::unique_ptr<AggregationEngine> engine_;
  std::vector<std::vector<float>> data_;  // a 16-bit dtype reads the first half
  int64_t now_ = 1000;
  Dtype dtype_ = Dtype::kFloat32;

  void expectNoAllocationPerChunk();
};

TEST_F(EngineAlloc, ThePerChunkPathAllocatesNothingOnceWarm) { expectNoAllocationPerChunk(); }

// 16-bit floats are folded at the end in fp32 on the stack: nothing per
// chunk either.
TEST_F(EngineAlloc, HalfFloatChunksAllocateNothingOnceWarm) {
  dtype_ = Dtype::kFloat16;
  expectNoAllocationPerChunk();
}

void EngineAlloc::expectNoAllocationPerChunk() {
  uint64_t chunk = 0;
  auto call = [&](uint64_t chunks, bool shuffle) {
    const auto msgs = encodeCall(chunk, chunks, shuffle);  // outside the count
    const uint64_t results = out_.results;
    const uint64_t n = runCall(msgs, chunks);
    chunk += chunks;
    EXPECT_EQ(out_.results - results, chunks * kMembers);
    return n;
  };
  for (int i = 0; i < 4; ++i) (void)call(64, i % 2);  // warm: buffers, scratch, ring
  const uint64_t small_in = call(4, false), small_out = call(4, true);
  const uint64_t big_in = call(64, false), big_out = call(64, true);
  std::printf("allocations per call: 4 chunks %llu (in order) %llu (shuffled); 64 chunks %llu %llu\n",
              static_cast<unsigned long long>(small_in), static_cast<unsigned long long>(small_out),
              static_cast<unsigned long long>(big_in), static_cast<unsigned long long>(big_out));
  EXPECT_EQ(big_in, small_in) << "allocations grow with the chunks of a call";
  EXPECT_EQ(big_out, small_out) << "allocations grow with the chunks of a call";
  EXPECT_EQ(big_in + big_out, 0u) << "a call allocates once warm";
  EXPECT_EQ(out_.control, 0u) << "an ERROR or ABORT went out";
  EXPECT_EQ(engine_->counters().groups_aborted, 0u);
  // The counter is live: one allocation is seen.
  const uint64_t before = g_allocs.load();
  g_counting.store(true);
  auto* probe = new std::vector<int>(3);
  g_counting.store(false);
  delete probe;
  EXPECT_GE(g_allocs.load() - before, 1u);
}

}  // namespace
}  // namespace switchagg::agent
