/* MPI predefined datatypes and ops -> the core's dtype/op codes, for both
 * glues: the Open MPI component (mpi_coll/glue) and the PMPI library
 * (mpi_coll/pmpi), each compiling this file against its own mpi.h. Only the
 * MPI API is used (PMPI_Type_size, PMPI_Type_get_extent, ...), so it holds
 * for any MPI library's handles, C and Fortran alike (MPICH's Fortran
 * handles are its C handles; Open MPI's glue sees C handles only).
 *
 * Handles are compared with the predefined ones (MPI_INT, MPI_SUM, ...):
 * comparing handles is all it takes. Anything not in these tables (derived or duplicated
 * datatypes, user-defined ops) is handed to the previous coll module.
 * C integer types map by their size and signedness on this platform.
 *
 * Fortran types map by the size the MPI library was built with (the datatype's
 * own size: INTEGER may be 8 bytes with -fdefault-integer-8): INTEGERs onto
 * the signed integer kernels, REALs onto float32/float64, LOGICAL onto the
 * integer logical kernels (0/1 results, as Open MPI's and gfortran's
 * .TRUE. = 1), 2INTEGER onto the 2int pair. Complex SUM is two float sums
 * per element, so it runs as float32/float64 over twice the count; complex
 * PROD (no exact elementwise kernel) and REAL16, INTEGER16, 2REAL,
 * MPI_LONG_DOUBLE, ... stay with the previous module.
 *
 * 16-bit floats exist where the MPI library's headers name them, detected
 * here at build time: MPIX_C_FLOAT16 (MPICH 4's mpi.h; Open MPI 5's
 * mpi-ext.h with its shortfloat extension) maps onto the float16 kernels,
 * MPIX_BFLOAT16 onto bfloat16. Open MPI 4.1 has neither, so there is nothing
 * to map: a 2-byte user type is a derived datatype, declined as any other. */
#include "switchagg_mpi_types.h"

#if defined(OPEN_MPI) && defined(__has_include)
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif
#endif

#include <stdbool.h>
#include <stddef.h>

enum kind {
  SIGNED_INT,
  UNSIGNED_INT,
  FIXED,
  BYTE_BITS,
  F_INTEGER, /* Fortran INTEGER*: signed, size from the datatype */
  F_REAL,    /* Fortran REAL*: IEEE binary32/64 by size */
  F_LOGICAL, /* Fortran LOGICAL*: logical ops only */
  F_COMPLEX  /* complex: SUM only, as reals over twice the count */
};

struct dtype_entry {
  MPI_Datatype handle;
  enum kind kind;
  int size_or_code; /* byte size for integers, a SWITCHAGG_DT_* otherwise */
};

struct float_int {
  float v;
  int i;
};
struct double_int {
  double v;
  int i;
};
struct long_int {
  long v;
  int i;
};
struct two_int {
  int v;
  int i;
};
struct short_int {
  short v;
  int i;
};

/* Most used first: the lookup is a linear scan on every call. */
static const struct dtype_entry dtypes[] = {
    {MPI_DOUBLE, FIXED, SWITCHAGG_DT_FLOAT64},
    {MPI_FLOAT, FIXED, SWITCHAGG_DT_FLOAT32},
    {MPI_INT, SIGNED_INT, sizeof(int)},
    {MPI_DOUBLE_PRECISION, F_REAL, 0},
    {MPI_REAL, F_REAL, 0},
    {MPI_INTEGER, F_INTEGER, 0},
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
    {MPI_LOGICAL, F_LOGICAL, 0},
    {MPI_REAL4, F_REAL, 0},
    {MPI_REAL8, F_REAL, 0},
    {MPI_INTEGER1, F_INTEGER, 0},
    {MPI_INTEGER2, F_INTEGER, 0},
    {MPI_INTEGER4, F_INTEGER, 0},
    {MPI_INTEGER8, F_INTEGER, 0},
    {MPI_2INTEGER, FIXED, SWITCHAGG_DT_2INT},
    {MPI_COMPLEX, F_COMPLEX, 0},
    {MPI_DOUBLE_COMPLEX, F_COMPLEX, 0},
    {MPI_COMPLEX8, F_COMPLEX, 0},
    {MPI_COMPLEX16, F_COMPLEX, 0},
    {MPI_C_FLOAT_COMPLEX, F_COMPLEX, 0},
    {MPI_C_DOUBLE_COMPLEX, F_COMPLEX, 0},
    {MPI_CXX_FLOAT_COMPLEX, F_COMPLEX, 0},
    {MPI_CXX_DOUBLE_COMPLEX, F_COMPLEX, 0},
#ifdef MPIX_C_FLOAT16
    {MPIX_C_FLOAT16, FIXED, SWITCHAGG_DT_FLOAT16},
#endif
#ifdef MPIX_BFLOAT16
    {MPIX_BFLOAT16, FIXED, SWITCHAGG_DT_BFLOAT16},
#endif
    /* MPI defines only the bitwise ops on MPI_BYTE. */
    {MPI_BYTE, BYTE_BITS, SWITCHAGG_DT_UINT8},
};

struct op_entry {
  MPI_Op handle;
  int code;
};

static const struct op_entry ops[] = {
    {MPI_SUM, SWITCHAGG_OP_SUM},       {MPI_PROD, SWITCHAGG_OP_PROD},
    {MPI_MIN, SWITCHAGG_OP_MIN},       {MPI_MAX, SWITCHAGG_OP_MAX},
    {MPI_LAND, SWITCHAGG_OP_LAND},     {MPI_LOR, SWITCHAGG_OP_LOR},
    {MPI_LXOR, SWITCHAGG_OP_LXOR},     {MPI_BAND, SWITCHAGG_OP_BAND},
    {MPI_BOR, SWITCHAGG_OP_BOR},       {MPI_BXOR, SWITCHAGG_OP_BXOR},
    {MPI_MINLOC, SWITCHAGG_OP_MINLOC}, {MPI_MAXLOC, SWITCHAGG_OP_MAXLOC},
};

static int int_code(int size, bool is_signed) {
  switch (size) {
    case 1:
      return is_signed ? SWITCHAGG_DT_INT8 : SWITCHAGG_DT_UINT8;
    case 2:
      return is_signed ? SWITCHAGG_DT_INT16 : SWITCHAGG_DT_UINT16;
    case 4:
      return is_signed ? SWITCHAGG_DT_INT32 : SWITCHAGG_DT_UINT32;
    case 8:
      return is_signed ? SWITCHAGG_DT_INT64 : SWITCHAGG_DT_UINT64;
    default:
      return 0;
  }
}

/* The kernels treat pair types as the C structs; serve them only if the
 * MPI library lays them out the same way (extent = struct size, lb = 0). */
static size_t pair_struct_size(int code) {
  switch (code) {
    case SWITCHAGG_DT_FLOAT_INT:
      return sizeof(struct float_int);
    case SWITCHAGG_DT_DOUBLE_INT:
      return sizeof(struct double_int);
    case SWITCHAGG_DT_LONG_INT:
      return sizeof(struct long_int);
    case SWITCHAGG_DT_2INT:
      return sizeof(struct two_int);
    case SWITCHAGG_DT_SHORT_INT:
      return sizeof(struct short_int);
    default:
      return 0;
  }
}

static bool layout_matches(MPI_Datatype dtype, int code) {
  size_t expected = pair_struct_size(code);
  MPI_Aint lb = 0, extent = 0;
  if (expected == 0) return true;
  if (MPI_SUCCESS != PMPI_Type_get_extent(dtype, &lb, &extent)) return false;
  return lb == 0 && (size_t)extent == expected;
}

/* Where the MPI library's own reduction departs from C semantics, found by
 * the tests. Open MPI 4.1.4 (tests/mpi): op/avx saturates 8- and 16-bit
 * integer sums (and we do not trust its products either), and MIN/MAX
 * compare MPI_OFFSET as unsigned. MPICH 4.0.2 (Debian 12; the checker with
 * SWITCHAGG_ALLREDUCE_ALGORITHM=previous, mpich_allreduce_model_np4):
 * MIN/MAX compare every unsigned integer type as signed (MPI_UNSIGNED over
 * 0, 4000000000, 6, 9 gives MIN 4000000000, MAX 9), and MPIX_C_FLOAT16
 * reductions abort inside it ("Assertion failed in file
 * src/mpi/datatype/typerep/src/typerep_yaksa_pack.c ... actual_pack_bytes ==
 * data_sz"; tests/mpi/mpich_fp16_check.c). */
static int previous_differs(MPI_Datatype dtype, int sa_dtype, int sa_op) {
#ifndef OPEN_MPI
  const bool is_unsigned = sa_dtype == SWITCHAGG_DT_UINT8 || sa_dtype == SWITCHAGG_DT_UINT16 ||
                           sa_dtype == SWITCHAGG_DT_UINT32 || sa_dtype == SWITCHAGG_DT_UINT64;
  (void)dtype;
  if (is_unsigned && (sa_op == SWITCHAGG_OP_MIN || sa_op == SWITCHAGG_OP_MAX))
    return SWITCHAGG_COLL_PREVIOUS_DIFFERS | SWITCHAGG_COLL_PREVIOUS_WRONG;
  if (sa_dtype == SWITCHAGG_DT_FLOAT16 || sa_dtype == SWITCHAGG_DT_BFLOAT16)
    return SWITCHAGG_COLL_PREVIOUS_DIFFERS | SWITCHAGG_COLL_PREVIOUS_WRONG;
  return 0;
#else
  const bool small_int = sa_dtype == SWITCHAGG_DT_INT8 || sa_dtype == SWITCHAGG_DT_UINT8 ||
                         sa_dtype == SWITCHAGG_DT_INT16 || sa_dtype == SWITCHAGG_DT_UINT16;
  if (small_int && (sa_op == SWITCHAGG_OP_SUM || sa_op == SWITCHAGG_OP_PROD))
    return SWITCHAGG_COLL_PREVIOUS_DIFFERS;
  if (dtype == MPI_OFFSET && (sa_op == SWITCHAGG_OP_MIN || sa_op == SWITCHAGG_OP_MAX))
    return SWITCHAGG_COLL_PREVIOUS_DIFFERS;
  return 0;
#endif
}

static bool is_bitwise(int op) {
  return op == SWITCHAGG_OP_BAND || op == SWITCHAGG_OP_BOR || op == SWITCHAGG_OP_BXOR;
}

static bool is_logical(int op) {
  return op == SWITCHAGG_OP_LAND || op == SWITCHAGG_OP_LOR || op == SWITCHAGG_OP_LXOR;
}

static int real_code(size_t size) {
  return size == 4 ? SWITCHAGG_DT_FLOAT32 : size == 8 ? SWITCHAGG_DT_FLOAT64 : 0;
}

/* The kernel dtype for one table entry and op, or why the pair is not
 * served; *scale is the number of kernel elements per MPI element. */
static const char* entry_code(const struct dtype_entry* e, MPI_Datatype dtype, int op, int* code,
                              int* scale) {
  int type_size = 0;
  size_t size = 0;
  *scale = 1;
  /* Only the Fortran kinds' size depends on how the library was built. */
  if (e->kind >= F_INTEGER) {
    if (MPI_SUCCESS != PMPI_Type_size(dtype, &type_size)) return "datatype size not served";
    size = (size_t)type_size;
  }
  switch (e->kind) {
    case SIGNED_INT:
      *code = int_code(e->size_or_code, true);
      break;
    case UNSIGNED_INT:
      *code = int_code(e->size_or_code, false);
      break;
    case BYTE_BITS:
      if (!is_bitwise(op)) return "op not defined on MPI_BYTE";
      *code = e->size_or_code;
      break;
    case FIXED:
      *code = e->size_or_code;
      break;
    case F_INTEGER:
      *code = size <= 8 ? int_code((int)size, true) : 0;
      break;
    case F_REAL:
      *code = real_code(size);
      break;
    case F_LOGICAL:
      if (!is_logical(op)) return "op not defined on MPI_LOGICAL";
      *code = size <= 8 ? int_code((int)size, true) : 0;
      break;
    case F_COMPLEX:
      if (op != SWITCHAGG_OP_SUM) return "complex op other than sum";
      *code = real_code(size / 2);
      *scale = 2;
      break;
  }
  return *code == 0 ? "datatype size not served" : NULL;
}

static bool is_named(MPI_Datatype dtype) {
  int integers = 0, addresses = 0, datatypes = 0, combiner = 0;
  return MPI_SUCCESS ==
             PMPI_Type_get_envelope(dtype, &integers, &addresses, &datatypes, &combiner) &&
         MPI_COMBINER_NAMED == combiner;
}

const char* switchagg_mpi_classify(MPI_Datatype dtype, MPI_Op op, int* sa_dtype, int* sa_op,
                                   int* flags, int* scale) {
  size_t i;
  *sa_op = 0;
  *flags = 0;
  *scale = 1;
  for (i = 0; i < sizeof ops / sizeof ops[0] && *sa_op == 0; ++i)
    if (ops[i].handle == op) *sa_op = ops[i].code;
  if (*sa_op == 0) return "user-defined op";

  for (i = 0; i < sizeof dtypes / sizeof dtypes[0]; ++i) {
    const struct dtype_entry* e = &dtypes[i];
    const char* why;
    if (e->handle != dtype || MPI_DATATYPE_NULL == e->handle) continue;
    why = entry_code(e, dtype, *sa_op, sa_dtype, scale);
    if (NULL != why) return why;
    if (!layout_matches(dtype, *sa_dtype)) return "pair type layout differs from C";
    *flags = previous_differs(dtype, *sa_dtype, *sa_op);
    return NULL;
  }
  return is_named(dtype) ? "predefined datatype not served" : "derived datatype";
}

const char* switchagg_mpi_half_floats(void) {
#if defined(MPIX_C_FLOAT16) && defined(MPIX_BFLOAT16)
  return "MPIX_C_FLOAT16 as float16, MPIX_BFLOAT16 as bfloat16: sum, min, max (rounded once "
         "from fp64 sums on the switch, fp32 on the host)";
#elif defined(MPIX_C_FLOAT16)
  return "MPIX_C_FLOAT16 as float16: sum, min, max (rounded once from fp64 sums on the switch, "
         "fp32 on the host); no MPIX_BFLOAT16 in this MPI";
#elif defined(MPIX_BFLOAT16)
  return "MPIX_BFLOAT16 as bfloat16: sum, min, max (rounded once from fp64 sums on the "
         "switch, fp32 on the host); no MPIX_C_FLOAT16 in this MPI";
#else
  return "none: this MPI's headers define no 16-bit float datatype (MPIX_C_FLOAT16, "
         "MPIX_BFLOAT16)";
#endif
}
