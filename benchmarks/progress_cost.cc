// What Open MPI's own operations pay for switchagg's progress callback:
// after one MPI_Allreduce (which creates the component's UCX worker and, at
// the first call, the callback's work), times MPI_Barrier and an 8-byte
// MPI_Sendrecv ring exchange, both served by Open MPI (ob1/vader, tuned).
// Run it with the component enabled and with coll_switchagg_enable=0 side
// by side (benchmarks/progress_cost.sh).
//
//   progress_cost [--iters N]     prints "barrier_us=X sendrecv_us=Y" (rank 0)
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int iters = 20000;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--iters") == 0) iters = std::atoi(argv[i + 1]);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  // One large allreduce: a host algorithm runs, the worker exists from now on.
  std::vector<double> a(1 << 18, 1.0), b(a.size());
  MPI_Allreduce(a.data(), b.data(), static_cast<int>(a.size()), MPI_DOUBLE, MPI_SUM,
                MPI_COMM_WORLD);
  for (int w = 0; w < 1000; ++w) MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (int i = 0; i < iters; ++i) MPI_Barrier(MPI_COMM_WORLD);
  const double barrier_us = (MPI_Wtime() - t0) / iters * 1e6;
  const int right = (rank + 1) % size, left = (rank - 1 + size) % size;
  double out = rank, in = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  t0 = MPI_Wtime();
  for (int i = 0; i < iters; ++i)
    MPI_Sendrecv(&out, 1, MPI_DOUBLE, right, 1, &in, 1, MPI_DOUBLE, left, 1, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
  const double sendrecv_us = (MPI_Wtime() - t0) / iters * 1e6;
  if (rank == 0) std::printf("barrier_us=%.3f sendrecv_us=%.3f\n", barrier_us, sendrecv_us);
  MPI_Finalize();
  return b[0] == size ? 0 : 1;
}
