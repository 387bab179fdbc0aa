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
//
// 16-bit floats (kFloat16, kBfloat16; SUM, MIN, MAX): every call widens its
// operands to fp64, folds them in fp64 left to right and rounds the result
// to 16 bits once (switchagg/common/half.h), so reduceMany of n inputs is
// one rounding, not n - 1 as a chain of reduceInto would be; for binary16
// and up to 2^13 inputs the fold is exact, so the result is the correctly
// rounded sum whatever the order. A caller that folds a running prefix
// keeps it in fp64 (accumulateHalf) and rounds it with roundHalf once the
// last input is in: the same bits as reduceMany.
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

// out = in[0] op in[1] op ... op in[n_in - 1], left to right (rank order),
// bitwise the same as reduce3 of the first two then reduceInto of each
// further input; SUM, PROD, MIN and MAX take one pass over up to four inputs
// at a time (fewer passes over `out`), other ops chain two at a time.
// n_in == 1 copies. `out` must not alias an input (kInvalidArgument).
Status reduceMany(Dtype dtype, Op op, void* out, const void* const* in, size_t n_in,
                  size_t count);

// inout = inout op in[0] op ... op in[n_in - 1], left to right: bitwise the
// same as one reduceInto per input, in one pass over `inout` per three
// inputs (SUM, PROD, MIN, MAX). A running prefix in rank order (the agent
// folding member j once members 0..j are in) ends with the bits reduceMany
// gives for all of them at once (not for 16-bit floats, whose `inout` is
// rounded on every call: use accumulateHalf there). n_in == 0 does
// nothing; `inout` must not alias an input.
Status reduceManyInto(Dtype dtype, Op op, void* inout, const void* const* in, size_t n_in,
                      size_t count);

// 16-bit floats: acc (fp64, `count` values) = in[0] op ... op in[n_in - 1]
// with `start`, else acc op in[0] op ..., left to right in fp64. Then
// roundHalf(out) = acc rounded to `dtype`. kInvalidArgument for any other
// dtype or an op reduceSupported refuses.
Status accumulateHalf(Dtype dtype, Op op, double* acc, const void* const* in, size_t n_in,
                      bool start, size_t count);
Status roundHalf(Dtype dtype, void* out, const double* acc, size_t count);

}  // namespace switchagg
