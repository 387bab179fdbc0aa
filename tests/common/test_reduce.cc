// Kernels against references written independently of reduce.cc, over odd
// lengths (so vector tails run) and every dtype x op pair MPI defines.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "switchagg/common/reduce.h"

using switchagg::Dtype;
using switchagg::Op;

namespace {

TEST(Reduce, Int8SumWrapsLikeC) {
  std::vector<int8_t> a(37, 100), b(37, 100);
  ASSERT_TRUE(switchagg::reduceInto(Dtype::kInt8, Op::kSum, a.data(), b.data(), a.size()).ok());
  for (int8_t v : a) EXPECT_EQ(v, static_cast<int8_t>(200));  // -56, not saturated 127
}

TEST(Reduce, Uint8SumWrapsNotSaturates) {
  // Open MPI 4.1's op/avx saturates here (FIELD_NOTES); we follow C.
  std::vector<uint8_t> a(70, 200), b(70, 200);
  ASSERT_TRUE(switchagg::reduceInto(Dtype::kUint8, Op::kSum, a.data(), b.data(), a.size()).ok());
  for (uint8_t v : a) EXPECT_EQ(v, 144);
}

TEST(Reduce, Int32MinMaxProd) {
  std::vector<int32_t> a = {5, -3, 7, 0, 9}, b = {2, -8, 7, 1, -9};
  auto mn = a, mx = a, pr = a;
  ASSERT_TRUE(switchagg::reduceInto(Dtype::kInt32, Op::kMin, mn.data(), b.data(), 5).ok());
  ASSERT_TRUE(switchagg::reduceInto(Dtype::kInt32, Op::kMax, mx.data(), b.data(), 5).ok());
  ASSERT_TRUE(switchagg::reduceInto(Dtype::kInt32, Op::kProd, pr.data(), b.data(), 5).ok());
  EXPECT_EQ(mn, (std::vector<int32_t>{2, -8, 7, 0, -9}));
  EXPECT_EQ(mx, (std::vector<int32_t>{5, -3, 7, 1, 9}));
  EXPECT_EQ(pr, (std::vector<int32_t>{10, 24, 49, 0, -81}));
}

TEST(Reduce, Int64ProdOverflowWraps) {
  int64_t a = std::numeric_limits<int64_t>::max(), b = 2;
  ASSERT_TRUE(switchagg::reduceInto(Dtype::kInt64, Op::kProd, &a, &b, 1).ok());
  EXPECT_EQ(a, -2);
}

TEST(Reduce, LogicalOpsGiveZeroOrOne) {
  std::vector<int32_t> a = {0, 0, 5, -2}, b = {0, 3, 0, 9};
  auto land = a, lor = a, lxor = a;
  ASSERT_TRUE(switchagg::reduceInto(Dtype::kInt32, Op::kLand, land.data(), b.data(), 4).ok());
  ASSERT_TRUE(switchagg::reduceInto(Dtype::kInt32, Op::kLor, lor.data(), b.data(), 4).ok());
  ASSERT_TRUE(switchagg::reduceInto(Dtype::kInt32, Op::kLxor, lxor.data(), b.data(), 4).ok());
  EXPECT_EQ(land, (std::vector<int32_t>{0, 0, 0, 1}));
  EXPECT_EQ(lor, (std::vector<int32_t>{0, 1, 1, 1}));
  EXPECT_EQ(lxor, (std::vector<int32_t>{0, 1, 1, 0}));
}

TEST(Reduce, BitwiseOnUnsigned) {
  uint16_t a[3] = {0xF0F0, 0x00FF, 0xFFFF}, b[3] = {0x0FF0, 0xFF00, 0x1234};
  uint16_t x[3], o[3], n[3];
  std::memcpy(x, a, sizeof a);
  std::memcpy(o, a, sizeof a);
  std::memcpy(n, a, sizeof a);
  ASSERT_TRUE(switchagg::reduceInto(Dtype::kUint16, Op::kBxor, x, b, 3).ok());
  ASSERT_TRUE(switchagg::reduceInto(Dtype::kUint16, Op::kBor, o, b, 3).ok());
  ASSERT_TRUE(switchagg::reduceInto(Dtype::kUint16, Op::kBand, n, b, 3).ok());
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(x[i], static_cast<uint16_t>(a[i] ^ b[i]));
    EXPECT_EQ(o[i], static_cast<uint16_t>(a[i] | b[i]));
    EXPECT_EQ(n[i], static_cast<uint16_t>(a[i] & b[i]));
  }
}

TEST(Reduce, FloatSumMatchesReferenceOnOddLength) {
  const size_t n = 1001;
  std::vector<double> a(n), b(n), ref(n);
  for (size_t i = 0; i < n; ++i) {
    a[i] = 0.5 * static_cast<double>(i);
    b[i] = 1.0 / static_cast<double>(i + 1);
    ref[i] = a[i] + b[i];
  }
  ASSERT_TRUE(switchagg::reduceInto(Dtype::kFloat64, Op::kSum, a.data(), b.data(), n).ok());
  EXPECT_EQ(a, ref);  // one addition per element: bitwise equal
}

TEST(Reduce, BitwiseOnFloatIsRejectedWithAClearMessage) {
  float a = 1, b = 2;
  auto st = switchagg::reduceInto(Dtype::kFloat32, Op::kBxor, &a, &b, 1);
  EXPECT_EQ(st.code(), switchagg::Code::kInvalidArgument);
  EXPECT_NE(st.message().find("bxor"), std::string::npos);
  EXPECT_NE(st.message().find("float32"), std::string::npos);
  EXPECT_FALSE(switchagg::reduceSupported(Dtype::kFloat64, Op::kMinloc));
  EXPECT_FALSE(switchagg::reduceSupported(Dtype::kDoubleInt, Op::kSum));
}

TEST(Reduce, MinlocMaxlocTieKeepsSmallerIndex) {
  struct DI { double v; int i; };
  DI a[3] = {{1.0, 3}, {2.0, 5}, {4.0, 1}};
  DI b[3] = {{1.0, 2}, {3.0, 0}, {4.0, 7}};
  DI mn[3], mx[3];
  std::memcpy(mn, a, sizeof a);
  std::memcpy(mx, a, sizeof a);
  ASSERT_TRUE(switchagg::reduceInto(Dtype::kDoubleInt, Op::kMinloc, mn, b, 3).ok());
  ASSERT_TRUE(switchagg::reduceInto(Dtype::kDoubleInt, Op::kMaxloc, mx, b, 3).ok());
  EXPECT_EQ(mn[0].i, 2);
  EXPECT_EQ(mn[1].v, 2.0);
  EXPECT_EQ(mn[1].i, 5);
  EXPECT_EQ(mn[2].i, 1);
  EXPECT_EQ(mx[1].v, 3.0);
  EXPECT_EQ(mx[1].i, 0);
  EXPECT_EQ(mx[2].i, 1);
}

TEST(Reduce, Reduce3WritesOutWithoutTouchingInputs) {
  std::vector<float> a = {1, 2, 3}, b = {10, 20, 30}, out(3);
  ASSERT_TRUE(switchagg::reduce3(Dtype::kFloat32, Op::kMax, out.data(), a.data(), b.data(), 3).ok());
  EXPECT_EQ(out, (std::vector<float>{10, 20, 30}));
  EXPECT_EQ(a, (std::vector<float>{1, 2, 3}));
}

TEST(Reduce, EverySupportedPairRunsOnZeroAndOddCounts) {
  int supported = 0;
  for (int d = 1; d <= switchagg::kNumDtypes; ++d) {
    for (int o = 1; o <= switchagg::kNumOps; ++o) {
      auto dt = static_cast<Dtype>(d);
      auto op = static_cast<Op>(o);
      if (!switchagg::reduceSupported(dt, op)) continue;
      ++supported;
      std::vector<unsigned char> a(17 * switchagg::dtypeSize(dt), 0), b(a.size(), 0);
      EXPECT_TRUE(switchagg::reduceInto(dt, op, a.data(), b.data(), 0).ok());
      EXPECT_TRUE(switchagg::reduceInto(dt, op, a.data(), b.data(), 17).ok());
    }
  }
  // 10 numeric types x 4 arithmetic ops, 8 integer types x 6 logical/bitwise,
  // bool x 3 logical, 5 pair types x 2 loc ops, 2 16-bit floats x sum/min/max.
  EXPECT_EQ(supported, 10 * 4 + 8 * 6 + 3 + 5 * 2 + 2 * 3);
}

// The vector loops are unrolled (4 vectors per iteration), so a length has a
// vector part, 0-3 leftover vectors and a scalar tail: every length up to
// 4 x 4 vectors of 16 bytes and then some, from unaligned starts, on both
// paths (in place and into a separate output), must equal a scalar
// reference and leave the elements past `count` alone.
template <typename T>
void checkEveryLengthAndOffset(Dtype dt) {
  constexpr size_t kMax = 4 * 4 * 16 / sizeof(T) + 19, kGuard = 5;
  for (Op op : {Op::kSum, Op::kMax}) {
    for (size_t off = 0; off < 4; ++off) {
      for (size_t n = 0; n <= kMax; ++n) {
        const size_t len = off + n + kGuard;
        std::vector<T> a(len), b(len), out(len, T(7)), ref(len);
        for (size_t i = 0; i < len; ++i) {
          a[i] = static_cast<T>(static_cast<int>(i * 37 % 101) - 50);
          b[i] = static_cast<T>(static_cast<int>(i * 53 % 97) - 48);
          const T x = a[i], y = b[i];
          ref[i] = op == Op::kMax ? (x < y ? y : x) : static_cast<T>(x + y);
        }
        ASSERT_TRUE(
            switchagg::reduce3(dt, op, out.data() + off, a.data() + off, b.data() + off, n).ok());
        ASSERT_TRUE(switchagg::reduceInto(dt, op, a.data() + off, b.data() + off, n).ok());
        for (size_t i = 0; i < len; ++i) {
          const bool in_range = i >= off && i < off + n;
          SCOPED_TRACE(::testing::Message() << switchagg::dtypeName(dt) << " "
                                            << switchagg::opName(op) << " n=" << n
                                            << " off=" << off << " i=" << i);
          EXPECT_EQ(out[i], in_range ? ref[i] : T(7));
          const T a_orig = static_cast<T>(static_cast<int>(i * 37 % 101) - 50);
          EXPECT_EQ(a[i], in_range ? ref[i] : a_orig);
        }
      }
    }
  }
}

TEST(Reduce, UnrolledLoopsMatchScalarOnEveryLengthAndOffset) {
  checkEveryLengthAndOffset<int8_t>(Dtype::kInt8);
  checkEveryLengthAndOffset<int32_t>(Dtype::kInt32);
  checkEveryLengthAndOffset<int64_t>(Dtype::kInt64);
  checkEveryLengthAndOffset<float>(Dtype::kFloat32);
  checkEveryLengthAndOffset<double>(Dtype::kFloat64);
}

// reduceMany against the chain it replaces (reduce3 of the first two, then
// reduceInto of each further input): bitwise equal for 1..9 inputs, on float
// sums whose value depends on the order, integer wrap-around, max and a pair
// type (which has no fused kernel), over an odd count.
template <typename T>
void checkManyEqualsChain(Dtype dt, Op op, size_t count) {
  for (size_t n_in = 1; n_in <= 9; ++n_in) {
    std::vector<std::vector<T>> in(n_in, std::vector<T>(count));
    for (size_t r = 0; r < n_in; ++r) {
      auto* bytes = reinterpret_cast<unsigned char*>(in[r].data());
      for (size_t i = 0; i < count * sizeof(T); ++i)
        bytes[i] = static_cast<unsigned char>((i * 131 + r * 71 + 7) % 251 % 64);
    }
    std::vector<T> chain(in[0]), many(count);
    if (n_in > 1) {
      ASSERT_TRUE(switchagg::reduce3(dt, op, chain.data(), in[0].data(), in[1].data(), count).ok());
      for (size_t r = 2; r < n_in; ++r)
        ASSERT_TRUE(switchagg::reduceInto(dt, op, chain.data(), in[r].data(), count).ok());
    }
    std::vector<const void*> ptrs;
    for (auto& v : in) ptrs.push_back(v.data());
    ASSERT_TRUE(switchagg::reduceMany(dt, op, many.data(), ptrs.data(), n_in, count).ok());
    EXPECT_EQ(std::memcmp(many.data(), chain.data(), count * sizeof(T)), 0)
        << switchagg::dtypeName(dt) << " " << switchagg::opName(op) << " with " << n_in << " inputs";
    // A running prefix (the agent folding members as they come): the first
    // `head` at once, then the rest `step` at a time with reduceManyInto.
    for (size_t head = 1; head <= n_in; ++head)
      for (size_t step = 1; step <= 4; ++step) {
        std::vector<T> prefix(count);
        ASSERT_TRUE(switchagg::reduceMany(dt, op, prefix.data(), ptrs.data(), head, count).ok());
        for (size_t r = head; r < n_in; r += step)
          ASSERT_TRUE(switchagg::reduceManyInto(dt, op, prefix.data(), ptrs.data() + r,
                                                std::min(step, n_in - r), count)
                          .ok());
        EXPECT_EQ(std::memcmp(prefix.data(), chain.data(), count * sizeof(T)), 0)
            << switchagg::dtypeName(dt) << " " << switchagg::opName(op) << ": " << head
            << " inputs, then " << step << " at a time, of " << n_in;
      }
  }
}

TEST(Reduce, ManyIsBitwiseTheRankOrderedChain) {
  checkManyEqualsChain<float>(Dtype::kFloat32, Op::kSum, 1003);
  checkManyEqualsChain<double>(Dtype::kFloat64, Op::kSum, 517);
  checkManyEqualsChain<double>(Dtype::kFloat64, Op::kProd, 517);
  checkManyEqualsChain<int8_t>(Dtype::kInt8, Op::kSum, 999);
  checkManyEqualsChain<int32_t>(Dtype::kInt32, Op::kMax, 77);
  checkManyEqualsChain<uint64_t>(Dtype::kUint64, Op::kBxor, 33);
  struct FloatInt {
    float v;
    int i;
  };
  checkManyEqualsChain<FloatInt>(Dtype::kFloatInt, Op::kMinloc, 65);
}

TEST(Reduce, ManyRefusesAliasedOutputNoInputsAndBadPairs) {
  std::vector<float> a(8, 1), b(8, 2);
  const void* in[] = {a.data(), b.data()};
  auto st = switchagg::reduceMany(Dtype::kFloat32, Op::kSum, b.data(), in, 2, 8);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("input 1"), std::string::npos) << st.message();
  EXPECT_FALSE(switchagg::reduceMany(Dtype::kFloat32, Op::kSum, a.data(), in, 0, 8).ok());
  EXPECT_FALSE(switchagg::reduceMany(Dtype::kFloat32, Op::kBand, a.data(), in, 2, 8).ok());
  st = switchagg::reduceManyInto(Dtype::kFloat32, Op::kSum, a.data(), in, 2, 8);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("input 0"), std::string::npos) << st.message();
  EXPECT_FALSE(switchagg::reduceManyInto(Dtype::kFloat32, Op::kBand, b.data(), in, 1, 8).ok());
  const std::vector<float> before = b;
  ASSERT_TRUE(switchagg::reduceManyInto(Dtype::kFloat32, Op::kSum, b.data(), in, 0, 8).ok());
  EXPECT_EQ(b, before);  // no inputs: unchanged
  std::vector<float> out(8);
  ASSERT_TRUE(switchagg::reduceMany(Dtype::kFloat32, Op::kSum, out.data(), in, 1, 8).ok());
  EXPECT_EQ(out, a);  // one input: a copy
}

}  // namespace
