// Shared by the data-plane tests: deterministic per-rank inputs and the
// rank-ordered reference reduction the agent must reproduce bit for bit.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "switchagg/common/dtype.h"
#include "switchagg/common/half.h"
#include "switchagg/common/reduce.h"
#include "../common/half_reference.h"

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
      case Dtype::kFloat16:  // 11 significant bits: partial sums round
        put(floatToHalf(static_cast<float>(v) * 0.37f + 1e-3f * static_cast<float>(rank)));
        break;
      case Dtype::kBfloat16:
        put(floatToBfloat16(static_cast<float>(v) * 0.37f + 1e-3f * static_cast<float>(rank)));
        break;
    }
  }
  return buf;
}

// 16-bit floats: widened, folded in fp64 left to right, rounded once -
// written here from the widening and a rounding by definition
// (tests/common/half_reference.h), not the engine's kernels.
inline std::vector<uint8_t> onceRounded(Dtype d, Op op, const std::vector<std::vector<uint8_t>>& in,
                                        size_t count) {
  const bool bf = d == Dtype::kBfloat16;
  std::vector<uint8_t> out(count * 2);
  for (size_t i = 0; i < count; ++i) {
    double acc = 0;
    for (size_t r = 0; r < in.size(); ++r) {
      uint16_t h;
      std::memcpy(&h, in[r].data() + 2 * i, 2);
      const double x = bf ? bfloat16ToFloat(h) : halfToFloat(h);
      if (r == 0) acc = x;
      else if (op == Op::kSum) acc += x;
      else if (op == Op::kMin) acc = x < acc ? x : acc;
      else acc = acc < x ? x : acc;
    }
    const uint16_t h = switchagg::testing::referenceRound16(acc, bf);
    std::memcpy(out.data() + 2 * i, &h, 2);
  }
  return out;
}

// in_0 op in_1 op ... op in_(size-1), left to right (the agent's order);
// 16-bit floats accumulated in fp64 and rounded once.
inline std::vector<uint8_t> referenceResult(Dtype d, Op op, int size, int iter, size_t count) {
  if (isHalfFloat(d)) {
    std::vector<std::vector<uint8_t>> in;
    for (int r = 0; r < size; ++r) in.push_back(makeInput(d, r, iter, count));
    return onceRounded(d, op, in, count);
  }
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
