// DataPlane::supported: the (dtype, op) pairs the engine reduces, as the
// control plane and switchagg-info list them.
#include "aggregation_engine.h"
#include "data_plane.h"

namespace switchagg::agent {

std::vector<std::pair<Dtype, std::vector<Op>>> DataPlane::supported() {
  const wire::CapTable caps = AggregationEngine::capTable();
  std::vector<std::pair<Dtype, std::vector<Op>>> out;
  for (int d = 1; d <= kNumDtypes; ++d) {
    std::vector<Op> ops;
    for (int o = 1; o <= kNumOps; ++o)
      if (caps.supports(static_cast<Dtype>(d), static_cast<Op>(o)))
        ops.push_back(static_cast<Op>(o));
    if (!ops.empty()) out.emplace_back(static_cast<Dtype>(d), std::move(ops));
  }
  return out;
}

}  // namespace switchagg::agent
