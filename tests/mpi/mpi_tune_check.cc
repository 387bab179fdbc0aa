// Online tuning under real mpirun (coll_switchagg_offload=auto, tune=online):
// per message size, `--warmup` checked calls let the component measure its
// candidates; then `--measure` more checked calls must all be served by ONE
// path (the settled choice: the component's own per-path counters grow for
// exactly one path, its exploration counter does not grow) and that path
// must be what --expect says:
//
//   mpi_tune_check --sizes 8,1024,... [--warmup 40] [--measure 8]
//                  --expect any             report only (benchmarks/tune_bench.sh)
//                  --expect host            every size settles on a host path
//                  --expect host<B,switch>=C  sizes < B on a host path, sizes
//                                           >= C on the switch (between: any)
//
// With a lease in the environment the switch must have been measured at
// least once (switch:calls > 0), so the choice was informed. int64 sums,
// exact. Back-to-back calls, as applications make them.
//
//   --no-explore   the job loads its choices (coll_switchagg_rules, e.g. a
//                  file coll_switchagg_tune_file wrote): no call may be run
//                  to measure (tune:explore_calls and tune:agreements stay
//                  0 over the whole run), and with --expect any the
//                  settled path of each size is still printed.
// Prints per size the settled path, the calls spent measuring, and the
// warm-up's cost: its time minus the same calls at the settled speed (the
// slowest rank's wall time for both).
#include <mpi.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "check_support.h"
#include "verdict.h"

namespace {

// The paths a call can be served by (the component's per-path counters).
constexpr const char* kPaths[] = {
    "ring", "recursive_doubling", "rabenseifner", "hierarchical", "switch", "previous"};

struct Expect {
  size_t host_below = SIZE_MAX;  // sizes < this: a host path
  size_t switch_from = SIZE_MAX;  // sizes >= this: the switch
};

bool parseExpect(const std::string& text, Expect* e, bool* any) {
  *any = text == "any";
  if (text == "host" || *any) return true;
  unsigned long long b = 0, c = 0;
  if (std::sscanf(text.c_str(), "host<%llu,switch>=%llu", &b, &c) == 2 && b <= c) {
    e->host_below = b;
    e->switch_from = c;
    return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  int rank = 0, size = 1;
  check::initWorld(&argc, &argv, &rank, &size);
  std::vector<size_t> sizes;
  int warmup = 40, measure = 8;
  Expect expect;
  bool have_expect = false, any = false, no_explore = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : "";
    if (a == "--sizes") {
      for (char* p = std::strtok(const_cast<char*>(v), ","); p; p = std::strtok(nullptr, ","))
        sizes.push_back(std::strtoull(p, nullptr, 10));
      ++i;
    } else if (a == "--warmup") {
      warmup = std::atoi(v), ++i;
    } else if (a == "--measure") {
      measure = std::atoi(v), ++i;
    } else if (a == "--no-explore") {
      no_explore = true;
    } else if (a == "--expect") {
      have_expect = parseExpect(v, &expect, &any), ++i;
      if (!have_expect && rank == 0) std::fprintf(stderr, "bad --expect '%s'\n", v);
    } else {
      if (rank == 0) std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  if (sizes.empty() || !have_expect || warmup < 1 || measure < 1) {
    if (rank == 0) std::fprintf(stderr, "usage: mpi_tune_check --sizes B,... --expect ...\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  check::Diagnostics diag;
  if (!diag.load()) {
    if (rank == 0) std::fprintf(stderr, "FAIL: the switchagg component is not loaded\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  long failures = 0, cases = 0;
  auto fail = [&](const std::string& what) {
    if (++failures <= 10) std::fprintf(stderr, "FAIL rank %d: %s\n", rank, what.c_str());
  };
  auto counter = [&](const char* name) { return diag.counter(comm, name); };

  for (size_t bytes : sizes) {
    const size_t count = std::max<size_t>(1, bytes / sizeof(int64_t));
    std::vector<int64_t> in(count), out(count);
    for (size_t i = 0; i < count; ++i) in[i] = int64_t(rank + 1) * int64_t(i % 977 + 1) - 300;
    auto one = [&](int call) {
      ++cases;
      for (size_t i = 0; i < count; ++i) in[i] += call;  // each call its own answer
      MPI_Allreduce(in.data(), out.data(), int(count), MPI_INT64_T, MPI_SUM, comm);
      for (size_t i = 0; i < count; ++i) {
        const int64_t want =
            int64_t(size) * (size + 1) / 2 * int64_t(i % 977 + 1) - 300 * int64_t(size) +
            int64_t(size) * int64_t(call) * int64_t(call + 1) / 2;
        if (out[i] != want) {
          fail(std::to_string(bytes) + " bytes call " + std::to_string(call) + " element " +
               std::to_string(i) + ": got " + std::to_string(out[i]) + ", want " +
               std::to_string(want) + " (served by " + (diag.last(comm) ? diag.last(comm) : "?") +
               ")");
          return;
        }
      }
    };
    const uint64_t explore0 = counter("tune:explore_calls");
    int call = 0;
    auto slowest = [&](double t0) {  // the slowest rank's seconds since t0
      double mine = MPI_Wtime() - t0, all = 0;
      MPI_Allreduce(&mine, &all, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      return all;
    };
    MPI_Barrier(comm);
    double t0 = MPI_Wtime();
    for (int i = 0; i < warmup; ++i) one(++call);
    const double warm_s = slowest(t0);
    const uint64_t explore1 = counter("tune:explore_calls");
    const uint64_t agreements1 = counter("tune:agreements");
    std::map<std::string, uint64_t> served;  // calls after warm-up, by the path that served
    std::map<std::string, uint64_t> before;  // the component's per-path counters
    for (const char* path : kPaths) before[path] = counter(path);
    MPI_Barrier(comm);
    t0 = MPI_Wtime();
    for (int i = 0; i < measure; ++i) {
      one(++call);
      ++served[diag.last(comm) ? diag.last(comm) : "?"];
    }
    const double settled_s = slowest(t0) / measure;
    const char* settled = nullptr;
    for (const auto& [path, grew] : served) {
      settled = path.c_str();
      if (grew != uint64_t(measure))
        fail(std::to_string(bytes) + " bytes: " + path + " served " + std::to_string(grew) +
             " of the " + std::to_string(measure) + " calls after warm-up");
    }
    if (served.size() != 1 || settled == nullptr) {
      fail(std::to_string(bytes) + " bytes: not one settled path after warm-up");
      continue;
    }
    // The component's own counters agree: only the settled path grew, by
    // every call after warm-up.
    for (const char* path : kPaths) {
      const uint64_t grew = counter(path) - before[path];
      const uint64_t want = std::strcmp(path, settled) == 0 ? uint64_t(measure) : 0;
      if (grew != want)
        fail(std::to_string(bytes) + " bytes: counter " + path + " grew by " +
             std::to_string(grew) + " after warm-up, expected " + std::to_string(want));
    }
    if (counter("tune:explore_calls") != explore1)
      fail(std::to_string(bytes) + " bytes: still exploring after " + std::to_string(warmup) +
           " calls");
    // A settled bucket agrees only at its check points (32 calls apart at
    // the least), never per call.
    const uint64_t checks = counter("tune:agreements") - agreements1;
    if (checks > uint64_t(measure / 32 + 1))
      fail(std::to_string(bytes) + " bytes: " + std::to_string(checks) + " agreements over " +
           std::to_string(measure) + " settled calls (check points are 32+ calls apart)");
    const bool is_switch = std::strcmp(settled, "switch") == 0;
    if (rank == 0)
      std::printf("size %zu: settled on %s after %" PRIu64
                  " measuring calls; warm-up %d calls %.2f ms, settled %.1f us per call, "
                  "measuring cost %.2f ms\n",
                  bytes, settled, explore1 - explore0, warmup, warm_s * 1e3, settled_s * 1e6,
                  (warm_s - warmup * settled_s) * 1e3);
    if (any) continue;
    if (bytes < expect.host_below && is_switch)
      fail(std::to_string(bytes) + " bytes: settled on the switch, expected a host path");
    if (bytes >= expect.switch_from && !is_switch)
      fail(std::to_string(bytes) + " bytes: settled on " + settled + ", expected the switch");
  }
  if (no_explore && (counter("tune:explore_calls") != 0 || counter("tune:agreements") != 0))
    fail("--no-explore: " + std::to_string(counter("tune:explore_calls")) + " exploring calls, " +
         std::to_string(counter("tune:agreements")) + " agreements");
  // With a lease (the job's environment), tuning must have measured the switch.
  if (!no_explore && std::getenv("SWITCHAGG_LEASE") != nullptr &&
      (counter("switch:calls") == 0 || counter("switch:calls") == UINT64_MAX))
    fail("the switch path never ran: tuning never measured it");
  if (rank == 0)
    std::printf("tuning: %" PRIu64 " agreements, %" PRIu64 " reopened, %" PRIu64
                " settled buckets, switch measured %" PRIu64 " calls\n",
                counter("tune:agreements"), counter("tune:reopened"),
                counter("tune:settled_buckets"), counter("switch:calls"));
  MPI_Comm_free(&comm);
  const int rc = switchagg_verdict(failures, cases, "tune");
  MPI_Finalize();
  return rc;
}
