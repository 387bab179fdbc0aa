// Reduction kernels. Each (dtype, op) pair is one tight loop over restrict
// pointers that GCC vectorises at -O3 (this file is always built with -O3,
// see CMakeLists.txt); a table built at compile time dispatches to it.
#include "switchagg/common/reduce.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "switchagg/common/half.h"

namespace switchagg {
namespace {

template <typename T>
using Wide = std::make_unsigned_t<std::conditional_t<(sizeof(T) < sizeof(int)), int, T>>;

// Integer SUM/PROD in unsigned arithmetic: wrap-around like C, without UB.
template <typename T>
inline T addWrap(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<Wide<T>>(a) + static_cast<Wide<T>>(b));
  } else {
    return a + b;
  }
}
template <typename T>
inline T mulWrap(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<Wide<T>>(a) * static_cast<Wide<T>>(b));
  } else {
    return a * b;
  }
}

struct SumF { template <typename T> static T f(T a, T b) { return addWrap(a, b); } };
struct ProdF { template <typename T> static T f(T a, T b) { return mulWrap(a, b); } };
struct MinF { template <typename T> static T f(T a, T b) { return b < a ? b : a; } };
struct MaxF { template <typename T> static T f(T a, T b) { return a < b ? b : a; } };
struct LandF { template <typename T> static T f(T a, T b) { return static_cast<T>((a != 0) & (b != 0)); } };
struct LorF { template <typename T> static T f(T a, T b) { return static_cast<T>((a != 0) | (b != 0)); } };
struct LxorF { template <typename T> static T f(T a, T b) { return static_cast<T>((a != 0) ^ (b != 0)); } };
struct BandF { template <typename T> static T f(T a, T b) { return static_cast<T>(a & b); } };
struct BorF { template <typename T> static T f(T a, T b) { return static_cast<T>(a | b); } };
struct BxorF { template <typename T> static T f(T a, T b) { return static_cast<T>(a ^ b); } };

// The vector loops are unrolled 4x. Not unrolled, each is one SSE vector per
// iteration in ~27 bytes of code, and its speed in cache depended on where
// the linker put it: ~1 iteration per cycle inside one 64-byte line, 20-30%
// slower when the loop straddled a line boundary. Which (dtype, op) straddled
// changed from build to build (float sum in one, double in another; the plain
// reference loop in the benchmark likewise); the unrolled loop runs at the
// same rate wherever it lands (BENCHMARKS.md, "The agent's reduction at its
// slot size").
template <typename T, typename F>
void elementwise(void* out_v, const void* a_v, const void* b_v, size_t n) {
  T* out = static_cast<T*>(out_v);
  const T* a = static_cast<const T*>(a_v);
  const T* b = static_cast<const T*>(b_v);
  if (out == a) {
    T* __restrict o = out;
    const T* __restrict bb = b;
#pragma GCC unroll 4
    for (size_t i = 0; i < n; ++i) o[i] = F::f(o[i], bb[i]);
  } else {
    T* __restrict o = out;
    const T* __restrict aa = a;
    const T* __restrict bb = b;
#pragma GCC unroll 4
    for (size_t i = 0; i < n; ++i) o[i] = F::f(aa[i], bb[i]);
  }
}

template <typename V>
struct Pair {
  V v;
  int i;
};

// MINLOC/MAXLOC: the better value wins; on a tie, the smaller index (MPI).
template <typename V, bool kMin>
void pairLoc(void* out_v, const void* a_v, const void* b_v, size_t n) {
  auto* out = static_cast<Pair<V>*>(out_v);
  const auto* a = static_cast<const Pair<V>*>(a_v);
  const auto* b = static_cast<const Pair<V>*>(b_v);
  for (size_t k = 0; k < n; ++k) {
    const Pair<V> x = a[k];
    const Pair<V> y = b[k];
    bool take_y;
    if (x.v == y.v) take_y = y.i < x.i;
    else take_y = kMin ? (y.v < x.v) : (x.v < y.v);
    out[k] = take_y ? y : x;
  }
}

using Kernel = void (*)(void*, const void*, const void*, size_t);
using Fold = void (*)(void*, const void* const*, size_t, bool, size_t);

// Up to four inputs in one pass, left to right: out[i] = ((x op y) op z) op w
// for k = 4 inputs; with `into`, out[i] itself is the first operand, then up
// to three inputs. The same operations in the same order as reduce3 and one
// reduceInto per further input, so the same bits; but every result element is
// written once instead of once per input.
template <typename T, typename F>
void fold(void* out_v, const void* const* in, size_t k, bool into, size_t n) {
  if (k == 1 && into) return elementwise<T, F>(out_v, out_v, in[0], n);
  if (k == 2 && !into) return elementwise<T, F>(out_v, in[0], in[1], n);
  T* __restrict o = static_cast<T*>(out_v);
  const T* __restrict x = static_cast<const T*>(in[0]);
  const T* __restrict y = static_cast<const T*>(in[1]);
  const T* __restrict z = static_cast<const T*>(in[k > 2 ? 2 : 1]);
  if (into && k == 2) {
#pragma GCC unroll 2
    for (size_t i = 0; i < n; ++i) o[i] = F::f(F::f(o[i], x[i]), y[i]);
  } else if (into) {
#pragma GCC unroll 2
    for (size_t i = 0; i < n; ++i) o[i] = F::f(F::f(F::f(o[i], x[i]), y[i]), z[i]);
  } else if (k == 3) {
#pragma GCC unroll 2
    for (size_t i = 0; i < n; ++i) o[i] = F::f(F::f(x[i], y[i]), z[i]);
  } else {
    const T* __restrict w = static_cast<const T*>(in[3]);
#pragma GCC unroll 2
    for (size_t i = 0; i < n; ++i) o[i] = F::f(F::f(F::f(x[i], y[i]), z[i]), w[i]);
  }
}

// 16-bit floats (kFloat16, kBfloat16): every operand is widened to fp64,
// the fold runs in fp64, left to right, and only the result is rounded to
// 16 bits - once, however many operands. Blocks of kHalfBlock elements keep
// the fp64 values on the stack. SUM, MIN and MAX only: MIN/MAX are exact
// (the result is an operand), and a sum of up to 2^13 binary16 values is
// exact in fp64 (half.h), so the result is the correctly rounded sum
// (docs/offload.md, "16-bit floats"); PROD is declined.
constexpr size_t kHalfBlock = 512;

// acc = (first, if given, else acc) op in[0] op ... op in[n_in - 1], in
// fp64; elements [at, at + n) of the operands, acc holds n.
void halfAccumulate(Dtype d, Op op, double* acc, const void* first, const void* const* in,
                    size_t n_in, size_t at, size_t n) {
  if (first) widenHalfWide(d, acc, static_cast<const uint16_t*>(first) + at, n);
  if (n_in == 0) return;
  accumulateWidened(d, op, acc, reinterpret_cast<const uint16_t* const*>(in), n_in, at, n);
}

// out = a + b for two 16-bit operands: one fp32 addition, one rounding to
// 16 bits. Rounding the exact sum to fp32 (24 bits) and then to binary16
// (11) or bfloat16 (8) gives the correctly rounded sum, the fp64 fold's
// bits: double rounding is innocuous for one addition when p >= 2q + 2
// (24 >= 24, 24 >= 18; Figueroa), and a sum below the 16-bit normal range
// is exact in fp32. Only for two operands: a third addition rounds in fp32
// again. F16C/AVX2 widening and narrowing where the CPU has them (half.cc).
void halfPairSum32(Dtype d, uint16_t* out, const uint16_t* a, const uint16_t* b, size_t count) {
  if (sumHalfPair(d, out, a, b, count)) return;  // one pass in registers
  float x[kHalfBlock], y[kHalfBlock];
  for (size_t at = 0; at < count; at += kHalfBlock) {
    const size_t n = std::min(kHalfBlock, count - at);
    widenHalf(d, x, a + at, n);
    widenHalf(d, y, b + at, n);
    for (size_t i = 0; i < n; ++i) x[i] += y[i];
    narrowHalf(d, out + at, x, n);
  }
}

// out = first op in[0] op ... op in[n_in - 1]. Each block is read whole
// before its result is written, so `out` may be `first` or an input.
void halfFold(Dtype d, Op op, void* out, const void* first, const void* const* in, size_t n_in,
              size_t count) {
  if (op == Op::kSum && n_in == 1) {
    halfPairSum32(d, static_cast<uint16_t*>(out), static_cast<const uint16_t*>(first),
                  static_cast<const uint16_t*>(in[0]), count);
    return;
  }
  if (foldHalfWide(d, op, static_cast<uint16_t*>(out), static_cast<const uint16_t*>(first),
                   reinterpret_cast<const uint16_t* const*>(in), n_in, count))
    return;
  double acc[kHalfBlock];
  for (size_t at = 0; at < count; at += kHalfBlock) {
    const size_t n = std::min(kHalfBlock, count - at);
    halfAccumulate(d, op, acc, first, in, n_in, at, n);
    narrowHalfWide(d, static_cast<uint16_t*>(out) + at, acc, n);
  }
}

template <Dtype D, Op O>
void halfPair(void* out, const void* a, const void* b, size_t n) {
  halfFold(D, O, out, a, &b, 1, n);
}

template <Dtype D>
Kernel halfKernel(Op op) {
  switch (op) {
    case Op::kSum: return halfPair<D, Op::kSum>;
    case Op::kMin: return halfPair<D, Op::kMin>;
    case Op::kMax: return halfPair<D, Op::kMax>;
    default: return nullptr;
  }
}

// The two kernel families: Make<T, F>::fn is the (element type, op) member.
template <typename T, typename F>
struct Elementwise {
  using Fn = Kernel;
  static constexpr Fn fn = elementwise<T, F>;
};
template <typename T, typename F>
struct Folded {
  using Fn = Fold;
  static constexpr Fn fn = fold<T, F>;
};

template <template <typename, typename> class Make, typename T>
typename Make<T, SumF>::Fn arithKernel(Op op) {
  switch (op) {
    case Op::kSum: return Make<T, SumF>::fn;
    case Op::kProd: return Make<T, ProdF>::fn;
    case Op::kMin: return Make<T, MinF>::fn;
    case Op::kMax: return Make<T, MaxF>::fn;
    default: break;
  }
  // Logical and bitwise ops: two-operand kernels only (reduceMany chains
  // them), which keeps the fold family to the common ops (it is most of the
  // code in this file).
  if constexpr (std::is_integral_v<T> && std::is_same_v<typename Make<T, SumF>::Fn, Kernel>) {
    switch (op) {
      case Op::kLand: return Make<T, LandF>::fn;
      case Op::kLor: return Make<T, LorF>::fn;
      case Op::kLxor: return Make<T, LxorF>::fn;
      case Op::kBand: return Make<T, BandF>::fn;
      case Op::kBor: return Make<T, BorF>::fn;
      case Op::kBxor: return Make<T, BxorF>::fn;
      default: break;
    }
  }
  return nullptr;
}

// MINLOC/MAXLOC: two-operand kernels only (reduceMany chains them).
template <template <typename, typename> class Make, typename V>
typename Make<int, SumF>::Fn pairKernel(Op op) {
  if constexpr (std::is_same_v<typename Make<int, SumF>::Fn, Kernel>) {
    if (op == Op::kMinloc) return pairLoc<V, true>;
    if (op == Op::kMaxloc) return pairLoc<V, false>;
  }
  return nullptr;
}

template <template <typename, typename> class Make>
typename Make<uint8_t, SumF>::Fn boolKernel(Op op) {
  if constexpr (!std::is_same_v<typename Make<uint8_t, SumF>::Fn, Kernel>) return nullptr;
  switch (op) {
    case Op::kLand: return Make<uint8_t, LandF>::fn;
    case Op::kLor: return Make<uint8_t, LorF>::fn;
    case Op::kLxor: return Make<uint8_t, LxorF>::fn;
    default: return nullptr;
  }
}

template <template <typename, typename> class Make>
typename Make<int, SumF>::Fn lookup(Dtype d, Op op) {
  switch (d) {
    case Dtype::kInt8: return arithKernel<Make, int8_t>(op);
    case Dtype::kUint8: return arithKernel<Make, uint8_t>(op);
    case Dtype::kInt16: return arithKernel<Make, int16_t>(op);
    case Dtype::kUint16: return arithKernel<Make, uint16_t>(op);
    case Dtype::kInt32: return arithKernel<Make, int32_t>(op);
    case Dtype::kUint32: return arithKernel<Make, uint32_t>(op);
    case Dtype::kInt64: return arithKernel<Make, int64_t>(op);
    case Dtype::kUint64: return arithKernel<Make, uint64_t>(op);
    case Dtype::kFloat32: return arithKernel<Make, float>(op);
    case Dtype::kFloat64: return arithKernel<Make, double>(op);
    case Dtype::kBool: return boolKernel<Make>(op);
    case Dtype::kFloatInt: return pairKernel<Make, float>(op);
    case Dtype::kDoubleInt: return pairKernel<Make, double>(op);
    case Dtype::kLongInt: return pairKernel<Make, long>(op);
    case Dtype::kTwoInt: return pairKernel<Make, int>(op);
    case Dtype::kShortInt: return pairKernel<Make, short>(op);
    case Dtype::kFloat16:  // two-operand kernels; many operands go to halfFold
      if constexpr (std::is_same_v<typename Make<int, SumF>::Fn, Kernel>)
        return halfKernel<Dtype::kFloat16>(op);
      return nullptr;
    case Dtype::kBfloat16:
      if constexpr (std::is_same_v<typename Make<int, SumF>::Fn, Kernel>)
        return halfKernel<Dtype::kBfloat16>(op);
      return nullptr;
  }
  return nullptr;
}

struct KernelTable {
  Kernel k[kNumDtypes + 1][kNumOps + 1] = {};
  Fold fold[kNumDtypes + 1][kNumOps + 1] = {};
  KernelTable() {
    for (int d = 1; d <= kNumDtypes; ++d)
      for (int o = 1; o <= kNumOps; ++o) {
        k[d][o] = lookup<Elementwise>(static_cast<Dtype>(d), static_cast<Op>(o));
        fold[d][o] = lookup<Folded>(static_cast<Dtype>(d), static_cast<Op>(o));
      }
  }
};

const KernelTable& table() {
  static const KernelTable t;
  return t;
}

bool valid(Dtype d, Op op) {
  const int di = static_cast<int>(d), oi = static_cast<int>(op);
  return di >= 1 && di <= kNumDtypes && oi >= 1 && oi <= kNumOps;
}

Kernel get(Dtype d, Op op) {
  return valid(d, op) ? table().k[static_cast<int>(d)][static_cast<int>(op)] : nullptr;
}

Fold getFold(Dtype d, Op op) {
  return valid(d, op) ? table().fold[static_cast<int>(d)][static_cast<int>(op)] : nullptr;
}

// inout = inout op in[0] op ... op in[n_in - 1]: up to three inputs a pass
// with the fused kernel `f`, else (pair types) two operands at a time with
// `k`; the same operations in the same order either way.
void foldInto(Kernel k, Fold f, void* inout, const void* const* in, size_t n_in, size_t count) {
  if (!f) {
    for (size_t r = 0; r < n_in; ++r) k(inout, inout, in[r], count);
    return;
  }
  for (size_t r = 0; r < n_in; r += 3) f(inout, in + r, std::min<size_t>(3, n_in - r), true, count);
}

Status unsupported(Dtype d, Op op) {
  return Status(Code::kInvalidArgument,
                std::string("reduction ") + opName(op) + " is not defined on " + dtypeName(d));
}

}  // namespace

bool reduceSupported(Dtype dtype, Op op) { return get(dtype, op) != nullptr; }

Status reduceInto(Dtype dtype, Op op, void* inout, const void* in, size_t count) {
  Kernel k = get(dtype, op);
  if (!k) return unsupported(dtype, op);
  if (count) k(inout, inout, in, count);
  return Status::Ok();
}

Status reduce3(Dtype dtype, Op op, void* out, const void* a, const void* b, size_t count) {
  Kernel k = get(dtype, op);
  if (!k) return unsupported(dtype, op);
  if (count) k(out, a, b, count);
  return Status::Ok();
}

Status reduceMany(Dtype dtype, Op op, void* out, const void* const* in, size_t n_in,
                  size_t count) {
  Kernel k = get(dtype, op);
  if (!k) return unsupported(dtype, op);
  if (n_in == 0) return Status(Code::kInvalidArgument, "reduceMany: no inputs");
  for (size_t r = 0; r < n_in; ++r)
    if (in[r] == out)
      return Status(Code::kInvalidArgument,
                    "reduceMany: the output is input " + std::to_string(r) + " (they must not alias)");
  if (count == 0) return Status::Ok();
  if (n_in == 1) {
    std::memcpy(out, in[0], count * dtypeSize(dtype));
    return Status::Ok();
  }
  if (isHalfFloat(dtype)) {
    halfFold(dtype, op, out, in[0], in + 1, n_in - 1, count);
    return Status::Ok();
  }
  // The first up to four in one pass (pair types: the first two), the rest
  // into them.
  Fold f = getFold(dtype, op);
  const size_t first = f ? std::min<size_t>(n_in, 4) : 2;
  if (f) f(out, in, first, false, count);
  else k(out, in[0], in[1], count);
  foldInto(k, f, out, in + first, n_in - first, count);
  return Status::Ok();
}

Status reduceManyInto(Dtype dtype, Op op, void* inout, const void* const* in, size_t n_in,
                      size_t count) {
  Kernel k = get(dtype, op);
  if (!k) return unsupported(dtype, op);
  for (size_t r = 0; r < n_in; ++r)
    if (in[r] == inout)
      return Status(Code::kInvalidArgument, "reduceManyInto: inout is input " + std::to_string(r) +
                                                " (they must not alias)");
  if (count == 0 || n_in == 0) return Status::Ok();
  if (isHalfFloat(dtype)) {
    halfFold(dtype, op, inout, inout, in, n_in, count);
    return Status::Ok();
  }
  foldInto(k, getFold(dtype, op), inout, in, n_in, count);
  return Status::Ok();
}

Status accumulateHalf(Dtype dtype, Op op, double* acc, const void* const* in, size_t n_in,
                      bool start, size_t count) {
  if (!isHalfFloat(dtype) || !get(dtype, op)) return unsupported(dtype, op);
  if (start && n_in == 0) return Status(Code::kInvalidArgument, "accumulateHalf: no inputs");
  for (size_t at = 0; at < count; at += kHalfBlock) {
    const size_t n = std::min(kHalfBlock, count - at);
    halfAccumulate(dtype, op, acc + at, start ? in[0] : nullptr, in + (start ? 1 : 0),
                   n_in - (start ? 1 : 0), at, n);
  }
  return Status::Ok();
}

Status roundHalf(Dtype dtype, void* out, const double* acc, size_t count) {
  if (!isHalfFloat(dtype)) return unsupported(dtype, Op::kSum);
  narrowHalfWide(dtype, static_cast<uint16_t*>(out), acc, count);
  return Status::Ok();
}

}  // namespace switchagg
