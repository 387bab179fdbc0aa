// A striped call's arithmetic (docs/offload.md "Stripes"), without UCX so
// tests/fuzz/fuzz_client.cc drives it alone: how a call of `count` elements
// is cut into K stripes (equal, or in proportion to the agents' rates), the
// same routed call on one stripe's range, and how the caller's partial
// input and the stripes' partial results map onto the whole vector.
// StripedGroup (striped_group.cc) runs the stripes over UCX with these.
//
//   count 10, K 3:  stripe 0 = [0,4)  stripe 1 = [4,7)  stripe 2 = [7,10)
//   count 2,  K 3:  stripe 0 = [0,1)  stripe 1 = [1,2)  stripe 2 = empty (skipped)
#include <algorithm>

#include "client_core.h"

namespace switchagg::agent {

StripeRange stripeOf(size_t count, size_t k, size_t stripes) {
  if (stripes == 0 || k >= stripes) return {count, 0};
  const size_t base = count / stripes, extra = count % stripes;
  return {k * base + std::min(k, extra), base + (k < extra ? 1 : 0)};
}

bool stripesWeighted(const std::vector<uint32_t>& weights) {
  return weights.size() <= kMaxWeightedStripes &&
         std::none_of(weights.begin(), weights.end(), [](uint32_t w) { return w == 0; }) &&
         std::any_of(weights.begin(), weights.end(), [&](uint32_t w) { return w != weights[0]; });
}

StripeRange stripeOf(size_t count, size_t k, const std::vector<uint32_t>& weights) {
  const size_t stripes = weights.size();
  if (!stripesWeighted(weights) || k >= stripes) return stripeOf(count, k, stripes);
  uint64_t before = 0, total = 0;
  for (size_t i = 0; i < stripes; ++i) (i < k ? before : total) += weights[i];
  total += before;
  // count · sum fits 128 bits (count < 2^64, sum < 2^36).
  __extension__ typedef unsigned __int128 Wide;
  auto cut = [&](uint64_t sum) { return size_t(Wide(count) * sum / total); };
  const size_t begin = cut(before), end = cut(before + weights[k]);
  return {begin, end - begin};
}

RoutedCall stripeRoutedCall(const RoutedCall& call, int rank, size_t S, size_t n, size_t esize,
                            uint8_t* out) {
  RoutedCall sc;
  sc.kind = call.kind;
  sc.dtype = call.dtype;
  sc.op = call.op;
  sc.total = n;
  const auto* in = static_cast<const uint8_t*>(call.in);
  if (call.kind == RoutedCall::Kind::kReduce) {
    sc.in = in + S * esize;
  } else {
    const size_t lo = std::max(call.in_begin, S), hi = std::min(call.in_end, S + n);
    if (lo < hi) {
      sc.in = in + (lo - call.in_begin) * esize;
      sc.in_begin = lo - S;
      sc.in_end = hi - S;
    }
  }
  auto clip = [&](size_t x) { return std::min(std::max(x, S), S + n) - S; };
  for (size_t b : call.want) sc.want.push_back(clip(b));
  for (size_t b : call.leaf_want) sc.leaf_want.push_back(clip(b));
  size_t wb = 0, we = 0;
  call.wanted(rank, &wb, &we);
  if (clip(wb) < clip(we)) sc.out = out + (clip(wb) + S - wb) * esize;
  return sc;
}

size_t stripeInputReady(size_t elements, const StripeRange& r) {
  return elements <= r.begin ? 0 : std::min(elements - r.begin, r.count);
}

size_t stripedResultsReady(size_t count, const std::vector<StripeRange>& ranges,
                           const std::vector<uint8_t>& running, const std::vector<uint8_t>& done,
                           const std::function<size_t(size_t)>& stripe_ready) {
  for (size_t k = 0; k < ranges.size(); ++k) {
    const StripeRange& r = ranges[k];
    if (r.count == 0 || (running[k] && done[k])) continue;
    return r.begin + (running[k] ? stripe_ready(k) : 0);
  }
  return count;
}

void GroupCore::setInputReady(size_t elements) {
  if (!active) return;
  ready_chunks = elements >= count ? n_chunks : elements / chunk_elems;
}

size_t GroupCore::resultsReady() {
  if (!active || out != recv) return 0;
  while (results_prefix < n_chunks && received[results_prefix]) ++results_prefix;
  return std::min(results_prefix * chunk_elems, count);
}

}  // namespace switchagg::agent
