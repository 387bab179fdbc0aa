// mpi_recovery_death_check: a member dies while the others recover a failed
// switch-path call (docs/offload.md "Completion", safety case 10). Run
// under `mpirun --enable-recovery` (the job outlives the death) with the
// agent's fault point revoke:N (every member's call fails at once, nobody
// has the result) and SWITCHAGG_TEST_RECOVERY_KILL=R:0 (rank R SIGKILLs
// itself as its recovery starts, before it answers anyone). Every
// survivor's MPI_Allreduce of that call must return an MPI error
// (MPI_ERRORS_RETURN on the communicator), never a result, never hang: it
// prints "GOT_ERROR rank R call C at T ms: TEXT" (T wall-clock, for the
// runner to measure against the kill's time) and leaves at once (the
// communicator has lost a member). A call that returns is checked exactly;
// a rank that ends the loop without an error prints NO_ERROR and exits 1.
//
//   mpi_recovery_death_check [--iters 30] [--count 8192]
#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

int main(int argc, char** argv) {
  int iters = 30, count = 8192;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--iters") == 0) iters = std::atoi(argv[i + 1]);
    else if (std::strcmp(argv[i], "--count") == 0) count = std::atoi(argv[i + 1]);
  }
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  std::vector<double> in(static_cast<size_t>(count)), out(static_cast<size_t>(count));
  for (int call = 0; call < iters; ++call) {
    // Small integers: every order of the sum gives the same bits.
    for (int i = 0; i < count; ++i) in[size_t(i)] = double(rank + 1 + (i + call) % 7);
    const int rc = MPI_Allreduce(in.data(), out.data(), count, MPI_DOUBLE, MPI_SUM, comm);
    if (rc != MPI_SUCCESS) {
      char text[MPI_MAX_ERROR_STRING];
      int len = 0;
      MPI_Error_string(rc, text, &len);
      using std::chrono::milliseconds;  // wall clock: the kill's line uses it too
      const long long at = std::chrono::duration_cast<milliseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
      std::printf("GOT_ERROR rank %d call %d at %lld ms: %s\n", rank, call, at, text);
      std::fflush(stdout);
      _exit(0);  // the communicator lost a member: nothing more to run on it
    }
    for (int i = 0; i < count; ++i) {
      double want = 0;
      for (int r = 0; r < size; ++r) want += double(r + 1 + (i + call) % 7);
      if (out[size_t(i)] != want) {
        std::printf("WRONG_RESULT rank %d call %d element %d: %g, want %g\n", rank, call, i,
                    out[size_t(i)], want);
        std::fflush(stdout);
        _exit(1);
      }
    }
  }
  std::printf("NO_ERROR rank %d: %d calls returned\n", rank, iters);
  std::fflush(stdout);
  MPI_Comm_free(&comm);
  MPI_Finalize();
  return 1;
}
