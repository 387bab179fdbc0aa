/* Many nonblocking collectives in flight at once, of the kinds switchagg
 * serves and of the kinds it leaves to the MPI library, over several
 * communicators, completed in a random order by every completion call MPI
 * has (MPI_Wait, MPI_Test loops, MPI_Waitany, MPI_Testany, MPI_Waitsome,
 * MPI_Testsome, MPI_Waitall, MPI_Testall), with random short sleeps; point
 * to point pairs in the mix. The pattern of MPICH's own coll test suite
 * ("nonblocking3"), written here from its description, which hung the
 * PMPI layer (docs/pmpi.md "Completion calls that never make progress").
 *
 *   mpi_nbc_mix_check [--iters N] [--window W] [--comms C] [--threads T]
 *                     [--sleep-one-in K] [--sleep-us U] [--seed S]
 *                     [--bound-s B] [--large-one-in L]
 *                     [--expect switch|previous|any]
 *
 * Every rank posts the same sequence of calls on each communicator (a
 * generator seeded alike everywhere); which requests it completes when,
 * and how, comes from a generator of its own, so ranks complete in
 * different orders (legal: MPI fixes only the posting order). Every
 * result is checked element by element against values computed here.
 *
 * --threads T (T > 1: MPI_THREAD_MULTIPLE): T threads per rank post and
 * complete at once, each on its own C communicators.
 * --expect switch: at least one call of each thread's communicators was
 * counted <kind>:switch on this rank (the switch path took part); previous:
 * none was; any: no check of the path.
 *
 * A hang must end: a watchdog thread fails the run (exit 3) when no
 * request of this rank completed for B seconds (default 60), and names
 * what was outstanding. Verdicts travel point to point (MPI_Send of each
 * rank's counts to rank 0, never through a collective): rank 0 prints
 * "PASS <cases>" only when every rank reported, with no failure and at
 * least one checked call. */
#include <dlfcn.h>
#include <inttypes.h>
#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "switchagg/coll/diagnostics.h"

enum { kMaxWindow = 64, kMaxComms = 16, kMaxThreads = 4, kSmall = 10, kLarge = 16384 };

static int g_rank, g_size;
static int g_iters = 2000, g_window = 20, g_comms = 4, g_threads = 1;
static int g_sleep_one_in = 200, g_sleep_us = 20000, g_large_one_in = 40;
static unsigned g_seed = 12345;
static double g_bound_s = 60;
static const char *g_expect = "any";
static switchagg_coll_comm_counter_fn g_counter;

/* ---- the kinds ----------------------------------------------------------- */

enum kind {
  K_IBCAST, K_IBCAST_STRIDED, K_IBARRIER, K_IREDUCE, K_IALLREDUCE_INT, K_IALLREDUCE_DOUBLE,
  K_IALLREDUCE_INPLACE, K_IALLTOALL, K_IALLTOALLV, K_IGATHER, K_ISCATTER,
  K_IREDUCE_SCATTER, K_IREDUCE_SCATTER_BLOCK, K_IALLGATHER, K_IALLGATHERV, K_ISCAN,
  K_IEXSCAN, K_P2P, K_NKINDS
};
static const char *const kKindNames[K_NKINDS] = {
    "Ibcast", "Ibcast(strided)", "Ibarrier", "Ireduce", "Iallreduce(int)",
    "Iallreduce(double)", "Iallreduce(in place)", "Ialltoall", "Ialltoallv", "Igather",
    "Iscatter", "Ireduce_scatter", "Ireduce_scatter_block", "Iallgather", "Iallgatherv",
    "Iscan", "Iexscan", "Isend/Irecv"};
/* The counters of the kinds switchagg can serve through the switch. */
static const char *const kServedCounters[] = {"iallreduce:switch", "ibarrier:switch",
                                               "iallgather:switch", "ibcast:switch",
                                               "ireduce_scatter_block:switch"};

/* Small generators: the same sequence everywhere for what must agree. */
static unsigned next_rand(unsigned *s) {
  *s = *s * 1103515245u + 12345u;
  return (*s >> 8) & 0xffffffu;
}

/* One posted call: its buffers and what to check once complete. */
struct call {
  int live;
  enum kind kind;
  int comm_index, seq, n; /* n: elements per block */
  MPI_Comm comm;
  int *ibuf, *irecv, *counts, *displs;
  double *dbuf, *drecv;
  MPI_Datatype type; /* K_IBCAST_STRIDED: a vector type, freed at once */
};

struct worker {
  int index;
  MPI_Comm comms[kMaxComms];
  struct call calls[kMaxWindow];
  MPI_Request reqs[kMaxWindow];
  long failures, cases;
  pthread_t thread;
};

static struct worker g_workers[kMaxThreads];
static atomic_long g_last_completion_ns;
static atomic_int g_finished;

static long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long)ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static void fail(struct worker *w, const struct call *c, const char *what, long i, long got,
                 long want) {
  if (w->failures++ < 8)
    fprintf(stderr,
            "FAIL rank %d thread %d comm %d call %d %s (n %d): %s at %ld: got %ld, want %ld\n",
            g_rank, w->index, c->comm_index, c->seq, kKindNames[c->kind], c->n, what, i, got,
            want);
}

/* Rank r's input element i of call seq: small integers (double sums exact). */
static int value(int r, int seq, int i) { return (r + 1) * 3 + (seq % 11) * 5 + i % 23; }

static void *xmalloc(size_t bytes) {
  void *p = malloc(bytes ? bytes : 1);
  if (!p) {
    fprintf(stderr, "mpi_nbc_mix_check: out of memory\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  return p;
}

static void post(struct worker *w, struct call *c, MPI_Request *req) {
  const int n = c->n, p = g_size, me = g_rank;
  MPI_Comm comm = c->comm;
  c->ibuf = xmalloc(sizeof(int) * (size_t)n * p * 2);
  c->irecv = xmalloc(sizeof(int) * (size_t)n * p * 2);
  c->counts = xmalloc(sizeof(int) * p);
  c->displs = xmalloc(sizeof(int) * p);
  c->dbuf = c->drecv = NULL;
  c->type = MPI_DATATYPE_NULL;
  /* Every kind's input is this rank's values unless its case says else. */
  for (int i = 0; i < n * p * 2; ++i) c->ibuf[i] = value(me, c->seq, i), c->irecv[i] = -7;
  for (int i = 0; i < p; ++i) c->counts[i] = n, c->displs[i] = i * n;
  *req = MPI_REQUEST_NULL;
  (void)w;
  switch (c->kind) {
    case K_IBCAST:
      for (int i = 0; i < n; ++i) c->ibuf[i] = me == 0 ? value(0, c->seq, i) : -1;
      MPI_Ibcast(c->ibuf, n, MPI_INT, 0, comm, req);
      break;
    case K_IBCAST_STRIDED: {
      /* every other int of 2n: packed by the layer; the type freed before the wait */
      const int root = c->seq % p;
      for (int i = 0; i < 2 * n; ++i) c->ibuf[i] = me == root ? value(root, c->seq, i) : -1;
      MPI_Type_vector(n, 1, 2, MPI_INT, &c->type);
      MPI_Type_commit(&c->type);
      MPI_Ibcast(c->ibuf, 1, c->type, root, comm, req);
      MPI_Type_free(&c->type);
      break;
    }
    case K_IBARRIER:
      MPI_Ibarrier(comm, req);
      break;
    case K_IREDUCE:
      MPI_Ireduce(c->ibuf, c->irecv, n, MPI_INT, MPI_SUM, p - 1, comm, req);
      break;
    case K_IALLREDUCE_INT:
      MPI_Iallreduce(c->ibuf, c->irecv, n, MPI_INT, MPI_SUM, comm, req);
      break;
    case K_IALLREDUCE_DOUBLE:
      c->dbuf = xmalloc(sizeof(double) * n);
      c->drecv = xmalloc(sizeof(double) * n);
      for (int i = 0; i < n; ++i) c->dbuf[i] = value(me, c->seq, i), c->drecv[i] = -7;
      MPI_Iallreduce(c->dbuf, c->drecv, n, MPI_DOUBLE, MPI_MAX, comm, req);
      break;
    case K_IALLREDUCE_INPLACE:
      for (int i = 0; i < n; ++i) c->irecv[i] = value(me, c->seq, i);
      MPI_Iallreduce(MPI_IN_PLACE, c->irecv, n, MPI_INT, MPI_SUM, comm, req);
      break;
    case K_IALLTOALL:
    case K_IALLTOALLV: /* block j for rank j */
      for (int j = 0; j < p; ++j)
        for (int i = 0; i < n; ++i) c->ibuf[j * n + i] = value(me, c->seq, j * 1000 + i);
      if (c->kind == K_IALLTOALL) {
        MPI_Ialltoall(c->ibuf, n, MPI_INT, c->irecv, n, MPI_INT, comm, req);
        break;
      }
      MPI_Ialltoallv(c->ibuf, c->counts, c->displs, MPI_INT, c->irecv, c->counts, c->displs,
                     MPI_INT, comm, req);
      break;
    case K_IGATHER:
      MPI_Igather(c->ibuf, n, MPI_INT, c->irecv, n, MPI_INT, 0, comm, req);
      break;
    case K_ISCATTER:
      for (int i = 0; i < n * p; ++i) c->ibuf[i] = me == 0 ? value(0, c->seq, i) : -1;
      MPI_Iscatter(c->ibuf, n, MPI_INT, c->irecv, n, MPI_INT, 0, comm, req);
      break;
    case K_IREDUCE_SCATTER:
      MPI_Ireduce_scatter(c->ibuf, c->irecv, c->counts, MPI_INT, MPI_SUM, comm, req);
      break;
    case K_IREDUCE_SCATTER_BLOCK:
      MPI_Ireduce_scatter_block(c->ibuf, c->irecv, n, MPI_INT, MPI_SUM, comm, req);
      break;
    case K_IALLGATHER:
      MPI_Iallgather(c->ibuf, n, MPI_INT, c->irecv, n, MPI_INT, comm, req);
      break;
    case K_IALLGATHERV:
      MPI_Iallgatherv(c->ibuf, n, MPI_INT, c->irecv, c->counts, c->displs, MPI_INT, comm, req);
      break;
    case K_ISCAN:
      MPI_Iscan(c->ibuf, c->irecv, n, MPI_INT, MPI_SUM, comm, req);
      break;
    case K_IEXSCAN:
      MPI_Iexscan(c->ibuf, c->irecv, n, MPI_INT, MPI_SUM, comm, req);
      break;
    case K_P2P: /* even ranks send to the next odd rank; a last even rank sits out */
      if (me % 2 == 0 && me + 1 < p)
        MPI_Isend(c->ibuf, n, MPI_INT, me + 1, 77, comm, req);
      else if (me % 2 == 1)
        MPI_Irecv(c->irecv, n, MPI_INT, me - 1, 77, comm, req);
      break;
    case K_NKINDS:
      break;
  }
  c->live = 1;
}

static long sum_of(int seq, int i, int upto) { /* ranks 0..upto-1 */
  long s = 0;
  for (int r = 0; r < upto; ++r) s += value(r, seq, i);
  return s;
}

/* A gather's result: rank j's block of n elements, in rank order. */
static void check_gathered(struct worker *w, const struct call *c, const char *what, int p) {
  const int n = c->n;
  for (int j = 0; j < p; ++j)
    for (int i = 0; i < n; ++i)
      if (c->irecv[j * n + i] != value(j, c->seq, i))
        return fail(w, c, what, j * n + i, c->irecv[j * n + i], value(j, c->seq, i));
}

static void check(struct worker *w, struct call *c) {
  const int n = c->n, p = g_size, me = g_rank;
  ++w->cases;
  switch (c->kind) {
    case K_IBCAST:
      for (int i = 0; i < n; ++i)
        if (c->ibuf[i] != value(0, c->seq, i)) return fail(w, c, "bcast", i, c->ibuf[i], value(0, c->seq, i));
      break;
    case K_IBCAST_STRIDED: {
      const int root = c->seq % p;
      for (int i = 0; i < 2 * n; ++i) {
        const int want = (i % 2 == 0 || me == root) ? value(root, c->seq, i) : -1;
        if (c->ibuf[i] != want) return fail(w, c, "strided bcast", i, c->ibuf[i], want);
      }
      break;
    }
    case K_IBARRIER:
      break;
    case K_IREDUCE:
      if (me == p - 1)
        for (int i = 0; i < n; ++i)
          if (c->irecv[i] != sum_of(c->seq, i, p)) return fail(w, c, "reduce", i, c->irecv[i], sum_of(c->seq, i, p));
      break;
    case K_IALLREDUCE_INT:
    case K_IALLREDUCE_INPLACE:
      for (int i = 0; i < n; ++i)
        if (c->irecv[i] != sum_of(c->seq, i, p)) return fail(w, c, "allreduce", i, c->irecv[i], sum_of(c->seq, i, p));
      break;
    case K_IALLREDUCE_DOUBLE:
      for (int i = 0; i < n; ++i)
        if (c->drecv[i] != (double)value(p - 1, c->seq, i))
          return fail(w, c, "allreduce max", i, (long)c->drecv[i], value(p - 1, c->seq, i));
      break;
    case K_IALLTOALL:
    case K_IALLTOALLV:
      for (int j = 0; j < p; ++j)
        for (int i = 0; i < n; ++i) {
          const int want = value(j, c->seq, me * 1000 + i);
          if (c->irecv[j * n + i] != want) return fail(w, c, "alltoall", j * n + i, c->irecv[j * n + i], want);
        }
      break;
    case K_IGATHER:
      if (me == 0) check_gathered(w, c, "gather", p);
      break;
    case K_ISCATTER:
      for (int i = 0; i < n; ++i)
        if (c->irecv[i] != value(0, c->seq, me * n + i)) return fail(w, c, "scatter", i, c->irecv[i], value(0, c->seq, me * n + i));
      break;
    case K_IREDUCE_SCATTER:
    case K_IREDUCE_SCATTER_BLOCK:
      for (int i = 0; i < n; ++i)
        if (c->irecv[i] != sum_of(c->seq, me * n + i, p)) return fail(w, c, "reduce_scatter", i, c->irecv[i], sum_of(c->seq, me * n + i, p));
      break;
    case K_IALLGATHER:
    case K_IALLGATHERV:
      check_gathered(w, c, "allgather", p);
      break;
    case K_ISCAN:
      for (int i = 0; i < n; ++i)
        if (c->irecv[i] != sum_of(c->seq, i, me + 1)) return fail(w, c, "scan", i, c->irecv[i], sum_of(c->seq, i, me + 1));
      break;
    case K_IEXSCAN:
      if (me > 0)
        for (int i = 0; i < n; ++i)
          if (c->irecv[i] != sum_of(c->seq, i, me)) return fail(w, c, "exscan", i, c->irecv[i], sum_of(c->seq, i, me));
      break;
    case K_P2P:
      if (me % 2 == 1)
        for (int i = 0; i < n; ++i)
          if (c->irecv[i] != value(me - 1, c->seq, i)) return fail(w, c, "recv", i, c->irecv[i], value(me - 1, c->seq, i));
      break;
    case K_NKINDS:
      break;
  }
}

static void retire(struct worker *w, int slot) {
  struct call *c = &w->calls[slot];
  if (!c->live) return;
  check(w, c);
  free(c->ibuf), free(c->irecv), free(c->counts), free(c->displs), free(c->dbuf), free(c->drecv);
  c->live = 0;
  atomic_store(&g_last_completion_ns, now_ns());
}

/* Completes one or more of the window's requests with a random call. */
static void complete_some(struct worker *w, unsigned *local) {
  int idx[kMaxWindow], outcount = 0, index = MPI_UNDEFINED, flag = 0;
  MPI_Status statuses[kMaxWindow];
  const int W = g_window;
  switch (next_rand(local) % 8) {
    case 0: { /* MPI_Wait on a random live one */
      int slot = (int)(next_rand(local) % W);
      while (!w->calls[slot].live) slot = (slot + 1) % W;
      MPI_Wait(&w->reqs[slot], MPI_STATUS_IGNORE);
      retire(w, slot);
      break;
    }
    case 1: { /* MPI_Test until it completes */
      int slot = (int)(next_rand(local) % W);
      while (!w->calls[slot].live) slot = (slot + 1) % W;
      while (!flag) MPI_Test(&w->reqs[slot], &flag, MPI_STATUS_IGNORE);
      retire(w, slot);
      break;
    }
    case 2:
      MPI_Waitany(W, w->reqs, &index, MPI_STATUS_IGNORE);
      if (index != MPI_UNDEFINED) retire(w, index);
      break;
    case 3:
      while (!flag) MPI_Testany(W, w->reqs, &index, &flag, MPI_STATUS_IGNORE);
      if (index != MPI_UNDEFINED) retire(w, index);
      break;
    case 4:
      MPI_Waitsome(W, w->reqs, &outcount, idx, statuses);
      for (int i = 0; outcount != MPI_UNDEFINED && i < outcount; ++i) retire(w, idx[i]);
      break;
    case 5:
      do MPI_Testsome(W, w->reqs, &outcount, idx, statuses);
      while (outcount == 0);
      for (int i = 0; outcount != MPI_UNDEFINED && i < outcount; ++i) retire(w, idx[i]);
      break;
    case 6:
      MPI_Waitall(W, w->reqs, statuses);
      for (int i = 0; i < W; ++i) retire(w, i);
      break;
    default:
      while (!flag) MPI_Testall(W, w->reqs, &flag, statuses);
      for (int i = 0; i < W; ++i) retire(w, i);
      break;
  }
}

static void *run_worker(void *arg) {
  struct worker *w = arg;
  /* shared: the same on every rank (what is posted where); local: this rank's */
  unsigned shared = g_seed * 7919u + (unsigned)w->index * 104729u + 1u;
  unsigned local = g_seed * 31u + (unsigned)g_rank * 2654435761u + (unsigned)w->index;
  for (int i = 0; i < g_window; ++i) w->reqs[i] = MPI_REQUEST_NULL, w->calls[i].live = 0;
  for (int seq = 0; seq < g_iters; ++seq) {
    int slot = -1;
    for (int i = 0; i < g_window && slot < 0; ++i)
      if (!w->calls[i].live) slot = i;
    while (slot < 0) {
      complete_some(w, &local);
      for (int i = 0; i < g_window && slot < 0; ++i)
        if (!w->calls[i].live) slot = i;
    }
    struct call *c = &w->calls[slot];
    c->kind = (enum kind)(next_rand(&shared) % K_NKINDS);
    c->comm_index = (int)(next_rand(&shared) % (unsigned)g_comms);
    c->comm = w->comms[c->comm_index];
    c->seq = seq;
    c->n = next_rand(&shared) % (unsigned)g_large_one_in == 0 ? kLarge : kSmall;
    post(w, c, &w->reqs[slot]);
    if (w->reqs[slot] == MPI_REQUEST_NULL) retire(w, slot); /* a rank without a p2p peer */
    if (g_sleep_one_in > 0 && next_rand(&local) % (unsigned)g_sleep_one_in == 0)
      usleep((useconds_t)(next_rand(&local) % (unsigned)(g_sleep_us + 1)));
  }
  MPI_Status statuses[kMaxWindow];
  MPI_Waitall(g_window, w->reqs, statuses);
  for (int i = 0; i < g_window; ++i) retire(w, i);
  return NULL;
}

/* Fails the run when this rank completed nothing for the bound. */
static void *watchdog(void *arg) {
  (void)arg;
  while (!atomic_load(&g_finished)) {
    usleep(200000);
    const double idle_s = (double)(now_ns() - atomic_load(&g_last_completion_ns)) / 1e9;
    if (idle_s < g_bound_s) continue;
    fprintf(stderr, "FAIL rank %d: no request completed for %.0f s; outstanding:", g_rank, idle_s);
    for (int t = 0; t < g_threads; ++t)
      for (int i = 0; i < g_window; ++i)
        if (g_workers[t].calls[i].live)
          fprintf(stderr, " [thread %d comm %d call %d %s n %d]", t,
                  g_workers[t].calls[i].comm_index, g_workers[t].calls[i].seq,
                  kKindNames[g_workers[t].calls[i].kind], g_workers[t].calls[i].n);
    fprintf(stderr, "\n");
    fflush(stderr);
    _exit(3);
  }
  return NULL;
}

static int arg_int(int argc, char **argv, int *i) {
  if (*i + 1 >= argc) {
    fprintf(stderr, "mpi_nbc_mix_check: %s needs a value\n", argv[*i]);
    exit(2);
  }
  return atoi(argv[++*i]);
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--iters")) g_iters = arg_int(argc, argv, &i);
    else if (!strcmp(argv[i], "--window")) g_window = arg_int(argc, argv, &i);
    else if (!strcmp(argv[i], "--comms")) g_comms = arg_int(argc, argv, &i);
    else if (!strcmp(argv[i], "--threads")) g_threads = arg_int(argc, argv, &i);
    else if (!strcmp(argv[i], "--sleep-one-in")) g_sleep_one_in = arg_int(argc, argv, &i);
    else if (!strcmp(argv[i], "--sleep-us")) g_sleep_us = arg_int(argc, argv, &i);
    else if (!strcmp(argv[i], "--large-one-in")) g_large_one_in = arg_int(argc, argv, &i);
    else if (!strcmp(argv[i], "--seed")) g_seed = (unsigned)arg_int(argc, argv, &i);
    else if (!strcmp(argv[i], "--bound-s")) g_bound_s = arg_int(argc, argv, &i);
    else if (!strcmp(argv[i], "--expect") && i + 1 < argc) g_expect = argv[++i];
    else {
      fprintf(stderr, "mpi_nbc_mix_check: unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  if (g_window < 1 || g_window > kMaxWindow || g_comms < 1 || g_comms > kMaxComms ||
      g_threads < 1 || g_threads > kMaxThreads || g_large_one_in < 1 || g_iters < 1) {
    fprintf(stderr, "mpi_nbc_mix_check: --window 1..%d, --comms 1..%d, --threads 1..%d, "
            "--large-one-in >= 1, --iters >= 1\n", kMaxWindow, kMaxComms, kMaxThreads);
    return 2;
  }
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, g_threads > 1 ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE,
                  &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  if (g_threads > 1 && provided != MPI_THREAD_MULTIPLE) {
    fprintf(stderr, "FAIL rank %d: MPI_THREAD_MULTIPLE not provided\n", g_rank);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  g_counter = (switchagg_coll_comm_counter_fn)dlsym(RTLD_DEFAULT,
                                                    SWITCHAGG_COLL_COMM_COUNTER_SYMBOL);
  if (strcmp(g_expect, "any") != 0 && !g_counter) {
    fprintf(stderr, "FAIL rank %d: switchagg is not loaded (no diagnostics symbol)\n", g_rank);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  for (int t = 0; t < g_threads; ++t) {
    g_workers[t].index = t;
    for (int c = 0; c < g_comms; ++c) MPI_Comm_dup(MPI_COMM_WORLD, &g_workers[t].comms[c]);
  }
  atomic_store(&g_last_completion_ns, now_ns());
  pthread_t dog;
  pthread_create(&dog, NULL, watchdog, NULL);
  const double t0 = MPI_Wtime();
  for (int t = 0; t < g_threads; ++t) pthread_create(&g_workers[t].thread, NULL, run_worker, &g_workers[t]);
  for (int t = 0; t < g_threads; ++t) pthread_join(g_workers[t].thread, NULL);
  const double seconds = MPI_Wtime() - t0;
  atomic_store(&g_finished, 1);
  pthread_join(dog, NULL);

  /* This rank's verdict: failures, cases, calls the switch served. */
  long mine[3] = {0, 0, 0};
  for (int t = 0; t < g_threads; ++t) {
    struct worker *w = &g_workers[t];
    uint64_t served = 0;
    for (int c = 0; c < g_comms; ++c)
      for (size_t k = 0; g_counter && k < sizeof kServedCounters / sizeof *kServedCounters; ++k) {
        const uint64_t v = g_counter(w->comms[c], kServedCounters[k]);
        if (v != UINT64_MAX) served += v;
      }
    if (!strcmp(g_expect, "switch") && served == 0) {
      fprintf(stderr, "FAIL rank %d thread %d: no call counted :switch\n", g_rank, t);
      ++w->failures;
    }
    if (!strcmp(g_expect, "previous") && served != 0) {
      fprintf(stderr, "FAIL rank %d thread %d: %" PRIu64 " calls counted :switch\n", g_rank, t,
              served);
      ++w->failures;
    }
    mine[0] += w->failures;
    mine[1] += w->cases;
    mine[2] += (long)served;
    for (int c = 0; c < g_comms; ++c) MPI_Comm_free(&w->comms[c]);
  }
  if (g_rank != 0) {
    MPI_Send(mine, 3, MPI_LONG, 0, 4242, MPI_COMM_WORLD);
  } else {
    long failures = mine[0], cases = mine[1], served = mine[2];
    for (int r = 1; r < g_size; ++r) {
      long theirs[3];
      MPI_Recv(theirs, 3, MPI_LONG, r, 4242, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      failures += theirs[0], cases += theirs[1], served += theirs[2];
    }
    printf("mpi_nbc_mix_check: %d ranks x %d threads, %d calls each over %d communicators, "
           "%.2f s; %ld results checked, %ld calls counted :switch, %ld failures\n",
           g_size, g_threads, g_iters, g_comms, seconds, cases, served, failures);
    if (failures == 0 && cases > 0) printf("PASS %ld\n", cases);
    else printf("FAILED\n");
    fflush(stdout);
  }
  MPI_Finalize();
  return 0;
}
