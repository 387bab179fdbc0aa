// 16-bit float conversions (half.h). The scalar functions are the
// definition; the F16C loops must give their bits (tests/common/test_half.cc
// compares them on every binary16 value and a sweep of fp32 ones).
#include "switchagg/common/half.h"

#include "bit_cast.h"

#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#define SWITCHAGG_HAVE_F16C 1
#else
#define SWITCHAGG_HAVE_F16C 0
#endif

namespace switchagg {
namespace {

uint32_t bitsOf(float f) { return detail::bitCast<uint32_t>(f); }
float floatOf(uint32_t u) { return detail::bitCast<float>(u); }

// Rounds m / 2^s to an integer, to nearest, ties to even (1 <= s < 32).
uint32_t shiftRoundEven(uint32_t m, uint32_t s) {
  const uint32_t q = m >> s, rem = m & ((1u << s) - 1), half = 1u << (s - 1);
  return q + ((rem > half || (rem == half && (q & 1))) ? 1 : 0);
}

#if SWITCHAGG_HAVE_F16C
// Eight lanes a step; the tail goes through one padded vector so every
// element is converted by the same instruction.
__attribute__((target("avx,f16c"))) void widenF16c(float* out, const uint16_t* in, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
  if (i == n) return;
  uint16_t h[8] = {};
  float f[8];
  std::memcpy(h, in + i, (n - i) * sizeof(uint16_t));
  _mm256_storeu_ps(f, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h))));
  std::memcpy(out + i, f, (n - i) * sizeof(float));
}

__attribute__((target("avx,f16c"))) void narrowF16c(uint16_t* out, const float* in, size_t n) {
  // The rounding is in the instruction (to nearest even), not MXCSR's.
  constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(in + i), kRound));
  if (i == n) return;
  float f[8] = {};
  uint16_t h[8];
  std::memcpy(f, in + i, (n - i) * sizeof(float));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(h), _mm256_cvtps_ph(_mm256_loadu_ps(f), kRound));
  std::memcpy(out + i, h, (n - i) * sizeof(uint16_t));
}

// bfloat16 on AVX2: widening is a 16-bit shift; narrowing adds 0x7FFF plus
// the kept part's last bit (ties to even) and keeps the top 16 bits, NaNs
// made quiet instead - floatToBfloat16's arithmetic, eight lanes a step.
__attribute__((target("avx2"))) void widenBf16Avx2(float* out, const uint16_t* in, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm256_slli_epi32(w, 16));
  }
  for (; i < n; ++i) out[i] = bfloat16ToFloat(in[i]);
}

// Eight fp32 lanes rounded to bfloat16, each in the low 16 bits of its
// 32-bit lane.
__attribute__((target("avx2"))) inline __m256i roundBf16x8(__m256 f) {
  const __m256i x = _mm256_castps_si256(f);
  const __m256i abs_mask = _mm256_set1_epi32(0x7FFFFFFF), inf = _mm256_set1_epi32(0x7F800000);
  const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(x, abs_mask), inf);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_add_epi32(x, _mm256_add_epi32(_mm256_set1_epi32(0x7FFF), lsb));
  const __m256i quiet = _mm256_or_si256(x, _mm256_set1_epi32(0x400000));
  return _mm256_srli_epi32(_mm256_blendv_epi8(rounded, quiet, nan), 16);
}

// Two roundBf16x8 results packed to sixteen 16-bit values in order (they
// fit: no saturation; the permute undoes packus's lane interleave).
__attribute__((target("avx2"))) inline __m256i packBf16x16(__m256i lo, __m256i hi) {
  return _mm256_permute4x64_epi64(_mm256_packus_epi32(lo, hi), 0xD8);
}

__attribute__((target("avx2"))) void narrowBf16Avx2(uint16_t* out, const float* in, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i lo = roundBf16x8(_mm256_loadu_ps(in + i));
    const __m256i hi = roundBf16x8(_mm256_loadu_ps(in + i + 8));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), packBf16x16(lo, hi));
  }
  for (; i < n; ++i) out[i] = floatToBfloat16(in[i]);
}

// x + y in fp32, x's NaN kept where both are NaNs (the scalar `x += y`
// keeps its first operand's): VADDPS returns its first source's NaN, and
// the compiler may swap the operands of an intrinsic addition, so the order
// is fixed in the instruction. (A blend on an unordered compare instead was
// compiled to a branch per lane here: the one-pass loop ran at 0.8 of the
// block loop.)
__attribute__((target("avx"))) inline __m256 addKeepFirstNan(__m256 x, __m256 y) {
  __m256 sum;
  asm("vaddps %2, %1, %0" : "=x"(sum) : "x"(x), "x"(y));
  return sum;
}

// Eight binary16 sums x + y: widened (F16C), added in fp32, rounded once.
__attribute__((target("avx,f16c"))) inline __m128i pairSumF16x8(const uint16_t* x,
                                                                const uint16_t* y) {
  constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  const __m256 fx = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x)));
  const __m256 fy = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(y)));
  return _mm256_cvtps_ph(addKeepFirstNan(fx, fy), kRound);
}

// out = a + b for binary16, in one pass: nothing in memory between the
// widening and the rounding. The tail goes through padded vectors: every
// element by the same instructions.
__attribute__((target("avx,f16c"))) void pairSumF16c(uint16_t* out, const uint16_t* a,
                                                     const uint16_t* b, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), pairSumF16x8(a + i, b + i));
  if (i == n) return;
  uint16_t x[8] = {}, y[8] = {}, r[8];
  std::memcpy(x, a + i, (n - i) * sizeof(uint16_t));
  std::memcpy(y, b + i, (n - i) * sizeof(uint16_t));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(r), pairSumF16x8(x, y));
  std::memcpy(out + i, r, (n - i) * sizeof(uint16_t));
}

// Eight bfloat16 values widened to fp32 (a 16-bit shift).
__attribute__((target("avx2"))) inline __m256 widenBf16x8(const uint16_t* p) {
  const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}

// The same for bfloat16 on AVX2: sixteen lanes a step (widened by a shift,
// rounded as narrowBf16Avx2), the tail element by element.
__attribute__((target("avx2"))) void pairSumBf16Avx2(uint16_t* out, const uint16_t* a,
                                                    const uint16_t* b, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i lo = roundBf16x8(addKeepFirstNan(widenBf16x8(a + i), widenBf16x8(b + i)));
    const __m256i hi = roundBf16x8(addKeepFirstNan(widenBf16x8(a + i + 8), widenBf16x8(b + i + 8)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), packBf16x16(lo, hi));
  }
  for (; i < n; ++i) {
    const float x = bfloat16ToFloat(a[i]);
    out[i] = floatToBfloat16(x != x ? x : x + bfloat16ToFloat(b[i]));
  }
}

// "avx" checks that the OS saves the YMM registers too; F16C from CPUID
// itself (clang's __builtin_cpu_supports has no "f16c").
bool cpuHasF16c() {
  __builtin_cpu_init();
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __builtin_cpu_supports("avx") && __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) != 0;
}
#endif

}  // namespace

float halfToFloat(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu, man = h & 0x3FFu;
  if (exp == 0x1F)  // infinity, or a NaN made quiet
    return floatOf(sign | 0x7F800000u | (man ? 0x400000u | (man << 13) : 0));
  if (exp != 0) return floatOf(sign | ((exp + 112) << 23) | (man << 13));
  if (man == 0) return floatOf(sign);
  // Subnormal: man * 2^-24, normal in fp32.
  uint32_t e = 113, m = man;
  while (!(m & 0x400u)) {
    m <<= 1;
    --e;
  }
  return floatOf(sign | (e << 23) | ((m & 0x3FFu) << 13));
}

uint16_t floatToHalf(float f) {
  const uint32_t x = bitsOf(f);
  const uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7FFFFFFFu;
  if (ax > 0x7F800000u)  // NaN: quiet, the top of its payload kept
    return uint16_t(sign | 0x7E00u | ((ax >> 13) & 0x3FFu));
  if (ax >= 0x477FF000u)  // >= 65520, halfway past 65504: infinity (ties to even)
    return uint16_t(sign | 0x7C00u);
  if (ax >= 0x38800000u) {  // normal in binary16 (>= 2^-14): rebias, round 13 bits off
    return uint16_t(sign | shiftRoundEven(ax - 0x38000000u, 13));
  }
  // Subnormal (or zero) in binary16: the value in units of 2^-24.
  const uint32_t e = ax >> 23;
  if (e < 102) return uint16_t(sign);  // below 2^-25: rounds to zero
  const uint32_t m = (ax & 0x7FFFFFu) | 0x800000u;
  return uint16_t(sign | shiftRoundEven(m, 126 - e));  // may round up to 2^-14
}

float bfloat16ToFloat(uint16_t b) { return floatOf(uint32_t(b) << 16); }

uint16_t floatToBfloat16(float f) {
  const uint32_t x = bitsOf(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return uint16_t((x >> 16) | 0x40u);
  // Round the low 16 bits off, ties to even; a carry moves into the
  // exponent, and past the largest finite value gives infinity.
  return uint16_t((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

bool halfUsesF16c() {
#if SWITCHAGG_HAVE_F16C
  static const bool has = cpuHasF16c();
  return has;
#else
  return false;
#endif
}

namespace {
bool useAvx2() {
#if SWITCHAGG_HAVE_F16C
  static const bool has = (__builtin_cpu_init(), __builtin_cpu_supports("avx2"));
  return has;
#else
  return false;
#endif
}

// A whole buffer's vector loop, where the build has one.
template <typename To, typename From>
using VectorLoop = void (*)(To*, const From*, size_t);
#if SWITCHAGG_HAVE_F16C
#define SWITCHAGG_VECTOR_LOOP(f) f
#else
#define SWITCHAGG_VECTOR_LOOP(f) nullptr
#endif

// bfloat16 through AVX2 and binary16 through F16C where the CPU has them,
// else value by value with the scalar definition (kBf16, kHalf).
template <typename To, typename From, To (*kBf16)(From), To (*kHalf)(From)>
void convertHalf(Dtype d, To* out, const From* in, size_t n, VectorLoop<To, From> bf16_avx2,
                 VectorLoop<To, From> f16c) {
  if (d == Dtype::kBfloat16) {
    if (bf16_avx2 && useAvx2()) return bf16_avx2(out, in, n);
    for (size_t i = 0; i < n; ++i) out[i] = kBf16(in[i]);
    return;
  }
  if (f16c && halfUsesF16c()) return f16c(out, in, n);
  for (size_t i = 0; i < n; ++i) out[i] = kHalf(in[i]);
}
}  // namespace

void widenHalf(Dtype d, float* out, const uint16_t* in, size_t n) {
  convertHalf<float, uint16_t, bfloat16ToFloat, halfToFloat>(
      d, out, in, n, SWITCHAGG_VECTOR_LOOP(widenBf16Avx2), SWITCHAGG_VECTOR_LOOP(widenF16c));
}

bool sumHalfPair(Dtype d, uint16_t* out, const uint16_t* a, const uint16_t* b, size_t n) {
#if SWITCHAGG_HAVE_F16C
  if (d == Dtype::kBfloat16 && useAvx2()) {
    pairSumBf16Avx2(out, a, b, n);
    return true;
  }
  if (d == Dtype::kFloat16 && halfUsesF16c()) {
    pairSumF16c(out, a, b, n);
    return true;
  }
#else
  (void)d, (void)out, (void)a, (void)b, (void)n;
#endif
  return false;
}

void narrowHalf(Dtype d, uint16_t* out, const float* in, size_t n) {
  convertHalf<uint16_t, float, floatToBfloat16, floatToHalf>(
      d, out, in, n, SWITCHAGG_VECTOR_LOOP(narrowBf16Avx2), SWITCHAGG_VECTOR_LOOP(narrowF16c));
}

}  // namespace switchagg
