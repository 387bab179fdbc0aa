// The host allreduce algorithms (one file each: allreduce_<name>.cc) and the
// small pieces they share. Every algorithm:
//   * reduces `count` elements of `dtype` with a commutative `op` in place in
//     `recv` (the caller's input is in `send`, or already in `recv` when
//     `send` is nullptr, i.e. MPI_IN_PLACE);
//   * uses only local tags below kAlgorithmTagSpace;
//   * combines two contributions always as (lower rank) op (higher rank), so
//     every rank ends with bitwise the same result even for ops that are not
//     commutative in every corner (float MIN/MAX with NaN);
//   * returns a non-ok Status only when communication failed, in which case
//     `recv` holds garbage and the caller must report an error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "host_comm.h"
#include "switchagg/common/dtype.h"
#include "switchagg/common/status.h"

namespace switchagg::coll {

struct AllreduceArgs {
  const void* send = nullptr;  // nullptr: in place
  void* recv = nullptr;
  size_t count = 0;
  Dtype dtype = Dtype::kInt32;
  Op op = Op::kSum;
};

// Node layout of a communicator for the hierarchical algorithm: node_of[r]
// is a dense node index (0..nodes-1, in order of each node's lowest rank).
struct NodeLayout {
  std::vector<int> node_of;
  int nodes = 1;
  int max_ranks_per_node = 1;
};
NodeLayout nodeLayoutFromHostIds(const std::vector<uint64_t>& host_ids);

// One rank's view of a layout: its node, the ranks of that node ascending
// (locals[0] is the node's leader) and every node's leader (its lowest
// rank) by node index.
struct NodeGroups {
  int node = 0;
  std::vector<int> locals;
  std::vector<int> leaders;
};
NodeGroups nodeGroups(const NodeLayout& layout, int rank);

// The intra-node phases of the hierarchical algorithm, also run by the
// switch path's node leaders. `local` holds one node's ranks in rank order
// and uses tags [0, kNodePhaseTags).
constexpr uint32_t kNodePhaseTags = 64;
// Binomial reduce of every local rank's args.recv into local rank 0's,
// always (lower rank) op (higher rank) in a fixed tree, so the result is
// bitwise the same for a fixed layout; the other ranks' args.recv end with
// partial results. `scratch`: count elements.
Status binomialReduce(HostComm& local, const AllreduceArgs& args, char* scratch);
// Local rank 0's args.recv into every local rank's args.recv.
Status binomialBroadcast(HostComm& local, const AllreduceArgs& args);
// Local rank 0's side of both, for a caller that interleaves them with other
// work (the switch path's pipelined node leaders): its children in the
// order binomialReduce combines them (each as mine op theirs), with the tags
// their messages carry in either phase.
struct BinomialChild {
  int rank;
  uint32_t reduce_tag, broadcast_tag;
};
std::vector<BinomialChild> binomialRootChildren(int local_size);

Status allreduceRecursiveDoubling(HostComm& comm, const AllreduceArgs& args);
Status allreduceRing(HostComm& comm, const AllreduceArgs& args);
Status allreduceRabenseifner(HostComm& comm, const AllreduceArgs& args);
Status allreduceHierarchical(HostComm& comm, const AllreduceArgs& args, const NodeLayout& layout);

// --- shared helpers (allreduce_common.cc) ---

// Copies send into recv unless in place.
void copyInput(const AllreduceArgs& args);

// mine = theirs op mine, or mine op theirs, so that the lower rank's data is
// always the left operand (see above). `n` elements.
Status combineOrdered(const AllreduceArgs& args, void* mine, const void* theirs, size_t n,
                      bool theirs_is_lower);

// Elements [begin, begin + size) of block `b` when `count` elements are cut
// into `blocks` nearly equal blocks (the first count % blocks get one more).
struct BlockRange {
  size_t begin = 0;
  size_t size = 0;
};
BlockRange blockRange(size_t count, int blocks, int b);

// Largest power of two <= n (n >= 1).
int floorPowerOfTwo(int n);

// 16-bit float sums keep their partial sums in fp32 (issue 46): a SUM of
// kFloat16 or kBfloat16 runs its reduce phases on `Widened` — the vector
// widened into an fp32 buffer, the same element ranges — and rounds each
// element to 16 bits once, where it is complete; what moves after that (an
// allgather, a broadcast, the fold's way back) is 16-bit. MIN and MAX are
// exact in 16 bits and stay there. docs/offload.md "16-bit floats".
bool keepsWidePartials(const AllreduceArgs& args);
struct Widened {
  std::vector<float> buf;
  AllreduceArgs args;  // in place on buf, kFloat32, the same op and count
};
// args.recv (the input, after copyInput) widened.
Widened widen(const AllreduceArgs& args);
// Elements r of w rounded into args.recv.
void narrowInto(const AllreduceArgs& args, const Widened& w, BlockRange r);
// The ring on a widened vector: reduce-scatter in fp32 (w), each rank's
// block rounded once into args.recv, the allgather in 16 bits.
Status allreduceRingWidened(HostComm& comm, const AllreduceArgs& args, Widened& w);

// Byte pointer to element `i` of a buffer of `dtype`.
inline char* elementPtr(void* base, Dtype dtype, size_t i) {
  return static_cast<char*>(base) + i * dtypeSize(dtype);
}

// The fold that turns p ranks into a power of two (MPICH's scheme): among
// the first 2*rem ranks, each even rank hands its data to the odd rank above
// it and sits out; everybody else gets a "virtual" rank in [0, pof2).
struct Fold {
  int pof2 = 1;
  int rem = 0;
  int vrank = -1;  // -1: this rank sits out
  int realRank(int v) const { return v < rem ? 2 * v + 1 : v + rem; }
};
Fold makeFold(int rank, int size);
// Before: sitting-out ranks send their vector to their partner, which
// combines it. After: partners send the result back.
Status foldIn(HostComm& comm, const AllreduceArgs& args, const Fold& fold, void* scratch,
              uint32_t tag);
Status foldOut(HostComm& comm, const AllreduceArgs& args, const Fold& fold, uint32_t tag);

}  // namespace switchagg::coll
