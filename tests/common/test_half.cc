// 16-bit floats: the conversions against the compiler's own _Float16 (an
// independent implementation: libgcc's soft-float, round to nearest even)
// and a bfloat16 reference written here in double, the bulk (F16C) loops
// against the scalar definition, and the reduction kernels' one rounding
// after an fp64 fold (against half_reference.h's rounding by definition).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "compiler_half.h"
#include "half_reference.h"
#include "switchagg/common/half.h"
#include "switchagg/common/reduce.h"

using switchagg::Dtype;
using switchagg::Op;

namespace {

uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
float floatOf(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

bool halfIsNan(uint16_t h) { return (h & 0x7C00) == 0x7C00 && (h & 0x3FF) != 0; }

#ifdef SWITCHAGG_TEST_HAVE_FLOAT16
using switchagg::testing::compilerFloat;
using switchagg::testing::compilerHalf;
#endif

// bfloat16 by definition: the two neighbours of f and the nearer one, the
// one with an even last bit on a tie, decided in double (exact here).
uint16_t referenceBfloat16(float f) {
  const uint32_t x = bitsOf(f);
  const uint16_t lo = uint16_t(x >> 16);
  if ((x & 0xFFFF) == 0) return lo;
  const uint16_t hi = uint16_t(lo + 1);  // away from zero, may carry into the exponent
  const double d = std::fabs(double(f));
  const double dl = d - std::fabs(double(floatOf(uint32_t(lo) << 16)));
  // Past the largest finite value the next step is 2^128 (then infinity).
  const double up = (hi & 0x7FFF) == 0x7F80 ? std::ldexp(1.0, 128)
                                            : std::fabs(double(floatOf(uint32_t(hi) << 16)));
  const double dh = up - d;
  if (dl < dh) return lo;
  if (dh < dl) return hi;
  return (lo & 1) ? hi : lo;
}

// fp32 patterns: a stride through all 2^32 plus every boundary that matters.
std::vector<uint32_t> floatSweep() {
  std::vector<uint32_t> v;
  for (uint64_t u = 0; u < (1ull << 32); u += 4099) v.push_back(uint32_t(u));
  for (uint32_t base : {0x38800000u, 0x33000000u, 0x477FE000u, 0x477FF000u, 0x7F7F8000u,
                        0x3F800000u, 0x7F800000u, 0x00800000u})
    for (uint32_t d = 0; d < 0x3000; ++d) {
      v.push_back(base + d);
      v.push_back(base - d);
      v.push_back((base + d) | 0x80000000u);
    }
  return v;
}

TEST(Half, WideningIsExactOnEveryBinary16Value) {
  for (uint32_t u = 0; u <= 0xFFFF; ++u) {
    const uint16_t h = uint16_t(u);
    const float f = switchagg::halfToFloat(h);
    if (halfIsNan(h)) {
      EXPECT_TRUE(std::isnan(f)) << std::hex << u;
      EXPECT_NE(bitsOf(f) & 0x400000u, 0u) << "quiet " << std::hex << u;
      EXPECT_EQ(bitsOf(f) >> 31, u >> 15) << "sign " << std::hex << u;
      continue;
    }
#ifdef SWITCHAGG_TEST_HAVE_FLOAT16
    EXPECT_EQ(bitsOf(f), bitsOf(compilerFloat(h))) << std::hex << u;
#endif
    EXPECT_EQ(switchagg::floatToHalf(f), h) << "round trip " << std::hex << u;
  }
  EXPECT_EQ(switchagg::halfToFloat(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(switchagg::halfToFloat(0x7BFF), 65504.0f);
  EXPECT_EQ(switchagg::halfToFloat(0xFC00), -std::numeric_limits<float>::infinity());
}

TEST(Half, NarrowingRoundsToNearestEven) {
  auto h = [](float f) { return switchagg::floatToHalf(f); };
  EXPECT_EQ(h(1.0f + std::ldexp(1.0f, -11)), 0x3C00);      // tie: down to even 1.0
  EXPECT_EQ(h(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);  // tie: up to even
  EXPECT_EQ(h(std::nextafter(1.0f + std::ldexp(1.0f, -11), 2.0f)), 0x3C01);
  EXPECT_EQ(h(65519.0f), 0x7BFF);                          // below the tie: largest finite
  EXPECT_EQ(h(65520.0f), 0x7C00);                          // tie past 65504: infinity
  EXPECT_EQ(h(-1e9f), 0xFC00);                             // overflow to -infinity
  EXPECT_EQ(h(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_EQ(h(std::ldexp(1.0f, -24)), 0x0001);             // smallest subnormal
  EXPECT_EQ(h(std::ldexp(1.0f, -25)), 0x0000);             // tie with zero: even
  EXPECT_EQ(h(-std::ldexp(1.0f, -25)), 0x8000);            // signed zero
  EXPECT_EQ(h(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(h(1.5f * std::ldexp(1.0f, -24)), 0x0002);      // subnormal tie: even
  EXPECT_EQ(h(std::ldexp(1.0f, -14) - std::ldexp(1.0f, -26)), 0x0400);  // rounds up to normal
  EXPECT_EQ(h(std::numeric_limits<float>::denorm_min()), 0x0000);
  const uint16_t nan = h(floatOf(0x7F800001u));  // signalling fp32 NaN: quiet binary16 NaN
  EXPECT_TRUE(halfIsNan(nan));
  EXPECT_NE(nan & 0x200, 0);
  EXPECT_EQ(h(floatOf(0xFFC00000u)) & 0x8000, 0x8000);  // a NaN keeps its sign
}

#ifdef SWITCHAGG_TEST_HAVE_FLOAT16
TEST(Half, NarrowingMatchesTheCompilerOnAnFp32Sweep) {
  for (uint32_t u : floatSweep()) {
    const float f = floatOf(u);
    const uint16_t ours = switchagg::floatToHalf(f), theirs = compilerHalf(f);
    if (std::isnan(f)) {
      EXPECT_TRUE(halfIsNan(ours)) << std::hex << u;
      continue;
    }
    ASSERT_EQ(ours, theirs) << std::hex << u;
  }
}
#endif

TEST(Half, BulkConvertersGiveTheScalarBits) {
  std::vector<uint16_t> all(0x10000 + 7);
  for (size_t i = 0; i < all.size(); ++i) all[i] = uint16_t(i);
  std::vector<float> wide(all.size());
  switchagg::widenHalf(Dtype::kFloat16, wide.data(), all.data(), all.size());
  for (size_t i = 0; i < all.size(); ++i)
    ASSERT_EQ(bitsOf(wide[i]), bitsOf(switchagg::halfToFloat(all[i]))) << std::hex << i;
  switchagg::widenHalf(Dtype::kBfloat16, wide.data(), all.data(), all.size());
  for (size_t i = 0; i < all.size(); ++i)
    ASSERT_EQ(bitsOf(wide[i]), bitsOf(switchagg::bfloat16ToFloat(all[i]))) << std::hex << i;
  const std::vector<uint32_t> sweep = floatSweep();
  std::vector<float> f(sweep.size());
  for (size_t i = 0; i < f.size(); ++i) f[i] = floatOf(sweep[i]);
  std::vector<uint16_t> h(f.size()), b(f.size());
  switchagg::narrowHalf(Dtype::kFloat16, h.data(), f.data(), f.size());
  switchagg::narrowHalf(Dtype::kBfloat16, b.data(), f.data(), f.size());
  for (size_t i = 0; i < f.size(); ++i) {
    ASSERT_EQ(h[i], switchagg::floatToHalf(f[i])) << std::hex << sweep[i];
    ASSERT_EQ(b[i], switchagg::floatToBfloat16(f[i])) << std::hex << sweep[i];
  }
  // Every tail length of the eight- and sixteen-lane loops.
  for (size_t n = 0; n < 40; ++n) {
    std::vector<uint16_t> out(n + 1, 0xAAAA), bout(n + 1, 0xAAAA);
    switchagg::narrowHalf(Dtype::kFloat16, out.data(), f.data() + 3, n);
    switchagg::narrowHalf(Dtype::kBfloat16, bout.data(), f.data() + 3, n);
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(out[i], switchagg::floatToHalf(f[3 + i]));
      ASSERT_EQ(bout[i], switchagg::floatToBfloat16(f[3 + i]));
    }
    ASSERT_EQ(out[n], 0xAAAA) << "wrote past " << n;
    ASSERT_EQ(bout[n], 0xAAAA) << "wrote past " << n;
  }
  std::printf("bulk conversion: %s\n", switchagg::halfUsesF16c() ? "F16C" : "portable");
}

TEST(Half, Bfloat16RoundsToNearestEven) {
  for (uint32_t u : floatSweep()) {
    const float f = floatOf(u);
    const uint16_t b = switchagg::floatToBfloat16(f);
    if (std::isnan(f)) {
      EXPECT_EQ(b & 0x7F80, 0x7F80);
      EXPECT_NE(b & 0x40, 0) << "quiet " << std::hex << u;
      continue;
    }
    ASSERT_EQ(b, referenceBfloat16(f)) << std::hex << u;
    EXPECT_EQ(bitsOf(switchagg::bfloat16ToFloat(b)), uint32_t(b) << 16);
  }
  EXPECT_EQ(switchagg::floatToBfloat16(1.0f + std::ldexp(1.0f, -8)), 0x3F80);      // tie: even
  EXPECT_EQ(switchagg::floatToBfloat16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);  // tie: even
  EXPECT_EQ(switchagg::floatToBfloat16(std::numeric_limits<float>::max()), 0x7F80);  // infinity
  EXPECT_EQ(switchagg::floatToBfloat16(floatOf(0x00010000u)), 0x0001);  // subnormal kept
}

// --- the kernels -----------------------------------------------------------

uint16_t h16(float f) { return switchagg::floatToHalf(f); }

std::vector<uint16_t> many(Dtype d, Op op, const std::vector<std::vector<uint16_t>>& in) {
  std::vector<const void*> p;
  for (const auto& v : in) p.push_back(v.data());
  std::vector<uint16_t> out(in[0].size());
  EXPECT_TRUE(switchagg::reduceMany(d, op, out.data(), p.data(), p.size(), out.size()).ok());
  return out;
}

// 1 + four times 2^-11: each pairwise fp16 sum is a tie that rounds back to
// 1, but the wide sum 1 + 2^-9 is exact in fp16. And 60000 + 60000 - 60000
// overflows fp16 in the middle but not the wide sum.
TEST(HalfReduce, SumsAccumulateWideAndRoundOnce) {
  const uint16_t one = h16(1.0f), tiny = h16(std::ldexp(1.0f, -11));
  const std::vector<std::vector<uint16_t>> in = {{one}, {tiny}, {tiny}, {tiny}, {tiny}};
  EXPECT_EQ(many(Dtype::kFloat16, Op::kSum, in)[0], h16(1.0f + std::ldexp(1.0f, -9)));
  uint16_t chain = one;  // what rounding every partial gives
  for (int i = 0; i < 4; ++i)
    ASSERT_TRUE(switchagg::reduceInto(Dtype::kFloat16, Op::kSum, &chain, &tiny, 1).ok());
  EXPECT_EQ(chain, one);
  const std::vector<std::vector<uint16_t>> big = {{h16(60000)}, {h16(60000)}, {h16(-60000)}};
  EXPECT_EQ(switchagg::halfToFloat(many(Dtype::kFloat16, Op::kSum, big)[0]), 60000.0f);
  // bfloat16: 1 + 4 x 2^-8 the same way.
  const uint16_t bone = switchagg::floatToBfloat16(1.0f);
  const uint16_t btiny = switchagg::floatToBfloat16(std::ldexp(1.0f, -8));
  const std::vector<std::vector<uint16_t>> bin = {{bone}, {btiny}, {btiny}, {btiny}, {btiny}};
  EXPECT_EQ(many(Dtype::kBfloat16, Op::kSum, bin)[0],
            switchagg::floatToBfloat16(1.0f + std::ldexp(1.0f, -6)));
}

TEST(HalfReduce, InfinityNanSubnormalsAndOverflow) {
  const float inf = std::numeric_limits<float>::infinity();
  auto sum = [](std::vector<float> xs) {
    std::vector<std::vector<uint16_t>> in;
    for (float x : xs) in.push_back({h16(x)});
    return many(Dtype::kFloat16, Op::kSum, in)[0];
  };
  EXPECT_EQ(sum({inf, 1, -65504}), 0x7C00);
  EXPECT_TRUE(halfIsNan(sum({inf, -inf})));
  EXPECT_TRUE(halfIsNan(sum({1, NAN, 2})));
  EXPECT_EQ(sum({65504, 65504}), 0x7C00);     // overflow to infinity
  EXPECT_EQ(sum({-65504, -16}), 0xFC00);      // -65520: the tie goes to -infinity
  EXPECT_EQ(sum({-65504, -15}), 0xFBFF);
  EXPECT_EQ(sum({std::ldexp(1.0f, -24), std::ldexp(1.0f, -24)}), 0x0002);  // subnormals add exactly
  EXPECT_EQ(sum({std::ldexp(1023.0f, -24), std::ldexp(1.0f, -24)}), 0x0400);  // into the normals
  EXPECT_EQ(sum({std::ldexp(1.0f, -24), -std::ldexp(1.0f, -24)}), 0x0000);
}

// Seven repeats of six cases: the vector lanes and the scalar tail alike.
TEST(HalfReduce, MinMaxAreExactAndKeepTheFirstOperandOnNan) {
  const std::vector<uint16_t> a6 = {h16(1), h16(-2), h16(0.5f), 0x0001, 0x7E00, h16(3)};
  const std::vector<uint16_t> b6 = {h16(2), h16(-3), h16(0.25f), 0x0002, h16(1), 0x7E00};
  const std::vector<uint16_t> mn6 = {h16(1), h16(-3), h16(0.25f), 0x0001, 0x7E00, h16(3)};
  const std::vector<uint16_t> mx6 = {h16(2), h16(-2), h16(0.5f), 0x0002, 0x7E00, h16(3)};
  std::vector<uint16_t> a, b, want_mn, want_mx;
  for (int k = 0; k < 7; ++k) {
    a.insert(a.end(), a6.begin(), a6.end());
    b.insert(b.end(), b6.begin(), b6.end());
    want_mn.insert(want_mn.end(), mn6.begin(), mn6.end());
    want_mx.insert(want_mx.end(), mx6.begin(), mx6.end());
  }
  auto mn = a, mx = a;
  ASSERT_TRUE(switchagg::reduceInto(Dtype::kFloat16, Op::kMin, mn.data(), b.data(), a.size()).ok());
  ASSERT_TRUE(switchagg::reduceInto(Dtype::kFloat16, Op::kMax, mx.data(), b.data(), a.size()).ok());
  EXPECT_EQ(mn, want_mn);
  EXPECT_EQ(mx, want_mx);
}

TEST(HalfReduce, ProdAndBitwiseAreDeclined) {
  for (Dtype d : {Dtype::kFloat16, Dtype::kBfloat16})
    for (Op op : {Op::kProd, Op::kBand, Op::kLand, Op::kMinloc})
      EXPECT_FALSE(switchagg::reduceSupported(d, op)) << switchagg::opName(op);
  double acc = 0;
  uint16_t x = 0;
  const void* in[1] = {&x};
  EXPECT_FALSE(switchagg::accumulateHalf(Dtype::kFloat16, Op::kProd, &acc, in, 1, true, 1).ok());
  EXPECT_FALSE(switchagg::accumulateHalf(Dtype::kFloat32, Op::kSum, &acc, in, 1, true, 1).ok());
}

// Random inputs of mixed magnitude, 1..12 inputs, a count that spans the
// kernels' blocks: reduceMany, reduceManyInto and an fp64 prefix in uneven
// batches (accumulateHalf, then roundHalf) give the same bits, equal to a
// reference computed here (widen, add in double left to right - exact for
// these inputs - and round once by definition): the correctly rounded sum.
TEST(HalfReduce, EveryWayOfFoldingGivesTheCorrectlyRoundedSum) {
  std::mt19937 rng(46);
  std::uniform_real_distribution<float> mant(-1.0f, 1.0f);
  std::uniform_int_distribution<int> expo(-12, 12);
  const size_t count = 1301;
  for (Dtype d : {Dtype::kFloat16, Dtype::kBfloat16}) {
    const bool bf = d == Dtype::kBfloat16;
    auto narrow = [bf](float f) {
      return bf ? switchagg::floatToBfloat16(f) : switchagg::floatToHalf(f);
    };
    auto widen = [bf](uint16_t h) {
      return bf ? switchagg::bfloat16ToFloat(h) : switchagg::halfToFloat(h);
    };
    for (size_t n_in = 1; n_in <= 12; ++n_in) {
      std::vector<std::vector<uint16_t>> in(n_in, std::vector<uint16_t>(count));
      for (auto& v : in)
        for (auto& e : v) e = narrow(std::ldexp(mant(rng), expo(rng)));
      std::vector<uint16_t> ref(count);
      for (size_t i = 0; i < count; ++i) {
        double exact = 0;
        for (size_t r = 0; r < n_in; ++r) exact += widen(in[r][i]);
        ref[i] = switchagg::testing::referenceRound16(exact, bf);
      }
      SCOPED_TRACE(::testing::Message() << switchagg::dtypeName(d) << " n_in=" << n_in);
      EXPECT_EQ(many(d, Op::kSum, in), ref);
      std::vector<const void*> p;
      for (const auto& v : in) p.push_back(v.data());
      std::vector<uint16_t> into = in[0];
      ASSERT_TRUE(
          switchagg::reduceManyInto(d, Op::kSum, into.data(), p.data() + 1, n_in - 1, count).ok());
      EXPECT_EQ(into, ref);
      std::vector<double> acc(count);
      std::vector<uint16_t> out(count);
      for (size_t r = 0; r < n_in; r += 5)  // batches of 5, then the rest
        ASSERT_TRUE(switchagg::accumulateHalf(d, Op::kSum, acc.data(), p.data() + r,
                                              std::min<size_t>(5, n_in - r), r == 0, count)
                        .ok());
      ASSERT_TRUE(switchagg::roundHalf(d, out.data(), acc.data(), count).ok());
      EXPECT_EQ(out, ref);
    }
  }
}

// The fold rounds once, from fp64, directly to 16 bits: through an fp32
// rounded to nearest it would round twice. 1 + 2^-11 + 2^-24 in fp32 is a
// tie at fp32's last bit that goes to 1 + 2^-11, a binary16 tie that goes
// to 1; the sum is above the tie, so 1 + 2^-10. bfloat16: 1 + 2^-8 + 2^-32
// (2^-32 is lost in fp32) is 1 + 2^-7, not 1.
TEST(HalfReduce, SumsRoundOnceFromFp64NotTwiceThroughFp32) {
  const std::vector<std::vector<uint16_t>> in = {
      {h16(1.0f)}, {h16(std::ldexp(1.0f, -11))}, {h16(std::ldexp(1.0f, -24))}};
  EXPECT_EQ(many(Dtype::kFloat16, Op::kSum, in)[0], 0x3C01);
  auto b = [](float f) { return switchagg::floatToBfloat16(f); };
  const std::vector<std::vector<uint16_t>> bin = {
      {b(1.0f)}, {b(std::ldexp(1.0f, -8))}, {b(std::ldexp(1.0f, -32))}};
  EXPECT_EQ(many(Dtype::kBfloat16, Op::kSum, bin)[0], 0x3F81);
  // One rounding a chunk, wherever the fold stops: the agent's batches.
  std::vector<double> acc(1);
  uint16_t out = 0;
  const void* p[3] = {in[0].data(), in[1].data(), in[2].data()};
  ASSERT_TRUE(switchagg::accumulateHalf(Dtype::kFloat16, Op::kSum, acc.data(), p, 2, true, 1).ok());
  ASSERT_TRUE(switchagg::accumulateHalf(Dtype::kFloat16, Op::kSum, acc.data(), p + 2, 1, false, 1).ok());
  ASSERT_TRUE(switchagg::roundHalf(Dtype::kFloat16, &out, acc.data(), 1).ok());
  EXPECT_EQ(out, 0x3C01);
}

// The claim the fp64 fold rests on (half.h): 2^13 binary16 values of any
// magnitude (every finite value, subnormals included) sum exactly in fp64,
// in any order. Even elements: 4095 random values of every magnitude, then
// their negations, then two small ones - partial sums reach 2^28 (fp32's
// ulp there is 16) and the sum is small. Odd elements: random values below
// 2^-4 (the sum stays finite). The reference sums them as integers in
// units of 2^-24; the result is the same bits forwards and backwards.
TEST(HalfReduce, TwoToTheThirteenBinary16ValuesSumExactlyInAnyOrder) {
  std::mt19937 rng(4613);
  std::uniform_int_distribution<uint32_t> bits(0, 0xFFFF);
  const size_t n = size_t(1) << 13, half = n / 2, count = 19;  // two vectors of 8 and a tail
  std::vector<std::vector<uint16_t>> in(n, std::vector<uint16_t>(count));
  auto finite = [&] {
    uint16_t h;
    do h = uint16_t(bits(rng));
    while ((h & 0x7C00) == 0x7C00);
    return h;
  };
  auto small = [&] { return uint16_t(finite() & 0xABFF); };  // exponent field <= 10: below 2^-4
  for (size_t i = 0; i < count; ++i)
    for (size_t r = 0; r < n; ++r) {
      if (i % 2) in[r][i] = small();
      else if (r < half - 1) in[r][i] = finite();
      else if (r == half - 1 || r == n - 1) in[r][i] = small();
      else in[r][i] = uint16_t(in[r - half][i] ^ 0x8000);
    }
  std::vector<uint16_t> want(count);
  for (size_t i = 0; i < count; ++i) {
    int64_t units = 0;
    for (size_t r = 0; r < n; ++r) {
      const uint16_t h = in[r][i];
      const int64_t mag = (h & 0x7C00) ? int64_t((h & 0x3FF) | 0x400) << (((h >> 10) & 0x1F) - 1)
                                       : int64_t(h & 0x3FF);
      units += (h & 0x8000) ? -mag : mag;
    }
    want[i] = switchagg::testing::referenceRound16(std::ldexp(double(units), -24), false);
  }
  EXPECT_EQ(many(Dtype::kFloat16, Op::kSum, in), want);
  std::reverse(in.begin(), in.end());
  EXPECT_EQ(many(Dtype::kFloat16, Op::kSum, in), want);
}

// narrowHalfWide (vector and tail) and the scalar doubleToHalf /
// doubleToBfloat16 against the rounding by definition, on doubles near
// ties, across both formats' ranges: subnormals, overflow, below the
// smallest subnormal, fp32's subnormal range.
TEST(HalfWide, NarrowingFromDoubleIsCorrectlyRounded) {
  std::mt19937_64 rng(1646);
  std::uniform_int_distribution<int> e16(-27, 17), ebf(-140, 129);
  std::uniform_int_distribution<uint64_t> frac(0, (uint64_t(1) << 52) - 1);
  for (bool bf : {false, true}) {
    std::vector<double> x;
    for (int k = 0; k < 20000; ++k) {
      const int digits = bf ? 8 : 11;
      const int e = bf ? ebf(rng) : e16(rng);
      double m = std::ldexp(double(frac(rng) | (uint64_t(1) << 52)), -52);  // [1, 2)
      if (k % 3 == 0)  // a tie exactly, or a hair off one
        m = std::ldexp(std::floor(std::ldexp(m, digits - 1)) + 0.5, 1 - digits) +
            double(k % 9 - 4) * std::ldexp(1.0, -50);
      x.push_back((k % 2 ? -1 : 1) * std::ldexp(m, e));
    }
    x.push_back(0.0);
    x.push_back(-0.0);
    x.push_back(std::numeric_limits<double>::infinity());
    std::vector<uint16_t> got(x.size());
    const Dtype d = bf ? Dtype::kBfloat16 : Dtype::kFloat16;
    switchagg::narrowHalfWide(d, got.data(), x.data(), x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      const uint16_t want = switchagg::testing::referenceRound16(x[i], bf);
      ASSERT_EQ(got[i], want) << (bf ? "bfloat16 " : "binary16 ") << x[i];
      ASSERT_EQ(bf ? switchagg::doubleToBfloat16(x[i]) : switchagg::doubleToHalf(x[i]), want) << x[i];
    }
  }
  EXPECT_TRUE(halfIsNan(switchagg::doubleToHalf(std::nan(""))));
}

}  // namespace
