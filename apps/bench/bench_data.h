// Input patterns and the independent reference for --check. Inputs are small
// integers (exact in float32, and in float16/bfloat16 up to maxRanksFor
// ranks), chosen per op so no sum or product can overflow or round: any correct reduction order gives bit-identical results,
// so the check is an exact comparison for every dtype.
#pragma once

#include <cstddef>
#include <string>

#include "switchagg/common/dtype.h"

namespace switchagg::bench {

// The most ranks whose sums of the pattern stay exact in `dtype` (binary16:
// 2048 / 11; bfloat16: 256), 0 for no limit.
int maxRanksFor(Dtype dtype);
// Fills `count` elements of `dtype` with rank `rank`'s contribution.
void fillInput(void* buf, size_t count, Dtype dtype, Op op, int rank, int nranks);
// What every element must be after the allreduce over `nranks` ranks,
// computed element by element from the same pattern (not with the library's
// reduction kernels).
void fillExpected(void* buf, size_t count, Dtype dtype, Op op, int nranks);
// Index of the first element that differs, or -1 when equal.
long firstMismatch(const void* got, const void* want, size_t count, Dtype dtype);
// Fills a buffer with a pattern no correct result contains (all 0xA5 bytes),
// so a call that writes nothing is caught.
void poison(void* buf, size_t bytes);
// Element i as text, for mismatch messages.
std::string elementText(const void* buf, size_t i, Dtype dtype);

}  // namespace switchagg::bench
