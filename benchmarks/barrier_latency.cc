// MPI_Barrier latency (benchmarks/barrier_bench.sh): --warmup W barriers,
// then --blocks B blocks of --iters K back-to-back barriers; each block's
// time / K is one sample (the slowest rank's, by a max over the ranks after
// the block). Prints "barrier_us p50 <median> min <min> max <max>".
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int warmup = 200, blocks = 21, iters = 200;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    const int v = std::atoi(argv[i + 1]);
    if (a == "--warmup") warmup = v;
    else if (a == "--blocks") blocks = v;
    else if (a == "--iters") iters = v;
    else {
      if (rank == 0) std::fprintf(stderr, "barrier_latency: unknown option '%s'\n", a.c_str());
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  if (warmup < 0 || blocks <= 0 || iters <= 0) {
    if (rank == 0) std::fprintf(stderr, "barrier_latency: --blocks and --iters must be > 0\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  for (int i = 0; i < warmup; ++i) MPI_Barrier(MPI_COMM_WORLD);
  std::vector<double> samples;
  for (int b = 0; b < blocks; ++b) {
    const double t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i) MPI_Barrier(MPI_COMM_WORLD);
    double us = (MPI_Wtime() - t0) * 1e6 / iters, worst = 0;
    MPI_Reduce(&us, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    samples.push_back(worst);
  }
  if (rank == 0) {
    std::sort(samples.begin(), samples.end());
    std::printf("barrier_us p50 %.2f min %.2f max %.2f\n", samples[samples.size() / 2],
                samples.front(), samples.back());
  }
  MPI_Finalize();
  return 0;
}
