// The PMPI layer's cost on a call it declines: MPI_Allreduce (MPI_DOUBLE,
// sum) p50 per size, built with MPICH (build/bin/mpich/pmpi_declined).
// Run plain and with libswitchagg_pmpi.so preloaded and
// SWITCHAGG_ALLREDUCE_ALGORITHM=previous (the core declines every call,
// PMPI_Allreduce serves): benchmarks/mpich_bench.sh.
//   pmpi_declined [--iters N]   prints "bytes p50_us" (the slowest rank's p50)
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int iters = 2000;
  for (int i = 1; i < argc; ++i)
    if (!std::strcmp(argv[i], "--iters") && i + 1 < argc) iters = std::atoi(argv[++i]);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (size_t bytes = 8; bytes <= 4096; bytes *= 2) {
    const int count = static_cast<int>(bytes / sizeof(double));
    std::vector<double> in(static_cast<size_t>(count), 1.0), out(static_cast<size_t>(count));
    std::vector<double> t(static_cast<size_t>(iters));
    for (int i = 0; i < iters / 10; ++i)
      MPI_Allreduce(in.data(), out.data(), count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < iters; ++i) {
      const double start = MPI_Wtime();
      MPI_Allreduce(in.data(), out.data(), count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      t[static_cast<size_t>(i)] = MPI_Wtime() - start;
    }
    std::nth_element(t.begin(), t.begin() + iters / 2, t.end());
    double p50 = t[static_cast<size_t>(iters / 2)] * 1e6, worst = 0;
    MPI_Reduce(&p50, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) std::printf("%zu %.3f\n", bytes, worst);
  }
  MPI_Finalize();
  return 0;
}
