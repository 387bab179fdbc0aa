// mpi_retired_check: a member still recovering the last call of a
// communicator that the other members have already freed, together with
// more communicators than a process keeps retired recovery ledgers for
// (docs/offload.md "Completion", safety case 7; issue 43 §3.1).
//
// Every rank dups MPI_COMM_WORLD --comms times (default 10), makes one
// allreduce of one double on each (the join and chunk result 1 .. comms),
// then one more on the first (chunk result comms + 1: the test arms the
// agent's fault point miss:N:M on it, so member --miss-rank never gets it).
// The other ranks return at once and free every communicator, first to
// last; the missing rank's call times out and must still get its result
// from them (switch:recovered = 1 on it, 0 elsewhere), exactly, within
// --max-call-ms. Every answer is checked on its rank; the verdict is
// tallied point to point (verdict.h). Prints PASS.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "check_support.h"
#include "verdict.h"

int main(int argc, char** argv) {
  int rank = 0, size = 1;
  check::initWorld(&argc, &argv, &rank, &size);
  int comms = 10, miss_rank = -1;
  long max_call_ms = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "mpi_retired_check: %s needs a value\n", a.c_str());
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char* v = argv[++i];
    if (a == "--comms") comms = std::atoi(v);
    else if (a == "--miss-rank") miss_rank = std::atoi(v);
    else if (a == "--max-call-ms") max_call_ms = std::atol(v);
    else {
      std::fprintf(stderr, "mpi_retired_check: unknown argument '%s'\n", a.c_str());
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  check::Diagnostics diag;
  if (comms < 1 || miss_rank < 0 || miss_rank >= size || !diag.load()) {
    std::fprintf(stderr, "FAIL rank %d: needs --comms >= 1, --miss-rank < %d and the "
                         "component's diagnostics\n", rank, size);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  long failures = 0, cases = 0;
  auto fail = [&](const std::string& what) {
    if (++failures <= 10) std::fprintf(stderr, "FAIL rank %d/%d: %s\n", rank, size, what.c_str());
  };
  std::vector<MPI_Comm> c(size_t(comms), MPI_COMM_NULL);
  for (MPI_Comm& one : c) {
    MPI_Comm_dup(MPI_COMM_WORLD, &one);
    MPI_Comm_set_errhandler(one, MPI_ERRORS_RETURN);  // a failed call is reported, not fatal
  }
  // Rank r contributes (r + 1) * (k + 1): the sum is (k + 1) p (p + 1) / 2.
  auto allreduce = [&](MPI_Comm comm, int k) {
    double in = double(rank + 1) * (k + 1), out = -1;
    const double t0 = MPI_Wtime();
    const int rc = MPI_Allreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, comm);
    const double ms = (MPI_Wtime() - t0) * 1000;
    ++cases;
    const double want = double(k + 1) * size * (size + 1) / 2;
    if (rc != MPI_SUCCESS) fail("call " + std::to_string(k) + ": MPI_Allreduce returned an error");
    else if (out != want)
      fail("call " + std::to_string(k) + ": got " + std::to_string(out) + ", want " +
           std::to_string(want));
    const char* path = diag.last(comm);
    if (rc == MPI_SUCCESS && (!path || std::string(path) != "switch"))
      fail("call " + std::to_string(k) + " served by " + (path ? path : "nothing"));
    if (max_call_ms > 0 && ms > double(max_call_ms))
      fail("call " + std::to_string(k) + " took " + std::to_string(ms) + " ms (bound " +
           std::to_string(max_call_ms) + ")");
  };
  for (int k = 0; k < comms; ++k) allreduce(c[size_t(k)], k);
  allreduce(c[0], comms);  // the call the agent withholds from member miss_rank
  const uint64_t recovered = diag.counter(c[0], "switch:recovered");
  const uint64_t want_recovered = rank == miss_rank ? 1 : 0;
  if (recovered != want_recovered)
    fail("switch:recovered " + std::to_string(recovered) + " on the first communicator, want " +
         std::to_string(want_recovered));
  for (MPI_Comm& one : c) MPI_Comm_free(&one);
  std::printf("rank %d: %d communicators freed, switch:recovered %llu\n", rank, comms,
              static_cast<unsigned long long>(recovered));
  std::fflush(stdout);
  const int rc = switchagg_verdict(failures, cases, "retired");
  MPI_Finalize();
  return rc;
}
