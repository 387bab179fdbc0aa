// MPI_Allreduce and MPI_Iallreduce of MPIX_C_FLOAT16 (IEEE binary16): SUM,
// MIN, MAX, in place and not, odd counts up to past a switch chunk, every
// result checked on every rank against references this program computes
// itself (the compiler's _Float16 conversions, plain loops in rank order):
//
// * MIN/MAX, and sums of small integers (every partial sum exact in 16
//   bits): bitwise equal on every path;
// * sums of mixed magnitudes: served by the switch, whose agent and node
//   leaders fold in fp64 (exact for binary16) and round once (--exact-switch:
//   blocking and MPI_Iallreduce; --exact-iswitch: MPI_Iallreduce only),
//   bitwise equal to the exact sum rounded once, to nearest even (computed
//   in double: exact for these inputs). Element 0 is 1 at rank 0 and 2^-11
//   elsewhere, whose sum rounded after every addition would stay 1; element
//   1 is 1, 2^-11 and 2^-24 at ranks 0, 1, 2 (0 elsewhere), 1 + 2^-10 once
//   rounded but 1 through an fp32 sum rounded to nearest (two roundings).
//   The host algorithms keep fp32 partial sums and round once, in their own
//   order: within one fp16 ulp of the exact sum plus p 2^-24 sum |x|
//   (fp32's error; a 16-bit partial sum would miss by up to 2^-11 sum |x|
//   per step). The switch path with node leaders on several nodes sends
//   the nodes' fp64 sums up and rounds once (exact too, --exact-switch);
//   where a path rounds partial sums to 16 bits the switch's calls are
//   held within p 2^-11 sum |x| of the exact sum (--one-rounding: to the
//   host algorithms' bound instead). The same bits on every rank on every
//   path. --max-ulp N: the switch's mixed sums at most N fp16 ulps from the
//   exact sum rounded once (the largest is printed in the verdict).
//   --routed: MPI_Reduce, MPI_Reduce_scatter_block and
//   MPI_Ireduce_scatter_block (routedCalls); --exact-routed: their mixed
//   sums bitwise the exact sum rounded once where the switch served them.
//
// This is the program that aborts under plain MPICH 4.0.2 (Debian 12):
// MPI_Allreduce of MPIX_C_FLOAT16 with MPI_SUM fails an assertion in
// typerep_yaksa_pack.c (test mpich_fp16_without_library). Under the PMPI
// library every call must be served by switchagg (--expect ALG checks the
// path of each blocking call; "auto": any of switchagg's, never MPICH's).
//
// Verdict point to point (verdict.h), never through the call under test.
#include <mpi.h>
#if defined(OPEN_MPI) && defined(__has_include)
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "../common/compiler_half.h"
#include "../common/half_reference.h"
#include "check_support.h"
#include "verdict.h"

#if !defined(MPIX_C_FLOAT16) || !defined(SWITCHAGG_TEST_HAVE_FLOAT16)

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  std::printf("FAIL mpi_fp16_check: no MPIX_C_FLOAT16 in this MPI's headers, or no _Float16 "
              "in this compiler\n");
  MPI_Finalize();
  return 1;
}

#else

namespace {

uint16_t toHalf(float f) { return switchagg::testing::compilerHalf(f); }
float fromHalf(uint16_t u) { return switchagg::testing::compilerFloat(u); }

enum class Family { kIntegers, kMixed };

// Rank r's element i.
uint16_t input(Family f, int r, size_t i, int iter) {
  const size_t k = i * 31 + size_t(r) * 17 + size_t(iter) * 7;
  if (f == Family::kIntegers) return toHalf(float(int(k % 61) - 30));
  if (i == 0) return toHalf(r == 0 ? 1.0f : std::ldexp(1.0f, -11));
  if (i == 1) {
    const float x = r == 0 ? 1.0f : r == 1 ? std::ldexp(1.0f, -11) : std::ldexp(1.0f, -24);
    return toHalf(r <= 2 ? x : 0.0f);
  }
  const float m = 1.0f + float(k % 97) / 97.0f;
  const int e = int((i * 7 + size_t(r) * 13) % 17) - 8;
  return toHalf((k % 5 == 2 ? -1.0f : 1.0f) * std::ldexp(m, e));
}

struct Reference {
  std::vector<uint16_t> once;      // the exact result rounded once (nearest even)
  std::vector<double> exact, mag;  // exact sum and sum of |x| (SUM)
};

Reference reference(Family f, MPI_Op op, int p, size_t count, int iter) {
  Reference ref;
  ref.once.resize(count);
  ref.exact.resize(count);
  ref.mag.resize(count);
  for (size_t i = 0; i < count; ++i) {
    float acc = fromHalf(input(f, 0, i, iter));
    double exact = acc, mag = std::fabs(acc);
    for (int r = 1; r < p; ++r) {
      const float x = fromHalf(input(f, r, i, iter));
      if (op == MPI_SUM) acc += x;
      else if (op == MPI_MIN) acc = x < acc ? x : acc;
      else acc = acc < x ? x : acc;
      exact += x;
      mag += std::fabs(x);
    }
    ref.once[i] = op == MPI_SUM ? switchagg::testing::referenceRound16(exact, false) : toHalf(acc);
    ref.exact[i] = exact;
    ref.mag[i] = mag;
  }
  return ref;
}

struct Options {
  std::string expect = "auto";
  bool exact_switch = false;   // blocking and nonblocking switch calls round once
  bool exact_iswitch = false;  // nonblocking switch calls round once
  bool one_rounding = false;   // blocking switch calls: held to the host algorithms' bound
  bool plain = false;  // no library: call MPI only (the abort test)
  bool nonblocking = true;
  bool routed = false;  // MPI_Reduce and MPI_Reduce_scatter_block instead (routedCalls)
  bool exact_routed = false;  // their mixed sums rounded once (a wide uplink)
  int iters = 1;
  double max_ulp = -1;  // --max-ulp N: fail when a switch mixed sum is off by more (< 0: unchecked)
};

// One fp16 ulp at x: 2^(e - 10) for |x| in [2^e, 2^(e+1)), 2^-24 below 2^-14.
double ulpOf(double x) {
  int e = 0;
  std::frexp(x, &e);  // |x| in [2^(e-1), 2^e)
  return std::ldexp(1.0, std::max(e - 1, -14) - 10);
}

std::string hexOf(uint16_t h) {
  char b[8];
  std::snprintf(b, sizeof b, "%#06x", h);
  return b;
}

const char* opLabel(MPI_Op op) { return op == MPI_SUM ? "sum" : op == MPI_MIN ? "min" : "max"; }

// --routed: MPI_Reduce (root p - 1), MPI_Reduce_scatter_block and
// MPI_Ireduce_scatter_block (+ MPI_Wait) of
// MPIX_C_FLOAT16 (SUM, MIN, MAX; integer and mixed inputs), each result
// against the reference of its elements: bitwise where every partial sum
// is exact (MIN, MAX, integer sums), within p 2^-11 sum |x| (a rounding at
// each level that folds) for mixed sums, or bitwise the exact sum rounded
// once (exact_mixed: node leaders with a wide uplink, where the switch
// served the call: its counter moved). Each op must be
// counted <op>:switch at least once (with --expect switch).
void routedCalls(check::Ctx& ctx, const check::Diagnostics& diag, const std::string& expect,
                 int rank, int size, bool exact_mixed) {
  const size_t counts[] = {1, 7, 1001, 65537};
  for (Family fam : {Family::kIntegers, Family::kMixed})
    for (MPI_Op op : {MPI_SUM, MPI_MIN, MPI_MAX})
      for (size_t count : counts)
        // 0: MPI_Reduce, 1: MPI_Reduce_scatter_block, 2: MPI_Ireduce_scatter_block
        for (int kind = 0; kind < 3; ++kind) {
          const size_t total = kind ? count * size_t(size) : count;
          std::vector<uint16_t> send(total), recv(kind ? count : total, 0xFFFF);
          // Inputs distinct per kind: a stale result from the call before fails.
          for (size_t i = 0; i < total; ++i) send[i] = input(fam, rank, i, kind);
          const char* served[] = {"reduce:switch", "reduce_scatter_block:switch",
                                  "ireduce_scatter_block:switch"};
          const uint64_t switched = diag.counter(MPI_COMM_WORLD, served[kind]);
          int rc = MPI_SUCCESS;
          if (kind == 2) {
            MPI_Request req = MPI_REQUEST_NULL;
            rc = MPI_Ireduce_scatter_block(send.data(), recv.data(), int(count), MPIX_C_FLOAT16,
                                           op, MPI_COMM_WORLD, &req);
            if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
          } else if (kind == 1) {
            rc = MPI_Reduce_scatter_block(send.data(), recv.data(), int(count), MPIX_C_FLOAT16, op,
                                          MPI_COMM_WORLD);
          } else {
            rc = MPI_Reduce(send.data(), recv.data(), int(count), MPIX_C_FLOAT16, op, size - 1,
                            MPI_COMM_WORLD);
          }
          const char* kinds[] = {"reduce ", "reduce_scatter_block ", "ireduce_scatter_block "};
          const std::string what = std::string(kinds[kind]) +
                                   (fam == Family::kMixed ? "mixed " : "integers ") + opLabel(op) +
                                   " count " + std::to_string(count);
          ++ctx.cases;
          if (rc != MPI_SUCCESS) {
            ctx.fail(what.c_str(), "MPI error " + std::to_string(rc));
            continue;
          }
          if (!kind && rank != size - 1) continue;
          const Reference ref = reference(fam, op, size, total, kind);
          const size_t at = kind ? count * size_t(rank) : 0;
          // exact_mixed holds where the switch served the call (after a
          // fault the host allreduce serves: within the bound).
          const bool on_switch = diag.counter(MPI_COMM_WORLD, served[kind]) > switched;
          const bool exact =
              op != MPI_SUM || fam == Family::kIntegers || (exact_mixed && on_switch);
          size_t bad = 0;
          for (size_t i = 0; i < count; ++i) {
            const size_t j = at + i;
            const double bound = double(size) * std::ldexp(ref.mag[j], -11) + 0x1p-24;
            const bool ok = exact ? recv[i] == ref.once[j]
                                  : std::fabs(double(fromHalf(recv[i])) - ref.exact[j]) <= bound;
            if (!ok && bad++ == 0)
              ctx.fail(what.c_str(), "element " + std::to_string(j) + ": got " +
                                         hexOf(recv[i]) + " " + std::to_string(fromHalf(recv[i])) +
                                         ", want " + hexOf(ref.once[j]) + " (exact " +
                                         std::to_string(ref.exact[j]) + ")");
          }
        }
  if (expect != "switch") return;
  for (const char* name :
       {"reduce:switch", "reduce_scatter_block:switch", "ireduce_scatter_block:switch"}) {
    const uint64_t n = diag.counter(MPI_COMM_WORLD, name);
    if (n == 0 || n == UINT64_MAX) ctx.fail(name, "no fp16 call counted");
  }
}

}  // namespace

int main(int argc, char** argv) {
  int rank = 0, size = 1;
  check::initWorld(&argc, &argv, &rank, &size);
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--expect" && i + 1 < argc) o.expect = argv[++i];
    else if (a == "--exact-switch") o.exact_switch = o.exact_iswitch = true;
    else if (a == "--exact-iswitch") o.exact_iswitch = true;
    else if (a == "--one-rounding") o.one_rounding = true;
    else if (a == "--plain") o.plain = true;
    else if (a == "--blocking-only") o.nonblocking = false;
    else if (a == "--routed") o.routed = true;
    else if (a == "--exact-routed") o.routed = o.exact_routed = true;
    else if (a == "--iters" && i + 1 < argc) o.iters = std::atoi(argv[++i]);
    else if (a == "--max-ulp" && i + 1 < argc) o.max_ulp = std::atof(argv[++i]);
    else {
      if (rank == 0) std::fprintf(stderr, "mpi_fp16_check: unknown argument %s\n", a.c_str());
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  check::Diagnostics diag;
  const bool have = diag.load();
  if (!o.plain && !have) {
    std::fprintf(stderr, "rank %d: switchagg is not loaded (no diagnostics symbols)\n", rank);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  check::Ctx ctx(MPI_COMM_WORLD, "fp16", o.expect, diag);
  if (o.routed) {
    routedCalls(ctx, diag, o.expect, rank, size, o.exact_routed);
    const int code =
        switchagg_verdict(ctx.failures, ctx.cases, "fp16 reduce, reduce_scatter_block and ireduce_scatter_block");
    MPI_Finalize();
    return code;
  }
  long switch_exact = 0;
  // The largest distance of a switch mixed sum from the exact sum rounded
  // once, in fp16 ulps at the exact sum (0: correctly rounded).
  double switch_ulp = 0;
  const size_t counts[] = {1, 2, 7, 1001, 65537, 300001};
  for (int iter = 0; iter < o.iters; ++iter)
    for (Family fam : {Family::kIntegers, Family::kMixed})
      for (MPI_Op op : {MPI_SUM, MPI_MIN, MPI_MAX})
        for (size_t count : counts)
          for (int mode = 0; mode < (o.nonblocking ? 4 : 2); ++mode) {
            const bool in_place = mode & 1, nb = mode & 2;
            const std::string what = std::string(fam == Family::kMixed ? "mixed" : "integers") +
                                     " " + opLabel(op) + " count " + std::to_string(count) +
                                     (in_place ? " in place" : "") + (nb ? " Iallreduce" : "");
            std::vector<uint16_t> send(count), recv(count, 0xFFFF);
            for (size_t i = 0; i < count; ++i) send[i] = input(fam, rank, i, iter);
            if (in_place) recv = send;
            const void* sbuf = in_place ? MPI_IN_PLACE : send.data();
            int rc;
            const uint64_t iswitch0 = have ? diag.counter(MPI_COMM_WORLD, "iallreduce:switch") : 0;
            if (nb) {
              MPI_Request req;
              rc = MPI_Iallreduce(sbuf, recv.data(), int(count), MPIX_C_FLOAT16, op,
                                  MPI_COMM_WORLD, &req);
              if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
            } else {
              rc = MPI_Allreduce(sbuf, recv.data(), int(count), MPIX_C_FLOAT16, op,
                                 MPI_COMM_WORLD);
            }
            if (rc != MPI_SUCCESS) {
              ctx.fail(what.c_str(), "MPI error " + std::to_string(rc));
              continue;
            }
            const char* path = have ? diag.last(MPI_COMM_WORLD) : nullptr;
            if (!o.plain && !nb) ctx.checkPath(what.c_str(), count);
            else ++ctx.cases;
            // Which path served it: the last blocking call's, or the
            // nonblocking calls' switch counter moving.
            const bool on_switch =
                nb ? have && diag.counter(MPI_COMM_WORLD, "iallreduce:switch") == iswitch0 + 1
                   : path && std::string(path) == "switch";
            const Reference ref = reference(fam, op, size, count, iter);
            const bool exact = op != MPI_SUM || fam == Family::kIntegers ||
                               (on_switch && (nb ? o.exact_iswitch : o.exact_switch));
            if (on_switch && exact && fam == Family::kMixed && op == MPI_SUM) ++switch_exact;
            size_t bad = 0;
            std::string first;
            for (size_t i = 0; i < count; ++i) {
              bool ok;
              if (exact) {
                ok = recv[i] == ref.once[i];
              } else if (!on_switch || o.one_rounding) {  // fp32 partials, one rounding
                const double bound =
                    ulpOf(ref.exact[i]) + double(size) * std::ldexp(ref.mag[i], -24);
                ok = std::fabs(double(fromHalf(recv[i])) - ref.exact[i]) <= bound;
              } else {  // leader and agent: a rounding each
                const double bound = double(size) * std::ldexp(ref.mag[i], -11) + 0x1p-24;
                ok = std::fabs(double(fromHalf(recv[i])) - ref.exact[i]) <= bound;
              }
              if (on_switch && fam == Family::kMixed && op == MPI_SUM)
                switch_ulp = std::max(switch_ulp, std::fabs(double(fromHalf(recv[i])) -
                                                            double(fromHalf(ref.once[i]))) /
                                                      ulpOf(ref.exact[i]));
              if (!ok && bad++ == 0) {
                char b[160];
                std::snprintf(b, sizeof b, "element %zu: got %#06x (%g), want %#06x (%g)%s", i,
                              recv[i], double(fromHalf(recv[i])), ref.once[i],
                              double(fromHalf(ref.once[i])), exact ? "" : " within the bound");
                first = b;
              }
            }
            if (bad) ctx.fail(what.c_str(), std::to_string(bad) + " wrong, first " + first);
            // The same bits on every rank: rank 0's result, point to point.
            if (rank == 0) {
              for (int r = 1; r < size; ++r)
                MPI_Send(recv.data(), int(count) * 2, MPI_BYTE, r, 46, MPI_COMM_WORLD);
            } else {
              std::vector<uint16_t> theirs(count);
              MPI_Recv(theirs.data(), int(count) * 2, MPI_BYTE, 0, 46, MPI_COMM_WORLD,
                       MPI_STATUS_IGNORE);
              if (theirs != recv) ctx.fail(what.c_str(), "result differs from rank 0's");
            }
          }
  if (!o.plain) ctx.requireServed();
  if ((o.exact_switch || o.exact_iswitch) && o.expect == "switch" && switch_exact == 0)
    ctx.fail("switch", "no mixed sum was checked bitwise on the switch path");
  if (o.max_ulp >= 0 && switch_ulp > o.max_ulp)
    ctx.fail("switch", "a mixed sum is off by " + std::to_string(switch_ulp) + " ulp (bound " +
                           std::to_string(o.max_ulp) + ")");
  char summary[200];
  std::snprintf(summary, sizeof summary,
                "fp16 allreduce (%s, %ld mixed sums exact on the switch, max %.2f ulp on the "
                "switch)",
                o.expect.c_str(), switch_exact, switch_ulp);
  const int code = switchagg_verdict(ctx.failures, ctx.cases, summary);
  MPI_Finalize();
  return code;
}

#endif
