// Ring: reduce-scatter then allgather around the ring rank -> rank+1, the
// bandwidth algorithm: 2(p-1)/p * n bytes sent per rank, whatever p is.
// The vector is cut into p blocks; every block into segments, so that the
// reduction of one segment overlaps the transfer of the next and a reduced
// segment is forwarded as soon as it is ready.
//
//   p = 3, blocks B0 B1 B2; step s: rank r sends block (r - s) mod p to
//   r + 1 and receives block (r - s - 1) mod p from r - 1
//
//   reduce-scatter                 allgather
//   step 0: r0 B0->r1, r1 B1->r2,  step 0: r0 B1->r1, r1 B2->r2, r2 B0->r0
//           r2 B2->r0              step 1: r0 B0->r1, r1 B1->r2, r2 B2->r0
//   step 1: r0 B2->r1, r1 B0->r2,
//           r2 B1->r0              (B_i is complete everywhere)
//   rank r now owns reduced block (r + 1) mod p
//
// Within a step, segment k received from the left is reduced and sent on
// to the right immediately (it is what the next step sends).
//
// 16-bit float sums (keepsWidePartials): the reduce-scatter runs on the
// vector widened to fp32, each rank rounds the block it owns once, and the
// allgather moves 16-bit values: (p-1)/p·n·(4 + 2) bytes sent per rank for
// n elements, 1.5× the 16-bit ring's and 0.75× an fp32 ring's.
#include <algorithm>
#include <vector>

#include "host_algorithms.h"

namespace switchagg::coll {
namespace {

// Segment size: big enough to amortise per-message costs, small enough that
// a block is a few segments in flight. At most kMaxSegments per block keeps
// tags inside the algorithm's tag window.
constexpr size_t kSegmentBytes = 256 * 1024;
constexpr size_t kMaxSegments = 64;

struct RingPlan {
  int size = 1;
  int rank = 0;
  size_t segment_elems = 1;  // elements per segment (last one shorter)

  int left() const { return (rank - 1 + size) % size; }
  int right() const { return (rank + 1) % size; }
  int block(int offset) const { return ((rank + offset) % size + size) % size; }
};

size_t segmentsOf(const BlockRange& b, size_t seg) { return (b.size + seg - 1) / seg; }

BlockRange segmentOf(const BlockRange& b, size_t seg, size_t k) {
  const size_t begin = b.begin + k * seg;
  return BlockRange{begin, std::min(seg, b.begin + b.size - begin)};
}

uint32_t ringTag(int phase, int step, int size, size_t k) {
  return static_cast<uint32_t>((static_cast<size_t>(phase * size + step)) * kMaxSegments + k);
}

Status postBlockSends(HostComm& comm, const AllreduceArgs& args, const RingPlan& plan, int phase,
                      int step, int blk) {
  const size_t esize = dtypeSize(args.dtype);
  const BlockRange b = blockRange(args.count, plan.size, blk);
  for (size_t k = 0; k < segmentsOf(b, plan.segment_elems); ++k) {
    const BlockRange s = segmentOf(b, plan.segment_elems, k);
    HostComm::Handle h;
    SWITCHAGG_RETURN_IF_ERROR(comm.postSend(plan.right(), ringTag(phase, step, plan.size, k),
                                            elementPtr(args.recv, args.dtype, s.begin),
                                            s.size * esize, &h));
  }
  return Status::Ok();
}

// One step of either phase: receive block `recv_blk` segment by segment
// (into scratch and reduce, or straight into place), and forward each
// finished segment to the right when the next step needs it.
Status ringStep(HostComm& comm, const AllreduceArgs& args, const RingPlan& plan, int phase,
                int step, bool forward, char* scratch) {
  const bool reducing = phase == 0;
  const size_t esize = dtypeSize(args.dtype);
  const int recv_blk = plan.block(-step - 1 + phase);
  const BlockRange b = blockRange(args.count, plan.size, recv_blk);
  const size_t nseg = segmentsOf(b, plan.segment_elems);
  std::vector<HostComm::Handle> recvs(nseg);
  for (size_t k = 0; k < nseg; ++k) {
    const BlockRange s = segmentOf(b, plan.segment_elems, k);
    char* dst = reducing ? scratch + (s.begin - b.begin) * esize
                         : elementPtr(args.recv, args.dtype, s.begin);
    SWITCHAGG_RETURN_IF_ERROR(comm.postRecv(plan.left(), ringTag(phase, step, plan.size, k), dst,
                                            s.size * esize, &recvs[k]));
  }
  for (size_t k = 0; k < nseg; ++k) {
    SWITCHAGG_RETURN_IF_ERROR(comm.wait(recvs[k]));
    const BlockRange s = segmentOf(b, plan.segment_elems, k);
    char* mine = elementPtr(args.recv, args.dtype, s.begin);
    // Each block is reduced along one chain and then copied everywhere, so
    // any fixed operand order gives every rank the same bits.
    if (reducing)
      SWITCHAGG_RETURN_IF_ERROR(combineOrdered(args, mine, scratch + (s.begin - b.begin) * esize,
                                               s.size, plan.left() < plan.rank));
    if (forward) {
      HostComm::Handle h;
      SWITCHAGG_RETURN_IF_ERROR(comm.postSend(plan.right(), ringTag(phase, step + 1, plan.size, k),
                                              mine, s.size * esize, &h));
    }
  }
  return Status::Ok();
}

RingPlan makePlan(const HostComm& comm, const AllreduceArgs& args) {
  RingPlan plan;
  plan.size = comm.size();
  plan.rank = comm.rank();
  const size_t esize = dtypeSize(args.dtype);
  const BlockRange biggest = blockRange(args.count, plan.size, 0);
  const size_t by_bytes = std::max<size_t>(1, kSegmentBytes / esize);
  const size_t by_count = (biggest.size + kMaxSegments - 1) / kMaxSegments;
  plan.segment_elems = std::max<size_t>({by_bytes, by_count, 1});
  return plan;
}

// Reduce-scatter: step 0 sends our own block; later steps forward what the
// previous step reduced (ringStep posts those sends). Ends with this rank
// owning the reduced block plan.block(1).
Status reduceScatter(HostComm& comm, const AllreduceArgs& args) {
  const RingPlan plan = makePlan(comm, args);
  std::vector<char> scratch(blockRange(args.count, plan.size, 0).size * dtypeSize(args.dtype));
  SWITCHAGG_RETURN_IF_ERROR(postBlockSends(comm, args, plan, 0, 0, plan.block(0)));
  for (int step = 0; step < plan.size - 1; ++step)
    SWITCHAGG_RETURN_IF_ERROR(ringStep(comm, args, plan, 0, step, step + 1 < plan.size - 1,
                                       scratch.data()));
  // Blocks sent above are overwritten by the allgather: finish the sends.
  return comm.waitAll();
}

// Allgather: send the block we own, (rank + 1), then forward.
Status allgather(HostComm& comm, const AllreduceArgs& args) {
  const RingPlan plan = makePlan(comm, args);
  SWITCHAGG_RETURN_IF_ERROR(postBlockSends(comm, args, plan, 1, 0, plan.block(1)));
  for (int step = 0; step < plan.size - 1; ++step)
    SWITCHAGG_RETURN_IF_ERROR(ringStep(comm, args, plan, 1, step, step + 1 < plan.size - 1,
                                       nullptr));
  return comm.waitAll();
}

}  // namespace

Status allreduceRingWidened(HostComm& comm, const AllreduceArgs& args, Widened& w) {
  SWITCHAGG_RETURN_IF_ERROR(reduceScatter(comm, w.args));
  const int owned = ((comm.rank() + 1) % comm.size());
  narrowInto(args, w, blockRange(args.count, comm.size(), owned));
  return allgather(comm, args);
}

Status allreduceRing(HostComm& comm, const AllreduceArgs& args) {
  copyInput(args);
  if (comm.size() == 1 || args.count == 0) return Status::Ok();
  if (keepsWidePartials(args)) {
    Widened w = widen(args);
    return allreduceRingWidened(comm, args, w);
  }
  SWITCHAGG_RETURN_IF_ERROR(reduceScatter(comm, args));
  return allgather(comm, args);
}

}  // namespace switchagg::coll
