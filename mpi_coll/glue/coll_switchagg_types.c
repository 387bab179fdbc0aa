/* MPI predefined datatypes and ops -> the core's dtype/op codes.
 *
 * Handles are compared with the predefined ones (MPI_INT, MPI_SUM, ...):
 * ompi/op/op.h needs a header Debian does not ship, and comparing handles
 * is all it takes. Anything not in these tables (derived or duplicated
 * datatypes, user-defined ops) is handed to the previous coll module.
 * C integer types map by their size and signedness on this platform. */
#include "coll_switchagg.h"

#include <stdbool.h>
#include <stddef.h>

#include "ompi/datatype/ompi_datatype.h"

enum kind { SIGNED_INT, UNSIGNED_INT, FIXED, BYTE_BITS };

struct dtype_entry {
  MPI_Datatype handle;
  enum kind kind;
  int size_or_code; /* byte size for integers, a SWITCHAGG_DT_* otherwise */
};

struct float_int { float v; int i; };
struct double_int { double v; int i; };
struct long_int { long v; int i; };
struct two_int { int v; int i; };
struct short_int { short v; int i; };

/* Most used first: the lookup is a linear scan on every call. */
static const struct dtype_entry dtypes[] = {
    {MPI_DOUBLE, FIXED, SWITCHAGG_DT_FLOAT64},
    {MPI_FLOAT, FIXED, SWITCHAGG_DT_FLOAT32},
    {MPI_INT, SIGNED_INT, sizeof(int)},
    {MPI_LONG, SIGNED_INT, sizeof(long)},
    {MPI_LONG_LONG, SIGNED_INT, sizeof(long long)},
    {MPI_UNSIGNED, UNSIGNED_INT, sizeof(unsigned)},
    {MPI_UNSIGNED_LONG, UNSIGNED_INT, sizeof(unsigned long)},
    {MPI_INT32_T, SIGNED_INT, 4},
    {MPI_INT64_T, SIGNED_INT, 8},
    {MPI_UINT32_T, UNSIGNED_INT, 4},
    {MPI_UINT64_T, UNSIGNED_INT, 8},
    {MPI_C_BOOL, FIXED, SWITCHAGG_DT_BOOL},
    {MPI_SIGNED_CHAR, SIGNED_INT, sizeof(signed char)},
    {MPI_UNSIGNED_CHAR, UNSIGNED_INT, sizeof(unsigned char)},
    {MPI_SHORT, SIGNED_INT, sizeof(short)},
    {MPI_UNSIGNED_SHORT, UNSIGNED_INT, sizeof(unsigned short)},
    {MPI_LONG_LONG_INT, SIGNED_INT, sizeof(long long)},
    {MPI_UNSIGNED_LONG_LONG, UNSIGNED_INT, sizeof(unsigned long long)},
    {MPI_INT8_T, SIGNED_INT, 1},
    {MPI_UINT8_T, UNSIGNED_INT, 1},
    {MPI_INT16_T, SIGNED_INT, 2},
    {MPI_UINT16_T, UNSIGNED_INT, 2},
    {MPI_AINT, SIGNED_INT, sizeof(MPI_Aint)},
    {MPI_OFFSET, SIGNED_INT, sizeof(MPI_Offset)},
    {MPI_COUNT, SIGNED_INT, sizeof(MPI_Count)},
    {MPI_CXX_BOOL, FIXED, SWITCHAGG_DT_BOOL},
    {MPI_FLOAT_INT, FIXED, SWITCHAGG_DT_FLOAT_INT},
    {MPI_DOUBLE_INT, FIXED, SWITCHAGG_DT_DOUBLE_INT},
    {MPI_LONG_INT, FIXED, SWITCHAGG_DT_LONG_INT},
    {MPI_2INT, FIXED, SWITCHAGG_DT_2INT},
    {MPI_SHORT_INT, FIXED, SWITCHAGG_DT_SHORT_INT},
    /* MPI defines only the bitwise ops on MPI_BYTE. */
    {MPI_BYTE, BYTE_BITS, SWITCHAGG_DT_UINT8},
};

struct op_entry {
  MPI_Op handle;
  int code;
};

static const struct op_entry ops[] = {
    {MPI_SUM, SWITCHAGG_OP_SUM},   {MPI_PROD, SWITCHAGG_OP_PROD},
    {MPI_MIN, SWITCHAGG_OP_MIN},   {MPI_MAX, SWITCHAGG_OP_MAX},
    {MPI_LAND, SWITCHAGG_OP_LAND}, {MPI_LOR, SWITCHAGG_OP_LOR},
    {MPI_LXOR, SWITCHAGG_OP_LXOR}, {MPI_BAND, SWITCHAGG_OP_BAND},
    {MPI_BOR, SWITCHAGG_OP_BOR},   {MPI_BXOR, SWITCHAGG_OP_BXOR},
    {MPI_MINLOC, SWITCHAGG_OP_MINLOC}, {MPI_MAXLOC, SWITCHAGG_OP_MAXLOC},
};

static int int_code(int size, bool is_signed) {
  switch (size) {
    case 1: return is_signed ? SWITCHAGG_DT_INT8 : SWITCHAGG_DT_UINT8;
    case 2: return is_signed ? SWITCHAGG_DT_INT16 : SWITCHAGG_DT_UINT16;
    case 4: return is_signed ? SWITCHAGG_DT_INT32 : SWITCHAGG_DT_UINT32;
    case 8: return is_signed ? SWITCHAGG_DT_INT64 : SWITCHAGG_DT_UINT64;
    default: return 0;
  }
}

/* The kernels treat pair types as the C structs; serve them only if Open
 * MPI lays them out the same way (extent = struct size, lb = 0). */
static size_t pair_struct_size(int code) {
  switch (code) {
    case SWITCHAGG_DT_FLOAT_INT: return sizeof(struct float_int);
    case SWITCHAGG_DT_DOUBLE_INT: return sizeof(struct double_int);
    case SWITCHAGG_DT_LONG_INT: return sizeof(struct long_int);
    case SWITCHAGG_DT_2INT: return sizeof(struct two_int);
    case SWITCHAGG_DT_SHORT_INT: return sizeof(struct short_int);
    default: return 0;
  }
}

static bool layout_matches(struct ompi_datatype_t *dtype, int code) {
  size_t expected = pair_struct_size(code);
  if (expected == 0) return true;
  return dtype->super.lb == 0 && (size_t)(dtype->super.ub - dtype->super.lb) == expected;
}

/* Where Open MPI 4.1.4's own reduction departs from C semantics (found by
 * tests/mpi): op/avx saturates 8- and 16-bit integer sums (and we do not
 * trust its products either), and MIN/MAX compare MPI_OFFSET as unsigned. */
static int previous_differs(MPI_Datatype dtype, int sa_dtype, int sa_op) {
  const bool small_int = sa_dtype == SWITCHAGG_DT_INT8 || sa_dtype == SWITCHAGG_DT_UINT8 ||
                         sa_dtype == SWITCHAGG_DT_INT16 || sa_dtype == SWITCHAGG_DT_UINT16;
  if (small_int && (sa_op == SWITCHAGG_OP_SUM || sa_op == SWITCHAGG_OP_PROD))
    return SWITCHAGG_COLL_PREVIOUS_DIFFERS;
  if (dtype == MPI_OFFSET && (sa_op == SWITCHAGG_OP_MIN || sa_op == SWITCHAGG_OP_MAX))
    return SWITCHAGG_COLL_PREVIOUS_DIFFERS;
  return 0;
}

static bool is_bitwise(int op) {
  return op == SWITCHAGG_OP_BAND || op == SWITCHAGG_OP_BOR || op == SWITCHAGG_OP_BXOR;
}

const char *mca_coll_switchagg_classify(struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                        int *sa_dtype, int *sa_op, int *flags) {
  size_t i;
  *sa_op = 0;
  *flags = 0;
  for (i = 0; i < sizeof ops / sizeof ops[0] && *sa_op == 0; ++i)
    if (ops[i].handle == op) *sa_op = ops[i].code;
  if (*sa_op == 0) return "user-defined op";

  for (i = 0; i < sizeof dtypes / sizeof dtypes[0]; ++i) {
    const struct dtype_entry *e = &dtypes[i];
    if (e->handle != dtype) continue;
    switch (e->kind) {
      case SIGNED_INT: *sa_dtype = int_code(e->size_or_code, true); break;
      case UNSIGNED_INT: *sa_dtype = int_code(e->size_or_code, false); break;
      case BYTE_BITS:
        if (!is_bitwise(*sa_op)) return "op not defined on MPI_BYTE";
        *sa_dtype = e->size_or_code;
        break;
      case FIXED: *sa_dtype = e->size_or_code; break;
    }
    if (*sa_dtype == 0) return "integer size not served";
    if (!layout_matches(dtype, *sa_dtype)) return "pair type layout differs from C";
    *flags = previous_differs(dtype, *sa_dtype, *sa_op);
    return NULL;
  }
  return ompi_datatype_is_predefined(dtype) ? "predefined datatype not served"
                                            : "derived datatype";
}
