// binary16 through the compiler's own _Float16 (GCC 12+ and clang on
// x86-64: libgcc's soft-float conversions, round to nearest even): a
// reference written independently of common/half.h, for the tests of
// switchagg's conversions and of its MPI results. Header-only (the MPI
// check programs include it too).
#pragma once

#include <cstdint>
#include <cstring>

#ifdef __FLT16_MAX__
#define SWITCHAGG_TEST_HAVE_FLOAT16 1

namespace switchagg::testing {

inline uint16_t compilerHalf(float f) {
  const _Float16 h = static_cast<_Float16>(f);
  uint16_t u;
  std::memcpy(&u, &h, sizeof u);
  return u;
}

inline float compilerFloat(uint16_t u) {
  _Float16 h;
  std::memcpy(&h, &u, sizeof h);
  return static_cast<float>(h);
}

}  // namespace switchagg::testing

#endif
