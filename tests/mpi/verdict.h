/* A check program's verdict, tallied so that the code under test cannot
 * vote on it: every rank sends its (failures, cases) to rank 0 point to
 * point on MPI_COMM_WORLD (MPI_Send / MPI_Recv: switchagg serves
 * collectives only, so an allreduce that returns without writing its
 * result, or writes the same wrong value everywhere, cannot make the sum
 * come out 0). Rank 0 prints one line,
 *
 *   PASS <summary>: <cases> cases checked on <p> ranks, 0 failures
 *
 * only when every rank reported, none failed and every rank checked at
 * least one case; else the same line starting FAIL. The runners
 * (tests/mpi/run_expect.sh with "^PASS", mpirun_lib.sh's expect_pass)
 * also fail on any rank's line starting FAIL.
 *
 * Returns the process's exit code (rank 0: the job's verdict; the other
 * ranks: their own). C and C++. */
#ifndef SWITCHAGG_TESTS_VERDICT_H
#define SWITCHAGG_TESTS_VERDICT_H

#include <mpi.h>
#include <stdio.h>

static inline int switchagg_verdict(long failures, long cases, const char *summary) {
  enum { kTag = 0x5a17 };
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long mine[2];
  mine[0] = failures;
  mine[1] = cases;
  if (rank != 0) {
    MPI_Send(mine, 2, MPI_LONG, 0, kTag, MPI_COMM_WORLD);
    return failures != 0 ? 1 : 0;
  }
  long total_failures = failures, total_cases = cases;
  int idle_ranks = cases > 0 ? 0 : 1;
  for (int r = 1; r < size; ++r) {
    long theirs[2] = {0, 0};
    MPI_Recv(theirs, 2, MPI_LONG, r, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    total_failures += theirs[0];
    total_cases += theirs[1];
    if (theirs[1] <= 0) ++idle_ranks;
  }
  const int pass = total_failures == 0 && idle_ranks == 0;
  printf("%s %s: %ld cases checked on %d ranks, %ld failures", pass ? "PASS" : "FAIL", summary,
         total_cases, size, total_failures);
  if (idle_ranks > 0) printf(", %d rank(s) checked nothing", idle_ranks);
  printf("\n");
  fflush(stdout);
  return pass ? 0 : 1;
}

#endif /* SWITCHAGG_TESTS_VERDICT_H */
