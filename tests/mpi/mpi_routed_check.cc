// MPI_Reduce, MPI_Reduce_scatter, MPI_Reduce_scatter_block, MPI_Allgather
// and MPI_Bcast checked against references computed here from the same
// deterministic inputs (check_support.h: plain loops in rank order), and
// the component's counters asserting which path served each call.
//
//   --expect switch    every call that moves data served by the switch
//                      (<op>:switch grows by one per call)
//   --expect previous  every such call in the previous module, untried
//                      (<op>:previous grows, <op>:switch does not)
//   --expect auto      offload auto: every such call counted once, by the
//                      switch or the previous module (the model decides)
//   --expect previous:REASON  as previous, each call counted under that
//                      reason (<op>:previous:REASON, e.g. one-node,
//                      agent-not-routed)
//   --expect fault --fault DIR [--bytes B] [--max-call-ms M]
//                      one communicator per op (WORLD dups), a loop of one
//                      call of each op per iteration at about B bytes,
//                      every result checked. Rank 0 creates DIR/ready once
//                      the switch served every op; the test script then
//                      kills the agent or deletes the lease and creates
//                      DIR/fired; 5 iterations later the loop ends.
//                      Asserts: every result right, no call slower than M
//                      ms, on every op's communicator <op>:switch > 0 and
//                      <op>:switch-failed > 0.
//   --expect-op OP=EXPECT  (repeatable) OP's calls expected as EXPECT
//                      (switch, previous, previous:REASON) instead of
//                      --expect's (node leaders: bcast and reduce switch,
//                      on one node the others previous:one-node)
//   --all-roots        MPI_Reduce and MPI_Bcast at every root (roots on
//                      node leaders and on the other ranks)
//   --ops LIST         --expect fault: only these ops (comma separated)
//
// Matrix (switch/previous): reductions over int32, int64, float,
// double, uint8 x sum, prod, min, max, MPI_2INT MINLOC and MPI_DOUBLE_INT
// MAXLOC; allgather and bcast over uint8, int32, double, a contiguous
// derived type on odd ranks and a strided one (packed by the component);
// counts 0, 1, 1001 and (without --quick) 300000; in place where MPI
// allows it; roots 0 and size-1. Floats compare bitwise (the inputs are
// exact in any order). Prints PASS on rank 0.
#include <mpi.h>
#include <sys/stat.h>

#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "check_support.h"
#include "verdict.h"

namespace {

using check::Kind;

struct Run {
  MPI_Comm comm = MPI_COMM_WORLD;
  std::string expect;
  std::map<std::string, std::string> expect_op;  // --expect-op
  bool all_roots = false;
  check::Diagnostics diag;
  int rank = 0, size = 1;
  long failures = 0, calls = 0;
  double slowest_ms = 0;

  void fail(const std::string& what) {
    if (++failures <= 12) std::fprintf(stderr, "FAIL rank %d/%d: %s\n", rank, size, what.c_str());
  }
  uint64_t counter(MPI_Comm c, const std::string& name) const {
    return diag.counter(c, name.c_str());
  }
  const std::string& expectFor(const std::string& op) const {
    auto it = expect_op.find(op);
    return it == expect_op.end() ? expect : it->second;
  }
  // The roots MPI_Reduce and MPI_Bcast are checked at.
  std::vector<int> roots() const {
    std::vector<int> out;
    if (all_roots)
      for (int q = 0; q < size; ++q) out.push_back(q);
    else
      out = {0, size - 1};
    return out;
  }
};

double nowMs() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Counter deltas around one call: the path it took.
struct PathCheck {
  PathCheck(Run& r, MPI_Comm c, const char* op, std::string what, bool moves)
      : run(r), comm(c), prefix(std::string(op) + ":"), label(std::move(what)), data(moves),
        expect(r.expectFor(op)) {
    sw = run.counter(comm, prefix + "switch");
    prev = run.counter(comm, prefix + "previous");
    reason = expect.compare(0, 9, "previous:") == 0 ? prefix + expect : "";
    reasons = reason.empty() ? 0 : run.counter(comm, reason);
    start = nowMs();
  }
  ~PathCheck() {
    const double ms = nowMs() - start;
    if (ms > run.slowest_ms) run.slowest_ms = ms;
    ++run.calls;
    if (run.expect == "fault") return;
    const uint64_t dsw = run.counter(comm, prefix + "switch") - sw;
    const uint64_t dprev = run.counter(comm, prefix + "previous") - prev;
    const uint64_t dreason = reason.empty() ? 0 : run.counter(comm, reason) - reasons;
    if (!data || run.size == 1) {
      if (dsw != 0 || dprev != 0) run.fail(label + ": a call without data left the core");
    } else if (expect == "auto") {
      if (dsw + dprev != 1) run.fail(label + ": not counted once (switch or previous)");
    } else if (expect == "switch" && dsw != 1) {
      run.fail(label + ": not served by the switch (" + prefix + "previous +" +
               std::to_string(dprev) + ")");
    } else if (expect != "switch" && (dsw != 0 || dprev != 1)) {
      run.fail(label + ": not handed to the previous module untried");
    } else if (!reason.empty() && dreason != 1) {
      run.fail(label + ": not counted as " + reason);
    }
  }
  Run& run;
  MPI_Comm comm;
  std::string prefix, label, reason;
  bool data;
  std::string expect;
  uint64_t sw, prev, reasons = 0;
  double start;
};

std::string name(MPI_Datatype dt, MPI_Op op, const char* coll, size_t count, bool in_place,
                 int root = -1) {
  char type[MPI_MAX_OBJECT_NAME] = {};
  int len = 0;
  MPI_Type_get_name(dt, type, &len);
  std::string s = std::string(coll) + " " + type;
  if (op != MPI_OP_NULL) s += std::string("/") + check::opName(op);
  s += " count=" + std::to_string(count);
  if (in_place) s += " in-place";
  if (root >= 0) s += " root=" + std::to_string(root);
  return s;
}

template <typename T>
T reduced(MPI_Op op, Kind kind, size_t i, int size) {
  T acc = check::input<T>(kind, 0, i, size);
  for (int q = 1; q < size; ++q) acc = check::combine(op, acc, check::input<T>(kind, q, i, size));
  return acc;
}

template <typename T>
bool sameBits(const T& a, const T& b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// MPI_Reduce, MPI_Reduce_scatter and MPI_Reduce_scatter_block of one
// dtype/op at one count.
template <typename T>
void reductions(Run& r, MPI_Comm comm, MPI_Datatype dt, MPI_Op op, Kind kind, size_t count) {
  const int size = r.size, rank = r.rank;
  auto in = check::array<T>(count);
  for (size_t i = 0; i < count; ++i) in[i] = check::input<T>(kind, rank, i, size);
  std::vector<T> want(count);
  for (size_t i = 0; i < count; ++i) want[i] = reduced<T>(op, kind, i, size);
  // MPI_Reduce at two roots, in place at the root every other time.
  for (int root : r.roots()) {
    for (bool in_place : {false, true}) {
      auto out = check::array<T>(count);
      const std::string what = name(dt, op, "reduce", count, in_place, root);
      {
        PathCheck pc(r, comm, "reduce", what, count > 0);
        if (in_place && rank == root) {
          std::copy(in.get(), in.get() + count, out.get());
          MPI_Reduce(MPI_IN_PLACE, out.get(), int(count), dt, op, root, comm);
        } else {
          MPI_Reduce(in.get(), out.get(), int(count), dt, op, root, comm);
        }
      }
      for (size_t i = 0; rank == root && i < count; ++i)
        if (!sameBits(out[i], want[i])) {
          r.fail(what + ": first mismatch at " + std::to_string(i));
          break;
        }
    }
  }
  // MPI_Reduce_scatter: uneven counts (some ranks get none at small counts).
  std::vector<int> counts(static_cast<size_t>(size));
  std::vector<size_t> first(size_t(size) + 1, 0);
  for (int q = 0; q < size; ++q) {
    counts[size_t(q)] = int((count + size_t(q)) / size_t(size));
    first[size_t(q) + 1] = first[size_t(q)] + size_t(counts[size_t(q)]);
  }
  for (bool in_place : {false, true}) {
    const size_t mine = size_t(counts[size_t(rank)]);
    auto out = check::array<T>(in_place ? count : mine);
    const std::string what = name(dt, op, "reduce_scatter", count, in_place);
    {
      PathCheck pc(r, comm, "reduce_scatter", what, count > 0);
      if (in_place) {
        std::copy(in.get(), in.get() + count, out.get());
        MPI_Reduce_scatter(MPI_IN_PLACE, out.get(), counts.data(), dt, op, comm);
      } else {
        MPI_Reduce_scatter(in.get(), out.get(), counts.data(), dt, op, comm);
      }
    }
    for (size_t i = 0; i < mine; ++i)
      if (!sameBits(out[i], want[first[size_t(rank)] + i])) {
        r.fail(what + ": first mismatch at " + std::to_string(i));
        break;
      }
  }
  // MPI_Reduce_scatter_block: `block` elements each, over size * block.
  const size_t block = (count + size_t(size) - 1) / size_t(size), total = block * size_t(size);
  auto bin = check::array<T>(total);
  for (size_t i = 0; i < total; ++i) bin[i] = check::input<T>(kind, rank, i, size);
  for (bool in_place : {false, true}) {
    auto out = check::array<T>(in_place ? total : block);
    const std::string what = name(dt, op, "reduce_scatter_block", block, in_place);
    {
      PathCheck pc(r, comm, "reduce_scatter_block", what, block > 0);
      if (in_place) {
        std::copy(bin.get(), bin.get() + total, out.get());
        MPI_Reduce_scatter_block(MPI_IN_PLACE, out.get(), int(block), dt, op, comm);
      } else {
        MPI_Reduce_scatter_block(bin.get(), out.get(), int(block), dt, op, comm);
      }
    }
    for (size_t i = 0; i < block; ++i)
      if (!sameBits(out[i], reduced<T>(op, kind, size_t(rank) * block + i, size))) {
        r.fail(what + ": first mismatch at " + std::to_string(i));
        break;
      }
  }
}

template <typename P>
P pairInput(int r, size_t i, int size) {
  P p;
  std::memset(&p, 0, sizeof p);
  p.v = static_cast<decltype(p.v)>((r * 7 + static_cast<int>(i % 1000) * 3) % 5);
  p.i = (size - r) * 3 + static_cast<int>(i % 2);
  return p;
}

// MINLOC / MAXLOC through MPI_Reduce and MPI_Reduce_scatter_block.
template <typename P>
void pairs(Run& r, MPI_Comm comm, MPI_Datatype dt, MPI_Op op, size_t count) {
  const bool is_min = op == MPI_MINLOC;
  const int size = r.size, rank = r.rank;
  const size_t block = (count + size_t(size) - 1) / size_t(size), total = block * size_t(size);
  std::vector<P> in(std::max<size_t>(total, count) + 1), want(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    in[i] = pairInput<P>(rank, i, size);
    P best = pairInput<P>(0, i, size);
    for (int q = 1; q < size; ++q) {
      const P x = pairInput<P>(q, i, size);
      const bool better = is_min ? x.v < best.v : x.v > best.v;
      if (better || (x.v == best.v && x.i < best.i)) best = x;
    }
    want[i] = best;
  }
  std::vector<P> out(in.size());
  const std::string what = name(dt, op, "reduce", count, false, size - 1);
  {
    PathCheck pc(r, comm, "reduce", what, count > 0);
    MPI_Reduce(in.data(), out.data(), int(count), dt, op, size - 1, comm);
  }
  for (size_t i = 0; rank == size - 1 && i < count; ++i)
    if (out[i].v != want[i].v || out[i].i != want[i].i) {
      r.fail(what + ": first mismatch at " + std::to_string(i));
      break;
    }
  const std::string what2 = name(dt, op, "reduce_scatter_block", block, false);
  {
    PathCheck pc(r, comm, "reduce_scatter_block", what2, block > 0);
    MPI_Reduce_scatter_block(in.data(), out.data(), int(block), dt, op, comm);
  }
  for (size_t i = 0; i < block; ++i) {
    const P& w = want[size_t(rank) * block + i];
    if (out[i].v != w.v || out[i].i != w.i) {
      r.fail(what2 + ": first mismatch at " + std::to_string(i));
      break;
    }
  }
}

void reductionMatrix(Run& r, MPI_Comm comm, size_t count) {
  for (MPI_Op op : {MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX}) {
    const Kind k = op == MPI_SUM ? Kind::kSum : op == MPI_PROD ? Kind::kProd : Kind::kMinMax;
    reductions<int32_t>(r, comm, MPI_INT32_T, op, k, count);
    reductions<int64_t>(r, comm, MPI_INT64_T, op, k, count);
    reductions<float>(r, comm, MPI_FLOAT, op, k, count);
    reductions<double>(r, comm, MPI_DOUBLE, op, k, count);
    reductions<uint8_t>(r, comm, MPI_UINT8_T, op, k, count);
  }
  pairs<check::TwoInt>(r, comm, MPI_2INT, MPI_MINLOC, count);
  pairs<check::DoubleInt>(r, comm, MPI_DOUBLE_INT, MPI_MAXLOC, count);
}

// Byte i of rank q's contribution (allgather) or of the root's (bcast).
uint8_t byteOf(int q, size_t i) { return uint8_t((size_t(q) * 131 + i * 7 + (i >> 8)) & 0xFF); }

// A buffer of `count` elements of one layout: how this rank describes it.
struct Layout {
  const char* label;
  MPI_Datatype type;   // the element type this rank passes
  size_t elem_bytes;   // data bytes per element
  size_t stride;       // bytes between elements in memory
  bool own = false;    // a type this program created (freed after)
};

// uint8, int32, double as themselves; on odd ranks int32 data described
// as a contiguous derived type of 4 or a strided vector (a gap after every
// int), alike in data to the even ranks' MPI_INT (same type signature).
std::vector<Layout> layouts(int rank) {
  std::vector<Layout> out;
  out.push_back({"uint8", MPI_UINT8_T, 1, 1});
  out.push_back({"int32", MPI_INT32_T, 4, 4});
  out.push_back({"double", MPI_DOUBLE, 8, 8});
  if (rank % 2 == 0) {
    out.push_back({"int32 (derived on odd ranks)", MPI_INT, 4, 4});
    out.push_back({"int32 (strided on odd ranks)", MPI_INT, 4, 4});
  } else {
    MPI_Datatype four, strided, gap;
    MPI_Type_contiguous(4, MPI_INT, &four);
    MPI_Type_commit(&four);
    MPI_Type_create_resized(MPI_INT, 0, 8, &gap);  // an int, then 4 bytes of gap
    MPI_Type_contiguous(1, gap, &strided);
    MPI_Type_commit(&strided);
    MPI_Type_free(&gap);
    out.push_back({"int32 (derived on odd ranks)", four, 16, 16, true});
    out.push_back({"int32 (strided on odd ranks)", strided, 4, 8, true});
  }
  return out;
}

// Writes / reads data bytes of `n` elements through a layout's stride.
void putBytes(const Layout& l, uint8_t* mem, size_t n, size_t base, int q) {
  for (size_t e = 0; e < n; ++e)
    for (size_t b = 0; b < l.elem_bytes; ++b) mem[e * l.stride + b] = byteOf(q, base + e * l.elem_bytes + b);
}

bool bytesMatch(const Layout& l, const uint8_t* mem, size_t n, size_t base, int q, size_t* at) {
  for (size_t e = 0; e < n; ++e)
    for (size_t b = 0; b < l.elem_bytes; ++b)
      if (mem[e * l.stride + b] != byteOf(q, base + e * l.elem_bytes + b)) {
        *at = e * l.elem_bytes + b;
        return false;
      }
  return true;
}

// MPI_Allgather and MPI_Bcast of `data_bytes` (a multiple of 16, every
// layout's element size) per rank block / in the broadcast, each layout.
void forwardMatrix(Run& r, MPI_Comm comm, size_t data_bytes) {
  const int size = r.size, rank = r.rank;
  std::vector<Layout> ls = layouts(rank);
  for (const Layout& l : ls) {
    const size_t n = data_bytes / l.elem_bytes;
    for (int root : r.roots()) {
      std::vector<uint8_t> buf(n * l.stride + 1, 0xEE);
      if (rank == root) putBytes(l, buf.data(), n, 0, root);
      const std::string what = std::string("bcast ") + l.label + " bytes=" +
                               std::to_string(data_bytes) + " root=" + std::to_string(root);
      {
        PathCheck pc(r, comm, "bcast", what, data_bytes > 0);
        MPI_Bcast(buf.data(), int(n), l.type, root, comm);
      }
      size_t at = 0;
      if (!bytesMatch(l, buf.data(), n, 0, root, &at))
        r.fail(what + ": first mismatch at byte " + std::to_string(at));
    }
    // Allgather: this layout on both sides; in place as well.
    for (bool in_place : {false, true}) {
      std::vector<uint8_t> send(n * l.stride + 1, 0xEE), recv(size_t(size) * n * l.stride + 1, 0xEE);
      putBytes(l, send.data(), n, 0, rank);
      if (in_place) putBytes(l, recv.data() + size_t(rank) * n * l.stride, n, 0, rank);
      const std::string what = std::string("allgather ") + l.label +
                               " bytes=" + std::to_string(data_bytes) + (in_place ? " in-place" : "");
      {
        PathCheck pc(r, comm, "allgather", what, data_bytes > 0);
        if (in_place)
          MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv.data(), int(n), l.type, comm);
        else
          MPI_Allgather(send.data(), int(n), l.type, recv.data(), int(n), l.type, comm);
      }
      for (int q = 0; q < size; ++q) {
        size_t at = 0;
        if (!bytesMatch(l, recv.data() + size_t(q) * n * l.stride, n, 0, q, &at)) {
          r.fail(what + ": block " + std::to_string(q) + " first mismatch at byte " +
                 std::to_string(at));
          break;
        }
      }
    }
  }
  for (Layout& l : ls)
    if (l.own) MPI_Type_free(&l.type);
}

bool exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

void touch(const std::string& path) {
  if (FILE* f = std::fopen(path.c_str(), "w")) std::fclose(f);
}

// --expect fault: one communicator per op so that each sees its own failure.
void faultLoop(Run& r, const std::string& dir, size_t bytes, const std::string& only) {
  const char* ops[] = {"reduce", "reduce_scatter", "reduce_scatter_block", "allgather", "bcast"};
  bool on[5];
  for (int k = 0; k < 5; ++k)
    on[k] = only.empty() || ("," + only + ",").find(std::string(",") + ops[k] + ",") != std::string::npos;
  MPI_Comm comms[5];
  for (MPI_Comm& c : comms) MPI_Comm_dup(MPI_COMM_WORLD, &c);
  const size_t count = std::max<size_t>(1, bytes / sizeof(int64_t));
  int after = -1;
  const size_t block = (count + size_t(r.size) - 1) / size_t(r.size), total = block * size_t(r.size);
  std::vector<int64_t> in(std::max(total, count)), out(std::max(total, count));
  for (size_t i = 0; i < in.size(); ++i) in[i] = check::input<int64_t>(Kind::kSum, r.rank, i, r.size);
  std::vector<int> counts(size_t(r.size), int(block));
  auto checkBlock = [&](const char* what) {
    for (size_t i = 0; i < block; ++i)
      if (out[i] != reduced<int64_t>(MPI_SUM, Kind::kSum, size_t(r.rank) * block + i, r.size)) {
        r.fail(std::string("fault ") + what + ": mismatch at " + std::to_string(i));
        break;
      }
  };
  for (int iter = 0; iter < 20000 && after != 0; ++iter) {
    const int root = iter % r.size;
    if (on[0]) {
      PathCheck pc(r, comms[0], ops[0], "fault reduce", true);
      MPI_Reduce(in.data(), out.data(), int(count), MPI_INT64_T, MPI_SUM, root, comms[0]);
    }
    for (size_t i = 0; on[0] && r.rank == root && i < count; ++i)
      if (out[i] != reduced<int64_t>(MPI_SUM, Kind::kSum, i, r.size)) {
        r.fail("fault reduce: mismatch at " + std::to_string(i));
        break;
      }
    if (on[1]) {
      {
        PathCheck pc(r, comms[1], ops[1], "fault reduce_scatter", true);
        MPI_Reduce_scatter(in.data(), out.data(), counts.data(), MPI_INT64_T, MPI_SUM, comms[1]);
      }
      checkBlock(ops[1]);
    }
    if (on[2]) {
      {
        PathCheck pc(r, comms[2], ops[2], "fault reduce_scatter_block", true);
        MPI_Reduce_scatter_block(in.data(), out.data(), int(block), MPI_INT64_T, MPI_SUM, comms[2]);
      }
      checkBlock(ops[2]);
    }
    if (on[3]) {
      const size_t b = std::max<size_t>(1, bytes / size_t(r.size));
      std::vector<uint8_t> send(b), recv(b * size_t(r.size));
      for (size_t i = 0; i < b; ++i) send[i] = byteOf(r.rank, i);
      {
        PathCheck pc(r, comms[3], ops[3], "fault allgather", true);
        MPI_Allgather(send.data(), int(b), MPI_BYTE, recv.data(), int(b), MPI_BYTE, comms[3]);
      }
      bool bad = false;
      for (int q = 0; q < r.size && !bad; ++q)
        for (size_t i = 0; i < b && !bad; ++i)
          if (recv[size_t(q) * b + i] != byteOf(q, i)) {
            r.fail("fault allgather: block " + std::to_string(q) + " mismatch at " + std::to_string(i));
            bad = true;
          }
    }
    if (on[4]) {
      std::vector<uint8_t> buf(bytes);
      for (size_t i = 0; i < bytes; ++i) buf[i] = r.rank == root ? byteOf(root, i) : 0;
      {
        PathCheck pc(r, comms[4], ops[4], "fault bcast", true);
        MPI_Bcast(buf.data(), int(bytes), MPI_BYTE, root, comms[4]);
      }
      for (size_t i = 0; i < bytes; ++i)
        if (buf[i] != byteOf(root, i)) {
          r.fail("fault bcast: mismatch at " + std::to_string(i));
          break;
        }
    }
    if (iter == 0 && r.rank == 0) {
      bool all = true;
      for (int k = 0; k < 5; ++k)
        all = all && (!on[k] || r.counter(comms[k], std::string(ops[k]) + ":switch") > 0);
      if (all) touch(dir + "/ready");
      else r.fail("the switch did not serve every op before the fault");
    }
    // Rank 0 decides for everyone when the fault has fired.
    int fired = r.rank == 0 && exists(dir + "/fired") ? 1 : 0, any = 0;
    MPI_Allreduce(&fired, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any && after < 0) after = 5;
    else if (after > 0) --after;
  }
  if (after != 0) r.fail("the fault never fired");
  for (int k = 0; k < 5; ++k) {
    if (!on[k]) continue;
    const uint64_t sw = r.counter(comms[k], std::string(ops[k]) + ":switch");
    const uint64_t failed = r.counter(comms[k], std::string(ops[k]) + ":switch-failed");
    if (r.rank == 0)
      std::printf("%s: switch %" PRIu64 " switch-failed %" PRIu64 "\n", ops[k], sw, failed);
    if (sw == 0 || failed == 0)
      r.fail(std::string(ops[k]) + ": expected calls through the switch, then a counted failure");
  }
  for (MPI_Comm& c : comms) MPI_Comm_free(&c);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  Run r;
  MPI_Comm_rank(MPI_COMM_WORLD, &r.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &r.size);
  std::string fault_dir, only;
  bool quick = false;
  size_t bytes = 1 << 20;
  double max_call_ms = 20000;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool v = i + 1 < argc;
    if (a == "--expect" && v) r.expect = argv[++i];
    else if (a == "--fault" && v) fault_dir = argv[++i];
    else if (a == "--bytes" && v) bytes = size_t(std::atoll(argv[++i]));
    else if (a == "--max-call-ms" && v) max_call_ms = std::atof(argv[++i]);
    else if (a == "--quick") quick = true;
    else if (a == "--all-roots") r.all_roots = true;
    else if (a == "--ops" && v) only = argv[++i];
    else if (a == "--expect-op" && v && std::strchr(argv[i + 1], '=')) {
      const std::string kv = argv[++i];
      r.expect_op[kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
    }
    else {
      if (r.rank == 0) std::fprintf(stderr, "mpi_routed_check: unknown argument '%s'\n", a.c_str());
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  if ((r.expect != "switch" && r.expect != "auto" && r.expect.compare(0, 8, "previous") != 0 &&
       r.expect != "fault") ||
      (r.expect == "fault") == fault_dir.empty()) {
    if (r.rank == 0)
      std::fprintf(stderr, "mpi_routed_check: --expect switch|auto|previous[:REASON]|fault (fault "
                           "needs --fault DIR)\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  if (!r.diag.load()) {
    std::fprintf(stderr, "FAIL rank %d: switchagg diagnostics not found (component not loaded)\n",
                 r.rank);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (r.expect == "fault") {
    faultLoop(r, fault_dir, bytes, only);
  } else {
    // Elements for the reductions; the forwards move 16 bytes per element
    // (the large case: 1.2 MB blocks, several chunks and stripes).
    std::vector<size_t> counts = {0, 1, 1001};
    if (!quick) counts.push_back(300000);
    for (size_t count : counts) {
      reductionMatrix(r, MPI_COMM_WORLD, count);
      forwardMatrix(r, MPI_COMM_WORLD, count == 300000 ? 1200000 : count * 16);
    }
  }
  // One checked MPI_Allreduce beside the routed calls: the verbose log says
  // which path served it (an agent that does not route calls still serves
  // allreduce: test_switch_run.sh routed old_agent).
  if (r.expect != "fault") {
    ++r.calls;
    if (const long bad = check::checkedInt64Sum(MPI_COMM_WORLD, 1000, 7); bad >= 0)
      r.fail("the allreduce beside the routed calls: element " + std::to_string(bad));
  }
  if (r.slowest_ms > max_call_ms)
    r.fail("a call took " + std::to_string(r.slowest_ms) + " ms (bound " +
           std::to_string(max_call_ms) + ")");
  if (r.rank == 0) {
    std::printf("rank 0: %ld calls, slowest %.1f ms", r.calls, r.slowest_ms);
    for (const char* op : {"reduce", "reduce_scatter", "reduce_scatter_block", "allgather", "bcast"})
      std::printf("; %s switch %" PRIu64 " previous %" PRIu64, op,
                  r.counter(MPI_COMM_WORLD, std::string(op) + ":switch"),
                  r.counter(MPI_COMM_WORLD, std::string(op) + ":previous"));
    std::printf("\n");
  }
  const std::string summary = "routed np " + std::to_string(r.size) + " expect " + r.expect;
  const int rc = switchagg_verdict(r.failures, r.calls, summary.c_str());
  MPI_Finalize();
  return rc;
}
