// Two-operand 16-bit float sums (common/src/reduce.cc halfPairSum32): one
// fp32 addition and one rounding must give bit for bit what the fp64 fold
// gives (accumulateHalf + roundHalf: fp64, rounded once), for binary16 and
// bfloat16, on random bit patterns (every class: normals, subnormals,
// infinities, NaNs) and on every pair of edge values, through every entry
// point that sums two operands (reduce3, reduceInto, reduceMany of two).
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "half_reference.h"
#include "switchagg/common/half.h"
#include "switchagg/common/reduce.h"

using switchagg::Dtype;
using switchagg::Op;

namespace {

// The fp64 path: both operands widened to fp64, added, rounded once.
std::vector<uint16_t> viaFp64(Dtype d, const std::vector<uint16_t>& a,
                              const std::vector<uint16_t>& b) {
  std::vector<double> acc(a.size());
  const void* in[2] = {a.data(), b.data()};
  EXPECT_TRUE(switchagg::accumulateHalf(d, Op::kSum, acc.data(), in, 2, true, a.size()).ok());
  std::vector<uint16_t> out(a.size());
  EXPECT_TRUE(switchagg::roundHalf(d, out.data(), acc.data(), a.size()).ok());
  return out;
}

void expectPairsAgree(Dtype d, const std::vector<uint16_t>& a, const std::vector<uint16_t>& b) {
  const std::vector<uint16_t> want = viaFp64(d, a, b);
  std::vector<uint16_t> three(a.size()), many(a.size()), into = a;
  ASSERT_TRUE(switchagg::reduce3(d, Op::kSum, three.data(), a.data(), b.data(), a.size()).ok());
  const void* in[2] = {a.data(), b.data()};
  ASSERT_TRUE(switchagg::reduceMany(d, Op::kSum, many.data(), in, 2, a.size()).ok());
  ASSERT_TRUE(switchagg::reduceInto(d, Op::kSum, into.data(), b.data(), a.size()).ok());
  size_t bad = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (three[i] == want[i] && many[i] == want[i] && into[i] == want[i]) continue;
    if (bad++ < 5)
      ADD_FAILURE() << (d == Dtype::kFloat16 ? "binary16 " : "bfloat16 ") << std::hex << a[i]
                    << " + " << b[i] << ": fp64 path " << want[i] << ", reduce3 " << three[i]
                    << ", reduceMany " << many[i] << ", reduceInto " << into[i];
  }
  EXPECT_EQ(bad, 0u);
}

// Edge values of both formats' bit layouts (binary16 and bfloat16 alike:
// zeros, the smallest and largest subnormal, the smallest normal, one, the
// largest finite, infinities, quiet and signalling NaNs), both signs.
std::vector<uint16_t> edges(Dtype d) {
  const std::vector<uint16_t> h =
      d == Dtype::kFloat16 ? std::vector<uint16_t>{0x0000, 0x0001, 0x0002, 0x03FF, 0x0400, 0x0401,
                                                   0x3C00, 0x3C01, 0x1400, 0x7BFF, 0x7BFE, 0x7800,
                                                   0x7C00, 0x7E00, 0x7C01, 0x7FFF, 0x5BFF, 0x2000}
                           : std::vector<uint16_t>{0x0000, 0x0001, 0x0002, 0x007F, 0x0080, 0x0081,
                                                   0x3F80, 0x3F81, 0x3B80, 0x7F7F, 0x7F7E, 0x7F00,
                                                   0x7F80, 0x7FC0, 0x7F81, 0x7FFF, 0x4B7F, 0x0B80};
  std::vector<uint16_t> all = h;
  for (uint16_t x : h) all.push_back(uint16_t(x | 0x8000));
  return all;
}

TEST(HalfPair, TwoOperandSumsInFp32AreTheFp64FoldBitForBit) {
  std::mt19937_64 rng(46);
  for (Dtype d : {Dtype::kFloat16, Dtype::kBfloat16}) {
    // Every pair of edge values.
    const std::vector<uint16_t> e = edges(d);
    std::vector<uint16_t> a, b;
    for (uint16_t x : e)
      for (uint16_t y : e) {
        a.push_back(x);
        b.push_back(y);
      }
    expectPairsAgree(d, a, b);
    // Random bit patterns (an odd length: vector lanes, blocks and the tail).
    const size_t n = 200003;
    a.assign(n, 0);
    b.assign(n, 0);
    for (size_t i = 0; i < n; ++i) {
      a[i] = uint16_t(rng());
      b[i] = uint16_t(rng());
    }
    expectPairsAgree(d, a, b);
    // Near neighbours that cancel, and operands far apart in size: the
    // sums that round hardest.
    for (size_t i = 0; i < n; ++i) {
      const uint16_t x = uint16_t(rng() & 0x7FFF);
      a[i] = x;
      b[i] = uint16_t(i % 2 ? (x + uint16_t(rng() % 64)) ^ 0x8000 : rng() & 0x7FFF);
    }
    expectPairsAgree(d, a, b);
  }
}

// binary16 pairs against the sum rounded by definition (exact in double).
TEST(HalfPair, TwoOperandBinary16SumsAreCorrectlyRounded) {
  std::mt19937_64 rng(4646);
  const size_t n = 100001;
  std::vector<uint16_t> a(n), b(n), out(n);
  for (size_t i = 0; i < n; ++i) {
    a[i] = uint16_t(rng() % 0x7C00) | uint16_t(rng() & 0x8000);  // finite
    b[i] = uint16_t(rng() % 0x7C00) | uint16_t(rng() & 0x8000);
  }
  ASSERT_TRUE(
      switchagg::reduce3(Dtype::kFloat16, Op::kSum, out.data(), a.data(), b.data(), n).ok());
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    // Widening is exact (Half.WideningIsExactOnEveryBinary16Value), and so
    // is the sum of two binary16 values in double.
    const double exact =
        double(switchagg::halfToFloat(a[i])) + double(switchagg::halfToFloat(b[i]));
    if (out[i] != switchagg::testing::referenceRound16(exact, false) && bad++ < 5)
      ADD_FAILURE() << std::hex << a[i] << " + " << b[i] << " gave " << out[i];
  }
  EXPECT_EQ(bad, 0u);
}

}  // namespace
