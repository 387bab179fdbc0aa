// Liveness under Open MPI's own operations: the pattern of OSU's
// osu_allreduce -c, which once found a hang here. Per iteration and size:
// fill the buffers, a few warm-up allreduces on other buffers each preceded
// by one of Open MPI's own operations, that operation, the checked
// allreduce, the operation again, check the result. A rank that left a
// switchagg call while a peer still needed its transport to progress would
// leave that peer stuck inside the allreduce while it sits in Open MPI's
// operation, which never drives switchagg's UCX worker.
//
//   mpi_liveness_check --sizes B,B,... [--iters N] [--warmup K]
//                      [--between barrier|sendrecv|reduce|none] [--expect ALG] [--dup]
//                      [--progress FILE] [--counters]
//     --sizes    message sizes in bytes (MPI_FLOAT SUM; rounded down to floats)
//     --iters    checked allreduces per size (default 20)
//     --warmup   allreduces before each checked one (default 2)
//     --between  Open MPI's operation around every allreduce: MPI_Barrier,
//                MPI_Sendrecv with both ring neighbours, MPI_Reduce to 0, or
//                nothing (the allreduces back to back)
//     --expect   the path every allreduce must have taken (diagnostics)
//     --dup      the allreduces run on a duplicate of MPI_COMM_WORLD, the
//                operation between them on MPI_COMM_WORLD: a rank that left
//                an allreduce waits in another communicator's call
//     --stall-rank R --stall-seconds S
//                rank R sleeps S seconds, outside MPI, before the first
//                checked allreduce: its peers wait for it inside the call
//                (tests coll_switchagg_stall_timeout)
//     --stall-every K  with --stall-rank/--stall-seconds: rank R sleeps before
//                every K-th checked allreduce (iterations K-1, 2K-1, ...)
//                instead of the first only (a rank late for I/O or a
//                checkpoint now and then)
//     --nonblocking  the checked allreduces as MPI_Iallreduce + MPI_Wait
//                (--expect does not apply; --no-fallbacks reads iallreduce:*)
//     --no-fallbacks  fail unless the switch path served every allreduce of
//                the run on this rank (switch:calls) with no failure
//                (fallback:switch-failed 0, switch:recovered 0)
//     --progress FILE  rank 0 rewrites FILE with the number of checked
//                allreduces done after each one: a test times a fault
//                against calls it can observe (fabric_test.sh link_down)
//     --counters each rank prints, at the end, "counters rank R:" and the
//                component's switch-path counters of the allreduces'
//                communicator (what was hit: failed, recovered, busy)
//
// Prints "PASS ..." on rank 0 when every result is exact and every call was
// served by the expected path.
#include <dlfcn.h>
#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "switchagg/coll/diagnostics.h"
#include "verdict.h"

namespace {

struct Options {
  std::vector<size_t> sizes;
  int iters = 20;
  int warmup = 2;
  std::string between = "barrier";
  std::string expect;
  bool dup = false;
  int stall_rank = -1;
  int stall_seconds = 0;
  int stall_every = 0;  // 0: before the first checked allreduce only
  bool no_fallbacks = false;
  bool nonblocking = false;
  std::string progress;
  bool counters = false;
};

[[noreturn]] void usage(const char* msg) {
  std::fprintf(stderr, "mpi_liveness_check: %s\n", msg);
  MPI_Abort(MPI_COMM_WORLD, 2);
  std::exit(2);
}

std::vector<size_t> parseList(const char* s) {
  std::vector<size_t> out;
  for (const char* p = s; *p != '\0';) {
    char* end = nullptr;
    const unsigned long long v = std::strtoull(p, &end, 10);
    if (end == p) usage("--sizes: expected comma-separated byte counts");
    out.push_back(static_cast<size_t>(v));
    p = (*end == ',') ? end + 1 : end;
    if (*end != ',' && *end != '\0') usage("--sizes: expected comma-separated byte counts");
  }
  return out;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage((a + " needs a value").c_str());
      return argv[++i];
    };
    if (a == "--sizes")
      o.sizes = parseList(value());
    else if (a == "--iters")
      o.iters = std::atoi(value());
    else if (a == "--warmup")
      o.warmup = std::atoi(value());
    else if (a == "--between")
      o.between = value();
    else if (a == "--expect")
      o.expect = value();
    else if (a == "--dup")
      o.dup = true;
    else if (a == "--stall-rank")
      o.stall_rank = std::atoi(value());
    else if (a == "--stall-seconds")
      o.stall_seconds = std::atoi(value());
    else if (a == "--stall-every")
      o.stall_every = std::atoi(value());
    else if (a == "--no-fallbacks")
      o.no_fallbacks = true;
    else if (a == "--nonblocking")
      o.nonblocking = true;
    else if (a == "--progress")
      o.progress = value();
    else if (a == "--counters")
      o.counters = true;
    else
      usage(("unknown option " + a).c_str());
  }
  if (o.sizes.empty()) usage("--sizes is required");
  if (o.iters < 1 || o.warmup < 0) usage("--iters must be >= 1 and --warmup >= 0");
  if (o.between != "barrier" && o.between != "sendrecv" && o.between != "reduce" &&
      o.between != "none")
    usage("--between must be barrier, sendrecv, reduce or none");
  return o;
}

// Open MPI's own operation, served by ob1/tuned: it progresses only Open
// MPI's engine.
void between(const Options& o, MPI_Comm comm, int rank, int size) {
  if (o.between == "barrier") {
    MPI_Barrier(comm);
  } else if (o.between == "sendrecv") {
    int out = rank, in_left = -1, in_right = -1;
    const int left = (rank - 1 + size) % size, right = (rank + 1) % size;
    MPI_Sendrecv(&out, 1, MPI_INT, right, 7, &in_left, 1, MPI_INT, left, 7, comm,
                 MPI_STATUS_IGNORE);
    MPI_Sendrecv(&out, 1, MPI_INT, left, 8, &in_right, 1, MPI_INT, right, 8, comm,
                 MPI_STATUS_IGNORE);
    if (in_left != left || in_right != right) usage("MPI_Sendrecv delivered a wrong value");
  } else if (o.between == "reduce") {
    int one = 1, total = 0;
    MPI_Reduce(&one, &total, 1, MPI_INT, MPI_SUM, 0, comm);
    if (rank == 0 && total != size) usage("MPI_Reduce delivered a wrong value");
  }
}

// FILE holds the number of checked allreduces done (rewritten whole).
void writeProgress(const std::string& file, long done) {
  if (FILE* f = std::fopen(file.c_str(), "w")) {
    std::fprintf(f, "%ld\n", done);
    std::fclose(f);
  }
}

// The switch path's counters of `comm` on this rank, one line.
void printCounters(MPI_Comm comm, int rank) {
  auto counter = reinterpret_cast<switchagg_coll_comm_counter_fn>(
      dlsym(RTLD_DEFAULT, SWITCHAGG_COLL_COMM_COUNTER_SYMBOL));
  std::string line = "counters rank " + std::to_string(rank) + ":";
  for (const char* name : {"switch:calls", "fallback:switch-failed", "switch:recovered",
                           "fallback:switch-busy", "switch:rejoined", "switch:barrier_failed"}) {
    const uint64_t v = counter ? counter(comm, name) : UINT64_MAX;
    line += std::string(" ") + name + "=" + (v == UINT64_MAX ? "n/a" : std::to_string(v));
  }
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

// Small integers: float sums stay exact whatever the reduction order.
float input(int rank, int iter, size_t i) {
  return static_cast<float>((rank + 1) * 3 + (iter % 7) + static_cast<int>(i % 13));
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const Options o = parse(argc, argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  auto last = reinterpret_cast<switchagg_coll_last_algorithm_fn>(
      dlsym(RTLD_DEFAULT, SWITCHAGG_COLL_LAST_ALGORITHM_SYMBOL));
  if (!o.expect.empty() && last == nullptr) usage("the switchagg component is not loaded");
  MPI_Comm comm = MPI_COMM_WORLD;  // the allreduces'
  if (o.dup) MPI_Comm_dup(MPI_COMM_WORLD, &comm);

  long failures = 0, calls = 0, checked = 0;
  auto checkPath = [&](const char* what, size_t bytes) {
    ++calls;
    if (o.expect.empty()) return;
    const char* path = last(comm);
    if (path == nullptr || o.expect != path) {
      if (++failures <= 5)
        std::fprintf(stderr, "FAIL rank %d: %s %zu bytes served by %s, expected %s\n", rank, what,
                     bytes, path ? path : "(none)", o.expect.c_str());
    }
  };

  for (size_t bytes : o.sizes) {
    const size_t n = bytes / sizeof(float);
    std::vector<float> send(n), recv(n), wsend(n, 1.0f), wrecv(n);
    for (int it = 0; it < o.iters; ++it) {
      for (size_t i = 0; i < n; ++i) send[i] = input(rank, it, i);
      for (int w = 0; w < o.warmup; ++w) {
        between(o, MPI_COMM_WORLD, rank, size);
        MPI_Allreduce(wsend.data(), wrecv.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, comm);
        checkPath("warm-up", bytes);
      }
      between(o, MPI_COMM_WORLD, rank, size);
      const bool stall_now = o.stall_every > 0 ? (it + 1) % o.stall_every == 0
                                               : it == 0 && bytes == o.sizes.front();
      if (rank == o.stall_rank && stall_now) {
        std::fprintf(stderr, "rank %d: stalling %d s before the allreduce\n", rank,
                     o.stall_seconds);
        sleep(static_cast<unsigned>(o.stall_seconds));
      }
      if (o.nonblocking) {
        MPI_Request req;
        MPI_Iallreduce(send.data(), recv.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, comm,
                       &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
      } else {
        MPI_Allreduce(send.data(), recv.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, comm);
      }
      checkPath("allreduce", bytes);
      between(o, MPI_COMM_WORLD, rank, size);
      if (rank == 0 && !o.progress.empty()) writeProgress(o.progress, ++checked);
      for (size_t i = 0; i < n; ++i) {
        float want = 0;
        for (int r = 0; r < size; ++r) want += input(r, it, i);
        if (recv[i] != want) {
          if (++failures <= 5)
            std::fprintf(stderr, "FAIL rank %d: %zu bytes iter %d element %zu: %g, want %g\n", rank,
                         bytes, it, i, double(recv[i]), double(want));
          break;
        }
      }
      if (o.warmup > 0 && n > 0 && wrecv[n / 2] != static_cast<float>(size) && ++failures <= 5)
        std::fprintf(stderr, "FAIL rank %d: warm-up result %g, want %d\n", rank,
                     double(wrecv[n / 2]), size);
    }
  }

  char summary[200];
  std::snprintf(summary, sizeof summary, "liveness np=%d between=%s%s expect=%s sizes=%zu iters=%d",
                size, o.between.c_str(), o.dup ? " (on WORLD, allreduces on a dup)" : "",
                o.expect.empty() ? "-" : o.expect.c_str(), o.sizes.size(), o.iters);
  if (o.counters) printCounters(comm, rank);
  if (o.no_fallbacks) {
    auto counter = reinterpret_cast<switchagg_coll_comm_counter_fn>(
        dlsym(RTLD_DEFAULT, SWITCHAGG_COLL_COMM_COUNTER_SYMBOL));
    if (counter == nullptr) usage("--no-fallbacks: the switchagg component is not loaded");
    // MPI_Iallreduce: its own counters (docs/offload.md "Counters (iallreduce:*)").
    const uint64_t served = counter(comm, o.nonblocking ? "iallreduce:switch" : "switch:calls");
    const uint64_t failed =
        counter(comm, o.nonblocking ? "iallreduce:redo" : "fallback:switch-failed");
    const uint64_t recovered = counter(comm, "switch:recovered");
    if (served < static_cast<uint64_t>(calls) || failed != 0 || recovered != 0) {
      ++failures;
      std::fprintf(stderr,
                   "FAIL rank %d: %llu of %ld allreduces on the switch, %llu failed "
                   "(fallback:switch-failed or iallreduce:redo), %llu recovered\n",
                   rank, static_cast<unsigned long long>(served), calls,
                   static_cast<unsigned long long>(failed),
                   static_cast<unsigned long long>(recovered));
    }
  }
  if (o.dup) MPI_Comm_free(&comm);
  const int rc = switchagg_verdict(failures, calls, summary);
  MPI_Finalize();
  return rc;
}
