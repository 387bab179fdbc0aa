/* Predefined MPI datatypes and ops -> the core's codes (coll_core.h), for
 * the Open MPI component and the PMPI library alike (switchagg_mpi_types.c
 * is compiled into each against its own mpi.h). */
#ifndef SWITCHAGG_MPI_TYPES_H
#define SWITCHAGG_MPI_TYPES_H

#include <mpi.h>

#include "coll_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Maps a predefined MPI datatype and op onto the core's dtype/op codes and
 * switchagg_coll_flags. Returns NULL when the core can serve the pair, or
 * why not ("user-defined op", "derived datatype", ...: a literal).
 * *scale: kernel elements per MPI element (2 for complex SUM, else 1). */
const char* switchagg_mpi_classify(MPI_Datatype dtype, MPI_Op op, int* sa_dtype, int* sa_op,
                                   int* flags, int* scale);

/* The 16-bit float datatypes this build found in the MPI's headers and what
 * they map onto, or why there are none (a literal, for MPI_T and --help). */
const char* switchagg_mpi_half_floats(void);

#ifdef __cplusplus
}
#endif

#endif /* SWITCHAGG_MPI_TYPES_H */
