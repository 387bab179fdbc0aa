// mpi_oneshot_check: one-round-trip completion of switch-path calls
// (docs/offload.md "Completion"), checked from the component's counters.
//
//   --mode ok     every small call (allreduce of 1, 7, 1000 and 8192
//                 doubles, in place every other iteration, and a barrier)
//                 is exact and completes with no host message of the switch
//                 path (switch:host_messages does not move) and no
//                 agreement; then one call above SWITCHAGG_SWITCH_KEEP
//                 (--large-bytes) runs exactly one agreement.
//   --mode fault  the same calls while a fault is injected (by the test:
//                 the agent's or the component's test fault points): every
//                 answer exact on every rank, every call within
//                 --max-call-ms, and at least --expect-recovered results
//                 copied from another member (switch:recovered, summed over
//                 the ranks).
//   --max-recovery-messages N  (fault) the recovery's messages summed over
//                 the ranks (switch:host_messages less switch:agreements)
//                 at most N; printed as "recovery messages (all ranks)".
//   --ready FILE  rank 0 creates FILE once the communicator joined (a test
//                 then fires its fault mid-loop).
//   --finalize-early  no MPI call after the loop but MPI_Finalize (no
//                 summary collective, no MPI_Comm_free): each rank prints
//                 its own line and exits 1 on a failure of its own.
//   --handoff     after the loop, rank 0 waits in MPI_Recv for one word
//                 from each other rank, sent point to point once that rank's
//                 last call completed: a peer that missed the last call's
//                 result asks rank 0 while rank 0 sits in a call no
//                 switchagg code serves (the PMPI layer's answering thread
//                 must answer it: docs/pmpi.md "Progress").
// Without node leaders (every rank a member) the loop also runs an
// MPI_Iallreduce (waited at once), and where the agents route calls an
// MPI_Allgather, an MPI_Bcast, an MPI_Reduce_scatter_block and an
// MPI_Reduce, per iteration, one round trip each. In --mode ok, trailing
// calls: an MPI_Iallreduce with node leaders on several nodes and an
// MPI_Reduce_scatter of uneven counts, also without a host message. The two reductions sum
// floats whose sum depends on the order: a call the switch served must
// give bitwise the agent's rank-order fold, also where this rank's result
// was recovered from the members' inputs after a fault. With node leaders
// on several nodes the loop runs the MPI_Bcast, the MPI_Reduce, then the
// MPI_Allgather and the MPI_Reduce_scatter_block (the folds: each node's
// ranks, then the nodes). --leaves L: a tree over L leaf agents, the
// members (ranks, or nodes with leaders) split into L runs of consecutive
// ones as the tests' fabric maps do: the folds go leaf by leaf (each leaf's
// members, then the leaves: docs/agent-protocol.md "Routed calls through a
// tree").
// --iters N (default 30). Prints PASS.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "check_support.h"
#include "verdict.h"

namespace {

struct Options {
  std::string mode = "ok";
  int iters = 30;
  long max_call_ms = 0;
  long expect_recovered = 0;
  long max_recovery_messages = -1;
  size_t large_bytes = 2 << 20;  // above the default keep limit (1 MiB)
  std::string ready;
  bool finalize_early = false;
  bool handoff = false;
  int leaves = 1;
};

uint64_t counter(const check::Diagnostics& d, MPI_Comm c, const char* name) {
  const uint64_t v = d.counter(c, name);
  return v == UINT64_MAX ? 0 : v;
}

double nowMs() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "mpi_oneshot_check: %s needs a value\n", a.c_str());
        MPI_Abort(MPI_COMM_WORLD, 2);
      }
      return argv[++i];
    };
    if (a == "--mode") o.mode = next();
    else if (a == "--iters") o.iters = std::atoi(next());
    else if (a == "--max-call-ms") o.max_call_ms = std::atol(next());
    else if (a == "--expect-recovered") o.expect_recovered = std::atol(next());
    else if (a == "--max-recovery-messages") o.max_recovery_messages = std::atol(next());
    else if (a == "--large-bytes") o.large_bytes = size_t(std::atol(next()));
    else if (a == "--ready") o.ready = next();
    else if (a == "--finalize-early") o.finalize_early = true;
    else if (a == "--handoff") o.handoff = true;
    else if (a == "--leaves") o.leaves = std::max(1, std::atoi(next()));
    else {
      std::fprintf(stderr, "mpi_oneshot_check: unknown argument '%s'\n", a.c_str());
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  if (o.mode != "ok" && o.mode != "fault") {
    std::fprintf(stderr, "mpi_oneshot_check: --mode must be ok or fault, got '%s'\n",
                 o.mode.c_str());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  check::Diagnostics diag;
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (!diag.load()) {
    std::fprintf(stderr, "FAIL rank %d: the component's diagnostics are not loaded\n", rank);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  long failures = 0;
  auto fail = [&](const std::string& what) {
    if (++failures <= 10) std::fprintf(stderr, "FAIL rank %d/%d: %s\n", rank, size, what.c_str());
  };
  double worst_ms = 0;
  // v[j] = (rank + 1) * (k + 1) + j % 13: sums are exact integers in double.
  auto allreduce = [&](size_t count, int k, bool in_place) {
    std::vector<double> in(count), out(count, -1.0);
    for (size_t j = 0; j < count; ++j) in[j] = double(rank + 1) * (k + 1) + double(j % 13);
    const double t0 = nowMs();
    int rc;
    if (in_place) {
      out = in;
      rc = MPI_Allreduce(MPI_IN_PLACE, out.data(), int(count), MPI_DOUBLE, MPI_SUM, comm);
    } else {
      rc = MPI_Allreduce(in.data(), out.data(), int(count), MPI_DOUBLE, MPI_SUM, comm);
    }
    const double ms = nowMs() - t0;
    worst_ms = std::max(worst_ms, ms);
    if (rc != MPI_SUCCESS) fail("MPI_Allreduce returned an error");
    const double base = double(k + 1) * size * (size + 1) / 2;
    for (size_t j = 0; j < count; ++j) {
      const double want = base + double(size) * double(j % 13);
      if (out[j] != want) {
        fail("allreduce of " + std::to_string(count) + " (call " + std::to_string(k) +
             "): element " + std::to_string(j) + " is " + std::to_string(out[j]) + ", want " +
             std::to_string(want));
        break;
      }
    }
    if (o.max_call_ms > 0 && ms > double(o.max_call_ms))
      fail("a call took " + std::to_string(ms) + " ms (bound " + std::to_string(o.max_call_ms) +
           " ms)");
  };
  // MPI_Allgather of 3 doubles per rank and MPI_Bcast of 100 from a rotating
  // root: the same vector on every rank, so one round trip too.
  auto allgather = [&](int k) {
    std::vector<double> mine(3), all(size_t(3 * size), -1.0);
    for (int j = 0; j < 3; ++j) mine[size_t(j)] = double(rank * 10 + j + k);
    if (MPI_Allgather(mine.data(), 3, MPI_DOUBLE, all.data(), 3, MPI_DOUBLE, comm) != MPI_SUCCESS)
      fail("MPI_Allgather returned an error");
    for (int r = 0; r < size; ++r)
      for (int j = 0; j < 3; ++j)
        if (all[size_t(3 * r + j)] != double(r * 10 + j + k)) {
          fail("allgather (call " + std::to_string(k) + "): rank " + std::to_string(r) +
               "'s block is wrong");
          return;
        }
  };
  auto bcast = [&](int k) {
    const int root = k % size;
    std::vector<double> buf(100, -1.0);
    if (rank == root)
      for (size_t j = 0; j < buf.size(); ++j) buf[j] = double(j * 7 + size_t(k));
    if (MPI_Bcast(buf.data(), 100, MPI_DOUBLE, root, comm) != MPI_SUCCESS)
      fail("MPI_Bcast returned an error");
    for (size_t j = 0; j < buf.size(); ++j)
      if (buf[j] != double(j * 7 + size_t(k))) {
        fail("bcast from " + std::to_string(root) + " (call " + std::to_string(k) + ") is wrong");
        return;
      }
  };
  // MPI_Iallreduce of 100 doubles, waited at once (in the loop without node
  // leaders; with them in the trailing calls of --mode ok).
  auto iallreduce = [&](int k) {
    std::vector<double> in(100), out(100, -1.0);
    for (size_t j = 0; j < in.size(); ++j) in[j] = double(rank + 1) * (k + 3) + double(j);
    MPI_Request req;
    const double t0 = nowMs();
    if (MPI_Iallreduce(in.data(), out.data(), 100, MPI_DOUBLE, MPI_SUM, comm, &req) != MPI_SUCCESS ||
        MPI_Wait(&req, MPI_STATUS_IGNORE) != MPI_SUCCESS)
      fail("MPI_Iallreduce returned an error");
    worst_ms = std::max(worst_ms, nowMs() - t0);
    const double base = double(k + 3) * size * (size + 1) / 2;
    for (size_t j = 0; j < out.size(); ++j)
      if (out[j] != base + double(size) * double(j)) {
        fail("iallreduce (call " + std::to_string(k) + ") is wrong at " + std::to_string(j));
        return;
      }
  };
  // Order-sensitive floats: v(r, j, k) spans 2^-4 .. 2^4 with 24-bit
  // mantissas, so different summation orders round differently.
  auto value = [](int r, size_t j, int k) {
    return std::ldexp(1.0f + 0.123f * float((r * 7 + int(j) * 3 + k) % 11),
                      (r * 5 + int(j) + k) % 9 - 4);
  };
  // What the agent computes: the members' values folded in rank order; with
  // node leaders (`per_node` consecutive ranks a node, as emulate_nodes.sh
  // lays them out) each node's ranks first, then the nodes in order; in a
  // tree (--leaves) that per leaf, then the leaves in order.
  int per_node = 1;
  auto fold = [&](size_t j, int k) {
    const int nodes = (size + per_node - 1) / per_node;
    const int per_leaf = (nodes + o.leaves - 1) / o.leaves;
    volatile float acc = 0;
    for (int l = 0; l * per_leaf < nodes; ++l) {
      volatile float leaf = 0;
      for (int n = l * per_leaf; n < (l + 1) * per_leaf && n < nodes; ++n) {
        volatile float node = value(n * per_node, j, k);
        for (int r = n * per_node + 1; r < (n + 1) * per_node && r < size; ++r)
          node = node + value(r, j, k);
        leaf = n == l * per_leaf ? float(node) : leaf + node;
      }
      acc = l == 0 ? float(leaf) : acc + leaf;
    }
    return float(acc);
  };
  // The check can see an order change: at np >= 3 some element's fold in
  // reverse rank order rounds differently.
  if (size >= 3) {
    bool differs = false;
    for (size_t j = 0; j < 33 && !differs; ++j) {
      volatile float back = value(size - 1, j, 0);
      for (int r = size - 2; r >= 0; --r) back = back + value(r, j, 0);
      differs = float(back) != fold(j, 0);
    }
    if (!differs) fail("the reductions' values do not depend on the summation order");
  }
  // A served call (switch:routed_calls moved here) must be the fold, bit
  // for bit; one redone on the previous module may round differently.
  auto checkFold = [&](const char* what, int k, const float* got, size_t first, size_t n,
                       bool served) {
    for (size_t j = 0; j < n; ++j) {
      const float want = fold(first + j, k);
      const bool ok = served ? std::memcmp(&got[j], &want, sizeof want) == 0
                             : std::fabs(got[j] - want) <= 1e-5f * std::fabs(want);
      if (!ok) {
        char line[200];
        std::snprintf(line, sizeof line, "%s (call %d, %s): element %zu is %.9g, want %.9g",
                      what, k, served ? "served by the switch" : "redone", first + j,
                      double(got[j]), double(want));
        fail(line);
        return;
      }
    }
  };
  auto routedServed = [&](uint64_t before_calls) {
    return counter(diag, comm, "switch:routed_calls") == before_calls + 1;
  };
  auto reduceScatter = [&](int k) {
    constexpr size_t kBlock = 5;
    std::vector<float> in(kBlock * size_t(size)), out(kBlock, -1.0f);
    for (size_t j = 0; j < in.size(); ++j) in[j] = value(rank, j, k);
    const uint64_t before_calls = counter(diag, comm, "switch:routed_calls");
    const bool in_place = k % 2 == 1;
    int rc;
    if (in_place) {
      rc = MPI_Reduce_scatter_block(MPI_IN_PLACE, in.data(), int(kBlock), MPI_FLOAT, MPI_SUM, comm);
      std::memcpy(out.data(), in.data(), kBlock * sizeof(float));
    } else {
      rc = MPI_Reduce_scatter_block(in.data(), out.data(), int(kBlock), MPI_FLOAT, MPI_SUM, comm);
    }
    if (rc != MPI_SUCCESS) fail("MPI_Reduce_scatter_block returned an error");
    checkFold("reduce_scatter_block", k, out.data(), kBlock * size_t(rank), kBlock,
              routedServed(before_calls));
  };
  // MPI_Reduce_scatter with uneven counts (rank r gets r % 3 + 1 floats).
  auto reduceScatterUneven = [&](int k) {
    std::vector<int> counts(static_cast<size_t>(size));
    size_t total = 0, first = 0;
    for (int r = 0; r < size; ++r) {
      counts[size_t(r)] = r % 3 + 1;
      if (r < rank) first += size_t(counts[size_t(r)]);
      total += size_t(counts[size_t(r)]);
    }
    std::vector<float> in(total), out(size_t(counts[size_t(rank)]), -1.0f);
    for (size_t j = 0; j < total; ++j) in[j] = value(rank, j, k);
    const uint64_t before_calls = counter(diag, comm, "switch:routed_calls");
    if (MPI_Reduce_scatter(in.data(), out.data(), counts.data(), MPI_FLOAT, MPI_SUM, comm) !=
        MPI_SUCCESS)
      fail("MPI_Reduce_scatter returned an error");
    checkFold("reduce_scatter", k, out.data(), first, out.size(), routedServed(before_calls));
  };
  auto reduce = [&](int k) {
    constexpr size_t kCount = 33;
    const int root = (k + 1) % size;
    std::vector<float> in(kCount), out(kCount, -1.0f);
    for (size_t j = 0; j < kCount; ++j) in[j] = value(rank, j, k);
    const uint64_t before_calls = counter(diag, comm, "switch:routed_calls");
    if (MPI_Reduce(in.data(), out.data(), int(kCount), MPI_FLOAT, MPI_SUM, root, comm) !=
        MPI_SUCCESS)
      fail("MPI_Reduce returned an error");
    const bool served = routedServed(before_calls);
    if (rank == root) checkFold("reduce", k, out.data(), 0, kCount, served);
  };
  auto barrier = [&]() {
    const double t0 = nowMs();
    if (MPI_Barrier(comm) != MPI_SUCCESS) fail("MPI_Barrier returned an error");
    worst_ms = std::max(worst_ms, nowMs() - t0);
  };
  // Warm-up: the communicator joins the agent.
  allreduce(1, 0, false);
  barrier();
  // Routed calls go one round trip where the path routes them (not through
  // trees): allgather, bcast, reduce-scatter and reduce, with node leaders
  // too.
  const uint64_t members = counter(diag, comm, "switch:members");
  const bool members_all = members == uint64_t(size);
  const bool routed = counter(diag, comm, "switch:routed") == 1 && members_all;
  // Node leaders on several nodes route them with node steps around the
  // leaders' call; on one node the path declines routed calls.
  const bool leaders_routed =
      counter(diag, comm, "switch:routed") == 1 && !members_all && members > 1;
  if (members > 0 && size % int(members) == 0) per_node = size / int(members);
  const char* names[] = {"switch:host_messages", "switch:one_round_trip", "switch:calls",
                         "switch:barriers", "switch:agreements", "switch:recovered",
                         "fallback:switch-failed", "switch:routed_calls"};
  constexpr int kNames = 8;
  uint64_t before[kNames], after[kNames];
  for (int n = 0; n < kNames; ++n) before[n] = counter(diag, comm, names[n]);
  if (rank == 0 && !o.ready.empty())
    if (std::FILE* f = std::fopen(o.ready.c_str(), "w")) std::fclose(f);
  const size_t counts[] = {1, 7, 1000, 8192};
  for (int i = 0; i < o.iters; ++i) {
    for (size_t c : counts) allreduce(c, i, i % 2 == 1);
    if (routed) {
      allgather(i);
      bcast(i);
      reduceScatter(i);
      reduce(i);
    } else if (leaders_routed) {
      // This order keeps the fault tests' call numbers (switch_tests.cmake).
      bcast(i);
      reduce(i);
      allgather(i);
      reduceScatter(i);
    }
    if (members_all) iallreduce(i);
    barrier();
  }
  for (int n = 0; n < kNames; ++n) after[n] = counter(diag, comm, names[n]);
  auto delta = [&](int n) { return after[n] - before[n]; };
  const uint64_t calls = uint64_t(o.iters) * 4, barriers = uint64_t(o.iters);
  const uint64_t routed_calls = uint64_t(o.iters) * (routed || leaders_routed ? 4 : 0);
  const uint64_t icalls = members_all ? uint64_t(o.iters) : 0;
  if (o.mode == "ok") {
    if (delta(0) != 0)
      fail("the switch path sent " + std::to_string(delta(0)) +
           " host message(s) over calls that all succeeded (want 0)");
    if (delta(1) != calls + barriers + routed_calls + icalls)
      fail("switch:one_round_trip moved by " + std::to_string(delta(1)) + ", want " +
           std::to_string(calls + barriers + routed_calls + icalls));
    if (delta(7) != routed_calls)
      fail("switch:routed_calls moved by " + std::to_string(delta(7)) + ", want " +
           std::to_string(routed_calls));
    if (delta(2) != calls + icalls || delta(3) != barriers)
      fail("not every call was served by the switch (calls " + std::to_string(delta(2)) +
           ", barriers " + std::to_string(delta(3)) + ")");
    if (delta(4) != 0) fail("agreements ran: " + std::to_string(delta(4)));
    // Trailing calls (ok mode only: the fault tests' call numbers stay): an
    // MPI_Iallreduce with node leaders on several nodes, and an
    // MPI_Reduce_scatter of uneven counts where the path routes, each one
    // round trip with no host message of the switch path.
    const uint64_t hm0 = counter(diag, comm, names[0]), one0 = counter(diag, comm, names[1]),
                   routed0 = counter(diag, comm, names[7]);
    uint64_t more_one = 0, more_routed = 0;
    if (!members_all && members > 1)
      for (int k = 0; k < 5; ++k, ++more_one) iallreduce(100 + k);
    if (routed || leaders_routed)
      for (int k = 0; k < 5; ++k, ++more_one, ++more_routed) reduceScatterUneven(k);
    const uint64_t hm = counter(diag, comm, names[0]) - hm0;
    const uint64_t one = counter(diag, comm, names[1]) - one0;
    const uint64_t rcalls = counter(diag, comm, names[7]) - routed0;
    if (rank == 0)
      std::printf("trailing: %" PRIu64 " call(s), %" PRIu64 " routed, host messages %" PRIu64 "\n",
                  more_one, more_routed, hm);
    if (hm != 0 || one != more_one || rcalls != more_routed)
      fail("trailing calls (Iallreduce with node leaders, uneven reduce-scatter): " +
           std::to_string(hm) + " host message(s) (want 0), one round trip " +
           std::to_string(one) + " (want " + std::to_string(more_one) + "), routed " +
           std::to_string(rcalls) + " (want " + std::to_string(more_routed) + ")");
    // Above the keep limit: one agreement, still exact.
    const uint64_t agreements = counter(diag, comm, names[4]);
    allreduce(o.large_bytes / sizeof(double) + 1, 7, false);
    const uint64_t ran = counter(diag, comm, names[4]) - agreements;
    if (ran != 1) fail("a call above the keep limit ran " + std::to_string(ran) + " agreement(s), want 1");
  }
  if (o.handoff) {
    const double t0 = nowMs();
    int word = rank;
    if (rank == 0) {
      for (int r = 1; r < size; ++r) {
        MPI_Recv(&word, 1, MPI_INT, r, 41, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (word != r) fail("handoff: rank " + std::to_string(r) + " sent " + std::to_string(word));
      }
    } else {
      MPI_Send(&word, 1, MPI_INT, 0, 41, MPI_COMM_WORLD);
    }
    std::printf("rank %d: %d iterations, recovered %" PRIu64 ", failures %ld; handoff %.0f ms\n",
                rank, o.iters, delta(5), failures, nowMs() - t0);
    std::fflush(stdout);
  }
  if (o.finalize_early) {
    // No MPI call after the loop but MPI_Finalize: a rank done with the
    // last call answers the peers that missed its result from inside
    // MPI_Finalize (the progress callback runs in its wait).
    std::printf("rank %d: %d iterations, recovered %" PRIu64 ", failures %ld; into MPI_Finalize\n",
                rank, o.iters, delta(5), failures);
    std::fflush(stdout);
    MPI_Finalize();
    return failures == 0 ? 0 : 1;
  }
  long recovered = long(delta(5)), total_recovered = 0, fallbacks = long(delta(6)), total_fallbacks = 0;
  MPI_Allreduce(&recovered, &total_recovered, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&fallbacks, &total_fallbacks, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  // Recovery messages: the counter's questions and answers, not its
  // agreements (a call above the keep limit).
  long recovery = long(delta(0) - delta(4)), total_recovery = 0;
  MPI_Allreduce(&recovery, &total_recovery, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (o.max_recovery_messages >= 0 && total_recovery > o.max_recovery_messages)
    fail("recovery messages over the ranks " + std::to_string(total_recovery) + ", want <= " +
         std::to_string(o.max_recovery_messages));
  if (o.mode == "fault" && total_recovered < o.expect_recovered)
    fail("switch:recovered over the ranks is " + std::to_string(total_recovered) + ", want >= " +
         std::to_string(o.expect_recovered));
  if (rank == 0)
    std::printf("oneshot %s np %d: %d iterations; host messages %" PRIu64
                " one-round-trip %" PRIu64 " agreements %" PRIu64
                " recovered (all ranks) %ld fallbacks (all ranks) %ld; slowest call %.1f ms;"
                " recovery messages (all ranks) %ld\n",
                o.mode.c_str(), size, o.iters, delta(0), delta(1), delta(4), total_recovered,
                total_fallbacks, worst_ms, total_recovery);
  MPI_Comm_free(&comm);
  const int rc = switchagg_verdict(failures, o.iters, ("oneshot " + o.mode).c_str());
  MPI_Finalize();
  return rc;
}
