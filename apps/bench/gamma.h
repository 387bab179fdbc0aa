// --measure-gamma: the cost model's gamma (ns per byte reduced) measured on
// this host with the same reduction kernels the host algorithms use.
#pragma once

#include <cstddef>

#include "switchagg/common/dtype.h"

namespace switchagg::bench {

// Median over a few runs of inout = inout op in on `bytes` bytes; ns/byte.
// Negative when the kernel rejects the dtype/op pair.
double measureGammaNs(Dtype dtype, Op op, size_t bytes);

}  // namespace switchagg::bench
