// 16-bit floats accumulated in fp64 (half.h, "fp64 accumulation"): the
// widening is exact, the fold runs in doubles, and the result is rounded
// to 16 bits once, directly from the double.
//
// Direct rounding matters: rounding the double to fp32 first and then to
// 16 bits can round twice the wrong way (1 + 2^-11 + 2^-30 rounds to fp32
// as 1 + 2^-11, a tie in binary16 that goes to 1, where the correct
// binary16 result is 1 + 2^-10). So the double is first rounded to fp32
// *to odd* (the low 29 fraction bits cut, the last kept bit set if any
// was nonzero: the result is exact in fp32), then to nearest even in 16
// bits. Rounding to odd with at least two more bits than the target keeps
// the information a later rounding to nearest needs (Boldo and Melquiond,
// "When double rounding is odd"): fp32 has 24 bits, binary16 11 and
// bfloat16 8. Below fp32's normal range (|x| < 2^-126) binary16 gives
// (signed) zero anyway, and bfloat16's subnormals are rounded exactly in
// integers (doubleToBfloat16).
#include <algorithm>
#include <cmath>

#include "bit_cast.h"
#include "switchagg/common/half.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define SWITCHAGG_HAVE_AVX2 1
#else
#define SWITCHAGG_HAVE_AVX2 0
#endif

namespace switchagg {
namespace {

constexpr uint64_t kCut = (uint64_t(1) << 29) - 1;  // fraction bits fp32 does not keep
constexpr uint64_t kOdd = uint64_t(1) << 29;         // fp32's last fraction bit
constexpr uint64_t kAbs = ~(uint64_t(1) << 63);
constexpr uint64_t kMinNormal32 = uint64_t(0x381) << 52;  // 2^-126 as a double's bits

uint64_t bitsOf(double d) { return detail::bitCast<uint64_t>(d); }
double doubleOf(uint64_t u) { return detail::bitCast<double>(u); }

// `d` rounded to fp32 to odd, for |d| >= 2^-126 (and infinities, NaNs): the
// cut double is an fp32 value, so the conversion is exact in any rounding
// mode (past fp32's range it is an overflow, which 16 bits round to
// infinity either way).
float toOddFloat(double d) {
  uint64_t u = bitsOf(d);
  u = (u & ~kCut) | ((u & kCut) != 0 ? kOdd : 0);
  return static_cast<float>(doubleOf(u));
}

inline double applyOne(Op op, double acc, double x) {
  if (op == Op::kSum) return acc + x;
  if (op == Op::kMin) return x < acc ? x : acc;
  return acc < x ? x : acc;
}

inline double widenOne(bool bf, uint16_t h) {
  return double(bf ? bfloat16ToFloat(h) : halfToFloat(h));
}

#if SWITCHAGG_HAVE_AVX2
bool useAvx2F16c() { return halfUsesF16c() && __builtin_cpu_supports("avx2"); }

template <bool kBf16>
__attribute__((target("avx2,f16c"))) inline __m256 widen8(const uint16_t* in) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in));
  if constexpr (kBf16) return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  else return _mm256_cvtph_ps(h);
}

template <Op O>
__attribute__((target("avx2,f16c"))) inline __m256d apply4(__m256d a, __m256d x) {
  // MINPD/MAXPD return their second operand unless the first is strictly
  // less/greater: the scalar applyOne with acc first, NaNs included.
  if constexpr (O == Op::kSum) return _mm256_add_pd(a, x);
  else if constexpr (O == Op::kMin) return _mm256_min_pd(x, a);
  else return _mm256_max_pd(x, a);
}

// acc[i] = acc[i] op in[0][i] op ... op in[k-1][i]: eight elements a step,
// kept in registers across the inputs (acc is read and written once).
template <bool kBf16, Op O>
__attribute__((target("avx2,f16c"))) void accumulateAvx2(double* acc, const uint16_t* const* in,
                                                         size_t k, size_t at, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256d lo = _mm256_loadu_pd(acc + i), hi = _mm256_loadu_pd(acc + i + 4);
    for (size_t r = 0; r < k; ++r) {
      const __m256 x = widen8<kBf16>(in[r] + at + i);
      lo = apply4<O>(lo, _mm256_cvtps_pd(_mm256_castps256_ps128(x)));
      hi = apply4<O>(hi, _mm256_cvtps_pd(_mm256_extractf128_ps(x, 1)));
    }
    _mm256_storeu_pd(acc + i, lo);
    _mm256_storeu_pd(acc + i + 4, hi);
  }
  for (; i < n; ++i)
    for (size_t r = 0; r < k; ++r) acc[i] = applyOne(O, acc[i], widenOne(kBf16, in[r][at + i]));
}

template <bool kBf16>
__attribute__((target("avx2,f16c"))) void widenAvx2(double* out, const uint16_t* in, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = widen8<kBf16>(in + i);
    _mm256_storeu_pd(out + i, _mm256_cvtps_pd(_mm256_castps256_ps128(x)));
    _mm256_storeu_pd(out + i + 4, _mm256_cvtps_pd(_mm256_extractf128_ps(x, 1)));
  }
  for (; i < n; ++i) out[i] = widenOne(kBf16, in[i]);
}

// Four doubles rounded to fp32 to odd (toOddFloat, four lanes).
__attribute__((target("avx2,f16c"))) inline __m128 toOdd4(__m256d d) {
  const __m256i u = _mm256_castpd_si256(d);
  const __m256i cut = _mm256_set1_epi64x(int64_t(kCut));
  const __m256i exact = _mm256_cmpeq_epi64(_mm256_and_si256(u, cut), _mm256_setzero_si256());
  const __m256i odd = _mm256_andnot_si256(exact, _mm256_set1_epi64x(int64_t(kOdd)));
  return _mm256_cvtpd_ps(_mm256_castsi256_pd(_mm256_or_si256(_mm256_andnot_si256(cut, u), odd)));
}

// out = first op in[0] op ... op in[k-1], binary16, eight elements a step
// wholly in registers: widened, folded in fp64, rounded once - no
// accumulator in memory. Each step reads its elements of every input
// before it writes them, so `out` may be `first` or an input.
template <Op O>
__attribute__((target("avx2,f16c"))) void foldF16Avx2(uint16_t* out, const uint16_t* first,
                                                     const uint16_t* const* in, size_t k, size_t n) {
  constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x0 = widen8<false>(first + i);
    __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(x0));
    __m256d hi = _mm256_cvtps_pd(_mm256_extractf128_ps(x0, 1));
    for (size_t r = 0; r < k; ++r) {
      const __m256 x = widen8<false>(in[r] + i);
      lo = apply4<O>(lo, _mm256_cvtps_pd(_mm256_castps256_ps128(x)));
      hi = apply4<O>(hi, _mm256_cvtps_pd(_mm256_extractf128_ps(x, 1)));
    }
    const __m256 f = _mm256_set_m128(toOdd4(hi), toOdd4(lo));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm256_cvtps_ph(f, kRound));
  }
  for (; i < n; ++i) {
    double acc = widenOne(false, first[i]);
    for (size_t r = 0; r < k; ++r) acc = applyOne(O, acc, widenOne(false, in[r][i]));
    out[i] = doubleToHalf(acc);
  }
}

__attribute__((target("avx2,f16c"))) void narrowF16Avx2(uint16_t* out, const double* in, size_t n) {
  constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 f =
        _mm256_set_m128(toOdd4(_mm256_loadu_pd(in + i + 4)), toOdd4(_mm256_loadu_pd(in + i)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm256_cvtps_ph(f, kRound));
  }
  for (; i < n; ++i) out[i] = doubleToHalf(in[i]);
}
#endif

}  // namespace

uint16_t doubleToHalf(double d) {
  // Below 2^-126 binary16 rounds to zero (its smallest subnormal is 2^-24).
  if ((bitsOf(d) & kAbs) < kMinNormal32) return uint16_t((bitsOf(d) >> 48) & 0x8000u);
  return floatToHalf(toOddFloat(d));
}

uint16_t doubleToBfloat16(double d) {
  const uint64_t u = bitsOf(d);
  if ((u & kAbs) >= kMinNormal32) return floatToBfloat16(toOddFloat(d));
  // bfloat16's subnormals: k * 2^-133, k < 2^7, rounded to nearest even in
  // integers (the scaling by 2^133 is exact); k = 2^7 is the smallest normal.
  const uint16_t sign = uint16_t((u >> 48) & 0x8000u);
  const double t = std::fabs(d) * 0x1p133;
  uint64_t k = uint64_t(t);
  const double rest = t - double(k);
  if (rest > 0.5 || (rest == 0.5 && (k & 1))) ++k;
  return uint16_t(sign | k);
}

void widenHalfWide(Dtype d, double* out, const uint16_t* in, size_t n) {
  const bool bf = d == Dtype::kBfloat16;
#if SWITCHAGG_HAVE_AVX2
  if (useAvx2F16c()) return bf ? widenAvx2<true>(out, in, n) : widenAvx2<false>(out, in, n);
#endif
  for (size_t i = 0; i < n; ++i) out[i] = widenOne(bf, in[i]);
}

void accumulateWidened(Dtype d, Op op, double* acc, const uint16_t* const* in, size_t k,
                       size_t at, size_t n) {
  const bool bf = d == Dtype::kBfloat16;
#if SWITCHAGG_HAVE_AVX2
  if (useAvx2F16c()) {
    auto run = [&](auto fn) { fn(acc, in, k, at, n); };
    if (bf) {
      if (op == Op::kSum) return run(accumulateAvx2<true, Op::kSum>);
      if (op == Op::kMin) return run(accumulateAvx2<true, Op::kMin>);
      return run(accumulateAvx2<true, Op::kMax>);
    }
    if (op == Op::kSum) return run(accumulateAvx2<false, Op::kSum>);
    if (op == Op::kMin) return run(accumulateAvx2<false, Op::kMin>);
    return run(accumulateAvx2<false, Op::kMax>);
  }
#endif
  for (size_t i = 0; i < n; ++i)
    for (size_t r = 0; r < k; ++r) acc[i] = applyOne(op, acc[i], widenOne(bf, in[r][at + i]));
}

// bfloat16: fp32 to odd, then the fp32 narrowing (vectorised there); a
// block with a result in fp32's subnormal range goes element by element.
static void narrowBfloat16Wide(uint16_t* out, const double* in, size_t n) {
  constexpr size_t kStep = 256;
  float f[kStep];
  for (size_t at = 0; at < n; at += kStep) {
    const size_t m = std::min(kStep, n - at);
    bool tiny = false;
    for (size_t i = 0; i < m; ++i) {
      const uint64_t u = bitsOf(in[at + i]);
      tiny = tiny || ((u & kAbs) < kMinNormal32 && (u & kAbs) != 0);
      f[i] = toOddFloat(in[at + i]);
    }
    if (!tiny) {
      narrowHalf(Dtype::kBfloat16, out + at, f, m);
      continue;
    }
    for (size_t i = 0; i < m; ++i) out[at + i] = doubleToBfloat16(in[at + i]);
  }
}

bool foldHalfWide(Dtype d, Op op, uint16_t* out, const uint16_t* first, const uint16_t* const* in,
                  size_t k, size_t n) {
#if SWITCHAGG_HAVE_AVX2
  if (d != Dtype::kFloat16 || !useAvx2F16c()) return false;
  if (op == Op::kSum) foldF16Avx2<Op::kSum>(out, first, in, k, n);
  else if (op == Op::kMin) foldF16Avx2<Op::kMin>(out, first, in, k, n);
  else foldF16Avx2<Op::kMax>(out, first, in, k, n);
  return true;
#else
  (void)d, (void)op, (void)out, (void)first, (void)in, (void)k, (void)n;
  return false;
#endif
}

void narrowHalfWide(Dtype d, uint16_t* out, const double* in, size_t n) {
  if (d == Dtype::kBfloat16) return narrowBfloat16Wide(out, in, n);
#if SWITCHAGG_HAVE_AVX2
  if (useAvx2F16c()) return narrowF16Avx2(out, in, n);
#endif
  for (size_t i = 0; i < n; ++i) out[i] = doubleToHalf(in[i]);
}

}  // namespace switchagg
