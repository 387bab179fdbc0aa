// MPI_Iallreduce checks (docs/offload.md "MPI_Iallreduce"). Every result is
// compared exactly with a reference computed here in plain loops (inputs
// are small integers, so float and double sums are exact in any order).
//
//   --mode matrix    dtype x op x count (0, 1, odd, large) x in place,
//                    completed by MPI_Wait, MPI_Test loops and MPI_Waitall
//   --mode multi     three communicators (a dup, a split, a reversed split),
//                    several calls outstanding on each, one MPI_Waitall;
//                    same-communicator calls queue behind each other
//   --mode overlap   Iallreduce, then a busy loop of C ms calling MPI_Test
//                    every ~200 us, then Wait; C = 1.5 x the measured time
//                    of the same Iallreduce+Wait alone. Asserts that at
//                    least --min-hidden (0.5) of the shorter of compute and
//                    allreduce vanished from the total, (C + A - T) /
//                    min(C, A), and that MPI_Test alone (no MPI_Wait)
//                    completes every call within a bound; how many ended
//                    inside the compute is printed (on 2 shared cores the
//                    busy ranks starve the agent, so it is not asserted)
//   --mode ibarrier  MPI_Ibarrier: --iters rounds in which one rank posts
//                    30 ms late and nobody may complete before it posted
//                    (CLOCK_MONOTONIC, one machine); then Iallreduce, Ibarrier,
//                    Iallreduce, Ibarrier outstanding at once, one
//                    MPI_Waitall, sums exact; --expect switch: every
//                    Ibarrier served by the switch (ibarrier:switch)
//   --mode fault     --fault DIR: a loop of --bytes calls (each followed by
//                    an MPI_Ibarrier) with MPI_Test polling; DIR/ready once the switch served one, the
//                    script then kills the agent or deletes the lease and
//                    touches DIR/fired. Every result exact, each call
//                    bounded by --max-ms, and a redo counted.
//   --mode irouted   MPI_Iallgather, MPI_Ibcast, MPI_Ireduce_scatter_block:
//                    per round Iallreduces, Iallgathers (in place and not,
//                    one receiving into a strided datatype, one above the
//                    1 MiB keep limit), Ibcasts (roots rotating, one of a
//                    strided datatype) and Ireduce_scatter_blocks (int32 and
//                    double sums, in place and not, one above the keep
//                    limit), all outstanding under one MPI_Waitall, every
//                    byte exact; --expect switch: every one counted
//                    <op>:switch; previous: none, all <op>:previous
//   --routed         (--mode fault) each round also an Iallgather, an Ibcast
//                    and an Ireduce_scatter_block outstanding together,
//                    bounded by --max-ms
//   --mode late      rank --late-rank (1) posts an MPI_Iallgather --late-ms late, the
//                    others wait for it (default error handler): run with
//                    coll_switchagg_stall_timeout below that, the node
//                    leaders' bounds must end the job with an error naming
//                    the late rank (the script checks), never a hang
//   --mode inherit   --warm (60) blocking MPI_Allreduces of --bytes under
//                    offload=auto, then --iters MPI_Iallreduce + Wait of the
//                    same size: each routed by the blocking calls' settled
//                    verdict (iallreduce:inherited) and served as --expect
//                    says (switch, previous, or measured: the switch when
//                    the blocking calls measured it no slower than every
//                    other path, else previous)
//   --mode recv      MPI's progress rule through a call the library does not
//                    intercept: per round every rank posts an Iallreduce of
//                    --bytes (and one of 8 ints); rank 0 then blocks in
//                    MPI_Recv from rank 1 before it waits, rank 1 waits
//                    (MPI_Wait, then MPI_Waitall) before it sends. Rank 1's
//                    calls need rank 0's chunks while rank 0 sits in
//                    MPI_Recv. Every result exact, every round under
//                    --max-ms (past it: fail naming the round and abort)
//   --expect switch|previous  which path the communicating calls must take
//                    (from the component's iallreduce:* counters)
// Prints PASS on rank 0 when every rank passed.
#include <mpi.h>
#include <sys/stat.h>
#include <time.h>

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "check_support.h"
#include "verdict.h"

namespace {

double nowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
}

bool exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

void touch(const std::string& path) {
  if (FILE* f = std::fopen(path.c_str(), "w")) std::fclose(f);
}

check::Diagnostics diag;
long failures = 0;
int world_rank = 0;

long checked = 0;  // results and barriers checked on this rank (the verdict's cases)

void fail(const std::string& what) {
  if (++failures <= 20) std::fprintf(stderr, "FAIL rank %d: %s\n", world_rank, what.c_str());
}

uint64_t counter(MPI_Comm comm, const char* name) {
  const uint64_t v = diag.counter(comm, name);
  return v == UINT64_MAX ? 0 : v;
}

enum class OpKind { kSum, kMax, kMin, kProd, kBor };

const char* opName(OpKind k) {
  switch (k) {
    case OpKind::kSum: return "sum";
    case OpKind::kMax: return "max";
    case OpKind::kMin: return "min";
    case OpKind::kProd: return "prod";
    case OpKind::kBor: return "bor";
  }
  return "?";
}

MPI_Op mpiOp(OpKind k) {
  switch (k) {
    case OpKind::kSum: return MPI_SUM;
    case OpKind::kMax: return MPI_MAX;
    case OpKind::kMin: return MPI_MIN;
    case OpKind::kProd: return MPI_PROD;
    case OpKind::kBor: return MPI_BOR;
  }
  return MPI_SUM;
}

// Small values: products of up to 4 ranks stay exact in every type.
template <typename T>
T value(OpKind k, int r, size_t i) {
  if (k == OpKind::kProd) return T(1 + (r + i) % 3);
  if (k == OpKind::kBor) return T((uint64_t(1) << ((r + i) % 7)) & 0x7f);
  return T(int64_t((r * 31 + i * 7) % 101) - (std::is_signed_v<T> ? 50 : 0));
}

template <typename T>
T combine(OpKind k, T a, T b) {
  switch (k) {
    case OpKind::kSum: return T(a + b);
    case OpKind::kMax: return std::max(a, b);
    case OpKind::kMin: return std::min(a, b);
    case OpKind::kProd: return T(a * b);
    case OpKind::kBor:
      if constexpr (std::is_integral_v<T>) return T(a | b);
      return a;
  }
  return a;
}

template <typename T>
std::vector<T> inputOf(OpKind k, int rank, size_t n, int salt) {
  std::vector<T> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = value<T>(k, rank + salt, i);
  return v;
}

template <typename T>
std::vector<T> referenceOf(OpKind k, int size, size_t n, int salt) {
  std::vector<T> ref = inputOf<T>(k, 0, n, salt);
  for (int r = 1; r < size; ++r)
    for (size_t i = 0; i < n; ++i) ref[i] = combine(k, ref[i], value<T>(k, r + salt, i));
  return ref;
}

// One posted call and what it must produce.
struct Call {
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Request req = MPI_REQUEST_NULL;
  std::vector<unsigned char> send, recv, expected;
  std::string label;
};

template <typename T>
void post(Call& c, MPI_Comm comm, MPI_Datatype dt, OpKind k, size_t n, bool in_place, int salt,
          const char* dtname) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  c.comm = comm;
  const std::vector<T> in = inputOf<T>(k, rank, n, salt), ref = referenceOf<T>(k, size, n, salt);
  const size_t bytes = n * sizeof(T);
  c.send.assign(bytes, 0);
  c.recv.assign(bytes + 16, 0xAB);  // a canary past the end
  c.expected.assign(bytes, 0);
  if (bytes) {
    std::memcpy(c.send.data(), in.data(), bytes);
    std::memcpy(c.expected.data(), ref.data(), bytes);
  }
  if (in_place && bytes) std::memcpy(c.recv.data(), in.data(), bytes);
  char label[160];
  std::snprintf(label, sizeof label, "%s %s count %zu%s salt %d", dtname, opName(k), n,
                in_place ? " in place" : "", salt);
  c.label = label;
  const int rc = MPI_Iallreduce(in_place ? MPI_IN_PLACE : c.send.data(), c.recv.data(), int(n),
                                dt, mpiOp(k), comm, &c.req);
  if (rc != MPI_SUCCESS) fail(c.label + ": MPI_Iallreduce returned an error");
}

void verify(const Call& c) {
  ++checked;
  const size_t bytes = c.expected.size();
  if (c.req != MPI_REQUEST_NULL) fail(c.label + ": request not MPI_REQUEST_NULL after completion");
  if (bytes && std::memcmp(c.recv.data(), c.expected.data(), bytes) != 0) {
    size_t first = 0;
    while (first < bytes && c.recv[first] == c.expected[first]) ++first;
    fail(c.label + ": result differs from the reference at byte " + std::to_string(first));
  }
  for (size_t i = bytes; i < c.recv.size(); ++i)
    if (c.recv[i] != 0xAB) return fail(c.label + ": wrote past the receive buffer");
}

// Posts one call of the matrix by index (dtype x op x count x in place).
struct DType {
  MPI_Datatype dt;
  const char* name;
  int which;  // 0 int32, 1 int64, 2 uint64, 3 float, 4 double
};

void postCase(Call& c, MPI_Comm comm, const DType& d, OpKind k, size_t n, bool in_place,
              int salt) {
  switch (d.which) {
    case 0: post<int32_t>(c, comm, d.dt, k, n, in_place, salt, d.name); break;
    case 1: post<int64_t>(c, comm, d.dt, k, n, in_place, salt, d.name); break;
    case 2: post<uint64_t>(c, comm, d.dt, k, n, in_place, salt, d.name); break;
    case 3: post<float>(c, comm, d.dt, k, n, in_place, salt, d.name); break;
    default: post<double>(c, comm, d.dt, k, n, in_place, salt, d.name); break;
  }
}

const DType kTypes[] = {{MPI_INT32_T, "int32", 0},
                        {MPI_INT64_T, "int64", 1},
                        {MPI_UINT64_T, "uint64", 2},
                        {MPI_FLOAT, "float", 3},
                        {MPI_DOUBLE, "double", 4}};

void complete(Call& c, int how) {
  if (how == 0) {
    MPI_Wait(&c.req, MPI_STATUS_IGNORE);
  } else {
    int flag = 0;
    const double start = nowMs();
    while (!flag) {
      MPI_Test(&c.req, &flag, MPI_STATUS_IGNORE);
      if (nowMs() - start > 60000) return fail(c.label + ": MPI_Test never completed");
    }
  }
}

void runMatrix(bool large) {
  std::vector<size_t> counts = {0, 1, 7, 1001, 65537};
  if (large) counts.push_back(1048579);
  const OpKind ops[] = {OpKind::kSum, OpKind::kMax, OpKind::kMin, OpKind::kProd, OpKind::kBor};
  int salt = 0, how = 0;
  for (const DType& d : kTypes)
    for (OpKind k : ops) {
      if (k == OpKind::kBor && d.which >= 3) continue;  // bitwise ops are for integers
      for (size_t n : counts)
        for (bool in_place : {false, true}) {
          Call c;
          postCase(c, MPI_COMM_WORLD, d, k, n, in_place, ++salt);
          complete(c, how++ % 2);
          verify(c);
        }
    }
  // Three at once on one communicator, completed by MPI_Waitall. The first
  // is large (256 Ki elements: many agent round trips), so it is still
  // running when the others are posted and they queue behind it; small
  // first calls finish inside the next post often enough (one round trip).
  std::vector<Call> calls(3);
  for (size_t i = 0; i < calls.size(); ++i)
    postCase(calls[i], MPI_COMM_WORLD, kTypes[i], OpKind::kSum, i == 0 ? 262144 : 4097 + i, i == 1,
             1000 + int(i));
  std::vector<MPI_Request> reqs;
  for (Call& c : calls) reqs.push_back(c.req);
  MPI_Waitall(int(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE);
  for (size_t i = 0; i < calls.size(); ++i) {
    calls[i].req = reqs[i];
    verify(calls[i]);
  }
  // MPI_Cancel and MPI_Request_free on a call just posted: a collective is
  // not cancelled and a running one not freed (errors, as libnbc answers:
  // Open MPI reports both on MPI_COMM_WORLD's handler); the request stays
  // valid and MPI_Wait completes it with the right result. Only a call
  // already complete may be freed - except where the MPI library frees a
  // generalized request's handle anyway (below).
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  Call running;
  postCase(running, MPI_COMM_WORLD, kTypes[4], OpKind::kSum, 70001, false, 2000);
  if (MPI_Cancel(&running.req) == MPI_SUCCESS) fail("MPI_Cancel of a collective succeeded");
  if (MPI_Request_free(&running.req) != MPI_SUCCESS) {
    if (running.req == MPI_REQUEST_NULL) fail("a refused MPI_Request_free cleared the request");
    else MPI_Wait(&running.req, MPI_STATUS_IGNORE);
  } else {
    // Accepted: MPICH releases a generalized request's handle whatever its
    // free function answers (the PMPI layer's MPI_Iallreduce on MPICH). The
    // call still ends and writes its result: switchagg's blocking
    // collectives on a communicator wait for its nonblocking calls first,
    // so after this barrier the buffer must be final.
    if (running.req != MPI_REQUEST_NULL) fail("an accepted MPI_Request_free kept the request");
    MPI_Barrier(MPI_COMM_WORLD);
  }
  verify(running);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

void runMulti(int rounds, const std::string& expect) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm comms[3];
  MPI_Comm_dup(MPI_COMM_WORLD, &comms[0]);
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &comms[1]);
  MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &comms[2]);
  for (int round = 0; round < rounds; ++round) {
    std::vector<Call> calls(9);
    for (int i = 0; i < 9; ++i)
      postCase(calls[size_t(i)], comms[i % 3], kTypes[size_t(i % 5)],
               i % 2 ? OpKind::kMax : OpKind::kSum, size_t(1000 + 4099 * i), i % 4 == 3,
               round * 10 + i);
    std::vector<MPI_Request> reqs;
    for (Call& c : calls) reqs.push_back(c.req);
    // A blocking allreduce on WORLD while the others are outstanding.
    int one = 1, total = 0;
    MPI_Allreduce(&one, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (total != size) fail("blocking allreduce among outstanding Iallreduces");
    MPI_Waitall(int(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE);
    for (size_t i = 0; i < calls.size(); ++i) {
      calls[i].req = reqs[i];
      verify(calls[i]);
    }
  }
  // Every communicator's calls took the expected path, and calls queued.
  uint64_t queued = 0;
  for (int i = 0; i < 3; ++i) {
    const uint64_t sw = counter(comms[i], "iallreduce:switch");
    queued += counter(comms[i], "iallreduce:queued");
    if (expect == "switch" && sw != uint64_t(rounds) * 3)
      fail("communicator " + std::to_string(i) + ": " + std::to_string(sw) +
           " calls served by the switch, expected " + std::to_string(rounds * 3));
    if (rank == 0)
      std::printf("multi: communicator %d: iallreduce:switch %" PRIu64 " queued %" PRIu64
                  " redo:switch-busy %" PRIu64 "\n",
                  i, sw, counter(comms[i], "iallreduce:queued"),
                  counter(comms[i], "iallreduce:redo:switch-busy"));
  }
  if (expect == "switch" && queued == 0) fail("no call queued behind another");
  for (MPI_Comm& c : comms) MPI_Comm_free(&c);
}

// A busy loop of `ms` milliseconds calling MPI_Test every ~200 us, as a
// code computing between Iallreduce and Wait does. Returns whether the
// request completed during it.
// MPI_Test alone until the request completes or `bound_ms` passes.
bool testUntilDone(MPI_Request* req, double bound_ms) {
  const double end = nowMs() + bound_ms;
  int flag = 0;
  while (!flag && nowMs() < end) MPI_Test(req, &flag, MPI_STATUS_IGNORE);
  return flag != 0;
}

bool compute(MPI_Request* req, double ms) {
  const double end = nowMs() + ms;
  int flag = 0;
  volatile double x = 1;
  double next_test = nowMs();
  while (nowMs() < end) {
    for (int i = 0; i < 200; ++i) x = x * 1.0000001 + 1e-9;
    if (!flag && nowMs() >= next_test) {
      MPI_Test(req, &flag, MPI_STATUS_IGNORE);
      next_test = nowMs() + 0.2;
    }
  }
  return flag != 0;
}

void runOverlap(size_t bytes, int iters, double min_hidden, const std::string& expect) {
  const size_t n = bytes / sizeof(double);
  std::vector<double> send(n, 1.0), recv(n, 0.0);
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  auto once = [&] {
    MPI_Request r;
    MPI_Iallreduce(send.data(), recv.data(), int(n), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
  };
  for (int i = 0; i < 3; ++i) once();  // warm-up (join, scratch, connections)
  // A first estimate of the allreduce alone sets the compute's length.
  double t_est = 0;
  for (int i = 0; i < 3; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = nowMs();
    once();
    t_est += (nowMs() - t0) / 3;
  }
  MPI_Allreduce(MPI_IN_PLACE, &t_est, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  // Compute 1.5x the allreduce: with full overlap the total is the compute
  // (ratio 1.5 / 2.5 = 0.6) and the call is done before the compute ends.
  const double c_ms = 1.5 * t_est;
  const uint64_t switched_before = counter(MPI_COMM_WORLD, "iallreduce:switch");
  // Alone and overlapped interleaved, so that a change of the machine's
  // load hits both alike.
  std::vector<double> alone, both;
  // The outcome agreement (calls above the keep limit): this rank's wait
  // from its own outcome to the agreement's end, per call alone.
  std::vector<double> agree_ms;
  int done_in_compute = 0, not_done_by_test = 0;
  const double test_bound_ms = std::max(10000.0, 50 * t_est);
  for (int i = 0; i < iters; ++i) {
    const uint64_t agree_us_before = counter(MPI_COMM_WORLD, "iallreduce:agreement_us");
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = nowMs();
    once();
    alone.push_back(nowMs() - t0);
    agree_ms.push_back(double(counter(MPI_COMM_WORLD, "iallreduce:agreement_us") - agree_us_before) /
                       1000.0);
    std::fill(recv.begin(), recv.end(), 0.0);
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = nowMs();
    MPI_Request r;
    MPI_Iallreduce(send.data(), recv.data(), int(n), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r);
    if (compute(&r, c_ms)) ++done_in_compute;
    // The code keeps testing after its compute: MPI_Test alone must finish
    // the call (asynchronous progress), within a bound far above the call.
    if (!testUntilDone(&r, test_bound_ms)) ++not_done_by_test;
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    both.push_back(nowMs() - t0);
    if (recv[0] != double(size) || recv[n - 1] != double(size)) fail("overlap: wrong result");
  }
  std::sort(alone.begin(), alone.end());
  double t_ar = alone[alone.size() / 2];
  MPI_Allreduce(MPI_IN_PLACE, &t_ar, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  std::sort(both.begin(), both.end());
  double t_both = both[both.size() / 2];
  MPI_Allreduce(MPI_IN_PLACE, &t_both, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  // Per call, the rank whose stream ended last waited for the agreement
  // alone (the others also for that rank): the minimum over the ranks is
  // what the agreement added to the call; its median over the calls.
  MPI_Allreduce(MPI_IN_PLACE, agree_ms.data(), int(agree_ms.size()), MPI_DOUBLE, MPI_MIN,
                MPI_COMM_WORLD);
  std::sort(agree_ms.begin(), agree_ms.end());
  const double t_agree = agree_ms[agree_ms.size() / 2];
  int done_min = done_in_compute;
  MPI_Allreduce(MPI_IN_PLACE, &done_min, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  const uint64_t switched =
      (counter(MPI_COMM_WORLD, "iallreduce:switch") - switched_before) / 2;
  // ratio: total / (compute + allreduce), C / (C + A) = 0.6 at best, 1 = none.
  // hidden: the share of the shorter of the two that disappeared from the
  // total, (C + A - T) / min(C, A): 1 = full overlap, 0 = none (the one
  // the assertion uses: it does not depend on how C compares with A).
  const double ratio = t_both / (c_ms + t_ar);
  const double hidden = (c_ms + t_ar - t_both) / std::min(c_ms, t_ar);
  if (world_rank == 0)
    std::printf("overlap: %zu bytes, allreduce alone %.2f ms, compute %.2f ms, both %.2f ms, "
                "ratio %.3f (0.6 ideal, 1.0 no overlap), hidden %.2f (1 full, 0 none), completed "
                "during compute %d/%d, switch served %" PRIu64 ", agreement %.3f ms\n",
                bytes, t_ar, c_ms, t_both, ratio, hidden, done_min, iters, switched, t_agree);
  // --min-hidden 0 or below (the benchmark): measure only.
  if (min_hidden > 0 && hidden < min_hidden)
    fail("no overlap: total " + std::to_string(t_both) + " ms vs compute " +
         std::to_string(c_ms) + " + allreduce " + std::to_string(t_ar));
  // Whether a call ends inside the compute or just after it is the two
  // cores' contention (the busy ranks starve the agent), so it is printed,
  // not asserted; that MPI_Test alone completes every call is asserted.
  int not_done_max = not_done_by_test;
  MPI_Allreduce(MPI_IN_PLACE, &not_done_max, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (not_done_max > 0)
    fail(std::to_string(not_done_max) + " Iallreduce call(s) not completed by MPI_Test alone within " +
         std::to_string(test_bound_ms) + " ms");
  if (expect == "switch" && switched != uint64_t(iters))
    fail("not every overlapped call was served by the switch");
}

// MPI_Test alone until `req` completes; past max_ms: fail and abort.
void testBounded(MPI_Request* req, double max_ms, const std::string& what) {
  const double t0 = nowMs();
  int flag = 0;
  while (!flag) {
    MPI_Test(req, &flag, MPI_STATUS_IGNORE);
    if (!flag && nowMs() - t0 > max_ms) {
      fail(what + " not complete after " + std::to_string(max_ms) + " ms");
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
  }
}

void runIbarrier(int iters, const std::string& expect, double max_ms) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const uint64_t before = counter(MPI_COMM_WORLD, "ibarrier:switch");
  uint64_t posted = 0;
  // A barrier's promise: nobody completes it before the last rank posted
  // it. Rank k % size posts 30 ms late; the times are CLOCK_MONOTONIC on
  // one machine (emulated nodes included), so they compare across ranks
  // (MPI_Wtime does not: Open MPI starts it at each process's own origin).
  for (int k = 0; k < iters; ++k) {
    ++checked;
    const int late = k % size;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == late) {
      const timespec pause{0, 30 * 1000 * 1000};
      nanosleep(&pause, nullptr);
    }
    double times[2];
    times[0] = nowMs() / 1e3;
    MPI_Request r;
    if (MPI_Ibarrier(MPI_COMM_WORLD, &r) != MPI_SUCCESS) fail("MPI_Ibarrier returned an error");
    ++posted;
    testBounded(&r, max_ms, "MPI_Ibarrier " + std::to_string(k));
    times[1] = nowMs() / 1e3;
    std::vector<double> all(size_t(2 * size));
    MPI_Allgather(times, 2, MPI_DOUBLE, all.data(), 2, MPI_DOUBLE, MPI_COMM_WORLD);
    for (int q = 0; q < size; ++q)
      if (all[size_t(2 * q + 1)] < all[size_t(2 * late)])
        fail("rank " + std::to_string(q) + " completed MPI_Ibarrier " + std::to_string(k) + " " +
             std::to_string((all[size_t(2 * late)] - all[size_t(2 * q + 1)]) * 1e3) +
             " ms before rank " + std::to_string(late) + " posted it");
  }
  // Outstanding together with MPI_Iallreduce calls (queued in posting
  // order), one MPI_Waitall: every sum exact.
  for (int k = 0; k < iters; ++k) {
    Call a, b;
    MPI_Request bars[2];
    postCase(a, MPI_COMM_WORLD, kTypes[0], OpKind::kSum, 100, false, k);
    MPI_Ibarrier(MPI_COMM_WORLD, &bars[0]);
    postCase(b, MPI_COMM_WORLD, kTypes[0], OpKind::kSum, 5000, k % 2 == 1, k + 1);
    MPI_Ibarrier(MPI_COMM_WORLD, &bars[1]);
    posted += 2;
    MPI_Request all[4] = {a.req, bars[0], b.req, bars[1]};
    if (MPI_Waitall(4, all, MPI_STATUSES_IGNORE) != MPI_SUCCESS) fail("MPI_Waitall returned an error");
    a.req = all[0];
    b.req = all[2];
    verify(a);
    verify(b);
  }
  const uint64_t served = counter(MPI_COMM_WORLD, "ibarrier:switch") - before;
  if (world_rank == 0)
    std::printf("ibarrier: %" PRIu64 " posted, ibarrier:switch %" PRIu64 " previous %" PRIu64
                " redo %" PRIu64 "\n",
                posted, served, counter(MPI_COMM_WORLD, "ibarrier:previous"),
                counter(MPI_COMM_WORLD, "ibarrier:redo"));
  if (size > 1 && expect == "switch" && served != posted)
    fail("--expect switch: " + std::to_string(served) + " of " + std::to_string(posted) +
         " MPI_Ibarrier calls served by the switch");
  if (expect == "previous" && served != 0) fail("--expect previous: the switch served MPI_Ibarrier");
}

// One posted MPI_Iallgather or MPI_Ibcast and its expected bytes.
struct RoutedCall {
  MPI_Request req = MPI_REQUEST_NULL;
  std::vector<int32_t> send, recv, expected;
  std::string label;
  size_t compare = SIZE_MAX;  // ints of recv compared (in place reduce-scatter: its block)
};

int32_t routedValue(int rank, size_t i, int salt) {
  return int32_t(rank * 1000003 + int(i) * 7 + salt * 131);
}

// Iallgather of `n` int32 per rank; strided: the receive side one
// MPI_Type_vector (every other int) per rank, the gaps must stay untouched.
void postIallgather(RoutedCall& c, MPI_Comm comm, size_t n, bool in_place, bool strided,
                    int salt) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const size_t stride = strided ? 2 : 1, per_rank = n * stride;
  c.send.resize(n);
  for (size_t i = 0; i < n; ++i) c.send[i] = routedValue(rank, i, salt);
  c.recv.assign(size_t(size) * per_rank + 4, -7);  // gaps and a canary: -7
  c.expected = c.recv;
  for (int r = 0; r < size; ++r)
    for (size_t i = 0; i < n; ++i) c.expected[size_t(r) * per_rank + i * stride] = routedValue(r, i, salt);
  char label[160];
  std::snprintf(label, sizeof label, "MPI_Iallgather %zu ints%s%s salt %d", n,
                in_place ? " in place" : "", strided ? " strided" : "", salt);
  c.label = label;
  MPI_Datatype rtype = MPI_INT32_T, vec = MPI_DATATYPE_NULL;
  int rcount = int(n);
  if (strided) {
    MPI_Type_vector(int(n), 1, 2, MPI_INT32_T, &vec);
    MPI_Type_create_resized(vec, 0, MPI_Aint(per_rank * sizeof(int32_t)), &rtype);
    MPI_Type_free(&vec);
    MPI_Type_commit(&rtype);
    rcount = 1;
  }
  if (in_place)
    for (size_t i = 0; i < n; ++i) c.recv[size_t(rank) * per_rank + i * stride] = c.send[i];
  const int rc = MPI_Iallgather(in_place ? MPI_IN_PLACE : c.send.data(), int(n), MPI_INT32_T,
                                c.recv.data(), rcount, rtype, comm, &c.req);
  if (strided) MPI_Type_free(&rtype);  // freed while the call runs, as MPI allows
  if (rc != MPI_SUCCESS) fail(c.label + ": returned an error");
}

// Ibcast of `n` int32 from `root`; strided: one MPI_Type_vector of them.
void postIbcast(RoutedCall& c, MPI_Comm comm, size_t n, int root, bool strided, int salt) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const size_t stride = strided ? 2 : 1;
  c.recv.assign(n * stride + 4, -7);
  c.expected = c.recv;
  for (size_t i = 0; i < n; ++i) c.expected[i * stride] = routedValue(root, i, salt);
  if (rank == root) c.recv = c.expected;
  char label[160];
  std::snprintf(label, sizeof label, "MPI_Ibcast %zu ints root %d%s salt %d", n, root,
                strided ? " strided" : "", salt);
  c.label = label;
  MPI_Datatype type = MPI_INT32_T;
  int count = int(n);
  if (strided) {
    MPI_Type_vector(int(n), 1, 2, MPI_INT32_T, &type);
    MPI_Type_commit(&type);
    count = 1;
  }
  const int rc = MPI_Ibcast(c.recv.data(), count, type, root, comm, &c.req);
  if (strided) MPI_Type_free(&type);
  if (rc != MPI_SUCCESS) fail(c.label + ": returned an error");
}

// Ireduce_scatter_block of `block` elements per rank, MPI_SUM of small
// integers (exact in int32 and double in any order); in place: the whole
// vector in recv, this rank's block at its start.
template <typename T>
void postIrsb(RoutedCall& c, MPI_Comm comm, MPI_Datatype dt, size_t block, bool in_place,
              int salt) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const size_t n = block * size_t(size);
  auto v = [&](int r, size_t j) { return T(int64_t((r * 31 + int64_t(j) * 7 + salt) % 101) - 50); };
  std::vector<T> in(n), ref(block + 1, T(-7));
  for (size_t j = 0; j < n; ++j) in[j] = v(rank, j);
  for (size_t i = 0; i < block; ++i) {
    T sum = T(0);
    for (int r = 0; r < size; ++r) sum = T(sum + v(r, size_t(rank) * block + i));
    ref[i] = sum;
  }
  // int32 storage for any T: sized in bytes.
  const size_t words = (n * sizeof(T) + 3) / 4 + 1;
  c.send.assign(words, 0);
  std::memcpy(c.send.data(), in.data(), n * sizeof(T));
  c.recv.assign(words, -7);
  if (in_place) std::memcpy(c.recv.data(), in.data(), n * sizeof(T));
  c.expected = c.recv;
  std::memcpy(c.expected.data(), ref.data(), block * sizeof(T));
  // In place, MPI leaves the rest of the buffer unspecified.
  if (in_place) c.compare = block * sizeof(T) / 4;
  if (!in_place) {  // past the block: untouched
    std::vector<int32_t> untouched(words, -7);
    std::memcpy(untouched.data(), ref.data(), block * sizeof(T));
    c.expected = untouched;
  }
  char label[160];
  std::snprintf(label, sizeof label, "MPI_Ireduce_scatter_block %zu x %zu bytes%s salt %d", block,
                sizeof(T), in_place ? " in place" : "", salt);
  c.label = label;
  const int rc = MPI_Ireduce_scatter_block(in_place ? MPI_IN_PLACE : c.send.data(), c.recv.data(),
                                           int(block), dt, MPI_SUM, comm, &c.req);
  if (rc != MPI_SUCCESS) fail(c.label + ": returned an error");
}

void verifyRouted(const RoutedCall& c) {
  ++checked;
  if (c.req != MPI_REQUEST_NULL) fail(c.label + ": request not MPI_REQUEST_NULL after completion");
  for (size_t i = 0; i < std::min(c.compare, c.expected.size()); ++i)
    if (c.recv[i] != c.expected[i])
      return fail(c.label + ": differs at int " + std::to_string(i) + " (" +
                  std::to_string(c.recv[i]) + " != " + std::to_string(c.expected[i]) + ")");
}

void runIrouted(int iters, const std::string& expect) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  uint64_t gathers = 0, bcasts = 0, rsbs = 0;
  for (int k = 0; k < iters; ++k) {
    Call a, b;
    std::vector<RoutedCall> g(4), bc(3);
    // Posting order mixes the kinds: one queue, completed in this order.
    postCase(a, MPI_COMM_WORLD, kTypes[0], OpKind::kSum, 1000, false, k);
    postIallgather(g[0], MPI_COMM_WORLD, 1000 + size_t(k), false, false, k);
    postIbcast(bc[0], MPI_COMM_WORLD, 3001, k % size, false, k);
    postIallgather(g[1], MPI_COMM_WORLD, 257, true, false, k + 1);
    postCase(b, MPI_COMM_WORLD, kTypes[4], OpKind::kSum, 5000, k % 2 == 1, k + 1);
    postIbcast(bc[1], MPI_COMM_WORLD, 100, (k + 1) % size, true, k + 2);
    postIallgather(g[2], MPI_COMM_WORLD, 300, k % 2 == 0, true, k + 3);
    // Above the keep limit (1 MiB): ends on the nonblocking agreement.
    postIallgather(g[3], MPI_COMM_WORLD, (1 << 20) / 4 / size_t(size) + 1024, k % 2 == 1, false,
                   k + 4);
    postIbcast(bc[2], MPI_COMM_WORLD, 1, (k + 2) % size, false, k + 5);
    std::vector<RoutedCall> rs(3);
    postIrsb<int32_t>(rs[0], MPI_COMM_WORLD, MPI_INT32_T, 1000 + size_t(k), k % 2 == 1, k);
    postIrsb<double>(rs[1], MPI_COMM_WORLD, MPI_DOUBLE, 3000, k % 2 == 0, k + 1);
    // Above the keep limit: ends on the nonblocking agreement.
    postIrsb<int32_t>(rs[2], MPI_COMM_WORLD, MPI_INT32_T, (1 << 20) / 4 / size_t(size) + 1024,
                      k % 2 == 0, k + 2);
    gathers += g.size();
    bcasts += bc.size();
    rsbs += rs.size();
    std::vector<MPI_Request> reqs = {a.req, b.req};
    for (RoutedCall& c : g) reqs.push_back(c.req);
    for (RoutedCall& c : bc) reqs.push_back(c.req);
    for (RoutedCall& c : rs) reqs.push_back(c.req);
    if (MPI_Waitall(int(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE) != MPI_SUCCESS)
      fail("MPI_Waitall returned an error");
    a.req = reqs[0];
    b.req = reqs[1];
    for (size_t i = 0; i < g.size(); ++i) g[i].req = reqs[2 + i];
    for (size_t i = 0; i < bc.size(); ++i) bc[i].req = reqs[2 + g.size() + i];
    for (size_t i = 0; i < rs.size(); ++i) rs[i].req = reqs[2 + g.size() + bc.size() + i];
    for (const RoutedCall& c : rs) verifyRouted(c);
    verify(a);
    verify(b);
    for (const RoutedCall& c : g) verifyRouted(c);
    for (const RoutedCall& c : bc) verifyRouted(c);
  }
  const uint64_t gs = counter(MPI_COMM_WORLD, "iallgather:switch");
  const uint64_t bs = counter(MPI_COMM_WORLD, "ibcast:switch");
  if (world_rank == 0)
    std::printf("irouted: %" PRIu64 " iallgather, iallgather:switch %" PRIu64 " previous %" PRIu64
                " queued %" PRIu64 " redo %" PRIu64 "; %" PRIu64 " ibcast, ibcast:switch %" PRIu64
                " previous %" PRIu64 " queued %" PRIu64 " redo %" PRIu64 "\n",
                gathers, gs, counter(MPI_COMM_WORLD, "iallgather:previous"),
                counter(MPI_COMM_WORLD, "iallgather:queued"),
                counter(MPI_COMM_WORLD, "iallgather:redo"), bcasts, bs,
                counter(MPI_COMM_WORLD, "ibcast:previous"), counter(MPI_COMM_WORLD, "ibcast:queued"),
                counter(MPI_COMM_WORLD, "ibcast:redo"));
  const uint64_t rss = counter(MPI_COMM_WORLD, "ireduce_scatter_block:switch");
  if (world_rank == 0)
    std::printf("irouted: previous:one-node iallgather %" PRIu64 " ibcast %" PRIu64
                " ireduce_scatter_block %" PRIu64 "\n",
                counter(MPI_COMM_WORLD, "iallgather:previous:one-node"),
                counter(MPI_COMM_WORLD, "ibcast:previous:one-node"),
                counter(MPI_COMM_WORLD, "ireduce_scatter_block:previous:one-node"));
  if (world_rank == 0)
    std::printf("irouted: %" PRIu64 " ireduce_scatter_block, ireduce_scatter_block:switch %" PRIu64
                " previous %" PRIu64 " redo %" PRIu64 "\n",
                rsbs, rss, counter(MPI_COMM_WORLD, "ireduce_scatter_block:previous"),
                counter(MPI_COMM_WORLD, "ireduce_scatter_block:redo"));
  if (size > 1 && expect == "switch" && (gs != gathers || bs != bcasts || rss != rsbs))
    fail("--expect switch: not every MPI_Iallgather / MPI_Ibcast / MPI_Ireduce_scatter_block "
         "was served by the switch");
  if (expect == "previous" &&
      (rss != 0 || counter(MPI_COMM_WORLD, "ireduce_scatter_block:previous") != rsbs))
    fail("--expect previous: not every MPI_Ireduce_scatter_block went to the previous module");
  if (expect == "previous" &&
      (gs != 0 || bs != 0 || counter(MPI_COMM_WORLD, "iallgather:previous") != gathers ||
       counter(MPI_COMM_WORLD, "ibcast:previous") != bcasts))
    fail("--expect previous: not every MPI_Iallgather / MPI_Ibcast went to the previous module");
}

void runFault(const std::string& dir, size_t bytes, double max_ms, bool routed) {
  const size_t n = bytes / sizeof(int32_t);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  bool ready = false;
  int after = 0, iter = 0;
  const double start = nowMs();
  while (true) {
    Call c;
    postCase(c, MPI_COMM_WORLD, kTypes[0], OpKind::kSum, n, iter % 2 == 1, iter);
    const double t0 = nowMs();
    int flag = 0;
    while (!flag) {
      MPI_Test(&c.req, &flag, MPI_STATUS_IGNORE);
      if (nowMs() - t0 > max_ms) {
        fail("call " + std::to_string(iter) + " took over " + std::to_string(max_ms) + " ms");
        MPI_Abort(MPI_COMM_WORLD, 3);
      }
    }
    verify(c);
    // And an MPI_Ibarrier through the same queue, as bounded.
    MPI_Request bar;
    if (MPI_Ibarrier(MPI_COMM_WORLD, &bar) != MPI_SUCCESS) fail("MPI_Ibarrier returned an error");
    testBounded(&bar, max_ms, "MPI_Ibarrier after call " + std::to_string(iter));
    if (routed) {
      // An Iallgather and an Ibcast outstanding together, as bounded.
      RoutedCall g, b, rsb;
      postIallgather(g, MPI_COMM_WORLD, n / size_t(size), iter % 2 == 0, false, iter);
      postIbcast(b, MPI_COMM_WORLD, n, iter % size, false, iter);
      postIrsb<int32_t>(rsb, MPI_COMM_WORLD, MPI_INT32_T, n / size_t(size), iter % 2 == 1, iter);
      MPI_Request both[3] = {g.req, b.req, rsb.req};
      const double t1 = nowMs();
      int all_done = 0;
      while (!all_done) {
        MPI_Testall(3, both, &all_done, MPI_STATUSES_IGNORE);
        if (!all_done && nowMs() - t1 > max_ms) {
          fail("MPI_Iallgather + MPI_Ibcast + MPI_Ireduce_scatter_block after call " +
               std::to_string(iter) +
               " not complete after " + std::to_string(max_ms) + " ms");
          MPI_Abort(MPI_COMM_WORLD, 3);
        }
      }
      g.req = both[0];
      b.req = both[1];
      rsb.req = both[2];
      verifyRouted(g);
      verifyRouted(b);
      verifyRouted(rsb);
    }
    ++iter;
    if (!ready && counter(MPI_COMM_WORLD, "iallreduce:switch") > 0) {
      ready = true;
      if (rank == 0) touch(dir + "/ready");
    }
    // Every rank must stop at the same call: rank 0 tells the others
    // whether it fired, point to point (a collective could meet the fault
    // itself; only Iallreduces must).
    int fired = exists(dir + "/fired") ? 1 : 0;
    if (rank == 0)
      for (int r = 1; r < size; ++r) MPI_Send(&fired, 1, MPI_INT, r, 7, MPI_COMM_WORLD);
    else
      MPI_Recv(&fired, 1, MPI_INT, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (fired && ++after >= 20) break;
    if (nowMs() - start > 90000) {
      fail("the fault never fired");
      break;
    }
  }
  const uint64_t redo = counter(MPI_COMM_WORLD, "iallreduce:redo");
  if (rank == 0)
    std::printf("fault: %d calls, iallreduce:switch %" PRIu64 ", iallreduce:redo %" PRIu64
                ", redo:switch-failed %" PRIu64 ", redo:switch-unavailable %" PRIu64 "\n",
                iter, counter(MPI_COMM_WORLD, "iallreduce:switch"), redo,
                counter(MPI_COMM_WORLD, "iallreduce:redo:switch-failed"),
                counter(MPI_COMM_WORLD, "iallreduce:redo:switch-unavailable"));
  if (redo == 0) fail("no call was redone on the host after the fault");
  if (rank == 0)
    std::printf("fault: ibarrier:switch %" PRIu64 " redo %" PRIu64 ", redo:switch-failed %" PRIu64
                "\n",
                counter(MPI_COMM_WORLD, "ibarrier:switch"), counter(MPI_COMM_WORLD, "ibarrier:redo"),
                counter(MPI_COMM_WORLD, "ibarrier:redo:switch-failed"));
  if (routed && rank == 0)
    std::printf("fault: iallgather:switch %" PRIu64 " redo %" PRIu64 ", redo:switch-failed %" PRIu64
                "; ibcast:switch %" PRIu64 " redo %" PRIu64 ", redo:switch-failed %" PRIu64 "\n",
                counter(MPI_COMM_WORLD, "iallgather:switch"),
                counter(MPI_COMM_WORLD, "iallgather:redo"),
                counter(MPI_COMM_WORLD, "iallgather:redo:switch-failed"),
                counter(MPI_COMM_WORLD, "ibcast:switch"), counter(MPI_COMM_WORLD, "ibcast:redo"),
                counter(MPI_COMM_WORLD, "ibcast:redo:switch-failed"));
  if (routed && rank == 0)
    std::printf("fault: ireduce_scatter_block:switch %" PRIu64 " redo %" PRIu64
                ", redo:switch-failed %" PRIu64 "\n",
                counter(MPI_COMM_WORLD, "ireduce_scatter_block:switch"),
                counter(MPI_COMM_WORLD, "ireduce_scatter_block:redo"),
                counter(MPI_COMM_WORLD, "ireduce_scatter_block:redo:switch-failed"));
}

void runLate(double late_ms, int late_rank) {
  // One served call first: the communicator's setup (its join, collective
  // on first use) is behind every rank before the late one.
  RoutedCall first;
  postIallgather(first, MPI_COMM_WORLD, 100, false, false, 1);
  MPI_Wait(&first.req, MPI_STATUS_IGNORE);
  verifyRouted(first);
  if (world_rank == late_rank) {
    const double until = nowMs() + late_ms;
    while (nowMs() < until) {
      const struct timespec pause = {0, 50 * 1000 * 1000};
      nanosleep(&pause, nullptr);
    }
  }
  RoutedCall c;
  postIallgather(c, MPI_COMM_WORLD, 1000, false, false, 0);
  MPI_Wait(&c.req, MPI_STATUS_IGNORE);
  verifyRouted(c);
  std::printf("late: rank %d completed its MPI_Iallgather\n", world_rank);
}

// --mode recv (see the top): a correct program that hangs when a posted
// call moves only while its own rank tests or waits for it.
// --mode inherit: --warm blocking MPI_Allreduces of --bytes (offload=auto
// settles that size), then --iters MPI_Iallreduce + MPI_Wait of the same
// size: every one must be routed by the blocking calls' settled verdict
// (iallreduce:inherited) and served as --expect says: switch, previous, or
// measured: the switch when the blocking calls measured it no slower than
// every other path they measured, else the previous module (the tuner's
// agreed times, counters tune:us:<algorithm>:<bytes>; docs/selection.md).
// Every result exact.
void runInherit(size_t bytes, int warm, int iters, const std::string& expect) {
  const size_t n = bytes / sizeof(double);
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<double> send(n, double(world_rank + 1)), recv(n, 0.0);
  const double want = double(size) * (size + 1) / 2;
  auto check = [&](const char* what, int i) {
    ++checked;
    if (recv[0] != want || recv[n / 2] != want || recv[n - 1] != want)
      fail(std::string(what) + " " + std::to_string(i) + ": wrong sum");
    std::fill(recv.begin(), recv.end(), 0.0);
  };
  for (int i = 0; i < warm; ++i) {
    MPI_Allreduce(send.data(), recv.data(), int(n), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    check("blocking call", i);
  }
  const uint64_t inh0 = counter(MPI_COMM_WORLD, "iallreduce:inherited");
  const uint64_t sw0 = counter(MPI_COMM_WORLD, "iallreduce:switch");
  const uint64_t prev0 = counter(MPI_COMM_WORLD, "iallreduce:previous");
  for (int i = 0; i < iters; ++i) {
    MPI_Request r;
    if (MPI_Iallreduce(send.data(), recv.data(), int(n), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r) !=
            MPI_SUCCESS ||
        MPI_Wait(&r, MPI_STATUS_IGNORE) != MPI_SUCCESS)
      fail("MPI_Iallreduce " + std::to_string(i) + " returned an error");
    check("MPI_Iallreduce", i);
  }
  const uint64_t inh = counter(MPI_COMM_WORLD, "iallreduce:inherited") - inh0;
  const uint64_t sw = counter(MPI_COMM_WORLD, "iallreduce:switch") - sw0;
  const uint64_t prev = counter(MPI_COMM_WORLD, "iallreduce:previous") - prev0;
  std::printf("rank %d: inherit: %d MPI_Iallreduce of %zu bytes after %d blocking: inherited %llu, "
              "switch %llu, previous %llu\n",
              world_rank, iters, bytes, warm, static_cast<unsigned long long>(inh),
              static_cast<unsigned long long>(sw), static_cast<unsigned long long>(prev));
  if (inh != uint64_t(iters))
    fail("inherit: " + std::to_string(inh) + " of " + std::to_string(iters) +
         " calls inherited the blocking calls' verdict (not settled?)");
  std::string want_path = expect;
  if (expect == "measured") {
    const std::string b = std::to_string(bytes);
    const uint64_t sw_us = counter(MPI_COMM_WORLD, ("tune:us:switch:" + b).c_str());
    // The fastest other path measured (0: not measured).
    uint64_t other_us = 0;
    std::string other = "nothing";
    for (const char* alg : {"ring", "recursive_doubling", "rabenseifner", "hierarchical", "previous"}) {
      const uint64_t us = counter(MPI_COMM_WORLD, ("tune:us:" + std::string(alg) + ":" + b).c_str());
      if (us != 0 && (other_us == 0 || us < other_us)) other_us = us, other = alg;
    }
    if (sw_us == 0 && other_us == 0) fail("inherit: no path was measured");
    want_path = sw_us != 0 && (other_us == 0 || sw_us <= other_us) ? "switch" : "previous";
    std::printf("rank %d: inherit: the blocking calls measured switch %llu us, fastest other %s "
                "%llu us: expect %s\n", world_rank, static_cast<unsigned long long>(sw_us),
                other.c_str(), static_cast<unsigned long long>(other_us), want_path.c_str());
  }
  const uint64_t served = want_path == "switch" ? sw : prev;
  if (served != uint64_t(iters))
    fail("inherit: --expect " + want_path + ": " + std::to_string(served) + " of " +
         std::to_string(iters) + " calls served so");
}

void runRecv(size_t bytes, int iters, double max_ms, const std::string& expect) {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const uint64_t before = counter(MPI_COMM_WORLD, "iallreduce:switch");
  for (int round = 0; round < iters; ++round) {
    const double t0 = nowMs();
    Call big, small;
    postCase(big, MPI_COMM_WORLD, kTypes[4], OpKind::kSum, bytes / sizeof(double), round % 2 == 1,
             7000 + round);
    postCase(small, MPI_COMM_WORLD, kTypes[0], OpKind::kSum, 8, false, 8000 + round);
    int token = -1;
    if (world_rank == 0 && size > 1) {
      MPI_Recv(&token, 1, MPI_INT, 1, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (token != round) fail("round " + std::to_string(round) + ": wrong token");
      MPI_Wait(&big.req, MPI_STATUS_IGNORE);
      MPI_Wait(&small.req, MPI_STATUS_IGNORE);
    } else {
      MPI_Wait(&big.req, MPI_STATUS_IGNORE);
      MPI_Request last[1] = {small.req};
      MPI_Waitall(1, last, MPI_STATUSES_IGNORE);
      small.req = last[0];
      if (world_rank == 1) {
        token = round;
        MPI_Send(&token, 1, MPI_INT, 0, 77, MPI_COMM_WORLD);
      }
    }
    verify(big);
    verify(small);
    const double took = nowMs() - t0;
    if (took > max_ms) {
      fail("round " + std::to_string(round) + " took " + std::to_string(took) + " ms");
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  const uint64_t served = counter(MPI_COMM_WORLD, "iallreduce:switch") - before;
  if (world_rank == 0)
    std::printf("recv: %d rounds of %zu bytes + 32 bytes, iallreduce:switch %" PRIu64 "\n", iters,
                bytes, served);
  if (expect == "switch" && size > 1 && served != uint64_t(2 * iters))
    fail("--expect switch: " + std::to_string(served) + " of " + std::to_string(2 * iters) +
         " calls served by the switch");
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  std::string mode = "matrix", expect = "switch", fault_dir;
  bool large = false, routed = false;
  size_t bytes = 8 << 20;
  int iters = 10;
  int warm = 60;  // --mode inherit: blocking calls first
  double max_ms = 20000, min_hidden = 0.5, late_ms = 0;
  int late_rank = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--mode") mode = next();
    else if (a == "--expect") expect = next();
    else if (a == "--large") large = true;
    else if (a == "--routed") routed = true;
    else if (a == "--fault") fault_dir = next();
    else if (a == "--bytes") bytes = std::strtoull(next().c_str(), nullptr, 10);
    else if (a == "--iters") iters = std::atoi(next().c_str());
    else if (a == "--warm") warm = std::atoi(next().c_str());
    else if (a == "--max-ms") max_ms = std::atof(next().c_str());
    else if (a == "--min-hidden") min_hidden = std::atof(next().c_str());
    else if (a == "--late-ms") late_ms = std::atof(next().c_str());
    else if (a == "--late-rank") late_rank = std::atoi(next().c_str());
    else {
      if (world_rank == 0) std::fprintf(stderr, "mpi_iallreduce_check: unknown argument %s\n", a.c_str());
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  if (!diag.load()) {
    if (world_rank == 0) std::fprintf(stderr, "FAIL: switchagg component not loaded\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const double t0 = nowMs();
  if (mode == "matrix") runMatrix(large);
  else if (mode == "multi") runMulti(iters, expect);
  else if (mode == "overlap") runOverlap(bytes, iters, min_hidden, expect);
  else if (mode == "fault") runFault(fault_dir, bytes, max_ms, routed);
  else if (mode == "irouted") runIrouted(iters, expect);
  else if (mode == "late") runLate(late_ms, late_rank);
  else if (mode == "ibarrier") runIbarrier(iters, expect, max_ms);
  else if (mode == "recv") runRecv(bytes, iters, max_ms, expect);
  else if (mode == "inherit") runInherit(bytes, warm, iters, expect);
  else {
    if (world_rank == 0) std::fprintf(stderr, "mpi_iallreduce_check: unknown mode %s\n", mode.c_str());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const uint64_t sw = counter(MPI_COMM_WORLD, "iallreduce:switch");
  const uint64_t prev = counter(MPI_COMM_WORLD, "iallreduce:previous");
  const uint64_t queued = counter(MPI_COMM_WORLD, "iallreduce:queued");
  if (world_rank == 0)
    std::printf("counters (WORLD): iallreduce:switch %" PRIu64 " previous %" PRIu64
                " queued %" PRIu64 " redo %" PRIu64 " steps %" PRIu64 "; %.0f ms\n",
                sw, prev, queued, counter(MPI_COMM_WORLD, "iallreduce:redo"),
                counter(MPI_COMM_WORLD, "iallreduce:steps"), nowMs() - t0);
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size > 1 && mode != "fault" && mode != "multi" && mode != "ibarrier" &&
      mode != "irouted" && mode != "late" && mode != "recv" && mode != "inherit") {
    if (expect == "switch" && sw == 0) fail("--expect switch: no Iallreduce served by the switch");
    if (expect == "previous" && sw != 0) fail("--expect previous: the switch served Iallreduces");
    if (expect == "previous" && prev == 0) fail("--expect previous: nothing went to the previous module");
    if (expect == "switch" && mode == "matrix" && queued == 0)
      fail("--expect switch: the Waitall calls did not queue");
  }
  // One checked blocking MPI_Allreduce after the nonblocking calls: the
  // verbose log shows how the blocking path decides beside them (e.g. tuned
  // online beside the PMPI layer's progress thread, test_iallreduce_run.sh).
  ++checked;
  if (const long bad = check::checkedInt64Sum(MPI_COMM_WORLD, 4096, 3); bad >= 0)
    fail("the blocking allreduce after the nonblocking calls: element " + std::to_string(bad));
  const int rc = switchagg_verdict(failures, checked, ("iallreduce " + mode).c_str());
  MPI_Finalize();
  return rc;
}
