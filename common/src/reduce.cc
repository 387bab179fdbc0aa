// Reduction kernels. Each (dtype, op) pair is one tight loop over restrict
// pointers that GCC vectorises at -O3 (this file is always built with -O3,
// see CMakeLists.txt); a table built at compile time dispatches to it.
#include "switchagg/common/reduce.h"

#include <cstdint>
#include <type_traits>

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

template <typename T>
Kernel arithKernel(Op op) {
  switch (op) {
    case Op::kSum: return elementwise<T, SumF>;
    case Op::kProd: return elementwise<T, ProdF>;
    case Op::kMin: return elementwise<T, MinF>;
    case Op::kMax: return elementwise<T, MaxF>;
    default: break;
  }
  if constexpr (std::is_integral_v<T>) {
    switch (op) {
      case Op::kLand: return elementwise<T, LandF>;
      case Op::kLor: return elementwise<T, LorF>;
      case Op::kLxor: return elementwise<T, LxorF>;
      case Op::kBand: return elementwise<T, BandF>;
      case Op::kBor: return elementwise<T, BorF>;
      case Op::kBxor: return elementwise<T, BxorF>;
      default: break;
    }
  }
  return nullptr;
}

template <typename V>
Kernel pairKernel(Op op) {
  if (op == Op::kMinloc) return pairLoc<V, true>;
  if (op == Op::kMaxloc) return pairLoc<V, false>;
  return nullptr;
}

Kernel boolKernel(Op op) {
  switch (op) {
    case Op::kLand: return elementwise<uint8_t, LandF>;
    case Op::kLor: return elementwise<uint8_t, LorF>;
    case Op::kLxor: return elementwise<uint8_t, LxorF>;
    default: return nullptr;
  }
}

Kernel lookup(Dtype d, Op op) {
  switch (d) {
    case Dtype::kInt8: return arithKernel<int8_t>(op);
    case Dtype::kUint8: return arithKernel<uint8_t>(op);
    case Dtype::kInt16: return arithKernel<int16_t>(op);
    case Dtype::kUint16: return arithKernel<uint16_t>(op);
    case Dtype::kInt32: return arithKernel<int32_t>(op);
    case Dtype::kUint32: return arithKernel<uint32_t>(op);
    case Dtype::kInt64: return arithKernel<int64_t>(op);
    case Dtype::kUint64: return arithKernel<uint64_t>(op);
    case Dtype::kFloat32: return arithKernel<float>(op);
    case Dtype::kFloat64: return arithKernel<double>(op);
    case Dtype::kBool: return boolKernel(op);
    case Dtype::kFloatInt: return pairKernel<float>(op);
    case Dtype::kDoubleInt: return pairKernel<double>(op);
    case Dtype::kLongInt: return pairKernel<long>(op);
    case Dtype::kTwoInt: return pairKernel<int>(op);
    case Dtype::kShortInt: return pairKernel<short>(op);
  }
  return nullptr;
}

struct KernelTable {
  Kernel k[kNumDtypes + 1][kNumOps + 1] = {};
  KernelTable() {
    for (int d = 1; d <= kNumDtypes; ++d)
      for (int o = 1; o <= kNumOps; ++o) k[d][o] = lookup(static_cast<Dtype>(d), static_cast<Op>(o));
  }
};

const KernelTable& table() {
  static const KernelTable t;
  return t;
}

Kernel get(Dtype d, Op op) {
  int di = static_cast<int>(d), oi = static_cast<int>(op);
  if (di < 1 || di > kNumDtypes || oi < 1 || oi > kNumOps) return nullptr;
  return table().k[di][oi];
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

}  // namespace switchagg
