#include "bench_coll.h"

#include <cstring>
#include <vector>

#include "bench_data.h"

namespace switchagg::bench {
namespace {

struct CollInfo {
  Coll coll;
  const char* name;
  const char* mpi;
};

constexpr CollInfo kColls[] = {
    {Coll::kAllreduce, "allreduce", "MPI_Allreduce"},
    {Coll::kReduceScatterBlock, "reduce_scatter_block", "MPI_Reduce_scatter_block"},
    {Coll::kAllgather, "allgather", "MPI_Allgather"},
    {Coll::kReduce, "reduce", "MPI_Reduce"},
    {Coll::kBcast, "bcast", "MPI_Bcast"},
    {Coll::kBarrier, "barrier", "MPI_Barrier"},
    {Coll::kIallreduce, "iallreduce", "MPI_Iallreduce"},
};

const CollInfo& info(Coll c) {
  for (const CollInfo& i : kColls)
    if (i.coll == c) return i;
  return kColls[0];
}

}  // namespace

bool parseColl(const std::string& name, Coll* out) {
  for (const CollInfo& i : kColls) {
    if (name == i.name) {
      *out = i.coll;
      return true;
    }
  }
  return false;
}

const char* collName(Coll c) { return info(c).name; }
const char* collMpiName(Coll c) { return info(c).mpi; }

size_t collCount(Coll c, size_t count, int nranks) {
  switch (c) {
    case Coll::kReduceScatterBlock:
    case Coll::kAllgather: return count / size_t(nranks) * size_t(nranks);
    case Coll::kBarrier: return 0;
    default: return count;
  }
}

double busFactor(Coll c, int nranks) {
  const double p = nranks;
  switch (c) {
    case Coll::kAllreduce:
    case Coll::kIallreduce: return 2 * (p - 1) / p;
    case Coll::kReduceScatterBlock:
    case Coll::kAllgather: return (p - 1) / p;
    case Coll::kBarrier: return 0;
    default: return 1;
  }
}

void collFill(Coll c, const CollBuffers& b, size_t count, Dtype dtype, Op op, int rank,
              int nranks) {
  const size_t w = dtypeSize(dtype);
  const size_t block = count / size_t(nranks);
  switch (c) {
    case Coll::kAllgather: {
      // Rank r's part is block r of its own pattern; the result is every
      // rank's part in rank order.
      std::vector<char> full(count * w);
      for (int r = 0; r < nranks; ++r) {
        if (r != rank && b.expected == nullptr) continue;
        fillInput(full.data(), count, dtype, op, r, nranks);
        const char* part = full.data() + size_t(r) * block * w;
        if (r == rank) std::memcpy(b.send, part, block * w);
        if (b.expected) std::memcpy(b.expected + size_t(r) * block * w, part, block * w);
      }
      return;
    }
    case Coll::kBcast:
      // The root's vector goes to everyone; the others' buffers are poisoned
      // so a call that delivers nothing is caught.
      if (rank == 0) fillInput(b.send, count, dtype, op, 0, nranks);
      else poison(b.send, count * w);
      if (b.expected) fillInput(b.expected, count, dtype, op, 0, nranks);
      return;
    case Coll::kBarrier: return;
    default:
      fillInput(b.send, count, dtype, op, rank, nranks);
      if (b.expected) fillExpected(b.expected, count, dtype, op, nranks);
      return;
  }
}

void collCall(Coll c, const CollBuffers& b, size_t count, MPI_Datatype type, MPI_Op op,
              int nranks) {
  const int n = int(count);
  const int block = int(count / size_t(nranks));
  switch (c) {
    case Coll::kAllreduce: MPI_Allreduce(b.send, b.recv, n, type, op, MPI_COMM_WORLD); return;
    case Coll::kReduceScatterBlock:
      MPI_Reduce_scatter_block(b.send, b.recv, block, type, op, MPI_COMM_WORLD);
      return;
    case Coll::kAllgather:
      MPI_Allgather(b.send, block, type, b.recv, block, type, MPI_COMM_WORLD);
      return;
    case Coll::kReduce: MPI_Reduce(b.send, b.recv, n, type, op, 0, MPI_COMM_WORLD); return;
    case Coll::kBcast: MPI_Bcast(b.send, n, type, 0, MPI_COMM_WORLD); return;
    case Coll::kBarrier: MPI_Barrier(MPI_COMM_WORLD); return;
    case Coll::kIallreduce: {
      MPI_Request req;
      MPI_Iallreduce(b.send, b.recv, n, type, op, MPI_COMM_WORLD, &req);
      MPI_Wait(&req, MPI_STATUS_IGNORE);
      return;
    }
  }
}

void collResultRange(Coll c, size_t count, int rank, int nranks, size_t* offset,
                     size_t* elements) {
  *offset = 0;
  *elements = count;
  switch (c) {
    case Coll::kReduceScatterBlock:
      *offset = size_t(rank) * (count / size_t(nranks));
      *elements = count / size_t(nranks);
      return;
    case Coll::kReduce:
      if (rank != 0) *elements = 0;
      return;
    case Coll::kBarrier: *elements = 0; return;
    default: return;
  }
}

}  // namespace switchagg::bench
