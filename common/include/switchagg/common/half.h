// 16-bit floats: IEEE 754 binary16 (Dtype::kFloat16) and bfloat16
// (Dtype::kBfloat16), held as their bit patterns (uint16_t), converted to
// and from fp32.
//
// Widening is exact. Narrowing rounds to nearest, ties to even, whatever
// the FPU's rounding mode: values past the largest finite 16-bit number
// round to infinity, values below the smallest subnormal to (signed) zero,
// subnormals are kept (no flush to zero). A NaN stays a NaN with its sign,
// made quiet (the top fraction bit set), as x86's F16C does.
//
// The bulk converters use F16C where the CPU has it (checked once at run
// time) and a portable loop elsewhere; both give the same bits (tested
// over every binary16 value and a sweep of fp32 ones, tests/common).
#pragma once

#include <cstddef>
#include <cstdint>

#include "switchagg/common/dtype.h"

namespace switchagg {

float halfToFloat(uint16_t h);
uint16_t floatToHalf(float f);
float bfloat16ToFloat(uint16_t b);
uint16_t floatToBfloat16(float f);

// out[i] = in[i] widened to fp32; `d` is kFloat16 or kBfloat16.
void widenHalf(Dtype d, float* out, const uint16_t* in, size_t n);
// out[i] = in[i] rounded to `d` (to nearest, ties to even).
void narrowHalf(Dtype d, uint16_t* out, const float* in, size_t n);

// out[i] = a[i] + b[i] added in fp32 and rounded once (a's NaN kept where
// a[i] is one), in one pass on F16C (binary16) or AVX2 (bfloat16); false,
// doing nothing, where the CPU has neither (the caller widens, adds and
// narrows in blocks). out may be a or b. The two-operand SUM kernel
// (reduce.cc halfPairSum32): the same bits (tests/common/test_half_pair.cc).
bool sumHalfPair(Dtype d, uint16_t* out, const uint16_t* a, const uint16_t* b, size_t n);

// fp64 accumulation (half_wide.cc), what every 16-bit float fold uses
// (common/reduce.h): binary16 values are multiples of 2^-24 below 2^16, so
// any sum of up to 2^13 of them, partial sums included, is a multiple of
// 2^-24 below 2^29 - an integer below 2^53 times 2^-24, exact in a double,
// in any order. Rounded once (narrowHalfWide), it is the correctly rounded
// sum, bitwise the same for every order and layout. bfloat16 spans fp32's
// exponents, so its fp64 sums are not always exact, but each addition's
// error is 2^-53 of the partial instead of fp32's 2^-24.
//
// out[i] = in[i] widened to fp64 (exact).
void widenHalfWide(Dtype d, double* out, const uint16_t* in, size_t n);
// acc[i] = acc[i] op in[0][at + i] op ... op in[k - 1][at + i], i < n, for
// op SUM, MIN or MAX with the kernels' semantics (common/reduce.h: MIN/MAX
// keep acc[i] when either is NaN), left to right in fp64: one pass over
// acc for all k inputs.
void accumulateWidened(Dtype d, Op op, double* acc, const uint16_t* const* in, size_t k,
                       size_t at, size_t n);
// out[i] = in[i] rounded to `d` once, to nearest, ties to even (not through
// an fp32 rounding to nearest, which could round twice).
void narrowHalfWide(Dtype d, uint16_t* out, const double* in, size_t n);
// out[i] = first[i] op in[0][i] op ... op in[k - 1][i], i < n, folded in
// fp64 and rounded once - the same bits as widenHalfWide, accumulateWidened
// and narrowHalfWide - in one pass with nothing in memory between (out may
// be first or an input). False, doing nothing, where there is no such
// kernel (bfloat16, or no AVX2/F16C): the caller takes the three steps.
bool foldHalfWide(Dtype d, Op op, uint16_t* out, const uint16_t* first, const uint16_t* const* in,
                  size_t k, size_t n);
uint16_t doubleToHalf(double d);
uint16_t doubleToBfloat16(double d);

// Whether the bulk converters run on F16C on this machine.
bool halfUsesF16c();

}  // namespace switchagg
