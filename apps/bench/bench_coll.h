// The collectives switchagg-bench can time (--coll), with each one's input,
// call and check. Sizes are the whole vector N in bytes as for allreduce:
// reduce_scatter_block gives every rank N/p of the reduced N, allgather
// gathers N from p parts of N/p, bcast and reduce move N to or from root 0,
// barrier moves nothing (one row). Element counts are whole blocks of p for
// the two block collectives, so N may be rounded down.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <string>

#include "switchagg/common/dtype.h"

namespace switchagg::bench {

// kIallreduce: MPI_Iallreduce + MPI_Wait per call (its warm-up calls are
// blocking MPI_Allreduces: under offload=auto online tuning settles on them
// and the nonblocking calls inherit the verdict, docs/selection.md).
enum class Coll { kAllreduce, kReduceScatterBlock, kAllgather, kReduce, kBcast, kBarrier, kIallreduce };

bool parseColl(const std::string& name, Coll* out);
const char* collName(Coll c);
const char* collMpiName(Coll c);  // "MPI_Allreduce", ...
// Elements the call moves for a vector of `count` (block collectives: the
// largest multiple of nranks not above it; barrier: 0).
size_t collCount(Coll c, size_t count, int nranks);
// busbw factor of NCCL's convention: allreduce 2(p-1)/p, reduce_scatter and
// allgather (p-1)/p, reduce and bcast 1, barrier 0.
double busFactor(Coll c, int nranks);

struct CollBuffers {
  char* send;
  char* recv;
  char* expected;  // nullptr without --check
};

// Fills the send buffer (and expected, when checked) for `count` elements
// (collCount) on `rank`.
void collFill(Coll c, const CollBuffers& b, size_t count, Dtype dtype, Op op, int rank,
              int nranks);
// One call of the collective on MPI_COMM_WORLD (kIallreduce: posted and
// waited for).
void collCall(Coll c, const CollBuffers& b, size_t count, MPI_Datatype type, MPI_Op op,
              int nranks);
// What of recv holds this rank's result: [offset, offset + elements).
// Elements 0 means nothing to check on this rank (reduce off root, barrier).
void collResultRange(Coll c, size_t count, int rank, int nranks, size_t* offset,
                     size_t* elements);

}  // namespace switchagg::bench
