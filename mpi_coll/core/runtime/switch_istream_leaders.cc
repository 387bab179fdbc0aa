// MPI_Iallgather, MPI_Ibcast and MPI_Ireduce_scatter_block with node
// leaders (docs/offload.md "MPI_Iallgather, MPI_Ibcast and
// MPI_Ireduce_scatter_block"): the blocking calls' node steps
// (switch_routed_leaders.cc) as posted messages that never wait
// (NodeLeaders::startFlatShape), around the leaders' routed stream:
//   in:  reduce-scatter: each rank's input, in node order, to its leader,
//        which folds them in rank order; allgather: each rank's block to its
//        leader (the node's part, in local order); bcast: a root that is
//        not its node's leader sends its buffer to the leader;
//   the leaders' routed call among nodes (member = node index; on a tree
//        its vector in placement order, localized to the leaf), streamed
//        from the progress callback like any routed stream;
//   out: the leader sends each rank of its node [outcome][its part]
//        (reduce-scatter: its block; allgather and bcast: the vector in node
//        order), up to the keep limit once settled (one round trip), above
//        it as soon as its stream ended, before the outcome agreement
//        (every rank votes its leader's outcome).
// Nothing reaches a caller's buffer before the call's outcome is final
// (endRoutedStream delivers), so a redo always starts from intact input.
#include "switch_path_internal.h"

#include <cstring>

#include "switchagg/common/reduce.h"

namespace switchagg::coll::switch_detail {

// The node's inputs on their way to the leader (stepNode takes it from there).
Status AgentSwitchPath::startRoutedLeadersStream() {
  const RoutedArgs& args = stream_.rargs;
  const int rank = comm_.rank();
  const size_t n = leaders_->locals().size();
  const bool in_place = args.send == nullptr;
  agent::RoutedCall& call = stream_.plan.call;
  NodeLeaders::FlatShape shape;
  const void* input = nullptr;
  if (args.op == SWITCHAGG_COLL_BCAST) {
    shape.in.assign(n, 0);
    shape.out.assign(n, stream_.bytes);
    shape.out_at.assign(n, 0);
    const int root_local = leaders_->localIndexOf(args.root);
    if (root_local > 0) shape.in[size_t(root_local)] = stream_.bytes;
    input = args.recv;  // sent by a non-leader root only
    call.out = leaders_->leader() ? scratchFor(stream_.bytes) : no_output_;
  } else {
    stream_.layout = blockLayout(args);
    const BlockLayout& l = stream_.layout;
    if (isReduction(args.op)) {
      shape.in.assign(n, l.vector_bytes);
      shape.out = l.local_bytes;
      shape.out_at.assign(n, 0);
      for (size_t i = 1; i < n; ++i) shape.out_at[i] = shape.out_at[i - 1] + shape.out[i - 1];
      const uint8_t* in = static_cast<const uint8_t*>(in_place ? args.recv : args.send);
      input = in;
      if (!l.contiguous) {
        stream_.node_in.resize(l.vector_bytes);
        l.copyBlocks(stream_.node_in.data(), l.at_node, in, l.at_rank);
        input = stream_.node_in.data();
      }
      call.out = leaders_->leader() ? scratchFor((l.hi - l.lo) * l.esize) : no_output_;
    } else {
      const size_t b = args.count;
      shape.in.assign(n, b);
      shape.out.assign(n, l.vector_bytes);
      shape.out_at.assign(n, 0);
      input = in_place ? static_cast<const uint8_t*>(args.recv) + size_t(rank) * b : args.send;
      call.out = leaders_->leader() ? scratchFor(l.vector_bytes) : no_output_;
    }
  }
  stream_.node_phase = true;
  Status st = leaders_->startFlatShape(input, std::move(shape));
  if (!st.ok()) {
    stream_.mine = st;
    return st;
  }
  return Status(Code::kInProgress, "the node's inputs are on their way");
}

// The leader, every input of its node in: the leaders' routed call.
Status AgentSwitchPath::startLeaderRouted() {
  const RoutedArgs& args = stream_.rargs;
  agent::RoutedCall& call = stream_.plan.call;
  const size_t n = leaders_->locals().size();
  if (args.op == SWITCHAGG_COLL_BCAST) {
    const int node = leaders_->node(), root_node = leaders_->nodeOf(args.root);
    call.kind = agent::RoutedCall::Kind::kForward;
    call.dtype = Dtype::kUint8;
    call.total = args.count;
    if (node == root_node) {
      // A leading root's own buffer (only read), else what it sent.
      call.in = leaders_->flatInput(size_t(leaders_->localIndexOf(args.root)));
      call.in_begin = 0;
      call.in_end = args.count;
    } else {
      call.in_begin = call.in_end =
          tree_.placeOf(node) < tree_.placeOf(root_node) ? 0 : args.count;
    }
  } else if (isReduction(args.op)) {
    const BlockLayout& l = stream_.layout;
    std::vector<const void*> in;
    for (size_t i = 0; i < n; ++i) in.push_back(leaders_->flatInput(i));
    call.kind = agent::RoutedCall::Kind::kReduce;
    call.dtype = args.dtype;
    call.op = args.reduce_op;
    call.total = l.total;
    call.want = l.part;  // each node its part
    if (widensRouted(args, l.total)) {
      // A 16-bit sum on a wide uplink (as the blocking call's): the node's
      // fp64 fold in rank order goes up, the part comes back wide and is
      // rounded once into call.out's 16-bit place (narrowRouted).
      leaders_->foldWide(in, args.dtype, args.reduce_op, l.total);
      call.in = leaders_->wideSum();
      stream_.wide_routed = widenRouted(args, &call, l.hi - l.lo);
    } else {
      // The node's sum in rank order (the agent's kernel), in a copy.
      void* sum = leaders_->accumulator(l.vector_bytes);
      SWITCHAGG_RETURN_IF_ERROR(reduceMany(args.dtype, args.reduce_op, sum, in.data(), in.size(),
                                           l.total));
      call.in = sum;
    }
  } else {
    const BlockLayout& l = stream_.layout;
    const size_t b = args.count;
    stream_.node_in.resize((l.hi - l.lo));
    for (size_t i = 0; i < n; ++i)
      if (b) std::memcpy(stream_.node_in.data() + i * b, leaders_->flatInput(i), b);
    call.kind = agent::RoutedCall::Kind::kForward;
    call.dtype = Dtype::kUint8;
    call.total = l.total;
    call.in = stream_.node_in.data();
    call.in_begin = l.lo;
    call.in_end = l.hi;
  }
  stream_.deadline_ms = steadyMs() + timeoutFor(stream_.bytes);
  stream_.before = group_->counters();
  Status st = group_->startRouted(tree_.localize(call));
  if (st.code() == Code::kInProgress) return st;
  countStream(stream_.before);
  return routedDecline(st);
}

// The leader's one-round-trip end (settle): as the blocking calls'
// leaders settle (routedBlocksOutcome, routedLeadersOneRoundTrip).
Result<CallOutcome> AgentSwitchPath::settleRoutedLeaders(const Status& mine, int* source) {
  const RoutedArgs& args = stream_.rargs;
  const agent::RoutedCall& call = stream_.plan.call;
  const char* what = collKindName(args.op);
  if (args.op == SWITCHAGG_COLL_BCAST) return settle(mine, call.out, stream_.bytes, source, what);
  const BlockLayout& l = stream_.layout;
  if (!isReduction(args.op)) return settle(mine, call.out, l.vector_bytes, source, what);
  // A wide uplink: the call, its result and its recovery in the wide type,
  // the part rounded once when done.
  const WideRouted& w = stream_.wide_routed;
  const size_t scale = w.on ? w.scale : 1;
  Result<CallOutcome> end = settleReduction(
      mine, w.on ? wideRoutedArgs(args, call) : args, call.in, l.vector_bytes * scale,
      static_cast<uint8_t*>(call.out), l.lo * l.esize * scale, l.hi * l.esize * scale);
  if (end.ok() && *end == CallOutcome::kDone) narrowRouted(w);
  return end;
}

// Once every rank's outcome is final and ok: each rank's result from its
// leader's copy (the leader's own, or the node message) into its buffer.
void AgentSwitchPath::deliverRoutedLeaders() {
  const RoutedArgs& args = stream_.rargs;
  const int rank = comm_.rank();
  const uint8_t* from =
      static_cast<const uint8_t*>(leaders_->leader() ? leaderNodeResult() : leaders_->flatResult());
  if (args.op == SWITCHAGG_COLL_BCAST) {
    if (rank != args.root && stream_.bytes) std::memcpy(args.recv, from, stream_.bytes);
    return;
  }
  const BlockLayout& l = stream_.layout;
  uint8_t* recv = static_cast<uint8_t*>(args.recv);
  if (isReduction(args.op)) {
    // The leader's part starts with its own block; a message holds one.
    const size_t mine = l.count[size_t(rank)] * l.esize;
    if (mine) std::memcpy(recv, from, mine);
  } else if (l.contiguous) {
    if (l.vector_bytes) std::memcpy(recv, from, l.vector_bytes);
  } else {
    l.copyBlocks(recv, l.at_rank, from, l.at_node);
  }
}

// What the leader's node message carries after the outcome byte.
// (A wide uplink's part: its 16-bit rounding, not the wide result.)
const void* AgentSwitchPath::leaderNodeResult() const {
  if (!stream_.routed) return stream_.out;
  return stream_.wide_routed.on ? stream_.wide_routed.narrow_to : stream_.plan.call.out;
}

}  // namespace switchagg::coll::switch_detail
