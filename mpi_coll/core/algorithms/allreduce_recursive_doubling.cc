// Recursive doubling: the latency algorithm, log2(p) rounds of whole-vector
// exchanges. Non-powers of two fold the first 2*rem ranks in pairs first.
//
//   p = 6 (pof2 = 4, rem = 2)         v = virtual rank among the 4 that work
//
//   rank:   0    1    2    3    4    5
//   fold:   0 -> 1    2 -> 3              (0 and 2 sit out)
//   v:           0         1    2    3
//   mask 1:      1 <-----> 3    4 <->5    (v0<->v1, v2<->v3)
//   mask 2:      1 <----------> 4         (v0<->v2)
//                     3 <-----------> 5   (v1<->v3)
//   unfold: 0 <- 1    2 <- 3
//
// Every exchange is a full vector each way: p log p * n bytes in total, the
// best for small messages, the worst for large ones.
#include <vector>

#include "host_algorithms.h"

namespace switchagg::coll {
namespace {

constexpr uint32_t kTagFoldIn = 0;
constexpr uint32_t kTagFoldOut = 1;
constexpr uint32_t kTagRound = 2;  // + round index

}  // namespace

Status allreduceRecursiveDoubling(HostComm& comm, const AllreduceArgs& args) {
  copyInput(args);
  const int size = comm.size();
  if (size == 1 || args.count == 0) return Status::Ok();
  if (keepsWidePartials(args)) {
    // Every exchange holds partial sums: all of it in fp32 (twice the
    // bytes of the 16-bit vector; this is the small-message algorithm),
    // rounded once at the end, the same fp32 bits on every rank.
    Widened w = widen(args);
    SWITCHAGG_RETURN_IF_ERROR(allreduceRecursiveDoubling(comm, w.args));
    narrowInto(args, w, BlockRange{0, args.count});
    return Status::Ok();
  }

  const size_t bytes = args.count * dtypeSize(args.dtype);
  std::vector<char> scratch(bytes);
  const Fold fold = makeFold(comm.rank(), size);
  SWITCHAGG_RETURN_IF_ERROR(foldIn(comm, args, fold, scratch.data(), kTagFoldIn));

  if (fold.vrank >= 0) {
    uint32_t round = 0;
    for (int mask = 1; mask < fold.pof2; mask <<= 1, ++round) {
      const int peer = fold.realRank(fold.vrank ^ mask);
      HostComm::Handle h;
      SWITCHAGG_RETURN_IF_ERROR(comm.postRecv(peer, kTagRound + round, scratch.data(), bytes, &h));
      SWITCHAGG_RETURN_IF_ERROR(comm.postSend(peer, kTagRound + round, args.recv, bytes, &h));
      SWITCHAGG_RETURN_IF_ERROR(comm.waitAll());
      SWITCHAGG_RETURN_IF_ERROR(
          combineOrdered(args, args.recv, scratch.data(), args.count, peer < comm.rank()));
    }
  }
  return foldOut(comm, args, fold, kTagFoldOut);
}

}  // namespace switchagg::coll
