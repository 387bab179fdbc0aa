#include "bench_data.h"

#include "switchagg/common/half.h"

#include <cstdint>
#include <cstring>
#include <string>

namespace switchagg::bench {
namespace {

// Rank r's element i, as an integer; every dtype stores it exactly.
int64_t pattern(size_t i, int r, int nranks, Op op, Dtype dtype) {
  switch (op) {
    case Op::kProd: return (i % size_t(nranks)) == size_t(r) ? 2 : 1;  // product = 2
    case Op::kLand: case Op::kLor: case Op::kLxor: return int64_t((i + size_t(r)) % 3);
    default: break;
  }
  // Sums that stay exact: 8-bit integers and bfloat16 (integers exact to
  // 256) add 0s and 1s; binary16 (exact to 2048) the 1..11 below.
  if ((dtypeSize(dtype) == 1 || dtype == Dtype::kBfloat16) && op == Op::kSum)
    return int64_t((i + size_t(r)) % 2);
  return int64_t((i * 7 + size_t(r) * 3) % 11) + 1;
}

int64_t combine(Op op, int64_t a, int64_t b) {
  switch (op) {
    case Op::kSum: return a + b;
    case Op::kProd: return a * b;
    case Op::kMin: return a < b ? a : b;
    case Op::kMax: return a > b ? a : b;
    case Op::kLand: return (a != 0) && (b != 0);
    case Op::kLor: return (a != 0) || (b != 0);
    case Op::kLxor: return (a != 0) != (b != 0);
    case Op::kBand: return a & b;
    case Op::kBor: return a | b;
    case Op::kBxor: return a ^ b;
    default: return 0;
  }
}

template <typename T>
void store(void* buf, size_t i, int64_t v) {
  static_cast<T*>(buf)[i] = static_cast<T>(v);
}

void storeAs(Dtype dtype, void* buf, size_t i, int64_t v) {
  switch (dtype) {
    case Dtype::kInt8: store<int8_t>(buf, i, v); break;
    case Dtype::kUint8: store<uint8_t>(buf, i, v); break;
    case Dtype::kInt16: store<int16_t>(buf, i, v); break;
    case Dtype::kUint16: store<uint16_t>(buf, i, v); break;
    case Dtype::kInt32: store<int32_t>(buf, i, v); break;
    case Dtype::kUint32: store<uint32_t>(buf, i, v); break;
    case Dtype::kInt64: store<int64_t>(buf, i, v); break;
    case Dtype::kUint64: store<uint64_t>(buf, i, v); break;
    case Dtype::kFloat32: store<float>(buf, i, v); break;
    case Dtype::kFloat64: store<double>(buf, i, v); break;
    case Dtype::kFloat16: static_cast<uint16_t*>(buf)[i] = floatToHalf(float(v)); break;
    case Dtype::kBfloat16: static_cast<uint16_t*>(buf)[i] = floatToBfloat16(float(v)); break;
    default: break;
  }
}

}  // namespace

int maxRanksFor(Dtype dtype) {
  if (dtype == Dtype::kFloat16) return 2048 / 11;
  if (dtype == Dtype::kBfloat16) return 256;
  return 0;
}

void fillInput(void* buf, size_t count, Dtype dtype, Op op, int rank, int nranks) {
  for (size_t i = 0; i < count; ++i) storeAs(dtype, buf, i, pattern(i, rank, nranks, op, dtype));
}

void fillExpected(void* buf, size_t count, Dtype dtype, Op op, int nranks) {
  for (size_t i = 0; i < count; ++i) {
    int64_t acc = pattern(i, 0, nranks, op, dtype);
    for (int r = 1; r < nranks; ++r) acc = combine(op, acc, pattern(i, r, nranks, op, dtype));
    storeAs(dtype, buf, i, acc);
  }
}

long firstMismatch(const void* got, const void* want, size_t count, Dtype dtype) {
  const size_t width = dtypeSize(dtype);
  if (memcmp(got, want, count * width) == 0) return -1;
  const char* g = static_cast<const char*>(got);
  const char* w = static_cast<const char*>(want);
  for (size_t i = 0; i < count; ++i) {
    if (memcmp(g + i * width, w + i * width, width) != 0) return long(i);
  }
  return -1;
}

void poison(void* buf, size_t bytes) { memset(buf, 0xA5, bytes); }

std::string elementText(const void* buf, size_t i, Dtype dtype) {
  const char* p = static_cast<const char*>(buf) + i * dtypeSize(dtype);
  auto get = [p](auto zero) {
    decltype(zero) v;
    memcpy(&v, p, sizeof v);
    return v;
  };
  switch (dtype) {
    case Dtype::kInt8: return std::to_string(get(int8_t{}));
    case Dtype::kUint8: return std::to_string(get(uint8_t{}));
    case Dtype::kInt16: return std::to_string(get(int16_t{}));
    case Dtype::kUint16: return std::to_string(get(uint16_t{}));
    case Dtype::kInt32: return std::to_string(get(int32_t{}));
    case Dtype::kUint32: return std::to_string(get(uint32_t{}));
    case Dtype::kInt64: return std::to_string(get(int64_t{}));
    case Dtype::kUint64: return std::to_string(get(uint64_t{}));
    case Dtype::kFloat32: return std::to_string(get(float{}));
    case Dtype::kFloat64: return std::to_string(get(double{}));
    case Dtype::kFloat16: return std::to_string(halfToFloat(get(uint16_t{})));
    case Dtype::kBfloat16: return std::to_string(bfloat16ToFloat(get(uint16_t{})));
    default: return "?";
  }
}

}  // namespace switchagg::bench
