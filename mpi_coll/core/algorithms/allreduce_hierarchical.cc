// Hierarchical: reduce inside each node, one leader per node runs an
// inter-node allreduce, then each leader broadcasts inside its node. Only
// the leaders cross the network, once each way, which is what matters when
// many ranks share a node and its NIC.
//
//   node A: r0 r1 r2      node B: r3 r4
//
//   1. intra-node binomial reduce to the lowest rank:
//        r1 -> r0, then r2 -> r0          r4 -> r3
//   2. leaders r0, r3: recursive doubling (small) or ring (large)
//   3. intra-node binomial broadcast, the reduce run backwards:
//        r0 -> r2, then r0 -> r1          r3 -> r4
//
// Intra-node messages go over UCX's shared-memory transports (posix/cma).
// Tags: local phases use [0, kNodePhaseTags); the leaders' algorithm runs in
// the next window [kAlgorithmTagSpace, 2 * kAlgorithmTagSpace). The local
// phases are shared with the switch path's node leaders (switch_leaders.cc).
#include <vector>

#include "host_algorithms.h"

namespace switchagg::coll {
namespace {

constexpr uint32_t kTagReduce = 0;      // + round (< 32)
constexpr uint32_t kTagBroadcast = 32;  // + round (< 32)
static_assert(kTagBroadcast + 32 <= kNodePhaseTags);
// Leaders switch from latency to bandwidth algorithm at this size.
constexpr size_t kLeaderRingBytes = 64 * 1024;

}  // namespace

Status binomialReduce(HostComm& local, const AllreduceArgs& args, char* scratch) {
  const int n = local.size(), me = local.rank();
  const size_t bytes = args.count * dtypeSize(args.dtype);
  uint32_t round = 0;
  for (int mask = 1; mask < n; mask <<= 1, ++round) {
    HostComm::Handle h;
    if (me & mask) {
      SWITCHAGG_RETURN_IF_ERROR(local.postSend(me - mask, kTagReduce + round, args.recv, bytes, &h));
      return local.waitAll();
    }
    if (me + mask < n) {
      SWITCHAGG_RETURN_IF_ERROR(local.postRecv(me + mask, kTagReduce + round, scratch, bytes, &h));
      SWITCHAGG_RETURN_IF_ERROR(local.waitAll());
      SWITCHAGG_RETURN_IF_ERROR(combineOrdered(args, args.recv, scratch, args.count, false));
    }
  }
  return Status::Ok();
}

std::vector<BinomialChild> binomialRootChildren(int local_size) {
  std::vector<BinomialChild> children;
  uint32_t round = 0;
  for (int mask = 1; mask < local_size; mask <<= 1, ++round)
    children.push_back({mask, kTagReduce + round, kTagBroadcast + round});
  return children;
}

Status binomialBroadcast(HostComm& local, const AllreduceArgs& args) {
  const int n = local.size(), me = local.rank();
  const size_t bytes = args.count * dtypeSize(args.dtype);
  int top = 1;
  while (top < n) top <<= 1;
  // Receive from the parent (the rank that sent to it in the reduce)...
  int mask = 1;
  while (mask < top && !(me & mask)) mask <<= 1;
  HostComm::Handle h;
  if (me != 0) {
    uint32_t round = 0;
    for (int m = 1; m < mask; m <<= 1) ++round;
    SWITCHAGG_RETURN_IF_ERROR(local.postRecv(me - mask, kTagBroadcast + round, args.recv, bytes, &h));
    SWITCHAGG_RETURN_IF_ERROR(local.waitAll());
  }
  // ...then feed the children, largest subtree first.
  for (int m = mask >> 1; m >= 1; m >>= 1) {
    if (me + m >= n) continue;
    uint32_t round = 0;
    for (int k = 1; k < m; k <<= 1) ++round;
    SWITCHAGG_RETURN_IF_ERROR(local.postSend(me + m, kTagBroadcast + round, args.recv, bytes, &h));
  }
  return local.waitAll();
}

NodeGroups nodeGroups(const NodeLayout& layout, int rank) {
  NodeGroups g;
  g.node = layout.node_of.at(static_cast<size_t>(rank));
  g.leaders.assign(static_cast<size_t>(layout.nodes), -1);
  for (int r = 0; r < static_cast<int>(layout.node_of.size()); ++r) {
    const int node = layout.node_of[static_cast<size_t>(r)];
    if (node == g.node) g.locals.push_back(r);
    if (g.leaders[static_cast<size_t>(node)] < 0) g.leaders[static_cast<size_t>(node)] = r;
  }
  return g;
}

Status allreduceHierarchical(HostComm& comm, const AllreduceArgs& args, const NodeLayout& layout) {
  copyInput(args);
  if (comm.size() == 1 || args.count == 0) return Status::Ok();

  const NodeGroups groups = nodeGroups(layout, comm.rank());
  SubComm local(comm, groups.locals, 0);
  // 16-bit float sums: the node reduce and the leaders' reduce in fp32,
  // rounded once (by the ring's block owners, or by every leader after
  // recursive doubling's identical fp32 sums), the broadcast in 16 bits.
  Widened w;
  const bool wide = keepsWidePartials(args);
  if (wide) w = widen(args);
  const AllreduceArgs& reduce = wide ? w.args : args;
  std::vector<char> scratch(args.count * dtypeSize(reduce.dtype));
  SWITCHAGG_RETURN_IF_ERROR(binomialReduce(local, reduce, scratch.data()));

  if (local.rank() == 0 && layout.nodes > 1) {
    SubComm inter(comm, groups.leaders, kAlgorithmTagSpace);
    const bool small = args.count * dtypeSize(args.dtype) < kLeaderRingBytes;
    if (wide && !small) {
      SWITCHAGG_RETURN_IF_ERROR(allreduceRingWidened(inter, args, w));
    } else {
      AllreduceArgs in_place = reduce;
      in_place.send = nullptr;
      SWITCHAGG_RETURN_IF_ERROR(small ? allreduceRecursiveDoubling(inter, in_place)
                                      : allreduceRing(inter, in_place));
      if (wide) narrowInto(args, w, BlockRange{0, args.count});
    }
  } else if (local.rank() == 0 && wide) {
    narrowInto(args, w, BlockRange{0, args.count});
  }
  return binomialBroadcast(local, args);
}

}  // namespace switchagg::coll
