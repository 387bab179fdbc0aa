#include "gamma.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "bench_data.h"
#include "switchagg/common/reduce.h"

namespace switchagg::bench {

double measureGammaNs(Dtype dtype, Op op, size_t bytes) {
  const size_t width = dtypeSize(dtype);
  const size_t count = std::max<size_t>(1, bytes / width);
  std::vector<char> inout(count * width), in(count * width);
  fillInput(inout.data(), count, dtype, op, 0, 2);
  fillInput(in.data(), count, dtype, op, 1, 2);
  std::vector<double> samples;
  for (int rep = 0; rep < 7; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    if (!reduceInto(dtype, op, inout.data(), in.data(), count).ok()) return -1;
    const auto t1 = std::chrono::steady_clock::now();
    samples.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / double(count * width));
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

}  // namespace switchagg::bench
