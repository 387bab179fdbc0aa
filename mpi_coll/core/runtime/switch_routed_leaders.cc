// The routed collectives through the switch path with node leaders
// (docs/offload.md "Routed collectives", "With node leaders"): the node's
// steps around the leaders' routed call, for bcast and reduce (a root) and
// for reduce-scatter and allgather (a block per rank, in node order).
#include "switch_path_internal.h"

#include <cstring>

namespace switchagg::coll::switch_detail {

// MPI_Bcast / MPI_Reduce with node leaders, mirroring allreduce(): node
// step, the leaders' routed call among nodes (member = node index, the
// root's node owns the bcast input / wants the whole reduction), then the
// one-byte agreement over every rank; only after an all-ok agreement the
// result is delivered inside the nodes (a failure there is a host transport
// failure after the commit, reported like a host algorithm's). Before it:
//   bcast: a root that is not its node's leader sends its buffer to the
//     leader (a staging copy there); the root's buffer is only ever read.
//   reduce: the node's inputs reduced into the leader in rank order
//     (NodeLeaders::reduce: a copy, the inputs stay intact for a redo).
// After it: bcast: each leader's result to its node (a non-leader root
// receives into staging); reduce: the root's leader sends the result to
// the root if that is another rank. Non-leaders say ok for the agent step.
Status AgentSwitchPath::routedLeaders(const RoutedArgs& args, CallOutcome* how) {
  if (args.op != SWITCHAGG_COLL_BCAST && args.op != SWITCHAGG_COLL_REDUCE)
    return routedLeadersBlocks(args, how);
  const int rank = comm_.rank();
  const bool bcast = args.op == SWITCHAGG_COLL_BCAST;
  const bool in_place = args.send == nullptr;
  const size_t bytes = args.count * (bcast ? 1 : dtypeSize(args.dtype));
  const int root_leader = leaders_->leaderOf(leaders_->nodeOf(args.root));
  agent::RoutedCall call;
  Status mine = routedLeadersNodeStep(args, bytes, &call);
  // A 16-bit reduce's leaders send their node's fp64 (or fp32) sum.
  const WideRouted wide = widenRouted(args, &call, root_leader == rank ? args.count : 0);
  last_bytes_sent_ = 0;
  // One round trip for a call up to the keep limit (alike on every rank).
  const bool one_trip = oneRoundTrip(bytes);
  if (one_trip && ledger_) ledger_->begin();
  if (mine.ok() && group_) mine = streamRouted(call, bytes * wide.scale);
  else if (mine.ok() && leaders_->leader())
    mine = Status(Code::kAborted, "the switch group was lost in an earlier call");
  if (one_trip) return routedLeadersOneRoundTrip(args, call, mine, bytes, wide, how);
  std::vector<uint8_t> oks;
  Status agreed = agree(mine, &oks);
  if (!agreed.ok()) {
    leaders_->abandon();
    return agreed;
  }
  if (allDone(oks)) {
    ++routed_calls_;
    *how = CallOutcome::kDone;
    narrowRouted(wide);  // into the place the 16-bit call's result takes below
    // A leader sends from its recv (a root leader's buffer is only read; the
    // agent returns a root only headers); a non-leader root receives its
    // copy into staging.
    if (bcast)
      return leaders_->broadcastBytes(
          rank == args.root && rank != root_leader ? scratchFor(bytes) : args.recv, bytes);
    Status st;
    if (root_leader != args.root)
      st = leaders_->move(root_leader, args.root, scratchFor(bytes), args.recv, bytes);
    else if (rank == args.root && in_place && bytes)
      std::memcpy(args.recv, scratch_.data(), bytes);
    leaders_->abandon();
    return st;
  }
  leaders_->abandon();
  return endRoutedUnserved(mine, oks, args.op, how);
}

// routedLeaders()'s node step before the leaders' routed call, and that
// call's description (`call`); returns this rank's outcome so far.
Status AgentSwitchPath::routedLeadersNodeStep(const RoutedArgs& args, size_t bytes,
                                              agent::RoutedCall* out) {
  agent::RoutedCall& call = *out;
  const int rank = comm_.rank();
  const bool bcast = args.op == SWITCHAGG_COLL_BCAST;
  const bool in_place = args.send == nullptr;
  const int node = leaders_->node(), nodes = leaders_->nodes();
  const int root_node = leaders_->nodeOf(args.root);
  const int root_leader = leaders_->leaderOf(root_node);
  call.total = args.count;
  Status mine;
  if (bcast) {
    mine = leaders_->begin();
    if (mine.ok() && root_leader != args.root)
      mine = leaders_->move(args.root, root_leader, args.recv, scratchFor(bytes), bytes);
    call.kind = agent::RoutedCall::Kind::kForward;
    call.dtype = Dtype::kUint8;
    if (node == root_node) {
      call.in = rank == args.root ? args.recv : scratchFor(bytes);
      call.in_begin = 0;
      call.in_end = args.count;
      // A root leader's copy comes back to staging; its buffer stays.
      call.out = rank == args.root ? scratchFor(bytes) : args.recv;
    } else {
      // Empty pieces before the root's place end at 0, after it at count
      // (placement order: a tree's, else node order).
      call.in_begin = call.in_end = tree_.placeOf(node) < tree_.placeOf(root_node) ? 0 : args.count;
      call.out = args.recv;
    }
  } else {
    AllreduceArgs local;
    local.send = args.send;  // null: in place at the root, its input in recv
    local.recv = args.recv;
    local.count = args.count;
    local.dtype = args.dtype;
    local.op = args.reduce_op;
    Result<const void*> node_input = leaders_->reduce(local);
    mine = node_input.status();
    call.kind = agent::RoutedCall::Kind::kReduce;
    call.dtype = args.dtype;
    call.op = args.reduce_op;
    call.in = mine.ok() ? node_input.value() : nullptr;
    // Bounds in placement order (a tree's; else node order).
    const int root_at = tree_.placeOf(root_node);
    call.want.resize(size_t(nodes) + 1);
    for (int m = 0; m <= nodes; ++m) call.want[size_t(m)] = m <= root_at ? 0 : args.count;
    // The root's node gets the result: straight into a root leader's recv
    // unless in place (its input), else staging.
    call.out = node != root_node                   ? static_cast<void*>(no_output_)
               : rank == args.root && !in_place ? args.recv
                                                  : scratchFor(bytes);
  }
  return mine;
}

// The leaders' one round trip of a routed call: each leader settles its
// outcome (a bcast's vector recovered from another leader, a reduce's
// result folded from the leaders' inputs, after a failure here), then one
// broadcast per node hands [outcome] and, where the node needs it (every
// node of a bcast, the root's node of a reduce), the result. The root
// takes it from there; every other rank writes only its scratch.
Status AgentSwitchPath::routedLeadersOneRoundTrip(const RoutedArgs& args,
                                                  const agent::RoutedCall& call,
                                                  const Status& mine, size_t bytes,
                                                  const WideRouted& wide, CallOutcome* how) {
  const int rank = comm_.rank();
  const bool bcast = args.op == SWITCHAGG_COLL_BCAST;
  const bool root_node = leaders_->node() == leaders_->nodeOf(args.root);
  const bool in_place = args.send == nullptr;
  // A leader's copy of the node's result: a bcast's vector (a root
  // leader's echo goes to scratch), the reduce's result on the root's node.
  // (A wide uplink's: rounded from wide_out_ once settled.)
  void* leader_result = bcast              ? (rank == args.root ? scratchFor(bytes) : args.recv)
                        : wide.narrow_to ? wide.narrow_to
                                         : call.out;
  CallOutcome outcome = CallOutcome::kDone;
  if (ledger_) {
    int source = -1;
    const size_t wbytes = bytes * wide.scale;
    Result<CallOutcome> end =
        bcast ? settle(mine, leader_result, bytes, &source, collKindName(args.op))
              : settleReduction(mine, wideRoutedArgs(args, call), call.in, wbytes,
                                static_cast<uint8_t*>(call.out), 0, root_node ? wbytes : 0);
    if (!end.ok()) {
      leaders_->abandon();
      return end.status();
    }
    outcome = *end;
    if (outcome == CallOutcome::kDone) narrowRouted(wide);
  }
  const size_t share = bcast || root_node ? bytes : 0;
  void* target = (bcast && rank != args.root) || (!bcast && rank == args.root)
                     ? args.recv
                     : scratchFor(share);
  uint8_t shared = uint8_t(outcome);
  SWITCHAGG_RETURN_IF_ERROR(leaders_->shareOutcome(&shared, leader_result, target, share));
  outcome = CallOutcome(shared);
  if (outcome == CallOutcome::kDone && !bcast && rank == args.root && leaders_->leader() &&
      in_place && bytes)
    std::memcpy(args.recv, scratch_.data(), bytes);
  return endRoutedOneRoundTrip(outcome, mine, args.op, how);
}

// MPI_Reduce_scatter(_block) and MPI_Allgather with node leaders
// (docs/offload.md "Node leaders"). The vector is taken in node order
// (NodeLeaders::byNode(): each node's blocks adjacent; rank order when the
// nodes' ranks are), so that each node is one member of the leaders' routed
// call with one contiguous part:
//   reduce-scatter: each rank copies its input into node order, the node
//     reduces it into the leader (binomial, rank order: the same bits for a
//     fixed layout), the leaders' routed reduce gives each node its part
//     (member = node index), the leader hands each rank its block;
//   allgather: the node's blocks gathered at the leader, the leaders' routed
//     forward of their node's part, the whole vector broadcast in the node
//     (and put back in rank order where node order is not).
// A node's uplink carries the vector once up and its part down
// (reduce-scatter), or its part up and the vector down (allgather),
// whatever the ranks per node. Completion as the other routed calls: one
// round trip up to the keep limit (the leaders settle, one node message
// hands every rank [outcome][result]), else the outcome agreement over
// every rank before anything reaches a caller's buffer.
Status AgentSwitchPath::routedLeadersBlocks(const RoutedArgs& args, CallOutcome* how) {
  const int rank = comm_.rank();
  const bool leader = leaders_->leader();
  const BlockLayout l = blockLayout(args);
  agent::RoutedCall call;
  // Allgather, in place: the leader's own block, put back after a failure
  // (the agent's result lands in its recv).
  const void* own_copy = nullptr;
  Status mine = routedBlocksNodeStep(args, l, &call, &own_copy);
  // A 16-bit reduce-scatter's leaders send their node's fp64 (or fp32) sum
  // and round their node's part once (the layout in the wide type for the
  // call and its recovery).
  const WideRouted wide = widenRouted(args, &call, l.hi - l.lo);
  BlockLayout wl = l;
  wl.esize *= wide.scale;
  wl.vector_bytes *= wide.scale;
  last_bytes_sent_ = 0;
  const bool one_trip = oneRoundTrip(l.vector_bytes);
  if (one_trip && ledger_) ledger_->begin();
  if (mine.ok() && group_) mine = streamRouted(call, wl.vector_bytes);
  else if (mine.ok() && leader)
    mine = Status(Code::kAborted, "the switch group was lost in an earlier call");

  std::vector<uint8_t> oks;
  Result<CallOutcome> outcome =
      routedBlocksOutcome(wideRoutedArgs(args, call), wl, call, mine, one_trip, &oks);
  if (!outcome.ok()) return outcome.status();
  if (wide.narrow_to) {
    if (*outcome == CallOutcome::kDone) narrowRouted(wide);
    call.out = wide.narrow_to;  // what the node receives (16-bit)
  }
  if (*outcome != CallOutcome::kDone && own_copy && args.count)
    std::memcpy(static_cast<uint8_t*>(args.recv) + size_t(rank) * args.count, own_copy, args.count);

  uint8_t shared = uint8_t(*outcome);
  SWITCHAGG_RETURN_IF_ERROR(deliverBlocks(args, l, call, &shared));
  if (one_trip) return endRoutedOneRoundTrip(CallOutcome(shared), mine, args.op, how);
  if (CallOutcome(shared) == CallOutcome::kDone) {
    ++routed_calls_;
    *how = CallOutcome::kDone;
    return Status::Ok();
  }
  return endRoutedUnserved(mine, oks, args.op, how);
}

// Every rank's block from one order to the other (esize-byte elements).
void AgentSwitchPath::BlockLayout::copyBlocks(uint8_t* to, const std::vector<size_t>& to_at,
                                              const uint8_t* from,
                                              const std::vector<size_t>& from_at) const {
  for (int r = 0; r < size; ++r)
    if (count[size_t(r)])
      std::memcpy(to + to_at[size_t(r)] * esize, from + from_at[size_t(r)] * esize,
                  count[size_t(r)] * esize);
}

AgentSwitchPath::BlockLayout AgentSwitchPath::blockLayout(const RoutedArgs& args) {
  BlockLayout l;
  const int size = comm_.size();
  const bool reduction = isReduction(args.op);
  l.size = size;
  l.esize = reduction ? dtypeSize(args.dtype) : 1;
  // Ranks by node, the nodes in placement order (a tree's: leaf by leaf).
  std::vector<int> by_node = leaders_->byNode();
  std::stable_sort(by_node.begin(), by_node.end(), [&](int a, int b) {
    return tree_.placeOf(leaders_->nodeOf(a)) < tree_.placeOf(leaders_->nodeOf(b));
  });
  const int node = leaders_->node(), nodes = leaders_->nodes();
  // Elements (allgather: bytes) of each rank's block; where each starts in
  // rank order and in node order; where each node's part starts.
  l.count.resize(static_cast<size_t>(size));
  l.at_rank.resize(static_cast<size_t>(size) + 1);
  l.at_node.resize(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) {
    l.count[size_t(r)] = reduction ? args.counts[r] : args.count;
    l.at_rank[size_t(r) + 1] = l.at_rank[size_t(r)] + l.count[size_t(r)];
  }
  l.part.resize(size_t(nodes) + 1);
  size_t offset = 0;
  for (size_t i = 0; i < by_node.size(); ++i) {
    const int r = by_node[i];
    const int n = leaders_->nodeOf(r);
    if (r == leaders_->leaderOf(n)) l.part[size_t(tree_.placeOf(n))] = offset;
    l.at_node[size_t(r)] = offset;
    offset += l.count[size_t(r)];
  }
  l.total = offset;
  l.vector_bytes = l.total * l.esize;
  l.part[size_t(nodes)] = l.total;
  l.lo = l.part[size_t(tree_.placeOf(node))];
  l.hi = l.part[size_t(tree_.placeOf(node)) + 1];
  const std::vector<int>& locals = leaders_->locals();
  for (int r : locals) l.local_bytes.push_back(l.count[size_t(r)] * l.esize);
  l.contiguous = leaders_->nodesContiguous() && (!tree_.active() || tree_.inOrder());  // rank order
  return l;
}

Status AgentSwitchPath::routedBlocksNodeStep(const RoutedArgs& args, const BlockLayout& l,
                                             agent::RoutedCall* out, const void** own_copy) {
  agent::RoutedCall& call = *out;
  const int rank = comm_.rank();
  const bool in_place = args.send == nullptr;
  const bool leader = leaders_->leader();
  const size_t esize = l.esize, total = l.total, vector_bytes = l.vector_bytes;
  const size_t lo = l.lo, hi = l.hi;
  Status mine;
  if (isReduction(args.op)) {
    uint8_t* acc = reinterpret_cast<uint8_t*>(leaders_->accumulator(vector_bytes));
    const uint8_t* in = static_cast<const uint8_t*>(in_place ? args.recv : args.send);
    if (!l.contiguous) l.copyBlocks(acc, l.at_node, in, l.at_rank);
    else if (vector_bytes) std::memcpy(acc, in, vector_bytes);
    Result<const void*> node_input = leaders_->reduceAccumulator(args.dtype, args.reduce_op, total);
    mine = node_input.status();
    call.kind = agent::RoutedCall::Kind::kReduce;
    call.dtype = args.dtype;
    call.op = args.reduce_op;
    call.total = total;
    call.want = l.part;  // each node its part (placement order)
    call.in = mine.ok() ? node_input.value() : nullptr;
    call.out = leader ? scratchFor((hi - lo) * esize) : static_cast<void*>(no_output_);
  } else {
    const size_t b = args.count;
    const void* block =
        in_place ? static_cast<const uint8_t*>(args.recv) + size_t(rank) * b : args.send;
    Result<const void*> node_blocks = leaders_->gather(block, b);
    mine = node_blocks.status();
    call.kind = agent::RoutedCall::Kind::kForward;
    call.dtype = Dtype::kUint8;
    call.total = total;
    call.in = mine.ok() ? node_blocks.value() : nullptr;
    call.in_begin = lo;
    call.in_end = hi;
    *own_copy = in_place && leader && mine.ok() ? node_blocks.value() : nullptr;
    call.out = !leader ? static_cast<void*>(no_output_)
               : l.contiguous ? args.recv
                              : scratchFor(vector_bytes);
  }
  return mine;
}

Result<CallOutcome> AgentSwitchPath::routedBlocksOutcome(const RoutedArgs& args,
                                                         const BlockLayout& l,
                                                         const agent::RoutedCall& call,
                                                         const Status& mine, bool one_trip,
                                                         std::vector<uint8_t>* oks) {
  // The call's outcome on every rank.
  CallOutcome outcome = CallOutcome::kDone;
  if (one_trip) {
    if (ledger_) {
      int source = -1;
      Result<CallOutcome> end =
          isReduction(args.op)
              ? settleReduction(mine, args, call.in, l.vector_bytes,
                                static_cast<uint8_t*>(call.out), l.lo * l.esize, l.hi * l.esize)
              : settle(mine, call.out, l.vector_bytes, &source, collKindName(args.op));
      if (!end.ok()) {
        leaders_->abandon();
        return end.status();
      }
      outcome = *end;
    }
  } else {
    Status agreed = agree(mine, oks);
    if (!agreed.ok()) {
      leaders_->abandon();
      return agreed;
    }
    outcome = allDone(*oks) ? CallOutcome::kDone : CallOutcome::kFailed;
  }
  return outcome;
}

Status AgentSwitchPath::deliverBlocks(const RoutedArgs& args, const BlockLayout& l,
                                      const agent::RoutedCall& call, uint8_t* shared) {
  const bool leader = leaders_->leader();
  // Delivery inside the node: [outcome][result] from the leader.
  if (isReduction(args.op)) {
    // A non-leader's block straight into its recv (written only when done).
    SWITCHAGG_RETURN_IF_ERROR(leaders_->scatterOutcome(shared, call.out, l.local_bytes, args.recv));
    if (CallOutcome(*shared) == CallOutcome::kDone && leader && l.local_bytes[0])
      std::memcpy(args.recv, call.out, l.local_bytes[0]);
  } else {
    void* whole = l.contiguous ? args.recv : scratchFor(l.vector_bytes);
    SWITCHAGG_RETURN_IF_ERROR(leaders_->shareOutcome(shared, call.out, whole, l.vector_bytes));
    if (CallOutcome(*shared) == CallOutcome::kDone && !l.contiguous)
      l.copyBlocks(static_cast<uint8_t*>(args.recv), l.at_rank,
                   static_cast<const uint8_t*>(whole), l.at_node);
  }
  return Status::Ok();
}

}  // namespace switchagg::coll::switch_detail
