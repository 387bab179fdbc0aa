// Calls switchagg must not serve itself - user-defined ops (commutative and
// not, on predefined and on derived contiguous/strided datatypes; Open MPI
// itself rejects predefined ops on derived types), a predefined type it does
// not serve - still get the right answer through the previous coll module,
// and the component counts each hand-back by reason.
// Served calls in between must keep using the expected algorithm, also on
// the 130th of 130 live communicators.
//
//   mpi_fallback_check --expect ALG
#include <dlfcn.h>
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "../common/compiler_half.h"
#include "check_support.h"
#include "verdict.h"
#include "switchagg/coll/diagnostics.h"

namespace {

int g_failures = 0;
int g_rank = 0, g_size = 1;
switchagg_coll_last_algorithm_fn g_last;
switchagg_coll_comm_counter_fn g_counter;

long g_checks = 0;  // assertions made on this rank (the verdict's cases)

void expectTrue(bool ok, const std::string& what) {
  ++g_checks;
  if (!ok && ++g_failures <= 20) std::fprintf(stderr, "FAIL rank %d: %s\n", g_rank, what.c_str());
}

void expectPath(const char* want, const char* what) {
  const char* got = g_last(MPI_COMM_WORLD);
  expectTrue(got && !std::strcmp(got, want),
             std::string(what) + ": served by " + (got ? got : "(none)") + ", want " + want);
}

void userSum(void* in, void* inout, int* len, MPI_Datatype*) {
  for (int i = 0; i < *len; ++i) static_cast<int*>(inout)[i] += static_cast<int*>(in)[i];
}

// Left projection: x0 o x1 o ... = x0. Associative, not commutative, so a
// wrong evaluation order shows up as another rank's value.
void firstWins(void* in, void* inout, int* len, MPI_Datatype*) {
  std::memcpy(inout, in, static_cast<size_t>(*len) * sizeof(int));
}

int sumOfRanks(int scale, int i) {
  int s = 0;
  for (int r = 0; r < g_size; ++r) s += (r + 1) * scale + i;
  return s;
}

void userOps() {
  const int n = 1001;
  std::vector<int> in(n), out(n);
  for (int i = 0; i < n; ++i) in[i] = (g_rank + 1) * 10 + i;
  MPI_Op sum, first;
  MPI_Op_create(userSum, 1, &sum);
  MPI_Op_create(firstWins, 0, &first);
  MPI_Allreduce(in.data(), out.data(), n, MPI_INT, sum, MPI_COMM_WORLD);
  for (int i = 0; i < n; ++i) expectTrue(out[i] == sumOfRanks(10, i), "user commutative sum");
  expectPath("previous", "user-defined op");
  MPI_Allreduce(in.data(), out.data(), n, MPI_INT, first, MPI_COMM_WORLD);
  for (int i = 0; i < n; ++i) expectTrue(out[i] == 10 + i, "non-commutative op: rank 0 first");
  MPI_Op_free(&sum);
  MPI_Op_free(&first);
}

MPI_Datatype g_two = MPI_DATATYPE_NULL, g_strided = MPI_DATATYPE_NULL;

// A user sum that understands the derived types below (Open MPI allows
// only user-defined ops on non-intrinsic datatypes).
void derivedSum(void* in, void* inout, int* len, MPI_Datatype* type) {
  int* a = static_cast<int*>(in);
  int* b = static_cast<int*>(inout);
  if (*type == g_two) {
    for (int i = 0; i < 2 * *len; ++i) b[i] += a[i];
  } else {  // g_strided: 4 ints at stride 2 per item, extent 7 ints
    for (int k = 0; k < *len; ++k)
      for (int j = 0; j < 4; ++j) b[7 * k + 2 * j] += a[7 * k + 2 * j];
  }
}

#ifdef SWITCHAGG_TEST_HAVE_FLOAT16
#define SWITCHAGG_TEST_HAVE_FLOAT16_CALLS 1
#else
#define SWITCHAGG_TEST_HAVE_FLOAT16_CALLS 0
#endif

// What a user of an MPI without a 16-bit float type writes (Open MPI 4.1,
// issue 46): a 2-byte contiguous type and a user op summing binary16
// values. Declined to the previous module (a derived type, a user op),
// and exact: integer values, every partial sum representable.
void halfSum(void* in, void* inout, int* len, MPI_Datatype*) {
  auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i)
    b[i] = switchagg::testing::compilerHalf(switchagg::testing::compilerFloat(a[i]) +
                                            switchagg::testing::compilerFloat(b[i]));
}

void halfLikeType() {
#ifdef SWITCHAGG_TEST_HAVE_FLOAT16
  MPI_Datatype half;
  MPI_Op sum;
  MPI_Type_contiguous(2, MPI_BYTE, &half);
  MPI_Type_commit(&half);
  MPI_Op_create(halfSum, 1, &sum);
  const int n = 1001;
  std::vector<uint16_t> in(n), out(n);
  for (int i = 0; i < n; ++i) in[i] = switchagg::testing::compilerHalf(float((g_rank + 1) * 3 + i % 50));
  MPI_Allreduce(in.data(), out.data(), n, half, sum, MPI_COMM_WORLD);
  for (int i = 0; i < n; ++i)
    expectTrue(switchagg::testing::compilerFloat(out[i]) == float(sumOfRanks(3, i % 50)),
               "2-byte user type, user half sum");
  expectPath("previous", "2-byte user type, user half sum");
  MPI_Op_free(&sum);
  MPI_Type_free(&half);
#endif
}

void derivedTypes() {
  MPI_Op sum;
  MPI_Op_create(derivedSum, 1, &sum);
  // Contiguous pairs of ints, count 500.
  MPI_Type_contiguous(2, MPI_INT, &g_two);
  MPI_Type_commit(&g_two);
  std::vector<int> in(1000), out(1000);
  for (int i = 0; i < 1000; ++i) in[i] = (g_rank + 1) * 3 + i;
  MPI_Allreduce(in.data(), out.data(), 500, g_two, sum, MPI_COMM_WORLD);
  for (int i = 0; i < 1000; ++i) expectTrue(out[i] == sumOfRanks(3, i), "contiguous derived");
  expectPath("previous", "contiguous derived datatype");

  // Every other int (non-contiguous); the gaps must stay untouched.
  MPI_Type_vector(4, 1, 2, MPI_INT, &g_strided);
  MPI_Type_commit(&g_strided);
  std::vector<int> sin(7), sout(7, -7);
  for (int i = 0; i < 7; ++i) sin[i] = (g_rank + 1) * 5 + i;
  MPI_Allreduce(sin.data(), sout.data(), 1, g_strided, sum, MPI_COMM_WORLD);
  for (int i = 0; i < 7; ++i)
    expectTrue(sout[i] == (i % 2 == 0 ? sumOfRanks(5, i) : -7), "strided derived");
  expectPath("previous", "strided derived datatype");
  MPI_Type_free(&g_two);
  MPI_Type_free(&g_strided);
  MPI_Op_free(&sum);
  halfLikeType();

}

void unservedPredefined() {
  std::vector<long double> in(17, g_rank + 1.0L), out(17);
  MPI_Allreduce(in.data(), out.data(), 17, MPI_LONG_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  for (long double v : out)
    expectTrue(v == static_cast<long double>(g_size) * (g_size + 1) / 2, "long double sum");
  expectPath("previous", "MPI_LONG_DOUBLE");
}

void servedCall(const char* expect) {
  std::vector<int> in(77, g_rank), out(77);
  MPI_Allreduce(in.data(), out.data(), 77, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  for (int v : out) expectTrue(v == g_size * (g_size - 1) / 2, "served int sum");
  if (g_size > 1) expectPath(expect, "served call between fallbacks");
}

// 130 live duplicates of WORLD: their context ids run past 127, where a tag
// slot derived from the id alone would collide with an earlier live one and
// the communicator would lose the host path. Every one must be served.
void manyLiveCommunicators(const char* expect) {
  std::vector<MPI_Comm> comms(130);
  for (MPI_Comm& c : comms) MPI_Comm_dup(MPI_COMM_WORLD, &c);
  for (size_t k : {size_t(0), size_t(126), size_t(127), size_t(128), size_t(129)}) {
    int in = g_rank + 1, out = 0;
    MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, comms[k]);
    expectTrue(out == g_size * (g_size + 1) / 2, "sum on duplicate " + std::to_string(k));
    const char* got = g_last(comms[k]);
    if (g_size > 1)
      expectTrue(got && !std::strcmp(got, expect),
                 "duplicate " + std::to_string(k) + " of 130 live: served by " +
                     (got ? got : "(none)") + ", want " + expect);
  }
  for (MPI_Comm& c : comms) MPI_Comm_free(&c);
}

}  // namespace

int main(int argc, char** argv) {
  check::initWorld(&argc, &argv, &g_rank, &g_size);
  const char* expect = (argc > 2 && !std::strcmp(argv[1], "--expect")) ? argv[2] : "ring";
  g_last = reinterpret_cast<switchagg_coll_last_algorithm_fn>(
      dlsym(RTLD_DEFAULT, SWITCHAGG_COLL_LAST_ALGORITHM_SYMBOL));
  g_counter = reinterpret_cast<switchagg_coll_comm_counter_fn>(
      dlsym(RTLD_DEFAULT, SWITCHAGG_COLL_COMM_COUNTER_SYMBOL));
  if (!g_last || !g_counter) {
    std::fprintf(stderr, "FAIL: switchagg component not loaded\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  servedCall(expect);
  userOps();
  servedCall(expect);
  derivedTypes();
  unservedPredefined();
  servedCall(expect);
  manyLiveCommunicators(expect);

  // Two user ops on int, the two derived types, the 2-byte half type.
  const long user_ops = SWITCHAGG_TEST_HAVE_FLOAT16_CALLS + 4;
  expectTrue(g_counter(MPI_COMM_WORLD, "fallback:user-defined op") == uint64_t(user_ops),
             "user-op counter");
  expectTrue(g_counter(MPI_COMM_WORLD, "fallback:predefined datatype not served") == 1,
             "unserved predefined counter");
  if (g_size > 1) expectTrue(g_counter(MPI_COMM_WORLD, expect) >= 3, "served counter");

  const int rc = switchagg_verdict(g_failures, g_checks, ("fallback np=" + std::to_string(g_size)).c_str());
  MPI_Finalize();
  return rc;
}
