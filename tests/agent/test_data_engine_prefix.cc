// The running prefix (engine_contrib.cc): contributions are folded into a
// slot's result as they come, in rank order, so the result must be bitwise
// the rank-ordered left fold whatever the arrival order, whichever members
// waited in their buffers, and whether or not the previous chunk's result
// was still being sent when the next chunk's contributions came.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>

#include "test_data_engine_fixture.h"
#include "test_data_util.h"
#include "switchagg/common/half.h"
#include "switchagg/common/reduce.h"

namespace switchagg::agent::testing {
namespace {

using wire::MsgType;

// Member r's chunk c: makeInput's values, but float sums get values whose
// sum depends on the order of the additions (mixed magnitudes and signs).
std::vector<uint8_t> inputOf(Dtype d, uint32_t r, uint64_t c, size_t count) {
  std::vector<uint8_t> v = switchagg::testing::makeInput(d, int(r), int(c), count);
  auto mixed = [&](auto zero) {
    using T = decltype(zero);
    for (size_t i = 0; i < count; ++i) {
      const T x = T((r % 3 == 1 ? 1e7 : 1.0) * (1.0 + double((i * 7 + r * 5 + c) % 13)) *
                    (r % 4 == 2 ? -1.0 : 1.0) +
                    0.1 * double(r + 1));
      std::memcpy(v.data() + i * sizeof(T), &x, sizeof(T));
    }
  };
  if (d == Dtype::kFloat32) mixed(float{});
  if (d == Dtype::kFloat64) mixed(double{});
  if (isHalfFloat(d)) {  // mixed magnitudes within binary16's range
    for (size_t i = 0; i < count; ++i) {
      const float x = float((r % 3 == 1 ? 512.0 : 1.0) * (1.0 + double((i * 7 + r * 5 + c) % 13)) *
                                (r % 4 == 2 ? -1.0 : 1.0) +
                            0.1 * double(r + 1));
      const uint16_t h = d == Dtype::kFloat16 ? floatToHalf(x) : floatToBfloat16(x);
      std::memcpy(v.data() + 2 * i, &h, 2);
    }
  }
  return v;
}

// The rank-ordered chain, one reduceInto per member (not the engine's code);
// 16-bit floats: the fp32 chain rounded once.
std::vector<uint8_t> chainOf(Dtype d, Op op, uint32_t m, uint64_t c, size_t count) {
  if (isHalfFloat(d)) {
    std::vector<std::vector<uint8_t>> in;
    for (uint32_t r = 0; r < m; ++r) in.push_back(inputOf(d, r, c, count));
    return switchagg::testing::onceRounded(d, op, in, count);
  }
  std::vector<uint8_t> acc = inputOf(d, 0, c, count);
  for (uint32_t r = 1; r < m; ++r) {
    const std::vector<uint8_t> in = inputOf(d, r, c, count);
    EXPECT_TRUE(reduceInto(d, op, acc.data(), in.data(), count).ok());
  }
  return acc;
}

class PrefixTest : public EngineTest {
 protected:
  // The RESULTs sent so far: one per member, each chunk c's float64 sum chain.
  void expectSums(uint32_t m, uint64_t c, size_t count) {
    auto res = out_.take(MsgType::kResult);
    ASSERT_EQ(res.size(), m);
    const auto want = chainOf(Dtype::kFloat64, Op::kSum, m, c, count);
    for (const auto& r : res)
      EXPECT_EQ(std::memcmp(r.payload.data(), want.data(), want.size()), 0) << "chunk " << c;
  }

  // A call of two chunks through a window of one slot: chunk 1's
  // contributions come in `order1` while chunk 0's results are still being
  // sent, which complete after `release` of them arrived. Checks both
  // results, at every member, against the chain, and that no pending send's
  // result buffer changed under it.
  void runCall(const wire::Token& t, uint64_t gid, Dtype d, Op op, uint32_t m, size_t count,
               const std::vector<uint32_t>& order0, const std::vector<uint32_t>& order1,
               size_t release) {
    ASSERT_EQ(formGroup(t, gid, m, 1, 1), 1u);
    const std::string what = std::string(dtypeName(d)) + "/" + opName(op) + " m=" +
                             std::to_string(m) + " count=" + std::to_string(count) +
                             " release after " + std::to_string(release);
    for (uint32_t r : order0)
      contrib(1 + r, t, gid, r, 0, 1, d, op, inputOf(d, r, 0, count), 2 * count);
    engine_->reduceReady();  // chunk 0's results go out; their sends stay pending
    auto res0 = out_.take(MsgType::kResult);
    ASSERT_EQ(res0.size(), m) << what;
    for (size_t i = 0; i < order1.size(); ++i) {
      if (i == release) {
        for (const auto& p : out_.pending)  // the sends still read what was sent
          ASSERT_EQ(std::memcmp(p.keep->result(p.slot), res0[0].payload.data(),
                                res0[0].payload.size()),
                    0)
              << what << ": chunk 0's result changed while it was being sent";
        completeSends();
      }
      const uint32_t r = order1[i];
      contrib(1 + r, t, gid, r, 1, 1, d, op, inputOf(d, r, 1, count), 2 * count);
    }
    if (release >= order1.size()) completeSends();
    pump();
    auto res1 = out_.take(MsgType::kResult);
    ASSERT_EQ(res1.size(), m) << what;
    const auto want0 = chainOf(d, op, m, 0, count), want1 = chainOf(d, op, m, 1, count);
    for (uint32_t k = 0; k < m; ++k) {
      ASSERT_EQ(res0[k].msg.chunk, 0u);
      ASSERT_EQ(res1[k].msg.chunk, 1u);
      ASSERT_TRUE(switchagg::testing::sameResult(d, res0[k].payload.data(), want0.data(), count))
          << what << ": chunk 0 at member " << res0[k].to;
      ASSERT_TRUE(switchagg::testing::sameResult(d, res1[k].payload.data(), want1.data(), count))
          << what << ": chunk 1 at member " << res1[k].to;
    }
    ASSERT_TRUE(out_.take(MsgType::kAbort).empty()) << what;
    for (uint32_t r = 0; r < m; ++r) deliver(1 + r, clientMessage(MsgType::kLeave, t, gid, r));
  }
};

// Every dtype x op at m = 1..17 (past the 16 inputs one reduce call takes),
// random arrival orders, the previous result's sends completing at a random
// point of the next chunk's arrivals (so some members fold from the message,
// some wait in their buffers and are folded by the member before them or by
// reduceReady).
std::string receiveName(const ::testing::TestParamInfo<bool>& p) {
  return p.param ? "IntoTheSlot" : "Copied";
}

// Then the same with chunks of at least 4 KiB received into their slot
// (placeContrib: every contribution but each call's first).
class PrefixMatrix : public PrefixTest, public ::testing::WithParamInterface<bool> {};

TEST_P(PrefixMatrix, EveryDtypeAndOpIsTheRankOrderedChainForEveryArrival) {
  placed_ = GetParam();
  const size_t count = placed_ ? 4100 : 37;
  const auto t = addLease(1, "job1", 1);
  std::mt19937 rng(20261206);
  uint64_t gid = 1;
  int cases = 0;
  for (int di = 1; di <= kNumDtypes; ++di)
    for (int oi = 1; oi <= kNumOps; ++oi) {
      const auto d = static_cast<Dtype>(di);
      const auto op = static_cast<Op>(oi);
      if (!reduceSupported(d, op)) continue;
      for (uint32_t m = 1; m <= 17; ++m) {
        std::vector<uint32_t> o0(m), o1(m);
        std::iota(o0.begin(), o0.end(), 0);
        std::iota(o1.begin(), o1.end(), 0);
        std::shuffle(o0.begin(), o0.end(), rng);
        std::shuffle(o1.begin(), o1.end(), rng);
        runCall(t, ++gid, d, op, m, count, o0, o1, rng() % (m + 1));
        ++cases;
      }
    }
  EXPECT_GT(cases, 17 * 20);
  EXPECT_EQ(engine_->counters().groups_aborted, 0u);
  if (placed_) {  // all but the first of each call's 2m: 17^2 for m = 1..17
    EXPECT_EQ(placements_, size_t(cases / 17) * 17 * 17);
    EXPECT_GT(engine_->counters().bytes_placed, 0u);
    EXPECT_EQ(engine_->placementsInFlight(), 0u);
  } else {
    EXPECT_EQ(engine_->counters().bytes_placed, 0u);
  }
}
INSTANTIATE_TEST_SUITE_P(Receive, PrefixMatrix, ::testing::Values(false, true),
                         receiveName);

// Sizes across every threshold of the fold: one element, a 16 KiB block and
// one element more, a 64 KiB pool piece and one more, and a whole 256 KiB
// slot; in order, reversed and random; float sums (order-sensitive) and an
// integer max.
// Received into the slot or not (PrefixSizes/IntoTheSlot: from 4 KiB, the
// placement threshold, on; one element less is copied).
class PrefixSizes : public PrefixTest, public ::testing::WithParamInterface<bool> {};

TEST_P(PrefixSizes, SizesAcrossBlocksAndPiecesInEveryOrder) {
  placed_ = GetParam();
  const auto t = addLease(1, "job1", 1);
  std::mt19937 rng(7);
  uint64_t gid = 1000;
  for (Dtype d :
       {Dtype::kFloat32, Dtype::kFloat64, Dtype::kInt32, Dtype::kFloat16, Dtype::kBfloat16}) {
    const Op op = d == Dtype::kInt32 ? Op::kMax : Op::kSum;
    const size_t es = dtypeSize(d);
    const size_t edge = AggregationEngine::kPlacedMinBytes;
    for (size_t bytes : {es, edge - es, edge, size_t(16384), size_t(16384) + es, size_t(65536),
                         size_t(65536) + es, size_t(262144)}) {
      const size_t count = bytes / es;
      for (uint32_t m : {1u, 2u, 5u, 16u, 17u}) {
        std::vector<uint32_t> in_order(m), reversed(m), shuffled(m);
        std::iota(in_order.begin(), in_order.end(), 0);
        std::reverse_copy(in_order.begin(), in_order.end(), reversed.begin());
        shuffled = in_order;
        std::shuffle(shuffled.begin(), shuffled.end(), rng);
        runCall(t, ++gid, d, op, m, count, in_order, in_order, 0);
        runCall(t, ++gid, d, op, m, count, reversed, reversed, m);
        runCall(t, ++gid, d, op, m, count, shuffled, reversed, m / 2);
      }
    }
  }
  EXPECT_EQ(engine_->counters().groups_aborted, 0u);
  EXPECT_EQ(engine_->placementsInFlight(), 0u);
  EXPECT_EQ(placements_ > 0, placed_);
}
INSTANTIATE_TEST_SUITE_P(Receive, PrefixSizes, ::testing::Values(false, true),
                         receiveName);

// 16-bit floats: member 0 sends 1, members 1..4 the smallest addend that a
// 16-bit sum with 1 rounds away (half an ulp of 1). Rounded after every
// addition the sum stays 1; the engine sums in fp64 and rounds once, so it
// is 1 + 4 halves of an ulp, exact in 16 bits - in all 120 arrival orders,
// while the previous chunk's result is still being sent or not. Every
// contribution waits in its buffer (the fold runs once all are in). Then
// 1, half an ulp and 2^-24 (members 0..2, the others 0): an fp32 sum
// rounds that to 1 + half an ulp, a 16-bit tie that goes back to 1;
// rounded once from fp64 it is 1 + 1 ulp (common/half.h).
TEST_F(PrefixTest, HalfFloatSumsAreFp64FoldsRoundedOnceInEveryOrder) {
  const auto t = addLease(1, "job1", 1);
  const uint32_t m = 5;
  uint64_t gid = 5000;
  for (int twice_rounded = 0; twice_rounded < 2; ++twice_rounded)
  for (Dtype d : {Dtype::kFloat16, Dtype::kBfloat16}) {
    const bool bf = d == Dtype::kBfloat16;
    const int frac = bf ? 7 : 10;
    auto narrow = [bf](float f) { return bf ? floatToBfloat16(f) : floatToHalf(f); };
    const uint16_t one = narrow(1.0f), half_ulp = narrow(std::ldexp(1.0f, -frac - 1));
    const uint16_t tiny = narrow(std::ldexp(1.0f, -24)), zero = narrow(0.0f);
    auto input = [&](uint32_t r) {
      if (r == 0) return one;
      if (!twice_rounded || r == 1) return half_ulp;
      return r == 2 ? tiny : zero;
    };
    const uint16_t want = narrow(1.0f + std::ldexp(1.0f, twice_rounded ? -frac : -frac + 1));
    if (!twice_rounded) {
      uint16_t chained = one;
      for (uint32_t r = 1; r < m; ++r) ASSERT_TRUE(reduceInto(d, Op::kSum, &chained, &half_ulp, 1).ok());
      ASSERT_EQ(chained, one) << "the inputs must make per-addition rounding visible";
    } else {
      volatile float f32 = 1.0f + std::ldexp(1.0f, -frac - 1);
      f32 = f32 + std::ldexp(1.0f, -24);
      ASSERT_EQ(narrow(f32), one) << "the inputs must make rounding through fp32 visible";
    }
    ASSERT_NE(want, one);
    std::vector<uint32_t> order(m);
    std::iota(order.begin(), order.end(), 0);
    int perms = 0;
    do {
      ASSERT_EQ(formGroup(t, ++gid, m, 1, 1), 1u);
      const uint64_t staged0 = engine_->counters().bytes_staged;
      for (uint64_t c = 0; c < 2; ++c) {  // chunk 1 arrives while chunk 0's sends are pending
        for (uint32_t r : order) {
          const uint16_t x = input(r);
          std::vector<uint8_t> body(3 * 2);
          for (int i = 0; i < 3; ++i) std::memcpy(body.data() + 2 * i, &x, 2);
          contrib(1 + r, t, gid, r, c, 1, d, Op::kSum, body, 6);
        }
        if (c == 0) engine_->reduceReady();
      }
      completeSends();
      pump();
      auto res = out_.take(MsgType::kResult);
      ASSERT_EQ(res.size(), 2 * m);
      for (const auto& r : res)
        for (int i = 0; i < 3; ++i) {
          uint16_t got;
          std::memcpy(&got, r.payload.data() + 2 * i, 2);
          ASSERT_EQ(got, want) << dtypeName(d) << " permutation " << perms << " chunk "
                               << r.msg.chunk;
        }
      EXPECT_EQ(engine_->counters().bytes_staged - staged0, 2u * m * 6);
      completeSends();
      for (uint32_t r = 0; r < m; ++r) deliver(1 + r, clientMessage(MsgType::kLeave, t, gid, r));
      ++perms;
    } while (std::next_permutation(order.begin(), order.end()));
    EXPECT_EQ(perms, 120);
  }
  EXPECT_EQ(engine_->counters().groups_aborted, 0u);
}

// Where the bytes go: in rank order with the result buffer free, every
// member's data is reduced straight from its message (nothing staged) and
// the result is complete before any pass runs; reversed, all but member 0
// wait in their buffers and member 0's arrival folds them; while the
// previous result is still being sent, everything waits; a body not
// aligned for its elements is copied first.
TEST_F(PrefixTest, InOrderArrivalsAreReducedFromTheMessage) {
  const auto t = addLease(1, "job1", 1);
  const uint32_t m = 4;
  const size_t count = 1000, bytes = count * sizeof(double);
  const Dtype d = Dtype::kFloat64;
  ASSERT_EQ(formGroup(t, 7, m, 1, 1), 1u);
  for (uint32_t r = 0; r < m; ++r)
    contrib(1 + r, t, 7, r, 0, 1, d, Op::kSum, inputOf(d, r, 0, count), 4 * count);
  EXPECT_EQ(engine_->counters().bytes_staged, 0u);
  EXPECT_EQ(engine_->counters().bytes_in, m * bytes);
  engine_->reduceReady();
  expectSums(m, 0, count);
  // Chunk 1 while chunk 0's results are still being sent: all staged.
  for (uint32_t r = 0; r < m; ++r)
    contrib(1 + r, t, 7, r, 1, 1, d, Op::kSum, inputOf(d, r, 1, count), 4 * count);
  EXPECT_EQ(engine_->counters().bytes_staged, m * bytes);
  pump();
  pump();
  expectSums(m, 1, count);
  completeSends();
  // Chunk 2 in reverse, the buffer free: members 3, 2, 1 wait, 0 folds all.
  for (uint32_t r = m; r-- > 0;)
    contrib(1 + r, t, 7, r, 2, 1, d, Op::kSum, inputOf(d, r, 2, count), 4 * count);
  EXPECT_EQ(engine_->counters().bytes_staged, (2 * m - 1) * bytes);
  pump();
  expectSums(m, 2, count);
  completeSends();
  // Chunk 3 in order, but every body at an odd address (an eager message's
  // sits wherever the transport put it): copied, then folded from the copy
  // (read in place it would be a misaligned load; fuzz_wire found it).
  std::vector<uint8_t> odd(bytes + 1);
  for (uint32_t r = 0; r < m; ++r) {
    wire::Message c = clientMessage(MsgType::kContrib, t, 7, r);
    c.chunk = 3;
    c.dtype = d;
    c.op = Op::kSum;
    c.count = count;
    c.call_elems = 4 * count;
    const auto in = inputOf(d, r, 3, count);
    std::memcpy(odd.data() + 1, in.data(), bytes);
    const wire::Frame f = wire::encode(c);
    engine_->onMessage(1 + r, f.header.data(), f.header_bytes, odd.data() + 1, bytes, now_);
    std::memset(odd.data(), 0xAB, odd.size());  // the message is gone after the handler
  }
  EXPECT_EQ(engine_->counters().bytes_staged, (3 * m - 1) * bytes);
  pump();
  expectSums(m, 3, count);
  EXPECT_EQ(engine_->counters().groups_aborted, 0u);
}

}  // namespace
}  // namespace switchagg::agent::testing
