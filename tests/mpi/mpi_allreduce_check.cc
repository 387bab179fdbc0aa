// Runs under mpirun with the switchagg component loaded and checks
// MPI_Allreduce against references computed here, independently of the
// component: every rank's input is a function of (rank, i), so each rank
// computes the expected vector locally. Integers and the float inputs used
// here are exact (small dyadic values); one double case is inexact and
// checked within size * 2 * DBL_EPSILON * sum |x|.
//
// It also proves the component served the calls: it finds the diagnostics
// the component exports (dlsym) and checks, per call, which path ran.
//
//   mpi_allreduce_check [--expect ALG|auto] [--counts N,N,...] [--large] [--quick]
//     --expect  the path every call with count > 0 on > 1 rank must take
//               (the forced coll_switchagg_allreduce_algorithm), or auto
//     --counts  element counts of the dtype x op matrix (default 0,1,2,37,1001;
//               every other count runs in place)
//     --large   add 1M+3-element cases
//     --quick   only WORLD's dtype x op matrix (no dup/split/churn)
//   With --expect switch it also checks each communicator's agent members
//   (check::checkSwitchMembers: node leaders when ranks share a node).
#include <dlfcn.h>
#include <mpi.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "check_support.h"
#include "verdict.h"
#include "switchagg/coll/diagnostics.h"

namespace {

using check::Ctx;
using check::Kind;

void runMatrix(Ctx& c, const std::vector<size_t>& counts) {
  for (size_t k = 0; k < counts.size(); ++k) {
    const bool in_place = k % 2 == 1;
    check::integerTypes(c, counts[k], in_place);
    check::otherTypes(c, counts[k], in_place);
  }
}

void runSubset(Ctx& c, size_t count, bool in_place) {
  check::one<int32_t>(c, MPI_INT, MPI_SUM, Kind::kSum, count, in_place);
  check::one<double>(c, MPI_DOUBLE, MPI_SUM, Kind::kSum, count, in_place);
  check::one<uint8_t>(c, MPI_UINT8_T, MPI_SUM, Kind::kSum, count, in_place);
  check::one<float>(c, MPI_FLOAT, MPI_MAX, Kind::kMinMax, count, in_place);
  check::pair<check::DoubleInt>(c, MPI_DOUBLE_INT, MPI_MINLOC, count, in_place);
}

void runLarge(Ctx& c) {
  const size_t n = (1u << 20) + 3;
  check::one<int32_t>(c, MPI_INT, MPI_SUM, Kind::kSum, n, false);
  check::one<double>(c, MPI_DOUBLE, MPI_SUM, Kind::kSum, n, true);
  check::inexactDoubleSum(c, n);
}

std::vector<size_t> parseCounts(const char* text) {
  std::vector<size_t> out;
  const char* p = text;
  while (*p) {
    char* end = nullptr;
    out.push_back(std::strtoull(p, &end, 10));
    if (end == p) break;
    p = (*end == ',') ? end + 1 : end;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  std::string expect = "auto";
  bool large = false, quick = false;
  std::vector<size_t> counts = {0, 1, 2, 37, 1001};
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--expect") && i + 1 < argc) expect = argv[++i];
    else if (!std::strcmp(argv[i], "--counts") && i + 1 < argc) counts = parseCounts(argv[++i]);
    else if (!std::strcmp(argv[i], "--large")) large = true;
    else if (!std::strcmp(argv[i], "--quick")) quick = true;
  }
  check::Diagnostics diag;
  if (!diag.load()) {
    std::fprintf(stderr, "FAIL: switchagg component not loaded (no %s symbol)\n",
                 SWITCHAGG_COLL_LAST_ALGORITHM_SYMBOL);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  long failures = 0, cases = 0;
  auto run = [&](MPI_Comm comm, const char* label, auto&& body) {
    Ctx c(comm, label, expect, diag);
    body(c);
    c.requireServed();
    if (expect == "switch" && c.communicating > 0) check::checkSwitchMembers(c);
    failures += c.failures;
    cases += c.cases;
  };

  run(MPI_COMM_WORLD, "world", [&](Ctx& c) {
    runMatrix(c, counts);
    if (large) runLarge(c);
    check::inexactDoubleSum(c, 4099);
  });
  if (!quick) {
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm dup, halves, reversed;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &halves);
    MPI_Comm_split(MPI_COMM_WORLD, 0, -rank, &reversed);
    // Interleave calls on communicators alive at once.
    for (int round = 0; round < 2; ++round) {
      run(dup, "dup", [&](Ctx& c) { runSubset(c, 1001, round == 1); });
      run(halves, "split", [&](Ctx& c) { runSubset(c, 37, round == 0); });
      run(reversed, "reversed", [&](Ctx& c) { runSubset(c, 2, round == 1); });
    }
    if (large) run(halves, "split", [&](Ctx& c) { runLarge(c); });
    // Created and freed repeatedly: endpoints are released with the module.
    for (int i = 0; i < 8; ++i) {
      MPI_Comm tmp;
      MPI_Comm_split(MPI_COMM_WORLD, (rank + i) % 3, rank, &tmp);
      run(tmp, "churn", [&](Ctx& c) { check::one<int64_t>(c, MPI_INT64_T, MPI_SUM, Kind::kSum, 333, i % 2); });
      MPI_Comm_free(&tmp);
    }
    MPI_Comm_free(&dup);
    MPI_Comm_free(&halves);
    MPI_Comm_free(&reversed);
  }

  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const std::string summary = "np=" + std::to_string(size) + " expect=" + expect;
  const int rc = switchagg_verdict(failures, cases, summary.c_str());
  MPI_Finalize();
  return rc;
}
