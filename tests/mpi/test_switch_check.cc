// Runs under mpirun with the switchagg component and a real switch agent
// (SWITCHAGG_AGENT/LEASE exported). Two modes:
//
//   test_switch_check --repeat N [--big BYTES]
//     int32/int64 sums (exact) and float/double sums of inexact values at
//     counts 1, 3, 1001, 65537 and one BYTES-sized case (default 16 MiB + 8),
//     in place every other run (the BYTES case also in int64; rank 0 prints
//     both results' hashes and how many of its calls node leaders pipelined);
//     each case N times: equal to the reference
//     computed here (integers exact, floats within p*eps*sum|x|), bitwise
//     identical across the N runs and across ranks, served by `switch`, and
//     switch:bytes_sent grows by exactly the call's bytes on every member of
//     the agent's group and not at all on the other ranks (with node
//     leaders, check::expectedLeaders: only each node's lowest rank; with
//     rail leaders each node's R lowest, rail k's stripe each).
//
//   test_switch_check --fault DIR [--bytes B] [--after K] [--max-call-ms M]
//     int64 sums of B bytes (in place every other call), checked each call.
//     Rank 0 creates DIR/ready after the first call the switch served, then
//     every call checks DIR/fired (the test script kills the agent or
//     deletes the lease and then creates it); K calls after that the loop
//     ends. Asserts: every result right, no call slower than M ms, exactly
//     one fallback:switch-failed, no switch call after the fallback.
//     With --rejoin (the script stalls the agent, waits for DIR/fellback,
//     which rank 0 creates at the fallback, then resumes it and fires): the
//     loop ends once the switch served 3 calls after the fallback; asserts
//     at least one fallback, switch:rejoined >= 1, every result right.
//     --gap-ms G: after the fallback every rank sleeps G ms between calls
//     (a job that calls rarely: the rejoin must come by time).
//
//   test_switch_check --comms ITERS
//     8 live communicators per rank (WORLD, 3 dups, two splits, a reversed
//     one, a dup of a split), calls interleaved across them ITERS times at
//     1, 1001 and 70001 int64 elements: every result exact, no
//     fallback:switch-failed, and switch:calls > 0 on each communicator
//     (run with a lease of fewer slots than 8 x window: windows are taken
//     per call; a call that finds them taken is counted fallback:switch-busy
//     and redone on the host, also exact).
//
//   test_switch_check --busy MAX_ITERS
//     WORLD split into two halves that reduce at the same time (barrier,
//     then 1 MiB int64 sums) with a lease of one window: asserts exact
//     results, that fallback:switch-busy was counted, that the switch served
//     the busy communicator again afterwards (the path stays alive:
//     switch:dead 0, no fallback:switch-failed).
#include <mpi.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "check_support.h"
#include "verdict.h"
#include "switchagg/coll/diagnostics.h"

namespace {

// The harness's own "fault fired?" flag from rank 0, point to point: with
// offload on, an MPI_Bcast is served by the switch too, and the fault would
// meet that bcast instead of the allreduce under test.
int fromRankZero(int value) {
  int size = 1, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) {
    for (int r = 1; r < size; ++r) MPI_Send(&value, 1, MPI_INT, r, 77, MPI_COMM_WORLD);
    return value;
  }
  MPI_Recv(&value, 1, MPI_INT, 0, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return value;
}

switchagg_coll_last_algorithm_fn g_last;
switchagg_coll_comm_counter_fn g_counter;
int g_rank, g_size;
long g_failures;
check::Leaders g_leaders;

void fail(const std::string& what) {
  if (++g_failures <= 10) std::fprintf(stderr, "FAIL rank %d/%d: %s\n", g_rank, g_size, what.c_str());
}

template <typename T>
T input(int r, size_t i) {
  if constexpr (std::is_floating_point_v<T>) {
    // Not dyadic: sums round, so the reduction order shows in the bits.
    return T(double((r * 7919 + long(i) * 104729) % 2001 - 1000) * 1e-3 + r * 0.1);
  } else {
    return T((r + 1) * long(i % 1000 + 1) - 500);
  }
}

template <typename T>
void reference(size_t count, std::vector<T>* ref, std::vector<double>* mag) {
  ref->assign(count, T(0));
  mag->assign(count, 0.0);
  for (int r = 0; r < g_size; ++r)
    for (size_t i = 0; i < count; ++i) {
      (*ref)[i] += input<T>(r, i);
      (*mag)[i] += std::fabs(double(input<T>(r, i)));
    }
}

uint64_t hashBytes(const void* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  const auto* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

uint64_t counter(const char* name) { return g_counter(MPI_COMM_WORLD, name); }

// Returns the result's hash (alike on every rank and run, else a failure).
template <typename T>
uint64_t repeatCase(MPI_Datatype dt, const char* name, size_t count, int repeat) {
  std::vector<T> ref, in(count), out(count);
  std::vector<double> mag;
  reference(count, &ref, &mag);
  const double eps = sizeof(T) == 4 ? 1.2e-7 : 2.3e-16;
  uint64_t first = 0;
  for (int k = 0; k < repeat; ++k) {
    const bool in_place = k % 2 == 1;
    for (size_t i = 0; i < count; ++i) in[i] = input<T>(g_rank, i);
    const uint64_t sent0 = counter("switch:bytes_sent");
    if (in_place) {
      MPI_Allreduce(MPI_IN_PLACE, in.data(), int(count), dt, MPI_SUM, MPI_COMM_WORLD);
      out = in;
    } else {
      MPI_Allreduce(in.data(), out.data(), int(count), dt, MPI_SUM, MPI_COMM_WORLD);
    }
    const std::string where = std::string(name) + " count " + std::to_string(count) +
                              (in_place ? " in place" : "") + " run " + std::to_string(k);
    const char* path = g_last(MPI_COMM_WORLD);
    if (!path || std::strcmp(path, "switch") != 0) fail(where + ": served by " + (path ? path : "?"));
    const uint64_t want = g_leaders.leader ? g_leaders.streamed(count) * sizeof(T) : 0;
    if (counter("switch:bytes_sent") - sent0 != want)
      fail(where + ": switch:bytes_sent grew by " +
           std::to_string(counter("switch:bytes_sent") - sent0));
    size_t bad = 0;
    for (size_t i = 0; i < count; ++i) {
      const double bound = std::is_floating_point_v<T> ? g_size * 2 * eps * mag[i] : 0.0;
      if (std::fabs(double(out[i]) - double(ref[i])) > bound && bad++ == 0)
        fail(where + ": element " + std::to_string(i) + " = " + std::to_string(double(out[i])) +
             ", expected " + std::to_string(double(ref[i])));
    }
    uint64_t h = hashBytes(out.data(), count * sizeof(T)), h0 = h;
    MPI_Bcast(&h0, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    if (h != h0) fail(where + ": result bits differ from rank 0's");
    if (k == 0) first = h;
    else if (h != first) fail(where + ": result bits differ from run 0");
  }
  return first;
}

int runRepeat(int repeat, size_t big) {
  long cases = 0;
  for (size_t count : {size_t(1), size_t(3), size_t(1001), size_t(65537)}) {
    repeatCase<int32_t>(MPI_INT32_T, "int32", count, repeat);
    repeatCase<int64_t>(MPI_INT64_T, "int64", count, repeat);
    repeatCase<float>(MPI_FLOAT, "float", count, repeat);
    repeatCase<double>(MPI_DOUBLE, "double", count, repeat);
    cases += 4;
  }
  // The BYTES-sized case in int64 (exact) and double; the hashes let a
  // script compare the bits across runs with different settings (e.g. node
  // leaders' pipeline on and off), and switch:pipelined how it was served.
  const uint64_t pipelined0 = counter("switch:pipelined");
  const uint64_t hi = repeatCase<int64_t>(MPI_INT64_T, "int64", big / sizeof(int64_t), repeat);
  const uint64_t hd = repeatCase<double>(MPI_DOUBLE, "double", big / sizeof(double), repeat);
  cases += 2;
  if (g_rank == 0)
    std::printf("big case %zu bytes: int64 hash %016llx double hash %016llx, %llu call(s) "
                "pipelined\n",
                big, static_cast<unsigned long long>(hi), static_cast<unsigned long long>(hd),
                static_cast<unsigned long long>(counter("switch:pipelined") - pipelined0));
  return int(cases * repeat);
}

bool exists(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0;
}

int runFault(const std::string& dir, size_t bytes, int after, double max_call_ms, bool rejoin,
             int gap_ms) {
  const size_t count = bytes / sizeof(int64_t);
  std::vector<int64_t> ref, in(count), out(count);
  std::vector<double> mag;
  reference(count, &ref, &mag);
  int fired_at = -1, fallback_at = -1, switch_calls = 0, switch_after = 0, iter = 0;
  double worst = 0, worst_fallback = 0;
  const auto start = std::chrono::steady_clock::now();
  for (;; ++iter) {
    const bool in_place = iter % 2 == 1;
    for (size_t i = 0; i < count; ++i) in[i] = input<int64_t>(g_rank, i);
    const uint64_t fb0 = counter("fallback:switch-failed");
    const auto t0 = std::chrono::steady_clock::now();
    if (in_place) MPI_Allreduce(MPI_IN_PLACE, in.data(), int(count), MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    else MPI_Allreduce(in.data(), out.data(), int(count), MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const int64_t* got = in_place ? in.data() : out.data();
    for (size_t i = 0; i < count; ++i)
      if (got[i] != ref[i]) {
        fail("call " + std::to_string(iter) + ": element " + std::to_string(i) + " wrong");
        break;
      }
    worst = std::max(worst, ms);
    const char* path = g_last(MPI_COMM_WORLD);
    const bool on_switch = path && std::strcmp(path, "switch") == 0;
    if (counter("fallback:switch-failed") != fb0) {
      fallback_at = iter;
      worst_fallback = ms;
    }
    if (on_switch) {
      ++switch_calls;
      if (fallback_at >= 0) ++switch_after;
      if (fallback_at >= 0 && !rejoin)
        fail("switch served call " + std::to_string(iter) + " after the fallback");
    }
    if (g_rank == 0 && on_switch && !exists(dir + "/ready")) std::fclose(std::fopen((dir + "/ready").c_str(), "w"));
    if (g_rank == 0 && fallback_at >= 0 && !exists(dir + "/fellback"))
      std::fclose(std::fopen((dir + "/fellback").c_str(), "w"));
    const int fired = fromRankZero(g_rank == 0 && exists(dir + "/fired"));
    if (fired && fired_at < 0) fired_at = iter;
    if (!rejoin && fired_at >= 0 && iter - fired_at >= after) break;
    if (rejoin && fired_at >= 0 && switch_after >= 3) break;
    if (std::chrono::steady_clock::now() - start > std::chrono::seconds(90)) {
      fail(fired_at < 0 ? "the fault was never injected (no " + dir + "/fired within 90 s)"
                        : "no rejoin within 90 s");
      break;
    }
    if (gap_ms > 0 && fallback_at >= 0) usleep(useconds_t(gap_ms) * 1000);
  }
  if (worst > max_call_ms) fail("a call took " + std::to_string(worst) + " ms");
  const uint64_t fallbacks = counter("fallback:switch-failed");
  if (rejoin ? fallbacks < 1 : fallbacks != 1)
    fail("fallback:switch-failed = " + std::to_string(fallbacks));
  if (rejoin && counter("switch:rejoined") < 1) fail("switch:rejoined = 0 after the agent came back");
  if (switch_calls == 0) fail("the switch never served a call");
  if (!g_leaders.leader && counter("switch:bytes_sent") != 0)
    fail("a non-leader sent " + std::to_string(counter("switch:bytes_sent")) + " bytes to the agent");
  if (g_rank == 0)
    std::printf("fault run: %d calls of %zu bytes, %d on the switch, fault injected before call "
                "%d, fallback at call %d (%.1f ms), slowest call %.1f ms, %d switch calls after "
                "it, %llu rejoin(s), %llu pipelined\n",
                iter + 1, bytes, switch_calls, fired_at, fallback_at, worst_fallback, worst,
                switch_after, static_cast<unsigned long long>(counter("switch:rejoined")),
                static_cast<unsigned long long>(counter("switch:pipelined")));
  return iter + 1;
}

uint64_t commCounter(MPI_Comm c, const char* name) { return g_counter(c, name); }

// One int64 sum on `comm` checked exactly against the host reference of its
// members' inputs. Returns true if it was served by the switch.
bool checkedSum(MPI_Comm comm, const std::string& name, size_t count, int salt) {
  int r, n;
  MPI_Comm_rank(comm, &r);
  MPI_Comm_size(comm, &n);
  std::vector<int64_t> in(count), out(count);
  for (size_t i = 0; i < count; ++i) in[i] = (r + 1) * int64_t(i % 977 + salt) - 300;
  const uint64_t calls0 = commCounter(comm, "switch:calls");
  MPI_Allreduce(in.data(), out.data(), int(count), MPI_INT64_T, MPI_SUM, comm);
  for (size_t i = 0; i < count; ++i) {
    int64_t want = 0;
    for (int k = 0; k < n; ++k) want += (k + 1) * int64_t(i % 977 + salt) - 300;
    if (out[i] != want) {
      fail(name + " count " + std::to_string(count) + ": element " + std::to_string(i) + " = " +
           std::to_string(out[i]) + ", expected " + std::to_string(want));
      break;
    }
  }
  return commCounter(comm, "switch:calls") != calls0;
}

int runComms(int iters) {
  struct Named {
    MPI_Comm comm;
    std::string name;
  };
  std::vector<Named> comms{{MPI_COMM_WORLD, "world"}};
  for (int d = 0; d < 3; ++d) {
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    comms.push_back({c, "dup" + std::to_string(d)});
  }
  MPI_Comm parity, half, reversed, parity_dup;
  MPI_Comm_split(MPI_COMM_WORLD, g_rank % 2, g_rank, &parity);
  MPI_Comm_split(MPI_COMM_WORLD, g_rank < g_size / 2, g_rank, &half);
  MPI_Comm_split(MPI_COMM_WORLD, 0, g_size - g_rank, &reversed);
  MPI_Comm_dup(parity, &parity_dup);
  comms.push_back({parity, "parity"});
  comms.push_back({half, "half"});
  comms.push_back({reversed, "reversed"});
  comms.push_back({parity_dup, "parity_dup"});
  int calls = 0;
  for (int it = 0; it < iters; ++it)
    for (size_t k = 0; k < comms.size(); ++k) {
      const size_t count = (it + int(k)) % 3 == 0 ? 1 : (it + int(k)) % 3 == 1 ? 1001 : 70001;
      (void)checkedSum(comms[k].comm, comms[k].name, count, it * 8 + int(k));
      ++calls;
    }
  uint64_t busy = 0;
  for (const Named& c : comms) {
    const uint64_t sw = commCounter(c.comm, "switch:calls");
    const uint64_t failed = commCounter(c.comm, "fallback:switch-failed");
    busy += commCounter(c.comm, "fallback:switch-busy");
    if (sw == 0) fail(c.name + ": switch:calls = 0 (not on the switch path)");
    if (failed != 0) fail(c.name + ": fallback:switch-failed = " + std::to_string(failed));
    if (sw + commCounter(c.comm, "fallback:switch-busy") != uint64_t(iters))
      fail(c.name + ": switch:calls + fallback:switch-busy = " +
           std::to_string(sw + commCounter(c.comm, "fallback:switch-busy")) + ", calls " +
           std::to_string(iters));
  }
  std::printf("rank %d: %zu communicators, %d calls, %llu busy fallbacks\n", g_rank, comms.size(),
              calls, static_cast<unsigned long long>(busy));
  for (size_t k = 1; k < comms.size(); ++k) MPI_Comm_free(&comms[k].comm);
  return calls;
}

int runBusy(int max_iters) {
  MPI_Comm half;
  const int color = g_rank < g_size / 2;
  MPI_Comm_split(MPI_COMM_WORLD, color, g_rank, &half);
  const size_t count = 131072;  // 1 MiB: several chunks per call
  int iters = 0, first_busy = -1, served_after = 0;
  const auto start = std::chrono::steady_clock::now();
  for (; iters < max_iters; ++iters) {
    const uint64_t busy0 = commCounter(half, "fallback:switch-busy");
    MPI_Barrier(MPI_COMM_WORLD);  // both halves begin together
    const bool sw = checkedSum(half, color ? "half1" : "half0", count, iters);
    // Per world: has any half been busy yet, and served since?
    int mine[2] = {commCounter(half, "fallback:switch-busy") != busy0 ? 1 : 0, 0};
    if (first_busy >= 0 && sw) mine[1] = 1;
    int any[2];
    MPI_Allreduce(mine, any, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any[0] && first_busy < 0) first_busy = iters;
    served_after += any[1];
    if (first_busy >= 0 && served_after >= 3) break;
    if (std::chrono::steady_clock::now() - start > std::chrono::seconds(60)) break;
  }
  if (first_busy < 0) fail("no call was refused busy in " + std::to_string(iters) + " iterations");
  if (served_after < 3) fail("the switch served no call after the first busy one");
  if (commCounter(half, "switch:dead") != 0) fail("switch:dead after busy calls");
  if (commCounter(half, "fallback:switch-failed") != 0)
    fail("fallback:switch-failed = " + std::to_string(commCounter(half, "fallback:switch-failed")));
  uint64_t busy = commCounter(half, "fallback:switch-busy"), total = 0;
  MPI_Allreduce(&busy, &total, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0)
    std::printf("busy run: %d iterations, first busy at %d, %llu busy fallbacks (all ranks), "
                "switch calls on rank 0's half %llu\n",
                iters + 1, first_busy, static_cast<unsigned long long>(total),
                static_cast<unsigned long long>(commCounter(half, "switch:calls")));
  MPI_Comm_free(&half);
  return iters + 1;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  int repeat = 0, after = 5;
  size_t big = (16u << 20) + 8, bytes = 1u << 20;
  double max_call_ms = 6000;
  std::string fault_dir;
  bool rejoin = false;
  int comms_iters = 0, busy_iters = 0, gap_ms = 0;
  for (int i = 1; i < argc; ++i)
    if (!std::strcmp(argv[i], "--rejoin")) rejoin = true;
  for (int i = 1; i + 1 < argc; ++i) {
    if (!std::strcmp(argv[i], "--repeat")) repeat = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--big")) big = std::strtoull(argv[++i], nullptr, 10);
    else if (!std::strcmp(argv[i], "--fault")) fault_dir = argv[++i];
    else if (!std::strcmp(argv[i], "--bytes")) bytes = std::strtoull(argv[++i], nullptr, 10);
    else if (!std::strcmp(argv[i], "--after")) after = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--max-call-ms")) max_call_ms = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--comms")) comms_iters = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--busy")) busy_iters = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--gap-ms")) gap_ms = std::atoi(argv[++i]);
  }
  check::Diagnostics diag;
  const bool loaded = diag.load();
  g_last = diag.last;
  g_counter = diag.counter;
  if (!loaded) {
    std::fprintf(stderr, "FAIL: switchagg component not loaded\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  g_leaders = check::expectedLeaders(MPI_COMM_WORLD);
  const int cases = comms_iters > 0 ? runComms(comms_iters)
                    : busy_iters > 0  ? runBusy(busy_iters)
                    : fault_dir.empty() ? runRepeat(repeat > 0 ? repeat : 5, big)
                                        : runFault(fault_dir, bytes, after, max_call_ms, rejoin, gap_ms);
  char summary[160];
  std::snprintf(summary, sizeof summary, "np=%d, switch bytes sent by rank 0 %llu (%s)", g_size,
                static_cast<unsigned long long>(counter("switch:bytes_sent")),
                g_leaders.active ? "node leaders" : "every rank a member");
  const int rc = switchagg_verdict(g_failures, cases, summary);
  MPI_Finalize();
  return rc;
}
