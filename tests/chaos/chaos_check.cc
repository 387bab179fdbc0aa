// switchagg-chaos-check: an exact MPI_Allreduce checker for the chaos soak.
// Runs float SUM allreduces of cycling sizes for --seconds; every element's
// expected value is a small integer, so any float sum is exact and one wrong
// element is a wrong answer, not rounding. Every rank checks every call.
//
// --log-dir DIR gets one file per rank, DIR/<job>.<rank>, lines with wall
// clock milliseconds (the soak's analysis reads them):
//   WRONG <ms> call=<i> count=<n> elem=<j> got=<x> want=<y>  (any rank)
//   ok <ms> <calls> <path>        (rank 0, every 250 ms and on a path change)
//   slow <ms> <call_ms>           (rank 0, a call over 1 s)
//   summary calls=<n> wrong=<w> max_call_ms=<m> fallbacks=<f> rejoins=<r>
//           switch_calls=<s>  (calls the switch path served: switch:calls)
// Exit 0 if every answer was right, 1 otherwise.
#include <dlfcn.h>
#include <mpi.h>
#include <sys/time.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "switchagg/coll/diagnostics.h"

namespace {

int64_t wallMs() {
  timeval tv{};
  gettimeofday(&tv, nullptr);
  return static_cast<int64_t>(tv.tv_sec) * 1000 + tv.tv_usec / 1000;
}

int64_t steadyMs() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

float element(int rank, int64_t call, int j) {
  return static_cast<float>((rank + 1) + (j % 97) + static_cast<int>(call % 13));
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 10;
  std::string log_dir = ".";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--seconds") == 0) seconds = std::atof(argv[i + 1]);
    else if (std::strcmp(argv[i], "--log-dir") == 0) log_dir = argv[i + 1];
    else {
      std::fprintf(stderr, "usage: switchagg-chaos-check [--seconds S] [--log-dir DIR]\n");
      return 2;
    }
  }
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char* job = std::getenv("SLURM_JOB_ID");
  std::string path = log_dir + "/" + (job ? job : "nojob") + "." + std::to_string(rank);
  FILE* log = std::fopen(path.c_str(), "a");
  if (log == nullptr) {
    std::fprintf(stderr, "switchagg-chaos-check: cannot open %s\n", path.c_str());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  setvbuf(log, nullptr, _IOLBF, 0);
  auto last_fn = reinterpret_cast<switchagg_coll_last_algorithm_fn>(
      dlsym(RTLD_DEFAULT, SWITCHAGG_COLL_LAST_ALGORITHM_SYMBOL));
  auto counter_fn = reinterpret_cast<switchagg_coll_comm_counter_fn>(
      dlsym(RTLD_DEFAULT, SWITCHAGG_COLL_COMM_COUNTER_SYMBOL));

  const int kCounts[] = {1, 1000, 65536, 262144, 7};
  std::vector<float> in(262144), out(262144);
  const float base = static_cast<float>(size * (size + 1) / 2);
  const int64_t end = steadyMs() + static_cast<int64_t>(seconds * 1000);
  int64_t calls = 0, wrong = 0, max_call = 0, next_ok = 0;
  std::string last_path;
  for (int go = 1; go;) {
    const int count = kCounts[calls % 5];
    for (int j = 0; j < count; ++j) in[j] = element(rank, calls, j);
    const int64_t t0 = steadyMs();
    MPI_Allreduce(in.data(), out.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    const int64_t took = steadyMs() - t0;
    max_call = std::max(max_call, took);
    for (int j = 0; j < count; ++j) {
      const float want = base + static_cast<float>(size * ((j % 97) + static_cast<int>(calls % 13)));
      if (out[j] != want) {
        ++wrong;
        std::fprintf(log, "WRONG %lld call=%lld count=%d elem=%d got=%g want=%g\n",
                     static_cast<long long>(wallMs()), static_cast<long long>(calls), count, j,
                     static_cast<double>(out[j]), static_cast<double>(want));
        break;
      }
    }
    ++calls;
    if (rank == 0) {
      const char* p = last_fn ? last_fn(MPI_COMM_WORLD) : nullptr;
      std::string now_path = p ? p : "n/a";
      if (took > 1000) std::fprintf(log, "slow %lld %lld\n", static_cast<long long>(wallMs()),
                                    static_cast<long long>(took));
      if (now_path != last_path || steadyMs() >= next_ok) {
        std::fprintf(log, "ok %lld %lld %s\n", static_cast<long long>(wallMs()),
                     static_cast<long long>(calls), now_path.c_str());
        last_path = now_path;
        next_ok = steadyMs() + 250;
      }
    }
    if (calls % 8 == 0) {
      go = rank == 0 ? steadyMs() < end : 0;
      MPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
  }
  auto counter = [&](const char* name) -> unsigned long long {
    uint64_t v = counter_fn ? counter_fn(MPI_COMM_WORLD, name) : 0;
    return v == UINT64_MAX ? 0 : v;
  };
  std::fprintf(log,
               "summary calls=%lld wrong=%lld max_call_ms=%lld fallbacks=%llu rejoins=%llu "
               "switch_calls=%llu\n",
               static_cast<long long>(calls), static_cast<long long>(wrong),
               static_cast<long long>(max_call), counter("fallback:switch-failed"),
               counter("switch:rejoined"), counter("switch:calls"));
  std::fclose(log);
  MPI_Finalize();
  return wrong == 0 ? 0 : 1;
}
