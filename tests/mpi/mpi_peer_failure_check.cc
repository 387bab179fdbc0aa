// A peer dies in the middle of a host-algorithm allreduce: the survivors
// must get an error from MPI_Allreduce (never a silently wrong result, never
// a hang). Run under `mpirun --enable-recovery` so the job survives the
// death, with MPI_ERRORS_RETURN so the error reaches this program.
//
//   SWITCHAGG_TEST_EXIT_AFTER_SENDS=1:3 mpi_peer_failure_check
//
// The component's test fault point kills rank 1 inside its 3rd host
// allreduce (call 2 here), after it posted its sends and received from a
// peer (common/test_hooks.h); it prints the wall-clock time of the kill.
// Each survivor prints "GOT_ERROR rank R call C at T ms (D ms into the
// call)", T wall-clock, for tests/mpi/peer_failure_run.sh to measure the
// detection against the transport's bound.
#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <vector>

namespace {
long long wallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}
}  // namespace

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
    const long long start = wallMs();
    int rc = MPI_Allreduce(in.data(), out.data(), n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) {
      const long long now = wallMs();
      char text[MPI_MAX_ERROR_STRING];
      int len;
      MPI_Error_string(rc, text, &len);
      std::printf("GOT_ERROR rank %d call %d at %lld ms (%lld ms into the call): %s\n", rank, call,
                  now, now - start, text);
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
