// Stripe cutting (data_client.h stripeOf): contiguous, in order, every
// element exactly once, sizes differing by at most one, empty stripes only
// when there are fewer elements than stripes; the byte ranges fall on
// element boundaries for every dtype.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "switchagg/agent/data_client.h"

namespace switchagg::agent {
namespace {

void expectPartition(size_t count, size_t k_total) {
  size_t next = 0, smallest = SIZE_MAX, largest = 0;
  for (size_t k = 0; k < k_total; ++k) {
    const StripeRange r = stripeOf(count, k, k_total);
    EXPECT_EQ(r.begin, next) << "count " << count << " stripe " << k << "/" << k_total;
    next += r.count;
    smallest = std::min(smallest, r.count);
    largest = std::max(largest, r.count);
    // Earlier stripes are never smaller (the extra elements go first).
    if (k > 0) {
      EXPECT_LE(r.count, stripeOf(count, k - 1, k_total).count);
    }
  }
  EXPECT_EQ(next, count) << "count " << count << " K " << k_total;
  EXPECT_LE(largest - smallest, 1u);
  if (count >= k_total) {
    EXPECT_GE(smallest, 1u);
  }
}

TEST(Stripes, PartitionEveryCountAndStripeNumber) {
  for (size_t k_total = 1; k_total <= 5; ++k_total)
    for (size_t count : {0, 1, 2, 3, 4, 5, 7, 10, 1001, 1048579}) expectPartition(count, k_total);
}

TEST(Stripes, OddCountsAndFewerElementsThanStripes) {
  struct Case {
    size_t count, k, stripes, begin, elems;
  };
  const Case cases[] = {
      {10, 0, 3, 0, 4}, {10, 1, 3, 4, 3}, {10, 2, 3, 7, 3},
      // 2 elements over 3 agents: the third stripe is empty (skipped by all ranks alike).
      {2, 0, 3, 0, 1}, {2, 1, 3, 1, 1}, {2, 2, 3, 2, 0}, {1, 1, 2, 1, 0}, {0, 0, 2, 0, 0},
      // Out of range stripe numbers are empty, never out of bounds.
      {10, 3, 3, 10, 0}, {10, 0, 0, 10, 0}};
  for (const Case& c : cases) {
    const StripeRange r = stripeOf(c.count, c.k, c.stripes);
    EXPECT_EQ(r.begin, c.begin) << c.count << " " << c.k << "/" << c.stripes;
    EXPECT_EQ(r.count, c.elems) << c.count << " " << c.k << "/" << c.stripes;
  }
}

// Stripes are element ranges: for every dtype the byte offsets are
// multiples of the element size and cover the buffer exactly.
TEST(Stripes, ByteRangesFallOnElementBoundariesForEveryDtype) {
  int dtypes = 0;
  for (int d = 1; d <= kNumDtypes; ++d) {
    const size_t esize = dtypeSize(static_cast<Dtype>(d));
    if (esize == 0) continue;  // not a dtype value
    ++dtypes;
    for (size_t count : {1, 3, 7, 1001}) {
      size_t bytes = 0;
      for (size_t k = 0; k < 2; ++k) {
        const StripeRange r = stripeOf(count, k, 2);
        EXPECT_EQ(r.begin * esize, bytes) << dtypeName(static_cast<Dtype>(d)) << " " << count;
        bytes += r.count * esize;
      }
      EXPECT_EQ(bytes, count * esize);
    }
  }
  EXPECT_GE(dtypes, 10);
}


// Unequal reducers (weights = the agents' link rates): contiguous, every
// element once, each stripe within one element of count·w_k/Σw, computed in
// integers (the same on every rank), without overflow at large counts.
TEST(Stripes, WeightedStripesFollowTheLinkRates) {
  const std::vector<std::vector<uint32_t>> all = {
      {400, 200}, {100000, 25000, 25000}, {1, 2, 3, 4}, {400, 400, 200, 200, 100}};
  for (const std::vector<uint32_t>& w : all) {
    ASSERT_TRUE(stripesWeighted(w));
    uint64_t total = 0;
    for (uint32_t x : w) total += x;
    for (size_t count : std::vector<size_t>{0, 1, 2, 5, 37, 1001, 1048579, size_t(1) << 40}) {
      size_t next = 0;
      for (size_t k = 0; k < w.size(); ++k) {
        const StripeRange r = stripeOf(count, k, w);
        EXPECT_EQ(r.begin, next) << count << " stripe " << k;
        const double share = double(count) * w[k] / double(total);
        EXPECT_LE(std::abs(double(r.count) - share), 1.0) << count << " stripe " << k;
        next += r.count;
      }
      EXPECT_EQ(next, count);
      EXPECT_EQ(stripeOf(count, w.size(), w).count, 0u);  // out of range: empty
    }
  }
  // 2:1 links, 9 elements: 6 and 3.
  EXPECT_EQ(stripeOf(9, 0, {400, 200}).count, 6u);
  EXPECT_EQ(stripeOf(9, 1, {400, 200}).begin, 6u);
  EXPECT_EQ(stripeOf(9, 1, {400, 200}).count, 3u);
}

// Equal, unknown (0) or too many weights: exactly the equal stripes of
// before, so jobs whose agents do not tell a rate cut as they always did.
TEST(Stripes, EqualUnknownOrTooManyWeightsCutEqually) {
  const std::vector<std::vector<uint32_t>> equal_cut = {
      {}, {400}, {400, 400, 400}, {400, 0}, {0, 0},
      std::vector<uint32_t>(kMaxWeightedStripes + 1, 7)};
  std::vector<uint32_t> many(kMaxWeightedStripes + 1, 100);
  many[0] = 200;
  for (std::vector<uint32_t> w : equal_cut) {
    if (w.size() == kMaxWeightedStripes + 1) w = many;
    EXPECT_FALSE(stripesWeighted(w)) << w.size();
    for (size_t count : {0, 1, 10, 1001})
      for (size_t k = 0; k <= w.size(); ++k) {
        const StripeRange a = stripeOf(count, k, w), b = stripeOf(count, k, w.size());
        EXPECT_EQ(a.begin, b.begin);
        EXPECT_EQ(a.count, b.count);
      }
  }
}

}  // namespace
}  // namespace switchagg::agent
