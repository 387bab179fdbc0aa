/* MPI_THREAD_MULTIPLE: T threads per rank, each on its own duplicate of
 * MPI_COMM_WORLD, run thousands of allreduces at the same time (int64 and
 * double SUM, MAX, in place every other call, counts from 1 to 20000) and
 * check every result exactly and which path served it.
 *
 *   mpi_thread_check --expect ring|switch|...|own|host|auto [--threads T]
 *                    [--iters N] [--nonblocking] [--warmup] [--bytes B] [--tuned]
 *
 * --expect own: every allreduce served by one of switchagg's own paths,
 * none handed to the previous module (auto at this thread level); host:
 * every one by one of switchagg's host algorithms (neither the switch nor
 * the previous module); auto: any path.
 *
 * --bytes B: every call a double SUM of B bytes (B / 8 elements; the
 * decision under test is per size) instead of the 1..20000-element cycle.
 * --tuned: every thread's communicator was timed by online tuning
 * (tune:explore_calls > 0) and settled (tune:settled_calls > 0): at this
 * thread level `auto` times switchagg's own paths (docs/selection.md
 * "Threads"). --final host|switch: what tuning settled on, i.e. what served
 * each thread's last call (with --tuned: a settled call).
 *
 * --nonblocking: each call of a thread is also an MPI_Iallreduce, an
 * MPI_Iallgather, an MPI_Ibcast (root rotating), an MPI_Ireduce_scatter_block
 * and an MPI_Ibarrier on its communicator, all outstanding with the
 * blocking allreduce under one MPI_Waitall, every element checked; with
 * --expect switch every one of them must be counted <op>:switch (none
 * handed to the previous module for the thread level).
 *
 * A deadlock between the threads (one holding what another's peers need)
 * shows as a stall error or the CTest timeout. Prints PASS on rank 0. */
#include <dlfcn.h>
#include <inttypes.h>
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "switchagg/coll/diagnostics.h"
#include "verdict.h"

enum { kMaxThreads = 8 };
static const int kCounts[] = {1, 3, 100, 1000, 20000};

static int g_rank, g_size, g_iters = 1000, g_nonblocking = 0, g_warmup = 0, g_tuned = 0;
static int g_fixed_count = 0; /* --bytes B: B / 8 doubles per call */
static const char *g_expect = "auto", *g_final = NULL;
static switchagg_coll_last_algorithm_fn g_last;
static switchagg_coll_comm_counter_fn g_counter;

struct worker {
  int index;
  MPI_Comm comm;
  int failures;
  pthread_t thread;
};

/* Rank r's value at element i of call k on thread t: small integers, so
 * double sums are exact in any order. */
static int64_t contribution(int r, int t, int k, int i) {
  return (int64_t)((r + 1) * 1000 + t * 100 + (k % 17) * 3 + i % 29) - 2000;
}

static int64_t expected(int t, int k, int i, int use_max) {
  int64_t acc = contribution(0, t, k, i);
  for (int r = 1; r < g_size; ++r) {
    int64_t v = contribution(r, t, k, i);
    acc = use_max ? (v > acc ? v : acc) : acc + v;
  }
  return acc;
}

static void fail(struct worker *w, int k, const char *what) {
  if (w->failures++ < 5)
    fprintf(stderr, "FAIL rank %d thread %d call %d: %s\n", g_rank, w->index, k, what);
}

/* The nonblocking calls of call k (--nonblocking), posted before the
 * blocking allreduce and completed after it under one MPI_Waitall. */
enum { kNbElems = 64, kNbRequests = 5 };
struct nb_calls {
  int64_t ar_in[kNbElems], ar_out[kNbElems];
  int32_t ag_in[kNbElems], ag_out[kNbElems * 16];
  int32_t bc[kNbElems];
  int64_t rs_in[kNbElems * 16], rs_out[kNbElems];
  MPI_Request req[kNbRequests];
};

static int32_t nb_value(int r, int t, int k, int i) { return (r + 1) * 7 + t * 3 + k % 13 + i; }

static void post_nonblocking(struct worker *w, int k, struct nb_calls *c) {
  const int n = 1 + k % kNbElems, root = k % g_size;
  for (int i = 0; i < n; ++i) {
    c->ar_in[i] = nb_value(g_rank, w->index, k, i);
    c->ag_in[i] = nb_value(g_rank, w->index, k, i) + 1;
    c->bc[i] = g_rank == root ? nb_value(root, w->index, k, i) + 2 : -1;
  }
  for (int i = 0; i < n * g_size; ++i) c->rs_in[i] = nb_value(g_rank, w->index, k, i) + 3;
  MPI_Iallreduce(c->ar_in, c->ar_out, n, MPI_INT64_T, MPI_SUM, w->comm, &c->req[0]);
  MPI_Iallgather(c->ag_in, n, MPI_INT32_T, c->ag_out, n, MPI_INT32_T, w->comm, &c->req[1]);
  MPI_Ibcast(c->bc, n, MPI_INT32_T, root, w->comm, &c->req[2]);
  MPI_Ireduce_scatter_block(c->rs_in, c->rs_out, n, MPI_INT64_T, MPI_SUM, w->comm, &c->req[3]);
  MPI_Ibarrier(w->comm, &c->req[4]);
}

static int check_nonblocking(struct worker *w, int k, const struct nb_calls *c) {
  const int n = 1 + k % kNbElems, root = k % g_size;
  for (int i = 0; i < n; ++i) {
    int64_t sum = 0, rs = 0;
    for (int r = 0; r < g_size; ++r) {
      sum += nb_value(r, w->index, k, i);
      rs += nb_value(r, w->index, k, g_rank * n + i) + 3;
    }
    if (c->ar_out[i] != sum) return fail(w, k, "MPI_Iallreduce: wrong result"), 0;
    if (c->rs_out[i] != rs) return fail(w, k, "MPI_Ireduce_scatter_block: wrong result"), 0;
    if (c->bc[i] != nb_value(root, w->index, k, i) + 2)
      return fail(w, k, "MPI_Ibcast: wrong result"), 0;
    for (int r = 0; r < g_size; ++r)
      if (c->ag_out[r * n + i] != nb_value(r, w->index, k, i) + 1)
        return fail(w, k, "MPI_Iallgather: wrong result"), 0;
  }
  return 1;
}

static int run_call(struct worker *w, int k, void *send, void *recv) {
  struct nb_calls nb;
  memset(&nb, 0, sizeof nb);
  if (g_nonblocking) post_nonblocking(w, k, &nb);
  const int count =
      g_fixed_count ? g_fixed_count : kCounts[k % (int)(sizeof kCounts / sizeof kCounts[0])];
  const int use_double = g_fixed_count ? 1 : k % 2;
  const int use_max = g_fixed_count ? 0 : (k / 2) % 3 == 0, in_place = (k / 3) % 2;
  MPI_Datatype type = use_double ? MPI_DOUBLE : MPI_INT64_T;
  for (int i = 0; i < count; ++i) {
    int64_t v = contribution(g_rank, w->index, k, i);
    if (use_double) ((double *)(in_place ? recv : send))[i] = (double)v;
    else ((int64_t *)(in_place ? recv : send))[i] = v;
  }
  if (MPI_Allreduce(in_place ? MPI_IN_PLACE : send, recv, count, type, use_max ? MPI_MAX : MPI_SUM,
                    w->comm) != MPI_SUCCESS) {
    fail(w, k, "MPI_Allreduce returned an error");
    return 0;
  }
  if (g_nonblocking) {
    MPI_Status statuses[kNbRequests]; /* MPICH's MPI_STATUSES_IGNORE trips GCC's bounds check */
    if (MPI_Waitall(kNbRequests, nb.req, statuses) != MPI_SUCCESS) {
      fail(w, k, "MPI_Waitall returned an error");
      return 0;
    }
    (void)check_nonblocking(w, k, &nb);  /* counted; the loop goes on (the peers call on) */
  }
  /* A wrong answer is counted and the loop goes on: stopping here would
   * leave the other ranks waiting in their next call (a hang, not a FAIL). */
  for (int i = 0; i < count; ++i) {
    int64_t want = expected(w->index, k, i, use_max);
    int ok = use_double ? ((double *)recv)[i] == (double)want : ((int64_t *)recv)[i] == want;
    if (!ok) {
      fail(w, k, "wrong result");
      break;
    }
  }
  const char *path = g_last(w->comm);
  int wrong_path;
  if (strcmp(g_expect, "own") == 0) wrong_path = path == NULL || strcmp(path, "previous") == 0;
  else if (strcmp(g_expect, "host") == 0)
    wrong_path = path == NULL || strcmp(path, "previous") == 0 || strcmp(path, "switch") == 0;
  else wrong_path = strcmp(g_expect, "auto") != 0 && (path == NULL || strcmp(path, g_expect) != 0);
  if (wrong_path) {
    char what[96];
    snprintf(what, sizeof what, "served by %s, expected %s", path ? path : "(none)", g_expect);
    fail(w, k, what);
  }
  return 1;
}

static size_t buffer_bytes(void) {
  const size_t cycle = 20000 * sizeof(double), fixed = (size_t)g_fixed_count * sizeof(double);
  return fixed > cycle ? fixed : cycle;
}

static void *worker_main(void *arg) {
  struct worker *w = arg;
  const size_t bytes = buffer_bytes();
  void *send = malloc(bytes), *recv = malloc(bytes);
  for (int k = g_warmup; k < g_iters + g_warmup && run_call(w, k, send, recv); ++k) {
  }
  free(send);
  free(recv);
  return NULL;
}

int main(int argc, char **argv) {
  int provided, threads = 3, failures = 0;
  struct worker workers[kMaxThreads];
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--nonblocking") == 0) g_nonblocking = 1;
    if (strcmp(argv[i], "--warmup") == 0) g_warmup = 1;
    if (strcmp(argv[i], "--tuned") == 0) g_tuned = 1;
  }
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--nonblocking") == 0 || strcmp(argv[i], "--warmup") == 0 ||
        strcmp(argv[i], "--tuned") == 0)
      --i;
    else if (strcmp(argv[i], "--expect") == 0) g_expect = argv[i + 1];
    else if (strcmp(argv[i], "--threads") == 0) threads = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--iters") == 0) g_iters = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--final") == 0) g_final = argv[i + 1];
    else if (strcmp(argv[i], "--bytes") == 0) g_fixed_count = atoi(argv[i + 1]) / (int)sizeof(double);
  }
  if (threads < 1 || threads > kMaxThreads) threads = 3;
  g_last = (switchagg_coll_last_algorithm_fn)dlsym(RTLD_DEFAULT,
                                                   SWITCHAGG_COLL_LAST_ALGORITHM_SYMBOL);
  g_counter = (switchagg_coll_comm_counter_fn)dlsym(RTLD_DEFAULT,
                                                    SWITCHAGG_COLL_COMM_COUNTER_SYMBOL);
  if (provided != MPI_THREAD_MULTIPLE || !g_last || !g_counter) {
    fprintf(stderr, "FAIL rank %d: thread level %d provided, component %s\n", g_rank, provided,
            g_last ? "loaded" : "not loaded");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  /* Duplicating is collective on WORLD: one thread does it, in order. */
  for (int t = 0; t < threads; ++t) {
    workers[t].index = t;
    workers[t].failures = 0;
    MPI_Comm_dup(MPI_COMM_WORLD, &workers[t].comm);
  }
  /* --warmup: each communicator's first call (its setup: the address
   * exchange, the agent's join) from this thread, in order, outside the
   * timed span; the threads then run calls 1..iters. */
  if (g_warmup) {
    const size_t bytes = buffer_bytes();
    void *send = malloc(bytes), *recv = malloc(bytes);
    for (int t = 0; t < threads; ++t) (void)run_call(&workers[t], 0, send, recv);
    free(send);
    free(recv);
  }
  /* The wall time of the threads' calls, from a common start (printed as
   * "time: W ms ...", the slowest rank's: benchmarks/threads_bench.sh). */
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  for (int t = 0; t < threads; ++t)
    pthread_create(&workers[t].thread, NULL, worker_main, &workers[t]);
  for (int t = 0; t < threads; ++t) pthread_join(workers[t].thread, NULL);
  double elapsed_ms = (MPI_Wtime() - start) * 1000, slowest_ms = 0;
  MPI_Reduce(&elapsed_ms, &slowest_ms, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (g_rank == 0)
    printf("time: %.1f ms for %d calls per rank (%d threads%s)\n", slowest_ms, threads * g_iters,
           threads, g_nonblocking ? ", each call with 5 nonblocking" : "");
  for (int t = 0; t < threads; ++t) {
    failures += workers[t].failures;
    if (g_tuned) {
      const uint64_t explored = g_counter(workers[t].comm, "tune:explore_calls");
      const uint64_t settled = g_counter(workers[t].comm, "tune:settled_calls");
      if (explored == 0 || settled == 0) {
        fprintf(stderr, "FAIL rank %d thread %d: not tuned (tune:explore_calls %" PRIu64
                ", tune:settled_calls %" PRIu64 ")\n", g_rank, t, explored, settled);
        ++failures;
      }
    }
    if (g_final) {
      const char *last = g_last(workers[t].comm);
      const int is_switch = last != NULL && strcmp(last, "switch") == 0;
      const int is_host = last != NULL && !is_switch && strcmp(last, "previous") != 0;
      if (strcmp(g_final, "switch") == 0 ? !is_switch : !is_host) {
        fprintf(stderr, "FAIL rank %d thread %d: the last call was served by %s, expected %s\n",
                g_rank, t, last ? last : "(none)", g_final);
        ++failures;
      }
    }
    if (strcmp(g_expect, "own") == 0 || strcmp(g_expect, "host") == 0) {
      const uint64_t handed = g_counter(workers[t].comm, "fallback");
      if (handed != 0) {
        fprintf(stderr, "FAIL rank %d thread %d: %" PRIu64 " calls handed to the previous module\n",
                g_rank, t, handed);
        ++failures;
      }
    } else if (strcmp(g_expect, "auto") != 0) {
      uint64_t n = g_counter(workers[t].comm, g_expect);
      if (n != (uint64_t)(g_iters + g_warmup)) {
        fprintf(stderr, "FAIL rank %d thread %d: %s counted %" PRIu64 " calls, expected %d\n",
                g_rank, t, g_expect, n, g_iters + g_warmup);
        ++failures;
      }
    }
    if (g_nonblocking && strcmp(g_expect, "switch") == 0) {
      static const char *const kOps[] = {"iallreduce", "iallgather", "ibcast",
                                         "ireduce_scatter_block", "ibarrier"};
      for (int o = 0; o < 5; ++o) {
        char name[64];
        snprintf(name, sizeof name, "%s:switch", kOps[o]);
        const uint64_t n = g_counter(workers[t].comm, name);
        if (n != (uint64_t)(g_iters + g_warmup)) {
          char calls[64], previous[64];
          snprintf(calls, sizeof calls, "%s:calls", kOps[o]);
          snprintf(previous, sizeof previous, "%s:previous", kOps[o]);
          fprintf(stderr,
                  "FAIL rank %d thread %d: %s %" PRIu64 ", expected %d (%s %" PRIu64
                  ", %s %" PRIu64 ")\n",
                  g_rank, t, name, n, g_iters, calls, g_counter(workers[t].comm, calls), previous,
                  g_counter(workers[t].comm, previous));
          ++failures;
        }
      }
    } else if (strcmp(g_expect, "switch") == 0) {
      /* Every call under the keep limit (160 KB at most): one agent round
       * trip each, no host message of the switch path. */
      const uint64_t host = g_counter(workers[t].comm, "switch:host_messages");
      const uint64_t one = g_counter(workers[t].comm, "switch:one_round_trip");
      if (host != 0 || one != (uint64_t)(g_iters + g_warmup)) {
        fprintf(stderr, "FAIL rank %d thread %d: switch:host_messages %" PRIu64
                " (want 0), switch:one_round_trip %" PRIu64 " (want %d)\n",
                g_rank, t, host, one, g_iters);
        ++failures;
      }
    }
    MPI_Comm_free(&workers[t].comm);
  }
  char summary[200];
  snprintf(summary, sizeof summary,
           "%d ranks x %d threads x %d allreduces%s, each on its own communicator, served by %s",
           g_size, threads, g_iters, g_nonblocking ? " (each with 5 nonblocking calls)" : "",
           g_expect);
  const int rc = switchagg_verdict(failures, (long)threads * g_iters, summary);
  MPI_Finalize();
  return rc;
}
