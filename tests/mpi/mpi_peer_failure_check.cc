// A peer dies in the middle of a host-algorithm allreduce: the survivors
// must get an error from MPI_Allreduce (never a silently wrong result, never
// a hang). Run under `mpirun --enable-recovery` so the job survives the
// death, with MPI_ERRORS_RETURN so the error reaches this program.
//
//   mpi_peer_failure_check   (rank 1 kills itself during its 3rd call)
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  const int n = 1 << 22;  // 32 MiB of doubles: long enough to die inside it
  std::vector<double> in(n, rank + 1.0), out(n);
  for (int call = 0; call < 20; ++call) {
    // Every rank has finished the previous call before rank 1 dies: a rank
    // still inside call 1 (slow on an oversubscribed box) would otherwise
    // see the death there, and which call fails would depend on timing.
    if (call == 2) MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1 && call == 2) {
      // Let the others enter the call first, then die mid-way.
      usleep(200 * 1000);
      raise(SIGKILL);
    }
    int rc = MPI_Allreduce(in.data(), out.data(), n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) {
      char text[MPI_MAX_ERROR_STRING];
      int len;
      MPI_Error_string(rc, text, &len);
      std::printf("GOT_ERROR rank %d call %d: %s\n", rank, call, text);
      std::fflush(stdout);
      _exit(0);  // MPI cannot be finalised with a dead peer
    }
    const double want = size * (size + 1) / 2.0;
    for (int i = 0; i < n; i += 4099) {
      if (out[i] != want) {
        std::printf("WRONG_RESULT rank %d call %d\n", rank, call);
        std::fflush(stdout);
        _exit(1);
      }
    }
  }
  std::printf("NO_ERROR rank %d\n", rank);
  MPI_Finalize();
  return 0;
}
