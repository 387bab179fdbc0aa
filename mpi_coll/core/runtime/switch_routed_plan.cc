// What a routed call looks like on the switch path (docs/offload.md "Routed
// collectives"): whether the path can route it (describeRouted), the tree's
// placement order (TreeLayout), and this rank's agent call for it
// (planRouted: reduce and reduce-scatter, allgather, bcast). The calls
// themselves: switch_routed.cc; with node leaders: switch_routed_leaders.cc.
#include "switch_path_internal.h"

#include <cstring>

#include "switchagg/common/reduce.h"

namespace switchagg::coll::switch_detail {

bool TreeLayout::inOrder() const {
  for (size_t i = 0; i < placed.size(); ++i)
    if (placed[i] != int(i)) return false;
  return true;
}

agent::RoutedCall TreeLayout::localize(const agent::RoutedCall& call) const {
  agent::RoutedCall c = call;
  if (!active() || call.want.empty()) return c;
  c.want.assign(call.want.begin() + long(first[leaf]), call.want.begin() + long(first[leaf + 1]) + 1);
  for (uint32_t l = 0; l < leaves; ++l) c.leaf_want.push_back(call.want[first[l]]);
  c.leaf_want.push_back(call.want.back());
  return c;
}

Status TreeLayout::fold(Dtype dtype, Op op, void* out,
                        const std::vector<std::vector<uint8_t>>& parts, size_t n) const {
  std::vector<const void*> in;
  if (!active()) {
    for (const std::vector<uint8_t>& p : parts) in.push_back(p.data());
    return reduceMany(dtype, op, out, in.data(), in.size(), n);
  }
  // Each leaf's participants in participant order (the leaf's reduction),
  // then the leaves' partials in leaf order (the spine's).
  std::vector<std::vector<uint8_t>> partial(leaves, std::vector<uint8_t>(n * dtypeSize(dtype)));
  std::vector<const void*> sums;
  for (uint32_t l = 0; l < leaves; ++l) {
    in.clear();
    for (size_t i = first[l]; i < first[l + 1]; ++i) in.push_back(parts[size_t(placed[i])].data());
    SWITCHAGG_RETURN_IF_ERROR(reduceMany(dtype, op, partial[l].data(), in.data(), in.size(), n));
    sums.push_back(partial[l].data());
  }
  return reduceMany(dtype, op, out, sums.data(), sums.size(), n);
}

bool isReduction(CollKind op) {
  return op == SWITCHAGG_COLL_REDUCE || op == SWITCHAGG_COLL_REDUCE_SCATTER ||
         op == SWITCHAGG_COLL_REDUCE_SCATTER_BLOCK;
}

// Why the path cannot route this call (the reason counted as
// <op>:previous:<reason>), or null after filling `in`'s switch fields.
// Alike on every rank: joined_, leaders_, routed_ and the caps are agreed.
const char* AgentSwitchPath::describeRouted(const RoutedArgs& args, SelectionInput* in) const {
  if (!joined_) return "unavailable";
  // Node leaders wrap the leaders' call in node steps (routedLeaders,
  // routedLeadersBlocks). On one node the whole call is node steps:
  // nothing for the agent to route.
  if (leaders_ && leaders_->nodes() == 1) return "one-node";
  if (!routed_) return "agent-not-routed";
  if (isReduction(args.op) && !info_.caps.supports(args.dtype, args.reduce_op))
    return "dtype-op";
  if (in) fill(in);
  return nullptr;
}

// A tree whose placement order is not rank order (a leaf's ranks not
// adjacent), without node leaders (whose node order is the tree's
// placement already): a call with a block per rank stages its vector in
// placement order (placed_).
bool AgentSwitchPath::staged() const {
  return tree_.active() && !leaders_ && !tree_.inOrder();
}

// Each rank's block (reduce-scatter: its count; allgather: its bytes) in
// rank order (at_rank) and in placement order (at_node).
AgentSwitchPath::BlockLayout AgentSwitchPath::placementLayout(const RoutedArgs& args) const {
  BlockLayout l{};
  const int size = comm_.size();
  const bool reduction = isReduction(args.op);
  l.size = size;
  l.esize = reduction ? dtypeSize(args.dtype) : 1;
  l.count.resize(size_t(size));
  l.at_rank.resize(size_t(size) + 1);
  l.at_node.resize(size_t(size));
  for (int r = 0; r < size; ++r) {
    l.count[size_t(r)] = reduction ? args.counts[r] : args.count;
    l.at_rank[size_t(r) + 1] = l.at_rank[size_t(r)] + l.count[size_t(r)];
  }
  for (int i = 0, at = 0; i < size; ++i) {
    const int r = tree_.at(i);
    l.at_node[size_t(r)] = size_t(at);
    at += int(l.count[size_t(r)]);
  }
  l.total = l.at_rank[size_t(size)];
  l.vector_bytes = l.total * l.esize;
  return l;
}

// A staged allgather's vector, once this member has it, from placement
// order (placed_) into the caller's buffer in rank order.
void AgentSwitchPath::unplace(const RoutedArgs& args, const RoutedPlan& plan) {
  if (!plan.unplace) return;
  const BlockLayout l = placementLayout(args);
  l.copyBlocks(static_cast<uint8_t*>(args.recv), l.at_rank, placed_.data(), l.at_node);
}

// This rank's agent call for a flat routed call. Results meant for the
// caller's buffer go there directly when the input stays intact anyway,
// else to scratch_ (committed only once every rank said ok); an in-place
// allgather streams its own block from a copy, restored before a redo.
RoutedPlan AgentSwitchPath::planRouted(const RoutedArgs& args) {
  switch (args.op) {
    case SWITCHAGG_COLL_REDUCE:
    case SWITCHAGG_COLL_REDUCE_SCATTER:
    case SWITCHAGG_COLL_REDUCE_SCATTER_BLOCK:
      return planReduction(args);
    case SWITCHAGG_COLL_ALLGATHER:
      return planAllgather(args);
    case SWITCHAGG_COLL_BCAST:
      return planBcast(args);
    case SWITCHAGG_COLL_ALLREDUCE:  // not routed
    case SWITCHAGG_COLL_BARRIER:
      break;
  }
  return RoutedPlan();
}

// Reduce (to a root) and reduce-scatter: a routed reduction.
RoutedPlan AgentSwitchPath::planReduction(const RoutedArgs& args) {
  const int size = comm_.size(), rank = comm_.rank();
  const bool in_place = args.send == nullptr;
  const size_t esize = dtypeSize(args.dtype);
  RoutedPlan plan;
  agent::RoutedCall& call = plan.call;
  void*& commit = plan.commit;
  size_t& commit_bytes = plan.commit_bytes;
  call.kind = agent::RoutedCall::Kind::kReduce;
  call.dtype = args.dtype;
  call.op = args.reduce_op;
  if (args.op == SWITCHAGG_COLL_REDUCE) {
    call.total = args.count;
    call.in = in_place ? args.recv : args.send;  // MPI_IN_PLACE: the root's input is recv
    // Bounds in placement order (a tree's; else rank order): the root wants it all.
    const int root_at = tree_.placeOf(args.root);
    call.want.resize(size_t(size) + 1);
    for (int r = 0; r <= size; ++r) call.want[size_t(r)] = r <= root_at ? 0 : args.count;
    if (rank == args.root) plan.hi = args.count * esize;
    if (rank == args.root && in_place) {
      commit = args.recv;
      commit_bytes = args.count * esize;
      call.out = scratchFor(commit_bytes);
    } else {
      call.out = rank == args.root ? args.recv : no_output_;
    }
    return plan;
  }
  // Blocks in placement order (a tree's; else rank order).
  call.want.resize(size_t(size) + 1);
  for (int i = 0; i < size; ++i)
    call.want[size_t(i) + 1] = call.want[size_t(i)] + args.counts[tree_.at(i)];
  call.total = call.want.back();
  call.in = in_place ? args.recv : args.send;  // in place: the whole vector in recv
  if (staged()) {
    const BlockLayout l = placementLayout(args);
    placed_.resize(l.vector_bytes);
    l.copyBlocks(placed_.data(), l.at_node, static_cast<const uint8_t*>(call.in), l.at_rank);
    call.in = placed_.data();
  }
  const size_t mine = args.counts[rank] * esize;
  plan.lo = call.want[size_t(tree_.placeOf(rank))] * esize;
  plan.hi = plan.lo + mine;
  if (in_place) {
    commit = args.recv;
    commit_bytes = mine;
    call.out = scratchFor(mine);
  } else {
    call.out = mine ? args.recv : no_output_;
  }
  return plan;
}

RoutedPlan AgentSwitchPath::planAllgather(const RoutedArgs& args) {
  const int size = comm_.size(), rank = comm_.rank();
  const bool in_place = args.send == nullptr;
  RoutedPlan plan;
  agent::RoutedCall& call = plan.call;
  void*& restore = plan.restore;
  size_t& commit_bytes = plan.commit_bytes;
  const size_t b = args.count;
  call.kind = agent::RoutedCall::Kind::kForward;
  call.dtype = Dtype::kUint8;
  call.total = size_t(size) * b;
  call.in_begin = size_t(tree_.placeOf(rank)) * b;
  call.in_end = call.in_begin + b;
  call.out = args.recv;
  if (staged()) {
    // The vector in placement order into placed_, then into recv (unplace):
    // recv is not written before, so our block is read from it in place.
    placed_.resize(call.total);
    call.out = placed_.data();
    call.in = in_place ? static_cast<const uint8_t*>(args.recv) + size_t(rank) * b : args.send;
    plan.unplace = true;
    return plan;
  }
  if (in_place) {
    // Our block from a copy: recv is the output, and a redo needs it back.
    restore = static_cast<uint8_t*>(args.recv) + call.in_begin;
    commit_bytes = b;
    void* copy = scratchFor(b);
    std::memcpy(copy, restore, b);
    call.in = copy;
  } else {
    call.in = args.send;
  }
  return plan;
}

RoutedPlan AgentSwitchPath::planBcast(const RoutedArgs& args) {
  const int rank = comm_.rank();
  RoutedPlan plan;
  agent::RoutedCall& call = plan.call;
  call.kind = agent::RoutedCall::Kind::kForward;
  call.dtype = Dtype::kUint8;
  call.total = args.count;
  if (rank == args.root) {
    call.in = args.recv;
    call.in_begin = 0;
    call.in_end = args.count;
    call.out = scratchFor(args.count);  // the root's copy comes back; its buffer stays
  } else {
    call.in_begin = call.in_end = rank < args.root ? 0 : args.count;
    call.out = args.recv;
  }
  return plan;
}

}  // namespace switchagg::coll::switch_detail
