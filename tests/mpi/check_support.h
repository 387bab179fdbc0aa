// Inputs, references and checks for mpi_allreduce_check.cc. Written
// independently of switchagg's kernels: plain loops in rank order, integer
// SUM/PROD wrapping through the unsigned type (C semantics).
#pragma once

#include <dlfcn.h>
#include <mpi.h>
#include <strings.h>
#include <unistd.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "switchagg/coll/diagnostics.h"

namespace check {

// MPI_Init, then this rank and the size of MPI_COMM_WORLD.
inline void initWorld(int* argc, char*** argv, int* rank, int* size) {
  MPI_Init(argc, argv);
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, size);
}

enum class Kind { kSum, kProd, kMinMax, kLogical, kBitwise };

struct Diagnostics {
  switchagg_coll_last_algorithm_fn last = nullptr;
  switchagg_coll_comm_counter_fn counter = nullptr;
  bool load() {
    last = reinterpret_cast<switchagg_coll_last_algorithm_fn>(
        dlsym(RTLD_DEFAULT, SWITCHAGG_COLL_LAST_ALGORITHM_SYMBOL));
    counter = reinterpret_cast<switchagg_coll_comm_counter_fn>(
        dlsym(RTLD_DEFAULT, SWITCHAGG_COLL_COMM_COUNTER_SYMBOL));
    return last && counter;
  }
};

struct Ctx {
  Ctx(MPI_Comm c, const char* l, const std::string& e, const Diagnostics& d)
      : comm(c), label(l), expect(e), diag(d) {
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
  }
  MPI_Comm comm;
  const char* label;
  std::string expect;
  const Diagnostics& diag;
  int rank = 0, size = 1;
  long failures = 0, cases = 0, communicating = 0;

  void fail(const char* what, const std::string& detail) {
    if (++failures <= 10)
      std::fprintf(stderr, "FAIL %s rank %d/%d: %s: %s\n", label, rank, size, what,
                   detail.c_str());
  }
  // Which path served the call just made.
  void checkPath(const char* what, size_t count) {
    ++cases;
    if (count == 0 || size == 1) return;
    ++communicating;
    const char* path = diag.last(comm);
    if (!path) return fail(what, "not served by switchagg");
    if (expect != "auto" && expect != path) fail(what, std::string("served by ") + path);
  }
  // The forced algorithm really ran on this communicator.
  void requireServed() {
    if (communicating == 0 || expect == "auto") return;
    const uint64_t n = diag.counter(comm, expect.c_str());
    if (n == 0 || n == UINT64_MAX) fail("counters", "no call counted for " + expect);
  }
};

template <typename T>
T input(Kind kind, int r, size_t i, int size) {
  const long long a = static_cast<long long>(r), b = static_cast<long long>(i % 100003);
  if constexpr (std::is_same_v<T, bool>) {
    return input<int>(kind, r, i, size) != 0;
  } else if constexpr (std::is_floating_point_v<T>) {
    static const T prod[] = {T(0.5), T(2), T(-1), T(1)};
    if (kind == Kind::kProd) return prod[(a + b) % 4];
    return static_cast<T>(((a * 7 + b * 13) % 21) - 10) * T(0.25);
  } else {
    constexpr bool kSigned = std::is_signed_v<T>;
    // Products of these stay far inside int8 for up to 8 ranks.
    constexpr long long kSignedProd[] = {2, -1, 1};
    switch (kind) {
      case Kind::kSum:
        return static_cast<T>(kSigned ? ((a * 7 + b * 13) % 21) - 10 : a * 37 + b * 11 + 200);
      case Kind::kProd:
        return static_cast<T>(kSigned ? kSignedProd[(a + b) % 3] : 1 + (a + b) % 4);
      case Kind::kMinMax:
        return static_cast<T>(kSigned ? ((a * 7919 + b * 104729) % 201) - 100
                                      : (a * 7919 + b * 104729) % 251);
      case Kind::kLogical: {
        // Per element: all zero, all set, only one rank set, all but one set.
        const long long one = static_cast<long long>(i % static_cast<size_t>(size));
        const long long mode = b % 4;
        const bool set = mode == 1 || (mode == 2 && a == one) || (mode == 3 && a != one);
        return static_cast<T>(set ? a + 2 : 0);
      }
      case Kind::kBitwise:
        return static_cast<T>((static_cast<uint64_t>(a + 1) * 0x9E3779B97F4A7C15ull) ^
                              (static_cast<uint64_t>(b) * 0xBF58476D1CE4E5B9ull));
    }
    return T{};
  }
}

template <typename T>
T combine(MPI_Op op, T x, T y) {
  if constexpr (std::is_same_v<T, bool>) {
    if (op == MPI_LAND) return x && y;
    if (op == MPI_LOR) return x || y;
    return x != y;  // MPI_LXOR
  } else if constexpr (std::is_floating_point_v<T>) {
    if (op == MPI_SUM) return x + y;
    if (op == MPI_PROD) return x * y;
    if (op == MPI_MIN) return std::min(x, y);
    return std::max(x, y);
  } else {
    using U = std::make_unsigned_t<std::conditional_t<(sizeof(T) < sizeof(int)), int, T>>;
    if (op == MPI_SUM) return static_cast<T>(static_cast<U>(x) + static_cast<U>(y));
    if (op == MPI_PROD) return static_cast<T>(static_cast<U>(x) * static_cast<U>(y));
    if (op == MPI_MIN) return std::min(x, y);
    if (op == MPI_MAX) return std::max(x, y);
    if (op == MPI_LAND) return static_cast<T>(x != 0 && y != 0);
    if (op == MPI_LOR) return static_cast<T>(x != 0 || y != 0);
    if (op == MPI_LXOR) return static_cast<T>((x != 0) != (y != 0));
    if (op == MPI_BAND) return static_cast<T>(x & y);
    if (op == MPI_BOR) return static_cast<T>(x | y);
    return static_cast<T>(x ^ y);  // MPI_BXOR
  }
}

inline const char* opName(MPI_Op op) {
  const MPI_Op ops[] = {MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX, MPI_LAND,
                        MPI_LOR, MPI_LXOR, MPI_BAND, MPI_BOR, MPI_BXOR};
  const char* names[] = {"sum", "prod", "min", "max", "land", "lor", "lxor", "band", "bor", "bxor"};
  for (size_t k = 0; k < 10; ++k)
    if (ops[k] == op) return names[k];
  return "?";
}

inline std::string where(const char* name, size_t count, bool in_place, size_t i) {
  return std::string(name) + " count=" + std::to_string(count) +
         (in_place ? " in-place" : "") + " first mismatch at " + std::to_string(i);
}

// std::vector<bool> has no data(): plain arrays for every T.
template <typename T>
std::unique_ptr<T[]> array(size_t n) {
  return std::unique_ptr<T[]>(new T[n > 0 ? n : 1]());
}

template <typename T>
void one(Ctx& c, MPI_Datatype dtype, MPI_Op op, Kind kind, size_t count, bool in_place) {
  auto in = array<T>(count), out = array<T>(count), want = array<T>(count);
  for (size_t i = 0; i < count; ++i) {
    in[i] = input<T>(kind, c.rank, i, c.size);
    T acc = input<T>(kind, 0, i, c.size);
    for (int q = 1; q < c.size; ++q) acc = combine(op, acc, input<T>(kind, q, i, c.size));
    want[i] = acc;
  }
  char name[MPI_MAX_OBJECT_NAME + 32];
  int len;
  MPI_Type_get_name(dtype, name, &len);
  std::snprintf(name + len, sizeof name - static_cast<size_t>(len), "/%s", opName(op));
  if (in_place) {
    std::copy(in.get(), in.get() + count, out.get());
    MPI_Allreduce(MPI_IN_PLACE, out.get(), static_cast<int>(count), dtype, op, c.comm);
  } else {
    MPI_Allreduce(in.get(), out.get(), static_cast<int>(count), dtype, op, c.comm);
  }
  for (size_t i = 0; i < count; ++i) {
    if (out[i] != want[i]) {
      c.fail("value", where(name, count, in_place, i));
      break;
    }
  }
  c.checkPath(name, count);
}

template <typename T>
void intOps(Ctx& c, MPI_Datatype dt, size_t count, bool in_place) {
  one<T>(c, dt, MPI_SUM, Kind::kSum, count, in_place);
  one<T>(c, dt, MPI_PROD, Kind::kProd, count, in_place);
  one<T>(c, dt, MPI_MIN, Kind::kMinMax, count, in_place);
  one<T>(c, dt, MPI_MAX, Kind::kMinMax, count, in_place);
  one<T>(c, dt, MPI_LAND, Kind::kLogical, count, in_place);
  one<T>(c, dt, MPI_LOR, Kind::kLogical, count, in_place);
  one<T>(c, dt, MPI_LXOR, Kind::kLogical, count, in_place);
  one<T>(c, dt, MPI_BAND, Kind::kBitwise, count, in_place);
  one<T>(c, dt, MPI_BOR, Kind::kBitwise, count, in_place);
  one<T>(c, dt, MPI_BXOR, Kind::kBitwise, count, in_place);
}

inline void integerTypes(Ctx& c, size_t n, bool p) {
  intOps<signed char>(c, MPI_SIGNED_CHAR, n, p);
  intOps<unsigned char>(c, MPI_UNSIGNED_CHAR, n, p);
  intOps<short>(c, MPI_SHORT, n, p);
  intOps<unsigned short>(c, MPI_UNSIGNED_SHORT, n, p);
  intOps<int>(c, MPI_INT, n, p);
  intOps<unsigned>(c, MPI_UNSIGNED, n, p);
  intOps<long>(c, MPI_LONG, n, p);
  intOps<unsigned long>(c, MPI_UNSIGNED_LONG, n, p);
  intOps<long long>(c, MPI_LONG_LONG, n, p);
  intOps<unsigned long long>(c, MPI_UNSIGNED_LONG_LONG, n, p);
  intOps<int8_t>(c, MPI_INT8_T, n, p);
  intOps<uint8_t>(c, MPI_UINT8_T, n, p);
  intOps<int16_t>(c, MPI_INT16_T, n, p);
  intOps<uint16_t>(c, MPI_UINT16_T, n, p);
  intOps<int32_t>(c, MPI_INT32_T, n, p);
  intOps<uint32_t>(c, MPI_UINT32_T, n, p);
  intOps<int64_t>(c, MPI_INT64_T, n, p);
  intOps<uint64_t>(c, MPI_UINT64_T, n, p);
  intOps<MPI_Aint>(c, MPI_AINT, n, p);
  intOps<MPI_Offset>(c, MPI_OFFSET, n, p);
  intOps<MPI_Count>(c, MPI_COUNT, n, p);
}

template <typename V>
struct Pair {
  V v;
  int i;
};
using FloatInt = Pair<float>;
using DoubleInt = Pair<double>;
using LongInt = Pair<long>;
using TwoInt = Pair<int>;
using ShortInt = Pair<short>;

template <typename P>
void pair(Ctx& c, MPI_Datatype dtype, MPI_Op op, size_t count, bool in_place) {
  auto gen = [&](int r, size_t i) {
    P p;
    std::memset(&p, 0, sizeof p);
    p.v = static_cast<decltype(p.v)>((r * 7 + static_cast<int>(i % 1000) * 3) % 5);
    p.i = (c.size - r) * 3 + static_cast<int>(i % 2);
    return p;
  };
  const bool is_min = op == MPI_MINLOC;
  std::vector<P> in(count), out(count), want(count);
  for (size_t i = 0; i < count; ++i) {
    in[i] = gen(c.rank, i);
    P best = gen(0, i);
    for (int q = 1; q < c.size; ++q) {
      P x = gen(q, i);
      const bool better = is_min ? x.v < best.v : x.v > best.v;
      if (better || (x.v == best.v && x.i < best.i)) best = x;
    }
    want[i] = best;
  }
  if (in_place) {
    out = in;
    MPI_Allreduce(MPI_IN_PLACE, out.data(), static_cast<int>(count), dtype, op, c.comm);
  } else {
    MPI_Allreduce(in.data(), out.data(), static_cast<int>(count), dtype, op, c.comm);
  }
  char name[MPI_MAX_OBJECT_NAME];
  int len;
  MPI_Type_get_name(dtype, name, &len);
  for (size_t i = 0; i < count; ++i) {
    if (out[i].v != want[i].v || out[i].i != want[i].i) {
      c.fail(is_min ? "minloc" : "maxloc", where(name, count, in_place, i));
      break;
    }
  }
  c.checkPath(name, count);
}

inline void otherTypes(Ctx& c, size_t n, bool p) {
  for (MPI_Op op : {MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX}) {
    const Kind k = op == MPI_SUM ? Kind::kSum : op == MPI_PROD ? Kind::kProd : Kind::kMinMax;
    one<float>(c, MPI_FLOAT, op, k, n, p);
    one<double>(c, MPI_DOUBLE, op, k, n, p);
  }
  for (MPI_Op op : {MPI_LAND, MPI_LOR, MPI_LXOR}) {
    one<bool>(c, MPI_C_BOOL, op, Kind::kLogical, n, p);
    one<bool>(c, MPI_CXX_BOOL, op, Kind::kLogical, n, p);
  }
  for (MPI_Op op : {MPI_BAND, MPI_BOR, MPI_BXOR})
    one<unsigned char>(c, MPI_BYTE, op, Kind::kBitwise, n, p);
  for (MPI_Op op : {MPI_MINLOC, MPI_MAXLOC}) {
    pair<FloatInt>(c, MPI_FLOAT_INT, op, n, p);
    pair<DoubleInt>(c, MPI_DOUBLE_INT, op, n, p);
    pair<LongInt>(c, MPI_LONG_INT, op, n, p);
    pair<TwoInt>(c, MPI_2INT, op, n, p);
    pair<ShortInt>(c, MPI_SHORT_INT, op, n, p);
  }
}

// Inexact inputs: any summation order is within size * 2 * eps * sum |x|.
inline void inexactDoubleSum(Ctx& c, size_t count) {
  auto f = [](int r, size_t i) { return 1.0 / (3.0 + r) + 1e-3 * static_cast<double>(i % 977); };
  std::vector<double> in(count), out(count);
  for (size_t i = 0; i < count; ++i) in[i] = f(c.rank, i);
  MPI_Allreduce(in.data(), out.data(), static_cast<int>(count), MPI_DOUBLE, MPI_SUM, c.comm);
  for (size_t i = 0; i < count; ++i) {
    double want = 0, mag = 0;
    for (int q = 0; q < c.size; ++q) {
      want += f(q, i);
      mag += std::fabs(f(q, i));
    }
    if (std::fabs(out[i] - want) > c.size * 2 * DBL_EPSILON * mag) {
      c.fail("inexact double sum", where("MPI_DOUBLE", count, false, i));
      break;
    }
  }
  c.checkPath("inexact double sum", count);
}

// The switch path's node leaders as this test expects them, worked out
// here from the node names (SWITCHAGG_NODE_NAME as tests/mpi/emulate_nodes.sh
// sets it, else the host name) and SWITCHAGG_SWITCH_LEADERS: with more
// than one rank on some node and leaders not turned off, only each node's
// lowest rank is an agent member (it sends N per call, the others 0).
// With SWITCHAGG_SWITCH_RAIL_LEADERS on and a lease of R >= 2 agents
// (SWITCHAGG_AGENT, comma-separated) on a communicator whose every node has
// R ranks, each node's R lowest ranks are (rail leaders).
struct Leaders {
  bool active = false;  // node leaders expected on this communicator
  bool leader = true;   // this rank talks to the agent
  int nodes = 1;
  int rails = 1;        // rail leaders: R, and this rank's rail (its local index)
  int rail = 0;
  // What a member streams of a `count`-element call: all of it, or a rail
  // leader its rail's stripe (equal stripes, the first count % R one longer).
  size_t streamed(size_t count) const {
    if (rails <= 1) return count;
    return count / size_t(rails) + (size_t(rail) < count % size_t(rails) ? 1 : 0);
  }
};

inline Leaders expectedLeaders(MPI_Comm comm) {
  constexpr size_t kName = 64;
  char mine[kName] = {};
  const char* env = std::getenv("SWITCHAGG_NODE_NAME");
  if (env && *env) std::snprintf(mine, kName, "%s", env);
  else gethostname(mine, kName - 1);
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  std::vector<char> all(kName * size_t(size));
  MPI_Allgather(mine, int(kName), MPI_CHAR, all.data(), int(kName), MPI_CHAR, comm);
  Leaders l;
  l.nodes = 0;
  int local = 0;                 // this rank's place among its node's ranks
  int fewest = size;             // ranks of the node with the fewest
  for (int r = 0; r < size; ++r) {
    const char* name = all.data() + kName * size_t(r);
    bool seen = false;
    for (int q = 0; q < r && !seen; ++q) seen = std::strcmp(name, all.data() + kName * size_t(q)) == 0;
    if (seen) continue;
    ++l.nodes;
    int on_node = 0;
    for (int q = r; q < size; ++q) on_node += std::strcmp(name, all.data() + kName * size_t(q)) == 0;
    fewest = std::min(fewest, on_node);
  }
  for (int q = 0; q < rank; ++q) local += std::strcmp(mine, all.data() + kName * size_t(q)) == 0;
  auto on = [](const char* v, bool dflt) {
    if (!v || !*v) return dflt;
    return !(!strcasecmp(v, "off") || !strcasecmp(v, "false") || !strcasecmp(v, "no") ||
             !strcasecmp(v, "0"));
  };
  const char* agents = std::getenv("SWITCHAGG_AGENT");
  const int rails = agents ? 1 + int(std::count(agents, agents + std::strlen(agents), ',')) : 1;
  l.active = l.nodes < size && on(std::getenv("SWITCHAGG_SWITCH_LEADERS"), true);
  const bool by_rail =
      l.active && rails >= 2 && fewest >= rails && on(std::getenv("SWITCHAGG_SWITCH_RAIL_LEADERS"), false);
  l.leader = !l.active || local < (by_rail ? rails : 1);
  if (by_rail) {
    l.rails = rails;
    l.rail = local;
  }
  return l;
}

// After calls served by the switch on c.comm: the component's counters show
// the members expectedLeaders() predicts (switch:leader, switch:members)
// and only members sent bytes to the agent.
inline void checkSwitchMembers(Ctx& c) {
  const Leaders l = expectedLeaders(c.comm);
  const uint64_t leader = c.diag.counter(c.comm, "switch:leader");
  const uint64_t members = c.diag.counter(c.comm, "switch:members");
  const uint64_t sent = c.diag.counter(c.comm, "switch:bytes_sent");
  if (leader != (l.leader ? 1u : 0u)) c.fail("leaders", "switch:leader = " + std::to_string(leader));
  const int want = l.active ? l.nodes : c.size;
  if (members != uint64_t(want))
    c.fail("leaders", "switch:members = " + std::to_string(members) + ", expected " +
                          std::to_string(want));
  if (l.leader ? sent == 0 : sent != 0)
    c.fail("leaders", std::string(l.leader ? "member" : "non-leader") +
                          " sent switch:bytes_sent = " + std::to_string(sent));
}

// One MPI_Allreduce (the sum of `n` int64 on `comm`, rank r contributing
// (r + 1) * scale + i at element i), checked here: the index of the first
// wrong element, or -1. For a scenario that reads which path served a plain
// allreduce beside the calls a checker is about.
inline long checkedInt64Sum(MPI_Comm comm, size_t n, int64_t scale) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  std::vector<int64_t> in(n), out(n);
  for (size_t i = 0; i < n; ++i) in[i] = int64_t(rank + 1) * scale + int64_t(i);
  MPI_Allreduce(in.data(), out.data(), int(n), MPI_INT64_T, MPI_SUM, comm);
  for (size_t i = 0; i < n; ++i)
    if (out[i] != scale * int64_t(size) * (size + 1) / 2 + int64_t(size) * int64_t(i)) return long(i);
  return -1;
}

}  // namespace check
