// Persistent allreduce (MPI-4 MPI_Allreduce_init; MPIX_Allreduce_init from
// Open MPI 4.1's pcollreq extension) with the component loaded: exact
// results over repeated MPI_Start/MPI_Wait with the inputs changed between
// starts (a persistent request reads its buffers at every start), in place,
// several requests started together (MPI_Startall), interleaved with
// blocking allreduces the component serves; every init call handed to the
// previous module and counted ("iallreduce:previous:persistent").
//
//   mpi_persistent_check --expect ALG
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "check_support.h"
#include "verdict.h"

// Open MPI 5.0 has the MPI-4 call while its mpi.h still says MPI_VERSION 3.
#if MPI_VERSION >= 4 || (defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
#define SA_ALLREDUCE_INIT MPI_Allreduce_init
#else
#include <mpi-ext.h>
#if !defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) || !OMPI_HAVE_MPI_EXT_PCOLLREQ
#error "needs MPI_Allreduce_init (MPI-4) or Open MPI's pcollreq extension"
#endif
#define SA_ALLREDUCE_INIT MPIX_Allreduce_init
#endif

namespace {

int g_failures = 0;
int g_rank = 0, g_size = 1;
check::Diagnostics g_diag;

long g_checks = 0;  // assertions made on this rank (the verdict's cases)

void expectTrue(bool ok, const std::string& what) {
  ++g_checks;
  if (!ok && ++g_failures <= 20) std::fprintf(stderr, "FAIL rank %d: %s\n", g_rank, what.c_str());
}

// Sum over ranks r of (r + 1) * scale + i.
long long sumOfRanks(long long scale, long long i) {
  long long s = 0;
  for (int r = 0; r < g_size; ++r) s += (r + 1) * scale + i;
  return s;
}

// A blocking allreduce the component serves (proves it is on the communicator).
void servedCall(MPI_Comm comm, const char* expect) {
  std::vector<int> in(77, g_rank), out(77);
  MPI_Allreduce(in.data(), out.data(), 77, MPI_INT, MPI_SUM, comm);
  for (int v : out) expectTrue(v == g_size * (g_size - 1) / 2, "served int sum");
  const char* got = g_diag.last(comm);
  if (g_size > 1)
    expectTrue(got && !std::strcmp(got, expect), std::string("blocking call served by ") +
                                                     (got ? got : "(none)") + ", want " + expect);
}

// One request, started `starts` times, the input rewritten before each.
int repeatedStarts(MPI_Comm comm, int n, int starts, const char* expect) {
  std::vector<int> in(static_cast<size_t>(n)), out(static_cast<size_t>(n));
  MPI_Request req;
  if (SA_ALLREDUCE_INIT(in.data(), out.data(), n, MPI_INT, MPI_SUM, comm, MPI_INFO_NULL, &req) !=
      MPI_SUCCESS) {
    expectTrue(false, "MPI_Allreduce_init int");
    return 0;
  }
  for (int s = 0; s < starts; ++s) {
    for (int i = 0; i < n; ++i) in[static_cast<size_t>(i)] = (g_rank + 1) * (s + 3) + i;
    std::fill(out.begin(), out.end(), -1);
    MPI_Start(&req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    bool ok = true;
    for (int i = 0; i < n && ok; ++i) ok = out[static_cast<size_t>(i)] == sumOfRanks(s + 3, i);
    expectTrue(ok, "int sum n=" + std::to_string(n) + " start " + std::to_string(s));
    if (s % 2 == 1) servedCall(comm, expect);  // blocking calls between the starts
  }
  MPI_Request_free(&req);
  return 1;
}

// In place, doubles, MAX.
int inPlace(MPI_Comm comm) {
  const int n = 4099;
  std::vector<double> buf(n);
  MPI_Request req;
  if (SA_ALLREDUCE_INIT(MPI_IN_PLACE, buf.data(), n, MPI_DOUBLE, MPI_MAX, comm, MPI_INFO_NULL,
                        &req) != MPI_SUCCESS) {
    expectTrue(false, "MPI_Allreduce_init in place");
    return 0;
  }
  for (int s = 0; s < 3; ++s) {
    for (int i = 0; i < n; ++i) buf[static_cast<size_t>(i)] = (g_rank * 7 + s) * 0.5 + i;
    MPI_Start(&req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    bool ok = true;
    for (int i = 0; i < n && ok; ++i)
      ok = buf[static_cast<size_t>(i)] == ((g_size - 1) * 7 + s) * 0.5 + i;
    expectTrue(ok, "in-place double max start " + std::to_string(s));
  }
  MPI_Request_free(&req);
  return 1;
}

// Two requests (float sum, long long min) started together.
int startAll(MPI_Comm comm) {
  const int n = 1000;
  std::vector<float> fin(n), fout(n);
  std::vector<long long> lin(n), lout(n);
  MPI_Request reqs[2];
  int made = 0;
  made += SA_ALLREDUCE_INIT(fin.data(), fout.data(), n, MPI_FLOAT, MPI_SUM, comm, MPI_INFO_NULL,
                            &reqs[0]) == MPI_SUCCESS;
  made += SA_ALLREDUCE_INIT(lin.data(), lout.data(), n, MPI_LONG_LONG, MPI_MIN, comm, MPI_INFO_NULL,
                            &reqs[1]) == MPI_SUCCESS;
  if (made != 2) {
    expectTrue(false, "MPI_Allreduce_init float/long long");
    return made;
  }
  for (int s = 0; s < 4; ++s) {
    for (int i = 0; i < n; ++i) {
      fin[static_cast<size_t>(i)] = static_cast<float>((g_rank + 1) * (i % 64 + s));
      lin[static_cast<size_t>(i)] = (1LL << 40) - g_rank * 1000003LL + i * s;
    }
    MPI_Startall(2, reqs);
    MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
    bool ok = true;
    for (int i = 0; i < n && ok; ++i) {
      // Small integers in float: every order of summation is exact.
      ok = fout[static_cast<size_t>(i)] ==
               static_cast<float>(g_size * (g_size + 1) / 2 * (i % 64 + s)) &&
           lout[static_cast<size_t>(i)] == (1LL << 40) - (g_size - 1) * 1000003LL + i * s;
    }
    expectTrue(ok, "Startall float sum + long long min start " + std::to_string(s));
  }
  MPI_Request_free(&reqs[0]);
  MPI_Request_free(&reqs[1]);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  check::initWorld(&argc, &argv, &g_rank, &g_size);
  const char* expect = (argc > 2 && !std::strcmp(argv[1], "--expect")) ? argv[2] : "ring";
  if (!g_diag.load()) {
    std::fprintf(stderr, "FAIL: switchagg component not loaded\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const char* counter = "iallreduce:previous:persistent";
  servedCall(MPI_COMM_WORLD, expect);
  int inits = 0;
  inits += repeatedStarts(MPI_COMM_WORLD, 1, 6, expect);
  inits += repeatedStarts(MPI_COMM_WORLD, 65536, 4, expect);
  inits += inPlace(MPI_COMM_WORLD);
  inits += startAll(MPI_COMM_WORLD);
  const uint64_t counted = g_diag.counter(MPI_COMM_WORLD, counter);
  expectTrue(
      counted == static_cast<uint64_t>(inits),
      std::string(counter) + " = " + std::to_string(counted) + ", want " + std::to_string(inits));

  // A duplicate counts its own.
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  const int dup_inits = repeatedStarts(dup, 333, 2, expect);
  expectTrue(g_diag.counter(dup, counter) == static_cast<uint64_t>(dup_inits),
             "duplicate's counter");
  expectTrue(g_diag.counter(MPI_COMM_WORLD, counter) == counted, "WORLD's counter after the dup's");
  MPI_Comm_free(&dup);

  char summary[120];
  std::snprintf(summary, sizeof summary,
                "persistent np=%d: %d MPI_Allreduce_init calls to the previous module", g_size,
                inits + dup_inits);
  const int rc = switchagg_verdict(g_failures, g_checks, summary);
  MPI_Finalize();
  return rc;
}
