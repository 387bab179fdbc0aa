// Rabenseifner: reduce-scatter by recursive halving, then allgather by
// recursive doubling; 2 log2(p) rounds moving about 2n bytes per rank in
// total instead of n log2(p). Non-powers of two use the same fold as
// recursive doubling. Blocks are indexed by virtual rank v (pof2 blocks).
//
//   pof2 = 4, blocks B0..B3, vector = [B0 B1 B2 B3]
//
//   halving, mask 2: v0,v1 keep [B0 B1] and send [B2 B3] to v2,v3 (v^2);
//                    v2,v3 keep [B2 B3] and send [B0 B1]
//   halving, mask 1: v0 keeps B0 <-> v1 keeps B1;  v2 keeps B2 <-> v3 keeps B3
//                    now v owns the fully reduced block Bv
//   doubling, mask 1: v0 <-> v1 swap B0/B1;  v2 <-> v3 swap B2/B3
//   doubling, mask 2: v0 <-> v2 swap [B0 B1]/[B2 B3];  v1 <-> v3 likewise
//
// 16-bit float sums keep fp32 partials (keepsWidePartials): the fold and
// the halving move 4-byte values, the doubling and the fold back 2-byte.
//
// Counts smaller than pof2 would leave blocks empty: those run recursive
// doubling instead (same result, fewer rounds of nothing).
#include <algorithm>
#include <vector>

#include "host_algorithms.h"

namespace switchagg::coll {
namespace {

constexpr uint32_t kTagFoldIn = 0;
constexpr uint32_t kTagFoldOut = 1;
constexpr uint32_t kTagHalving = 2;     // + round
constexpr uint32_t kTagDoubling = 100;  // + round (rounds < 32)

// Element range covering blocks [first, first + n).
BlockRange blocksSpan(size_t count, int pof2, int first, int n) {
  BlockRange a = blockRange(count, pof2, first);
  BlockRange b = blockRange(count, pof2, first + n - 1);
  return BlockRange{a.begin, b.begin + b.size - a.begin};
}

Status exchange(HostComm& comm, int peer, uint32_t tag, const void* send, size_t send_bytes,
                void* recv, size_t recv_bytes) {
  HostComm::Handle h;
  SWITCHAGG_RETURN_IF_ERROR(comm.postRecv(peer, tag, recv, recv_bytes, &h));
  SWITCHAGG_RETURN_IF_ERROR(comm.postSend(peer, tag, send, send_bytes, &h));
  return comm.waitAll();
}

// Leaves this virtual rank owning the reduced block `vrank`.
Status reduceScatterHalving(HostComm& comm, const AllreduceArgs& args, const Fold& fold,
                            char* scratch) {
  const size_t esize = dtypeSize(args.dtype);
  int first = 0, nblocks = fold.pof2;
  uint32_t round = 0;
  for (int mask = fold.pof2 / 2; mask >= 1; mask >>= 1, ++round) {
    const int peer = fold.realRank(fold.vrank ^ mask);
    const int half = nblocks / 2;
    const bool keep_low = (fold.vrank & mask) == 0;
    const int keep_first = keep_low ? first : first + half;
    const int give_first = keep_low ? first + half : first;
    const BlockRange keep = blocksSpan(args.count, fold.pof2, keep_first, half);
    const BlockRange give = blocksSpan(args.count, fold.pof2, give_first, half);
    SWITCHAGG_RETURN_IF_ERROR(exchange(comm, peer, kTagHalving + round,
                                       elementPtr(args.recv, args.dtype, give.begin),
                                       give.size * esize, scratch, keep.size * esize));
    SWITCHAGG_RETURN_IF_ERROR(combineOrdered(args, elementPtr(args.recv, args.dtype, keep.begin),
                                             scratch, keep.size, peer < comm.rank()));
    first = keep_first;
    nblocks = half;
  }
  return Status::Ok();
}

Status allgatherDoubling(HostComm& comm, const AllreduceArgs& args, const Fold& fold) {
  const size_t esize = dtypeSize(args.dtype);
  int first = fold.vrank;  // owned blocks [first, first + mask)
  uint32_t round = 0;
  for (int mask = 1; mask < fold.pof2; mask <<= 1, ++round) {
    const int peer = fold.realRank(fold.vrank ^ mask);
    const bool low = (fold.vrank & mask) == 0;
    const int peer_first = low ? first + mask : first - mask;
    const BlockRange mine = blocksSpan(args.count, fold.pof2, first, mask);
    const BlockRange theirs = blocksSpan(args.count, fold.pof2, peer_first, mask);
    SWITCHAGG_RETURN_IF_ERROR(exchange(comm, peer, kTagDoubling + round,
                                       elementPtr(args.recv, args.dtype, mine.begin),
                                       mine.size * esize,
                                       elementPtr(args.recv, args.dtype, theirs.begin),
                                       theirs.size * esize));
    first = low ? first : peer_first;
  }
  return Status::Ok();
}

}  // namespace

Status allreduceRabenseifner(HostComm& comm, const AllreduceArgs& args) {
  const int size = comm.size();
  if (args.count < static_cast<size_t>(floorPowerOfTwo(size)))
    return allreduceRecursiveDoubling(comm, args);
  copyInput(args);
  if (size == 1) return Status::Ok();

  const Fold fold = makeFold(comm.rank(), size);
  // 16-bit float sums: the fold and the halving in fp32, each owned block
  // rounded once, the doubling and the fold's way back in 16 bits.
  Widened w;
  const bool wide = keepsWidePartials(args);
  if (wide) w = widen(args);
  const AllreduceArgs& reduce = wide ? w.args : args;
  // The fold needs a whole vector of scratch; halving at most the first
  // half of the blocks (blocks shrink from the front).
  const size_t esize = dtypeSize(reduce.dtype);
  const size_t halving = blocksSpan(args.count, fold.pof2, 0, std::max(1, fold.pof2 / 2)).size;
  std::vector<char> scratch((fold.rem > 0 ? args.count : halving) * esize);
  SWITCHAGG_RETURN_IF_ERROR(foldIn(comm, reduce, fold, scratch.data(), kTagFoldIn));
  if (fold.vrank >= 0) {
    SWITCHAGG_RETURN_IF_ERROR(reduceScatterHalving(comm, reduce, fold, scratch.data()));
    if (wide) narrowInto(args, w, blocksSpan(args.count, fold.pof2, fold.vrank, 1));
    SWITCHAGG_RETURN_IF_ERROR(allgatherDoubling(comm, args, fold));
  }
  return foldOut(comm, args, fold, kTagFoldOut);
}

}  // namespace switchagg::coll
