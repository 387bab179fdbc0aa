// Reduction kernels: inout[i] = inout[i] (op) in[i], elementwise.
//
// Semantics follow C, on every path, so host and switch results agree:
// integer SUM/PROD wrap around (computed in unsigned arithmetic, no UB),
// logical ops yield 0/1 of the element type, MINLOC/MAXLOC keep the smaller
// index on ties, float MIN/MAX return the first operand when either is NaN.
// Bitwise ops are defined for integer types only (as in MPI).
//
// Determinism: the kernel is a pure elementwise function, so a caller that
// combines contributions in a fixed (rank) order gets bitwise-identical
// results however they arrived.
#pragma once

#include <cstddef>

#include "switchagg/common/dtype.h"
#include "switchagg/common/status.h"

namespace switchagg {

// Whether MPI (and switchagg) define `op` on `dtype`.
bool reduceSupported(Dtype dtype, Op op);

// inout = inout op in, `count` elements. kInvalidArgument for an unsupported
// pair, never aborts. Buffers may not overlap unless inout == in.
Status reduceInto(Dtype dtype, Op op, void* inout, const void* in, size_t count);

// out = a op b (out may alias a or b).
Status reduce3(Dtype dtype, Op op, void* out, const void* a, const void* b, size_t count);

}  // namespace switchagg
