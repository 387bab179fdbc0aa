/* Test shim (LD_PRELOAD): a wrong MPI_Allreduce. Rank 1 gets one float
 * element off by one in every result, so switchagg-bench --check must fail
 * with exit code 1. Proves the check compares real results, not the bench
 * with itself. Used by tests/mpi/selector_tests.cmake only. */
#include <mpi.h>

int MPI_Allreduce(const void *send, void *recv, int count, MPI_Datatype type, MPI_Op op,
                  MPI_Comm comm) {
  int rc = PMPI_Allreduce(send, recv, count, type, op, comm);
  int rank = 0;
  PMPI_Comm_rank(comm, &rank);
  if (rc == MPI_SUCCESS && rank == 1 && type == MPI_FLOAT && count > 2) {
    ((float *)recv)[count / 2] += 1.0f;
  }
  return rc;
}
