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

// acc[i] = acc[i] op in[i] widened, for op SUM, MIN or MAX with the
// kernels' semantics (common/reduce.h: MIN/MAX keep acc[i] when either is
// NaN): one pass instead of widening into a buffer and folding that.
void accumulateWidened(Dtype d, Op op, float* acc, const uint16_t* in, size_t n);

// Whether the bulk converters run on F16C on this machine.
bool halfUsesF16c();

}  // namespace switchagg
