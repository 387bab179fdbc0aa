/* mpi_cross_progress_check: MPI's progress rule across communicators.
 *
 * Every rank posts MPI_Iallreduce (or MPI_Ibarrier) on communicator c1; then
 * even ranks make a blocking MPI_Allreduce on c2 before waiting for the c1
 * request, odd ranks wait first and call the c2 allreduce after. A correct
 * MPI program: an even rank blocked in the c2 call must still progress its
 * c1 request, which the odd ranks wait for before they join c2. Before the
 * fix a blocking call served by switchagg (a host algorithm's or the switch
 * path's wait) did not run Open MPI's progress, and this hung.
 *
 *   mpi_cross_progress_check [--bytes N] [--iters K] [--ibarrier]
 *                            [--bound-s S] [--expect-c2 PATH]
 *
 * Checks every result exactly, prints "PASS cross-progress ..." on rank 0;
 * a run still going after --bound-s seconds (default 60) prints what it
 * waited for and exits 1 (a hang must end in an error naming the wait).
 * --expect-c2 PATH: the c2 allreduces must have been served by PATH (a
 * switchagg algorithm name, "switch", or "previous"). */
#include <dlfcn.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "switchagg/coll/diagnostics.h"

static volatile const char *stage = "start";
static int world_rank = 0;

static void on_alarm(int sig) {
  (void)sig;
  char line[256];
  int n = snprintf(line, sizeof line, "FAIL rank %d: still waiting after the bound in: %s\n",
                   world_rank, (const char *)stage);
  if (n > 0) (void)!write(2, line, (size_t)n);
  _exit(1);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long bytes = 1 << 20;
  int iters = 5, ibarrier = 0, bound_s = 60;
  const char *expect_c2 = NULL;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--bytes") && i + 1 < argc) bytes = atol(argv[++i]);
    else if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--bound-s") && i + 1 < argc) bound_s = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--expect-c2") && i + 1 < argc) expect_c2 = argv[++i];
    else if (!strcmp(argv[i], "--ibarrier")) ibarrier = 1;
    else {
      if (world_rank == 0) fprintf(stderr, "mpi_cross_progress_check: bad argument '%s'\n", argv[i]);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  signal(SIGALRM, on_alarm);
  alarm((unsigned)bound_s);
  MPI_Comm c1, c2;
  MPI_Comm_dup(MPI_COMM_WORLD, &c1);
  MPI_Comm_dup(MPI_COMM_WORLD, &c2);
  const int n = (int)(bytes / (long)sizeof(double));
  double *in = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
  double *out = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
  for (int it = 0; it < iters; ++it) {
    for (int i = 0; i < n; ++i) in[i] = world_rank + i % 7 + it, out[i] = -1;
    double x = world_rank + 1 + it, y = 0;
    MPI_Request r;
    stage = "posting the c1 request";
    if (ibarrier)
      MPI_Ibarrier(c1, &r);
    else
      MPI_Iallreduce(in, out, n, MPI_DOUBLE, MPI_SUM, c1, &r);
    if (world_rank % 2 == 0) {
      stage = "the blocking MPI_Allreduce on c2 (an odd rank waits for c1 first)";
      MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, c2);
      stage = "MPI_Wait on the c1 request";
      MPI_Wait(&r, MPI_STATUS_IGNORE);
    } else {
      stage = "MPI_Wait on the c1 request (an even rank is in the c2 allreduce)";
      MPI_Wait(&r, MPI_STATUS_IGNORE);
      stage = "the blocking MPI_Allreduce on c2";
      MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, c2);
    }
    const double want_y = size * (size + 1) / 2.0 + (double)size * it;
    if (y != want_y) {
      fprintf(stderr, "FAIL rank %d iteration %d: c2 allreduce %g, expected %g\n", world_rank, it, y,
              want_y);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (int i = 0; !ibarrier && i < n; ++i) {
      const double want = size * (size - 1) / 2.0 + (double)size * (i % 7 + it);
      if (out[i] != want) {
        fprintf(stderr, "FAIL rank %d iteration %d: c1 element %d is %g, expected %g\n", world_rank,
                it, i, out[i], want);
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
    }
  }
  alarm(0);
  switchagg_coll_last_algorithm_fn last =
      (switchagg_coll_last_algorithm_fn)dlsym(RTLD_DEFAULT, SWITCHAGG_COLL_LAST_ALGORITHM_SYMBOL);
  const char *c2_path = last ? last(c2) : NULL;
  if (expect_c2 && (!c2_path || strcmp(c2_path, expect_c2) != 0)) {
    fprintf(stderr, "FAIL rank %d: the c2 allreduce was served by %s, expected %s\n", world_rank,
            c2_path ? c2_path : "(not switchagg)", expect_c2);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (world_rank == 0)
    printf("PASS cross-progress: %d iterations, %s of %ld bytes on c1, c2 served by %s\n", iters,
           ibarrier ? "MPI_Ibarrier" : "MPI_Iallreduce", ibarrier ? 0L : bytes,
           c2_path ? c2_path : "(not switchagg)");
  free(in);
  free(out);
  MPI_Comm_free(&c1);
  MPI_Comm_free(&c2);
  MPI_Finalize();
  return 0;
}
