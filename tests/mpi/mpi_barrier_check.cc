// MPI_Barrier semantics and path check. Each iteration rank r sleeps
// ((r + i) % size) * delay ms before entering, so every rank is the last
// one in turn; every rank records when it entered and left on the host's
// wall clock (all ranks run on this host, emulated nodes included). After
// the loop one allgather brings every entry time to every rank, which
// asserts that it left each barrier no earlier than the last rank entered
// it. Then the component's counters say which path served the barriers.
//
//   --expect switch    every barrier through the switch path
//   --expect previous  every barrier in the previous module (offload off)
//   --expect fault     --fault DIR: DIR/ready once the switch served a
//                      barrier; the test script then kills the agent at a
//                      random moment and touches DIR/fired, which must
//                      exist when the loop ends. At least one failure must
//                      be counted and every barrier still correct.
// --max-ms bounds each barrier (no hang past the call timeouts).
#include <mpi.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "check_support.h"
#include "verdict.h"

namespace {

int64_t wallNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

bool exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

void touch(const std::string& path) {
  if (FILE* f = std::fopen(path.c_str(), "w")) std::fclose(f);
}

}  // namespace

int main(int argc, char** argv) {
  int rank = 0, size = 1;
  check::initWorld(&argc, &argv, &rank, &size);
  std::string expect = "switch", fault_dir;
  int iters = 40, delay_ms = 20;
  double max_ms = 10000;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--expect" && has_value) expect = argv[++i];
    else if (a == "--iters" && has_value) iters = std::atoi(argv[++i]);
    else if (a == "--delay-ms" && has_value) delay_ms = std::atoi(argv[++i]);
    else if (a == "--max-ms" && has_value) max_ms = std::atof(argv[++i]);
    else if (a == "--fault" && has_value) fault_dir = argv[++i];
    else {
      if (rank == 0) std::fprintf(stderr, "mpi_barrier_check: unknown argument '%s'\n", a.c_str());
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  if ((expect != "switch" && expect != "previous" && expect != "fault") || iters <= 0 ||
      delay_ms < 0 || (expect == "fault") != !fault_dir.empty()) {
    if (rank == 0)
      std::fprintf(stderr, "mpi_barrier_check: --expect switch|previous|fault (fault needs "
                           "--fault DIR), --iters > 0, --delay-ms >= 0\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  check::Diagnostics diag;
  if (!diag.load()) {
    std::fprintf(stderr, "FAIL rank %d: switchagg diagnostics not found (component not loaded)\n",
                 rank);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }

  std::vector<int64_t> enter, leave;
  long failures = 0;
  double slowest_ms = 0;
  for (int i = 0; i < iters; ++i) {
    usleep(useconds_t(((rank + i) % size) * delay_ms) * 1000);
    const int64_t in = wallNs();
    if (MPI_Barrier(MPI_COMM_WORLD) != MPI_SUCCESS) {
      std::fprintf(stderr, "FAIL rank %d: MPI_Barrier %d returned an error\n", rank, i);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const int64_t out = wallNs();
    enter.push_back(in);
    leave.push_back(out);
    slowest_ms = std::max(slowest_ms, (out - in) / 1e6);
    if (!fault_dir.empty() && rank == 0 && i == 0) touch(fault_dir + "/ready");
  }
  // The fault must have happened during the loop (else it tested nothing).
  if (!fault_dir.empty() && rank == 0 && !exists(fault_dir + "/fired")) {
    ++failures;
    std::fprintf(stderr, "FAIL: the fault fired after the last barrier; raise --iters\n");
  }
  const int n = int(enter.size());
  std::vector<int64_t> all_enter(size_t(n) * size_t(size));
  MPI_Allgather(enter.data(), n, MPI_INT64_T, all_enter.data(), n, MPI_INT64_T, MPI_COMM_WORLD);
  for (int i = 0; i < n; ++i) {
    int64_t last = 0;
    int last_rank = 0;
    for (int r = 0; r < size; ++r)
      if (all_enter[size_t(r) * size_t(n) + size_t(i)] > last) {
        last = all_enter[size_t(r) * size_t(n) + size_t(i)];
        last_rank = r;
      }
    if (leave[size_t(i)] < last && ++failures <= 10)
      std::fprintf(stderr, "FAIL rank %d: left barrier %d %.3f ms before rank %d entered it\n",
                   rank, i, (last - leave[size_t(i)]) / 1e6, last_rank);
  }
  if (slowest_ms > max_ms) {
    ++failures;
    std::fprintf(stderr, "FAIL rank %d: a barrier took %.0f ms (bound %.0f)\n", rank, slowest_ms,
                 max_ms);
  }

  auto counter = [&](const char* name) { return diag.counter(MPI_COMM_WORLD, name); };
  const uint64_t sw = counter("barrier:switch"), prev = counter("barrier:previous"),
                 failed = counter("barrier:switch-failed"), busy = counter("barrier:switch-busy"),
                 path_barriers = counter("switch:barriers"),
                 fallback_failed = counter("fallback:switch-failed");
  auto bad = [&](const std::string& what) {
    ++failures;
    std::fprintf(stderr, "FAIL rank %d: %s (barrier:switch %" PRIu64 " previous %" PRIu64 " switch-failed %" PRIu64
                         " switch-busy %" PRIu64 "; switch:barriers %" PRIu64 ")\n",
                 rank, what.c_str(), sw, prev,
                 failed, busy,
                 path_barriers);
  };
  const uint64_t total = uint64_t(n);
  if (sw == UINT64_MAX) bad("switchagg does not serve MPI_COMM_WORLD");
  else if (sw + prev + failed + busy != total) bad("the barrier counters do not add up to " + std::to_string(n));
  else if (expect == "switch" && (sw != total || path_barriers != total))
    bad("not every barrier went through the switch");
  else if (expect == "previous" && (prev != total || path_barriers != 0))
    bad("a barrier went to the switch with offload off");
  else if (expect == "fault" && (sw == 0 || failed == 0 || fallback_failed == 0))
    bad("expected barriers through the switch, then a counted failure");

  if (rank == 0) {
    std::printf("rank 0: %d barriers, slowest %.1f ms; barrier:switch %" PRIu64 " previous %" PRIu64
                " switch-failed %" PRIu64 " switch-busy %" PRIu64 "\n",
                n, slowest_ms, sw, prev,
                failed, busy);
  }
  const std::string summary = "barrier np " + std::to_string(size) + " expect " + expect;
  const int rc = switchagg_verdict(failures, n, summary.c_str());
  MPI_Finalize();
  return rc;
}
