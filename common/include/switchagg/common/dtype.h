// Datatypes and reduction operations that switchagg understands, shared by
// the MPI component, the agent's wire protocol and the reduction kernels.
// Values are wire-stable: never renumber, only append.
#pragma once

#include <cstddef>
#include <cstdint>

namespace switchagg {

enum class Dtype : uint8_t {
  kInt8 = 1, kUint8 = 2, kInt16 = 3, kUint16 = 4,
  kInt32 = 5, kUint32 = 6, kInt64 = 7, kUint64 = 8,
  kFloat32 = 9, kFloat64 = 10,
  kBool = 11,          // C _Bool / MPI_C_BOOL: one byte, 0 or 1
  // Pair types for MINLOC/MAXLOC, laid out as the C structs MPI defines.
  kFloatInt = 12,      // struct { float v; int i; }
  kDoubleInt = 13,     // struct { double v; int i; }
  kLongInt = 14,       // struct { long v; int i; }   (padded to 16 bytes)
  kTwoInt = 15,        // struct { int v; int i; }
  kShortInt = 16,      // struct { short v; int i; }  (padded to 8 bytes)
  // 16-bit floats: reduced in fp32 and rounded to 16 bits once per result
  // (switchagg/common/half.h).
  kFloat16 = 17,       // IEEE 754 binary16 (MPIX_C_FLOAT16)
  kBfloat16 = 18,      // bfloat16: fp32's sign and exponent, 7 fraction bits
};

enum class Op : uint8_t {
  kSum = 1, kProd = 2, kMin = 3, kMax = 4,
  kLand = 5, kLor = 6, kLxor = 7,
  kBand = 8, kBor = 9, kBxor = 10,
  kMinloc = 11, kMaxloc = 12,
};

constexpr int kNumDtypes = 18;  // highest Dtype value
constexpr int kNumOps = 12;     // highest Op value

size_t dtypeSize(Dtype d);       // bytes per element, 0 if unknown
const char* dtypeName(Dtype d);  // "int32", "float64", "double_int", ...
const char* opName(Op o);        // "sum", "minloc", ...
bool parseDtype(const char* name, Dtype* out);
bool parseOp(const char* name, Op* out);
bool isValidDtype(uint8_t raw);
bool isValidOp(uint8_t raw);
bool isFloating(Dtype d);
bool isPairType(Dtype d);
bool isHalfFloat(Dtype d);  // kFloat16 or kBfloat16: accumulated in fp32

}  // namespace switchagg
