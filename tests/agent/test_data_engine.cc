// Aggregation engine, normal operation: joining, streaming through a window,
// rank-ordered (arrival-order independent) reduction, slot accounting.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "test_data_engine_fixture.h"
#include "test_data_util.h"

namespace switchagg::agent::testing {
namespace {

using wire::MsgType;

TEST_F(EngineTest, HelloAdvertisesLeaseSlotsSlotBytesAndCapabilities) {
  const auto t = addLease(1, "job1", 6);
  deliver(7, clientMessage(MsgType::kHello, t));
  auto acks = out_.take(MsgType::kHelloAck);
  ASSERT_EQ(acks.size(), 1u);
  EXPECT_EQ(acks[0].to, 7u);
  EXPECT_EQ(acks[0].msg.window, 6u);
  EXPECT_EQ(acks[0].msg.slot_bytes, config_.slot_bytes);
  EXPECT_TRUE(acks[0].msg.caps.supports(Dtype::kFloat32, Op::kSum));
  EXPECT_TRUE(acks[0].msg.caps.supports(Dtype::kInt64, Op::kMax));
  EXPECT_TRUE(acks[0].msg.caps.supports(Dtype::kDoubleInt, Op::kMinloc));
  EXPECT_FALSE(acks[0].msg.caps.supports(Dtype::kFloat32, Op::kBand));
}

TEST_F(EngineTest, CapacityTellsTheMeasuredReduceRateTheLinkAndTurnaround) {
  EngineConfig c;
  c.link_mbps = 400;
  makeEngine(c);
  const auto t = addLease(1, "job1", 4);
  const wire::Message ask = clientMessage(MsgType::kCapacity, t);
  deliver(7, ask);
  auto acks = out_.take(MsgType::kCapacityAck);
  ASSERT_EQ(acks.size(), 1u);
  EXPECT_EQ(acks[0].to, 7u);
  EXPECT_GT(acks[0].msg.capacity.reduce_mbps, 10u);  // a float sum kernel runs faster than 10 MB/s
  EXPECT_EQ(acks[0].msg.capacity.link_mbps, 400u);
  EXPECT_EQ(acks[0].msg.capacity.turnaround_us, 0u);  // no chunk reduced yet: unknown
  // After chunks went through, the turnaround is measured.
  const uint32_t window = formGroup(t, 5, 2);
  const std::vector<uint8_t> data(64 * 1024, 1);
  for (uint32_t r = 0; r < 2; ++r)
    contrib(r + 1, t, 5, r, 0, window, Dtype::kInt8, Op::kBor, data);
  pump();
  ASSERT_EQ(out_.take(MsgType::kResult).size(), 2u);
  deliver(7, ask);
  acks = out_.take(MsgType::kCapacityAck);
  ASSERT_EQ(acks.size(), 1u);
  EXPECT_GE(acks[0].msg.capacity.turnaround_us, 1u);  // measured, at least 1 us
  EXPECT_EQ(engine_->capacity().turnaround_us, acks[0].msg.capacity.turnaround_us);
}

TEST_F(EngineTest, CapacityNeedsAValidTokenAndCanBeTurnedOff) {
  const auto t = addLease(1, "job1", 4);
  wire::Message ask = clientMessage(MsgType::kCapacity, tokenOf(9));  // no such lease
  deliver(7, ask);
  auto errors = out_.take(MsgType::kError);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].msg.reason, wire::Reason::kBadToken);
  // advertise_capacity=false answers as an agent that predates the message.
  EngineConfig c;
  c.advertise_capacity = false;
  makeEngine(c);
  ask.token = t;
  deliver(7, ask);
  EXPECT_TRUE(out_.take(MsgType::kCapacityAck).empty());
  errors = out_.take(MsgType::kError);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].msg.reason, wire::Reason::kBadType);
  // As a v1.0 agent: its decoder stopped at the unknown type, no token.
  EXPECT_TRUE(errors[0].msg.token == wire::Token{});
}

TEST_F(EngineTest, JoinAckGoesToEveryMemberOnlyOnceAllJoined) {
  const auto t = addLease(1, "job1", 4);
  join(1, t, 9, 3, 0);
  join(2, t, 9, 3, 2);
  EXPECT_TRUE(out_.take(MsgType::kJoinAck).empty());
  join(3, t, 9, 3, 1);
  auto acks = out_.take(MsgType::kJoinAck);
  ASSERT_EQ(acks.size(), 3u);
  std::map<PeerId, uint32_t> rank_of;
  for (auto& a : acks) {
    rank_of[a.to] = a.msg.rank;
    EXPECT_EQ(a.msg.size, 3u);
    EXPECT_EQ(a.msg.window, 4u);
    EXPECT_EQ(a.msg.group_id, 9u);
  }
  EXPECT_EQ(rank_of[1], 0u);
  EXPECT_EQ(rank_of[2], 2u);
  EXPECT_EQ(rank_of[3], 1u);
  auto c = engine_->counters();
  EXPECT_EQ(c.groups_active, 1u);
  EXPECT_EQ(c.slots_reserved, 0u);  // slots are taken per call, not at formation
  EXPECT_EQ(c.groups_by_job["job1"], 1u);
}

TEST_F(EngineTest, SmallestNonzeroWindowRequestWins) {
  const auto t = addLease(1, "job1", 8);
  join(1, t, 5, 3, 0, 0);
  join(2, t, 5, 3, 1, 5);
  join(3, t, 5, 3, 2, 3);
  auto acks = out_.take(MsgType::kJoinAck);
  ASSERT_EQ(acks.size(), 3u);
  for (auto& a : acks) EXPECT_EQ(a.msg.window, 3u);
}

// The heart of determinism: float sums whose value depends on the order of
// additions come out bitwise identical to the rank-ordered reference for
// every arrival order, and the work is split across the pool's threads.
TEST_F(EngineTest, ResultIsBitwiseTheSameForEveryArrivalOrder) {
  const auto t = addLease(1, "job1", 2);
  const uint32_t size = 4;
  const size_t count = 40000;  // 160 KB: several pool pieces
  std::vector<std::vector<float>> in(size, std::vector<float>(count));
  for (uint32_t r = 0; r < size; ++r)
    for (size_t i = 0; i < count; ++i)
      in[r][i] = (r % 2 ? 1e8f : 1.0f) * (1.0f + static_cast<float>((i * 7 + r) % 13)) *
                     (r == 2 ? -1.0f : 1.0f) +
                 0.1f * static_cast<float>(r);
  std::vector<float> want = in[0];
  for (uint32_t r = 1; r < size; ++r)
    ASSERT_TRUE(reduceInto(Dtype::kFloat32, Op::kSum, want.data(), in[r].data(), count).ok());

  std::vector<uint32_t> order(size);
  std::iota(order.begin(), order.end(), 0);
  uint64_t gid = 100;
  int perms = 0;
  do {
    ++gid;
    ASSERT_EQ(formGroup(t, gid, size), 2u);
    for (uint32_t r : order)
      contrib(1 + r, t, gid, r, 0, 2, Dtype::kFloat32, Op::kSum, bytesOf(in[r]));
    pump();
    auto results = out_.take(MsgType::kResult);
    ASSERT_EQ(results.size(), size);
    for (auto& res : results)
      ASSERT_EQ(std::memcmp(res.payload.data(), want.data(), count * sizeof(float)), 0)
          << "arrival order permutation " << perms;
    for (uint32_t r = 0; r < size; ++r) deliver(1 + r, clientMessage(MsgType::kLeave, t, gid, r));
    ++perms;
  } while (std::next_permutation(order.begin(), order.end()));
  EXPECT_EQ(perms, 24);
  EXPECT_EQ(engine_->counters().groups_active, 0u);
  EXPECT_EQ(engine_->counters().slots_reserved, 0u);
}

TEST_F(EngineTest, StreamsManyChunksThroughTheWindowForEveryDtypeAndOp) {
  const auto t = addLease(1, "job1", 3);
  const uint32_t size = 3;
  uint64_t gid = 1;
  for (int d = 1; d <= kNumDtypes; ++d) {
    for (int o = 1; o <= kNumOps; ++o) {
      const auto dt = static_cast<Dtype>(d);
      const auto op = static_cast<Op>(o);
      if (!reduceSupported(dt, op)) continue;
      ++gid;
      const uint32_t w = formGroup(t, gid, size);
      ASSERT_EQ(w, 3u);
      const size_t chunk_elems = 5, chunks = 7, count = chunk_elems * chunks - 2;
      const auto want = switchagg::testing::referenceResult(dt, op, size, 0, count);
      std::vector<std::vector<uint8_t>> inputs;
      for (uint32_t r = 0; r < size; ++r)
        inputs.push_back(switchagg::testing::makeInput(dt, r, 0, count));
      std::vector<uint8_t> got(want.size());
      const size_t es = dtypeSize(dt);
      for (uint64_t c = 0; c < chunks; ++c) {
        const size_t n = std::min(chunk_elems, count - c * chunk_elems);
        for (uint32_t r = 0; r < size; ++r) {
          const uint8_t* p = inputs[r].data() + c * chunk_elems * es;
          contrib(1 + r, t, gid, r, c, w, dt, op, std::vector<uint8_t>(p, p + n * es), count);
        }
        pump();
        auto res = out_.take(MsgType::kResult);
        ASSERT_EQ(res.size(), size) << dtypeName(dt) << "/" << opName(op) << " chunk " << c;
        EXPECT_EQ(res[0].msg.chunk, c);
        EXPECT_EQ(res[0].msg.slot, c % w);
        std::memcpy(got.data() + c * chunk_elems * es, res[0].payload.data(), n * es);
      }
      EXPECT_TRUE(switchagg::testing::sameResult(dt, got.data(), want.data(), count))
          << dtypeName(dt) << "/" << opName(op);
      ASSERT_TRUE(out_.take(MsgType::kAbort).empty());
      for (uint32_t r = 0; r < size; ++r) deliver(1 + r, clientMessage(MsgType::kLeave, t, gid, r));
    }
  }
  EXPECT_EQ(engine_->counters().groups_aborted, 0u);
}

TEST_F(EngineTest, WindowChunksInFlightCompleteOutOfOrder) {
  const auto t = addLease(1, "job1", 4);
  const uint32_t w = formGroup(t, 3, 2);
  ASSERT_EQ(w, 4u);
  std::vector<int32_t> a{1, 2}, b{10, 20};
  // Rank 0 fills all four slots, rank 1 answers them in reverse.
  for (uint64_t c = 0; c < 4; ++c)
    contrib(1, t, 3, 0, c, w, Dtype::kInt32, Op::kSum, bytesOf(a), 8);
  EXPECT_EQ(engine_->counters().slots_busy, 4u);
  for (uint64_t c = 4; c-- > 0;) contrib(2, t, 3, 1, c, w, Dtype::kInt32, Op::kSum, bytesOf(b), 8);
  pump();
  auto res = out_.take(MsgType::kResult);
  ASSERT_EQ(res.size(), 8u);
  for (auto& r : res) {
    int32_t v[2];
    std::memcpy(v, r.payload.data(), sizeof v);
    EXPECT_EQ(v[0], 11);
    EXPECT_EQ(v[1], 22);
  }
  EXPECT_EQ(engine_->counters().slots_busy, 0u);
  EXPECT_EQ(engine_->counters().chunks_reduced, 4u);
}

// Fair share (data.fair_share): a job whose window is full of large ready
// chunks gets at most its share into one reduction pass, so another job's
// small chunk that became ready behind them is reduced and answered in the
// very next pass, not after the whole window; the heavy job's results still
// come in chunk order and right. With the share off, one pass takes all.
TEST_F(EngineTest, FairShareLetsAnotherGroupsChunkIntoTheNextPass) {
  for (const size_t fair : {size_t(512) << 10, size_t(0)}) {
    SCOPED_TRACE("fair_share " + std::to_string(fair));
    EngineConfig c;
    c.fair_share_bytes = fair;
    makeEngine(c);
    out_.sent.clear();
    const auto heavy = addLease(1, "heavy", 8);
    const auto light = addLease(2, "light", 2);
    const uint32_t w = formGroup(heavy, 1, 2, 1);
    ASSERT_EQ(w, 8u);
    const uint32_t lw = formGroup(light, 2, 2, 11);
    ASSERT_GE(lw, 1u);
    // 8 chunks of 128 KiB floats (256 KiB of contributions each, with two
    // members): with a 512 KiB share, two chunks per pass.
    constexpr uint32_t kElems = 32 * 1024;
    for (uint64_t k = 0; k < w; ++k) {
      std::vector<float> a(kElems, float(k)), b(kElems, 0.5f);
      contrib(1, heavy, 1, 0, k, w, Dtype::kFloat32, Op::kSum, bytesOf(a), uint64_t(w) * kElems);
      contrib(2, heavy, 1, 1, k, w, Dtype::kFloat32, Op::kSum, bytesOf(b), uint64_t(w) * kElems);
    }
    std::vector<int32_t> x{1, 2}, y{10, 20};
    contrib(11, light, 2, 0, 0, lw, Dtype::kInt32, Op::kSum, bytesOf(x));
    contrib(12, light, 2, 1, 0, lw, Dtype::kInt32, Op::kSum, bytesOf(y));

    engine_->reduceReady();  // one pass
    auto first = out_.take(MsgType::kResult);
    size_t heavy_results = 0, light_results = 0;
    for (const auto& r : first) {
      if (r.to >= 11) {
        ++light_results;
        int32_t v[2];
        std::memcpy(v, r.payload.data(), sizeof v);
        EXPECT_EQ(v[0], 11);
        EXPECT_EQ(v[1], 22);
      } else {
        ++heavy_results;
      }
    }
    EXPECT_EQ(light_results, 2u) << "the light job's chunk waited behind the heavy window";
    if (fair) {
      EXPECT_EQ(heavy_results, 2u * 2u) << "a pass took more than the heavy group's share";
      EXPECT_EQ(engine_->counters().chunks_deferred, 6u);
      // The pass: the heavy group's share (two chunks) and the light chunk.
      EXPECT_EQ(engine_->counters().largest_pass_bytes, fair + 2 * x.size() * sizeof(int32_t));
    } else {
      EXPECT_EQ(heavy_results, 2u * w);
      EXPECT_EQ(engine_->counters().chunks_deferred, 0u);
      EXPECT_EQ(engine_->counters().largest_pass_bytes,
                uint64_t(w) * 2 * kElems * 4 + 2 * x.size() * sizeof(int32_t));
    }
    // The rest follow pass by pass, each chunk once, in order, right.
    std::vector<uint64_t> chunks{};
    for (const auto& r : first)
      if (r.to == 1) chunks.push_back(r.msg.chunk);
    for (int pass = 0; pass < 8 && engine_->hasReducible(); ++pass) {
      pump();
      for (const auto& r : out_.take(MsgType::kResult)) {
        if (r.to != 1) continue;
        chunks.push_back(r.msg.chunk);
        float v;
        std::memcpy(&v, r.payload.data() + (kElems - 1) * sizeof v, sizeof v);
        EXPECT_EQ(v, float(r.msg.chunk) + 0.5f);
      }
    }
    std::vector<uint64_t> want(w);
    std::iota(want.begin(), want.end(), 0);
    EXPECT_EQ(chunks, want);
    EXPECT_EQ(engine_->counters().chunks_reduced, uint64_t(w) + 1);
    completeSends();
    leases_.clear();
  }
}

TEST_F(EngineTest, SlotWaitsForItsPreviousResultSendsBeforeReducingAgain) {
  const auto t = addLease(1, "job1", 1);
  ASSERT_EQ(formGroup(t, 4, 2), 1u);
  std::vector<int64_t> x{5};
  contrib(1, t, 4, 0, 0, 1, Dtype::kInt64, Op::kSum, bytesOf(x));
  contrib(2, t, 4, 1, 0, 1, Dtype::kInt64, Op::kSum, bytesOf(x));
  engine_->reduceReady();  // results of chunk 0 sent, not completed
  ASSERT_EQ(out_.take(MsgType::kResult).size(), 2u);
  contrib(1, t, 4, 0, 1, 1, Dtype::kInt64, Op::kSum, bytesOf(x));
  contrib(2, t, 4, 1, 1, 1, Dtype::kInt64, Op::kSum, bytesOf(x));
  EXPECT_TRUE(engine_->hasDeferred());
  EXPECT_FALSE(engine_->hasReducible());
  engine_->reduceReady();
  EXPECT_TRUE(out_.take(MsgType::kResult).empty());
  completeSends();
  EXPECT_TRUE(engine_->hasReducible());
  pump();
  auto res = out_.take(MsgType::kResult);
  ASSERT_EQ(res.size(), 2u);
  EXPECT_EQ(res[0].msg.chunk, 1u);
}

TEST_F(EngineTest, WindowIsFixedAtFormationAndCappedByTheLease) {
  const auto t = addLease(1, "job1", 4);
  EXPECT_EQ(formGroup(t, 1, 2, 1, 3), 3u);  // asks for 3 of 4
  EXPECT_EQ(formGroup(t, 2, 2, 3), 4u);     // idle groups hold nothing: all 4
  EXPECT_EQ(formGroup(t, 3, 1, 5, 9), 4u);  // capped by the lease
  EXPECT_TRUE(out_.take(MsgType::kAbort).empty());
  EXPECT_EQ(engine_->counters().slots_reserved, 0u);
}

TEST_F(EngineTest, PoolCapAndMemoryBudgetShrinkTheWindow) {
  EngineConfig c;
  c.pool_slots = 5;
  c.slot_bytes = 64 * 1024;
  c.memory_bytes = 3 * 3 * 64 * 1024;  // (2 members + 1) x 64 KiB x 3 slots
  makeEngine(c);
  const auto a = addLease(1, "a", 8);
  EXPECT_EQ(formGroup(a, 1, 2, 1), 3u);  // pool allows 5, memory 3
  EXPECT_EQ(formGroup(a, 2, 5, 3), 1u);  // 6 x 64 KiB per slot: one slot
  c.memory_bytes = 2 * 4096;             // not one 4 KiB slot of 2 members + result
  makeEngine(c);
  for (uint32_t r = 0; r < 2; ++r) join(10 + r, a, 1, 2, r);
  auto aborts = out_.take(MsgType::kAbort);
  ASSERT_EQ(aborts.size(), 2u);
  EXPECT_EQ(aborts[0].msg.reason, wire::Reason::kNoResource);
}

}  // namespace
}  // namespace switchagg::agent::testing
