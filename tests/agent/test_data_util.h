// Shared by the data-plane tests: deterministic per-rank inputs and the
// rank-ordered reference reduction the agent must reproduce bit for bit.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "switchagg/common/dtype.h"
#include "switchagg/common/reduce.h"

namespace switchagg::testing {

// Input of `rank` for call `iter`: small values that exercise signs,
// rounding (floats) and ties (MINLOC/MAXLOC), identical in every process.
inline std::vector<uint8_t> makeInput(Dtype d, int rank, int iter, size_t count) {
  const size_t esize = dtypeSize(d);
  std::vector<uint8_t> buf(count * esize, 0);
  for (size_t i = 0; i < count; ++i) {
    const int64_t v =
        static_cast<int64_t>(
            (i * 31 + static_cast<size_t>(rank) * 17 + static_cast<size_t>(iter) * 7) % 61) -
        30;
    uint8_t* p = buf.data() + i * esize;
    auto put = [p](auto x) { std::memcpy(p, &x, sizeof x); };
    const int idx = rank;
    switch (d) {
      case Dtype::kInt8:
        put(static_cast<int8_t>(v));
        break;
      case Dtype::kUint8:
        put(static_cast<uint8_t>(v));
        break;
      case Dtype::kInt16:
        put(static_cast<int16_t>(v * 300));
        break;
      case Dtype::kUint16:
        put(static_cast<uint16_t>(v * 300));
        break;
      case Dtype::kInt32:
        put(static_cast<int32_t>(v * 100003));
        break;
      case Dtype::kUint32:
        put(static_cast<uint32_t>(v * 100003));
        break;
      case Dtype::kInt64:
        put(static_cast<int64_t>(v * 1000000007LL));
        break;
      case Dtype::kUint64:
        put(static_cast<uint64_t>(v * 1000000007LL));
        break;
      case Dtype::kFloat32:
        put(static_cast<float>(v) * 0.37f + 1e-3f * static_cast<float>(rank));
        break;
      case Dtype::kFloat64:
        put(static_cast<double>(v) * 0.37 + 1e-9 * rank);
        break;
      case Dtype::kBool:
        put(static_cast<uint8_t>((v & 1) != 0));
        break;
      case Dtype::kFloatInt:
        put(static_cast<float>(v % 5));
        std::memcpy(p + 4, &idx, 4);
        break;
      case Dtype::kDoubleInt:
        put(static_cast<double>(v % 5));
        std::memcpy(p + 8, &idx, 4);
        break;
      case Dtype::kLongInt:
        put(static_cast<long>(v % 5));
        std::memcpy(p + 8, &idx, 4);
        break;
      case Dtype::kTwoInt:
        put(static_cast<int32_t>(v % 5));
        std::memcpy(p + 4, &idx, 4);
        break;
      case Dtype::kShortInt:
        put(static_cast<int16_t>(v % 5));
        std::memcpy(p + 4, &idx, 4);
        break;
    }
  }
  return buf;
}

// in_0 op in_1 op ... op in_(size-1), left to right (the agent's order).
inline std::vector<uint8_t> referenceResult(Dtype d, Op op, int size, int iter, size_t count) {
  std::vector<uint8_t> acc = makeInput(d, 0, iter, count);
  for (int r = 1; r < size; ++r) {
    const std::vector<uint8_t> in = makeInput(d, r, iter, count);
    (void)reduceInto(d, op, acc.data(), in.data(), count);
  }
  return acc;
}

// Pair types carry padding (long_int, short_int): compare value and index only.
inline bool sameResult(Dtype d, const uint8_t* a, const uint8_t* b, size_t count) {
  const size_t esize = dtypeSize(d);
  size_t vbytes = esize, ioff = 0;
  switch (d) {
    case Dtype::kLongInt:
      vbytes = 8;
      ioff = 8;
      break;
    case Dtype::kShortInt:
      vbytes = 2;
      ioff = 4;
      break;
    default:  // (an empty vector's data() may be null: no memcmp of 0 bytes)
      return count == 0 || std::memcmp(a, b, count * esize) == 0;
  }
  for (size_t i = 0; i < count; ++i) {
    const uint8_t* x = a + i * esize;
    const uint8_t* y = b + i * esize;
    if (std::memcmp(x, y, vbytes) != 0 || std::memcmp(x + ioff, y + ioff, 4) != 0) return false;
  }
  return true;
}

}  // namespace switchagg::testing
