/* switchagg-cg: conjugate gradients on the 3-D Poisson problem, hybrid
 * MPI + OpenMP (MPI_THREAD_FUNNELED), the latency-bound pattern of many HPC
 * codes: per iteration one halo exchange and two one-double allreduces.
 *
 *   -laplace(u) = 1 on the unit cube, u = 0 on its boundary, n^3 interior
 *   points, 7-point stencil (scaled by h^2). The z axis is cut into slabs,
 *   one per rank; OpenMP threads share each rank's stencil and dot products.
 *
 *   x0 = 0, r = b, p = r
 *   repeat: q = A p; alpha = (r.r) / (p.q); x += alpha p; r -= alpha q;
 *           beta = (r.r)_new / (r.r); p = r + beta p
 *
 * Rank 0 prints the relative residual |r|/|b| after each iteration with 17
 * significant digits (doubles round-trip), so two runs' histories compare
 * bitwise. Dot products are reproducible: each thread sums a fixed range,
 * the partial sums are added in thread order, then MPI_Allreduce adds the
 * ranks' sums (deterministic for a given path; with 2 ranks on every path).
 * With --dot-parts P > 1 each rank's range is cut into P fixed parts, one
 * MPI_Allreduce adds the ranks' P part sums element-wise and the P results
 * are added in order: the ranks' sums are added in a different order per
 * element on paths that cut the vector (ring), so paths differ in the bits
 * even at 3 ranks, where one double is added as (r0 + r1) + r2 by every
 * path.
 *
 *   switchagg-cg [--n N] [--iters K] [--tol T] [--dot-parts P]
 */
#include <dlfcn.h>
#include <math.h>
#include <mpi.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "switchagg/coll/diagnostics.h"

struct slab {
  int n;      /* interior points per axis */
  int z0, nz; /* this rank's planes [z0, z0 + nz) */
  int below, above; /* neighbour ranks or MPI_PROC_NULL */
  size_t plane;     /* points per plane: n * n */
  int parts;        /* --dot-parts */
  double allreduce_s;
};

enum { kMaxParts = 64 };

/* Index of point (x, y, local plane z) in an array with one halo plane on
 * each side (z = -1 and z = nz). */
static size_t at(const struct slab *s, int x, int y, int z) {
  return (size_t)(z + 1) * s->plane + (size_t)y * (size_t)s->n + (size_t)x;
}

static double *field(const struct slab *s) {
  double *v = calloc((size_t)(s->nz + 2) * s->plane, sizeof(double));
  if (!v) MPI_Abort(MPI_COMM_WORLD, 2);
  return v;
}

/* Fills p's halo planes from the neighbours (the main thread only). */
static void exchange_halo(const struct slab *s, double *p) {
  const int count = (int)s->plane;
  MPI_Sendrecv(p + at(s, 0, 0, s->nz - 1), count, MPI_DOUBLE, s->above, 0, p + at(s, 0, 0, -1),
               count, MPI_DOUBLE, s->below, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Sendrecv(p + at(s, 0, 0, 0), count, MPI_DOUBLE, s->below, 1, p + at(s, 0, 0, s->nz), count,
               MPI_DOUBLE, s->above, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

/* q = A p (7-point stencil; the outer boundary is zero). */
static void apply(const struct slab *s, double *p, double *q) {
  const int n = s->n;
  exchange_halo(s, p);
#pragma omp parallel for schedule(static) collapse(2)
  for (int z = 0; z < s->nz; ++z) {
    for (int y = 0; y < n; ++y) {
      for (int x = 0; x < n; ++x) {
        double sum = 6.0 * p[at(s, x, y, z)];
        if (x > 0) sum -= p[at(s, x - 1, y, z)];
        if (x < n - 1) sum -= p[at(s, x + 1, y, z)];
        if (y > 0) sum -= p[at(s, x, y - 1, z)];
        if (y < n - 1) sum -= p[at(s, x, y + 1, z)];
        sum -= p[at(s, x, y, z - 1)] + p[at(s, x, y, z + 1)];
        q[at(s, x, y, z)] = sum;
      }
    }
  }
}

/* MPI_Allreduce (sum) of count doubles, timed. */
static void sum_ranks(struct slab *s, const double *local, double *global, int count) {
  const double t0 = MPI_Wtime();
  MPI_Allreduce(local, global, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  s->allreduce_s += MPI_Wtime() - t0;
}

/* Global a.b with --dot-parts P: P fixed parts per rank, each summed in
 * index order, one MPI_Allreduce of P doubles, the results added in order. */
static double dot_parts(struct slab *s, const double *a, const double *b) {
  const size_t begin = at(s, 0, 0, 0), len = at(s, 0, 0, s->nz) - begin;
  double part[kMaxParts], global[kMaxParts];
#pragma omp parallel for schedule(static)
  for (int k = 0; k < s->parts; ++k) {
    const size_t lo = begin + len * (size_t)k / (size_t)s->parts,
                 hi = begin + len * (size_t)(k + 1) / (size_t)s->parts;
    double sum = 0.0;
    for (size_t i = lo; i < hi; ++i) sum += a[i] * b[i];
    part[k] = sum;
  }
  sum_ranks(s, part, global, s->parts);
  double total = 0.0;
  for (int k = 0; k < s->parts; ++k) total += global[k];
  return total;
}

/* Global a.b over the interior: fixed per-thread ranges, partials added in
 * thread order, then one MPI_Allreduce of one double. */
static double dot(struct slab *s, const double *a, const double *b) {
  if (s->parts > 1) return dot_parts(s, a, b);
  const size_t begin = at(s, 0, 0, 0), end = at(s, 0, 0, s->nz);
  double partial[256] = {0};
  int threads = 1;
#pragma omp parallel
  {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    const size_t len = end - begin, lo = begin + len * (size_t)t / (size_t)nt,
                 hi = begin + len * (size_t)(t + 1) / (size_t)nt;
    double sum = 0.0;
    for (size_t i = lo; i < hi; ++i) sum += a[i] * b[i];
    if (t < 256) partial[t] = sum;
#pragma omp single
    threads = nt < 256 ? nt : 256;
  }
  double local = 0.0, global = 0.0;
  for (int t = 0; t < threads; ++t) local += partial[t];
  sum_ranks(s, &local, &global, 1);
  return global;
}

/* y += a x over the interior. */
static void axpy(const struct slab *s, double a, const double *x, double *y) {
  const size_t begin = at(s, 0, 0, 0), end = at(s, 0, 0, s->nz);
#pragma omp parallel for schedule(static)
  for (size_t i = begin; i < end; ++i) y[i] += a * x[i];
}

/* p = r + beta p over the interior. */
static void direction(const struct slab *s, const double *r, double beta, double *p) {
  const size_t begin = at(s, 0, 0, 0), end = at(s, 0, 0, s->nz);
#pragma omp parallel for schedule(static)
  for (size_t i = begin; i < end; ++i) p[i] = r[i] + beta * p[i];
}

static const char *served_by(void) {
  switchagg_coll_last_algorithm_fn last =
      (switchagg_coll_last_algorithm_fn)dlsym(RTLD_DEFAULT, SWITCHAGG_COLL_LAST_ALGORITHM_SYMBOL);
  const char *path = last ? last(MPI_COMM_WORLD) : NULL;
  return path ? path : "not switchagg";
}

int main(int argc, char **argv) {
  int provided, rank, size, n = 48, max_iters = 200, parts = 1;
  double tol = 1e-8;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--n") == 0) n = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--iters") == 0) max_iters = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--tol") == 0) tol = atof(argv[i + 1]);
    else if (strcmp(argv[i], "--dot-parts") == 0) parts = atoi(argv[i + 1]);
  }
  if (n < size || provided < MPI_THREAD_FUNNELED || parts < 1 || parts > kMaxParts) {
    if (rank == 0)
      fprintf(stderr,
              "switchagg-cg: need n >= ranks, MPI_THREAD_FUNNELED and 1 <= --dot-parts <= %d\n",
              kMaxParts);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  struct slab s = {n, n * rank / size, n * (rank + 1) / size - n * rank / size,
                   rank > 0 ? rank - 1 : MPI_PROC_NULL,
                   rank < size - 1 ? rank + 1 : MPI_PROC_NULL, (size_t)n * (size_t)n, parts, 0.0};
  double *x = field(&s), *r = field(&s), *p = field(&s), *q = field(&s);
  const double h = 1.0 / (n + 1);
  for (size_t i = at(&s, 0, 0, 0); i < at(&s, 0, 0, s.nz); ++i) r[i] = p[i] = h * h;
  double rr = dot(&s, r, r);
  const double norm_b = sqrt(rr);
  if (rank == 0)
    printf("cg: %d^3 points, %d ranks x %d OpenMP threads, tol %.1e, %d double(s) per allreduce\n",
           n, size, omp_get_max_threads(), tol, parts);
  MPI_Barrier(MPI_COMM_WORLD);
  s.allreduce_s = 0.0;
  const double start = MPI_Wtime();
  int k = 0;
  for (k = 1; k <= max_iters; ++k) {
    apply(&s, p, q);
    const double alpha = rr / dot(&s, p, q);
    axpy(&s, alpha, p, x);
    axpy(&s, -alpha, q, r);
    const double rr_new = dot(&s, r, r);
    if (rank == 0) printf("iter %4d residual %.17e\n", k, sqrt(rr_new) / norm_b);
    if (sqrt(rr_new) / norm_b < tol) break;
    direction(&s, r, rr_new / rr, p);
    rr = rr_new;
  }
  const double elapsed = MPI_Wtime() - start;
  double allreduce_max = 0.0;
  MPI_Reduce(&s.allreduce_s, &allreduce_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    printf("%s after %d iterations: %.3f s, %.3f s in MPI_Allreduce (%d calls, max over ranks)\n",
           k <= max_iters ? "converged" : "stopped", k <= max_iters ? k : max_iters, elapsed,
           allreduce_max, 2 * (k <= max_iters ? k : max_iters));
    printf("allreduce served by: %s\n", served_by());
  }
  free(x);
  free(r);
  free(p);
  free(q);
  MPI_Finalize();
  return 0;
}
