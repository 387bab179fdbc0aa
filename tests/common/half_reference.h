// A double rounded to binary16 or bfloat16 by definition, for the tests:
// the two neighbours on the format's grid and the nearer one, the one with
// an even last bit on a tie, decided in double arithmetic that is exact
// here (scaling by powers of two, floor, one subtraction). Past the
// largest finite value: infinity. Written independently of common/half.h
// (which rounds to fp32 to odd first): the reference for the fp64 folds.
// Header-only (the agent tests and the MPI check programs include it).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace switchagg::testing {

inline uint16_t referenceRound16(double d, bool bf) {
  const uint16_t sign = std::signbit(d) ? 0x8000 : 0;
  if (std::isnan(d)) return uint16_t(sign | (bf ? 0x7FC0 : 0x7E00));
  const uint16_t inf = uint16_t(sign | (bf ? 0x7F80 : 0x7C00));
  const double a = std::fabs(d);
  if (std::isinf(a)) return inf;
  if (a == 0) return sign;
  const int digits = bf ? 8 : 11, grid = bf ? -133 : -24;
  const double max_finite = bf ? std::ldexp(255.0, 120) : 65504.0;
  int e = 0;
  (void)std::frexp(a, &e);  // a in [2^(e-1), 2^e)
  const int q = e - digits > grid ? e - digits : grid;
  const double scaled = std::ldexp(a, -q);
  double t = std::floor(scaled);
  const double rest = scaled - t;
  if (rest > 0.5 || (rest == 0.5 && std::fmod(t, 2.0) != 0)) t += 1;
  const double v = std::ldexp(t, q);
  if (v > max_finite) return inf;
  if (bf) {  // v is a bfloat16 value: exact in fp32, low 16 bits zero
    const float f = float(v);
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return uint16_t(sign | ((u >> 16) & 0x7FFF));
  }
  if (v < std::ldexp(1.0, -14)) return uint16_t(sign | uint16_t(std::ldexp(v, 24)));
  const int E = std::ilogb(v);
  return uint16_t(sign | ((E + 15) << 10) | uint16_t((std::ldexp(v, -E) - 1) * 1024));
}

}  // namespace switchagg::testing
