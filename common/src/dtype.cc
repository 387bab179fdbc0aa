#include "switchagg/common/dtype.h"

#include <cstring>

namespace switchagg {
namespace {

struct DtypeInfo {
  Dtype dtype;
  const char* name;
  size_t size;
};

struct FloatIntPair { float v; int i; };
struct DoubleIntPair { double v; int i; };
struct LongIntPair { long v; int i; };
struct TwoIntPair { int v; int i; };
struct ShortIntPair { short v; int i; };

const DtypeInfo kDtypes[] = {
    {Dtype::kInt8, "int8", 1},       {Dtype::kUint8, "uint8", 1},
    {Dtype::kInt16, "int16", 2},     {Dtype::kUint16, "uint16", 2},
    {Dtype::kInt32, "int32", 4},     {Dtype::kUint32, "uint32", 4},
    {Dtype::kInt64, "int64", 8},     {Dtype::kUint64, "uint64", 8},
    {Dtype::kFloat32, "float32", 4}, {Dtype::kFloat64, "float64", 8},
    {Dtype::kBool, "bool", 1},
    {Dtype::kFloatInt, "float_int", sizeof(FloatIntPair)},
    {Dtype::kDoubleInt, "double_int", sizeof(DoubleIntPair)},
    {Dtype::kLongInt, "long_int", sizeof(LongIntPair)},
    {Dtype::kTwoInt, "2int", sizeof(TwoIntPair)},
    {Dtype::kShortInt, "short_int", sizeof(ShortIntPair)},
    {Dtype::kFloat16, "float16", 2}, {Dtype::kBfloat16, "bfloat16", 2},
};

const char* const kOpNames[] = {"sum",  "prod", "min",  "max", "land",   "lor",
                                "lxor", "band", "bor",  "bxor", "minloc", "maxloc"};

const DtypeInfo* find(Dtype d) {
  for (const auto& info : kDtypes)
    if (info.dtype == d) return &info;
  return nullptr;
}

}  // namespace

size_t dtypeSize(Dtype d) {
  const DtypeInfo* info = find(d);
  return info ? info->size : 0;
}

const char* dtypeName(Dtype d) {
  const DtypeInfo* info = find(d);
  return info ? info->name : "unknown";
}

const char* opName(Op o) {
  int i = static_cast<int>(o);
  return (i >= 1 && i <= kNumOps) ? kOpNames[i - 1] : "unknown";
}

bool parseDtype(const char* name, Dtype* out) {
  for (const auto& info : kDtypes) {
    if (std::strcmp(info.name, name) == 0) {
      *out = info.dtype;
      return true;
    }
  }
  return false;
}

bool parseOp(const char* name, Op* out) {
  for (int i = 0; i < kNumOps; ++i) {
    if (std::strcmp(kOpNames[i], name) == 0) {
      *out = static_cast<Op>(i + 1);
      return true;
    }
  }
  return false;
}

bool isValidDtype(uint8_t raw) { return raw >= 1 && raw <= kNumDtypes; }
bool isValidOp(uint8_t raw) { return raw >= 1 && raw <= kNumOps; }
bool isFloating(Dtype d) {
  return d == Dtype::kFloat32 || d == Dtype::kFloat64 || isHalfFloat(d);
}
bool isPairType(Dtype d) {
  return static_cast<int>(d) >= static_cast<int>(Dtype::kFloatInt) &&
         static_cast<int>(d) <= static_cast<int>(Dtype::kShortInt);
}
bool isHalfFloat(Dtype d) { return d == Dtype::kFloat16 || d == Dtype::kBfloat16; }

}  // namespace switchagg
