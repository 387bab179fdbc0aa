/* Test shim (LD_PRELOAD): a wrong MPI_Allreduce (and, below, wrong
 * reduce-scatter, allgather, reduce, bcast and iallreduce). Rank 1 gets one float
 * element off by one in every result (a binary16 one changed, where the MPI
 * has MPIX_C_FLOAT16), so switchagg-bench --check must fail
 * with exit code 1. Proves the check compares real results, not the bench
 * with itself. Used by tests/mpi/selector_tests.cmake and (built against
 * MPICH) tests/mpi/mpich_tests.cmake only. */
#define _GNU_SOURCE
#include <mpi.h>
#if defined(OPEN_MPI) && defined(__has_include)
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif
#endif
#include <dlfcn.h>

typedef int (*AllreduceFn)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);

int MPI_Allreduce(const void *send, void *recv, int count, MPI_Datatype type, MPI_Op op,
                  MPI_Comm comm) {
  int rank = 0;
  PMPI_Comm_rank(comm, &rank);
#ifdef MPIX_C_FLOAT16
  /* binary16: through the next MPI_Allreduce (switchagg's PMPI library when
   * preloaded after this shim: MPICH's own aborts on the type), then one
   * element's exponent changed at rank 1. */
  if (type == MPIX_C_FLOAT16) {
    AllreduceFn next = (AllreduceFn)dlsym(RTLD_NEXT, "MPI_Allreduce");
    int rc = next ? next(send, recv, count, type, op, comm) : MPI_ERR_OTHER;
    if (rc == MPI_SUCCESS && rank == 1 && count > 2) ((unsigned short *)recv)[count / 2] ^= 0x0400;
    return rc;
  }
#endif
  int rc = PMPI_Allreduce(send, recv, count, type, op, comm);
  if (rc == MPI_SUCCESS && rank == 1 && type == MPI_FLOAT && count > 2) {
    ((float *)recv)[count / 2] += 1.0f;
  }
  return rc;
}

/* The same for the other collectives switchagg-bench --coll times: one
 * element of one rank's result is off by one (rank 0 for MPI_Reduce, whose
 * result only the root holds). */
static void corrupt(void *buf, int count, MPI_Datatype type, MPI_Comm comm, int victim) {
  int rank = 0;
  PMPI_Comm_rank(comm, &rank);
  if (rank == victim && type == MPI_FLOAT && count > 0) ((float *)buf)[count / 2] += 1.0f;
}

int MPI_Reduce_scatter_block(const void *send, void *recv, int count, MPI_Datatype type, MPI_Op op,
                             MPI_Comm comm) {
  int rc = PMPI_Reduce_scatter_block(send, recv, count, type, op, comm);
  if (rc == MPI_SUCCESS) corrupt(recv, count, type, comm, 1);
  return rc;
}

int MPI_Allgather(const void *send, int scount, MPI_Datatype stype, void *recv, int rcount,
                  MPI_Datatype rtype, MPI_Comm comm) {
  int rc = PMPI_Allgather(send, scount, stype, recv, rcount, rtype, comm);
  int size = 1;
  PMPI_Comm_size(comm, &size);
  if (rc == MPI_SUCCESS) corrupt(recv, rcount * size, rtype, comm, 1);
  return rc;
}

int MPI_Reduce(const void *send, void *recv, int count, MPI_Datatype type, MPI_Op op, int root,
               MPI_Comm comm) {
  int rc = PMPI_Reduce(send, recv, count, type, op, root, comm);
  if (rc == MPI_SUCCESS) corrupt(recv, count, type, comm, root);
  return rc;
}

int MPI_Bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm) {
  int rc = PMPI_Bcast(buf, count, type, root, comm);
  if (rc == MPI_SUCCESS) corrupt(buf, count, type, comm, root == 1 ? 0 : 1);
  return rc;
}

/* MPI_Iallreduce: completed at once (the request is MPI_REQUEST_NULL, so
 * the caller's MPI_Wait returns at once) with rank 1's result off by one. */
int MPI_Iallreduce(const void *send, void *recv, int count, MPI_Datatype type, MPI_Op op,
                   MPI_Comm comm, MPI_Request *request) {
  int rc = PMPI_Allreduce(send, recv, count, type, op, comm);
  if (rc == MPI_SUCCESS) corrupt(recv, count, type, comm, 1);
  *request = MPI_REQUEST_NULL;
  return rc;
}
