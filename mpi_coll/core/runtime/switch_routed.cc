// The routed collectives through the switch path (docs/offload.md "Routed
// collectives"): reduce, reduce-scatter, allgather, bcast; bcast and reduce
// also with node leaders.
#include "switch_path_internal.h"

#include <cinttypes>
#include <cstring>

#include "process_runtime.h"
#include "switchagg/common/log.h"

namespace switchagg::coll::switch_detail {

bool isReduction(RoutedOp op) {
  return op == RoutedOp::kReduce || op == RoutedOp::kReduceScatter ||
         op == RoutedOp::kReduceScatterBlock;
}

// Why the path cannot route this call (the reason counted as
// <op>:previous:<reason>), or null after filling `in`'s switch fields.
// Alike on every rank: joined_, leaders_, routed_ and the caps are agreed.
const char* AgentSwitchPath::describeRouted(const RoutedArgs& args, SelectionInput* in) const {
  if (!joined_) return "unavailable";
  // Node leaders: MPI_Bcast and MPI_Reduce wrap the leaders' call in node
  // steps (routedLeaders); reduce-scatter and allgather would need a
  // node-level scatter/gather around the agent's, not built. On one node
  // the whole call is node steps: nothing for the agent to route.
  if (leaders_ && ((args.op != RoutedOp::kBcast && args.op != RoutedOp::kReduce) ||
                   leaders_->nodes() == 1))
    return "node-leaders";
  if (!routed_) return "agent-not-routed";
  if (isReduction(args.op) && !info_.caps.supports(args.dtype, args.reduce_op))
    return "dtype-op";
  if (in) fill(in);
  return nullptr;
}

// One routed call: the RoutedCall for this rank, the client's stream (all
// stripes), then the allreduce's one-byte outcome agreement. Results meant
// for the caller's buffer go there directly when the input stays intact
// anyway, else to scratch_, committed only once every rank said ok; an
// in-place allgather streams its own block from a copy and restores it
// before a redo.
Status AgentSwitchPath::routed(const RoutedArgs& args, RoutedEnd* how) {
  if (describeRouted(args, nullptr) != nullptr || (!leaders_ && !group_))
    return Status(Code::kUnsupported, "switch path cannot route this call");
  if (leaders_) return routedLeaders(args, how);
  const int size = comm_.size(), rank = comm_.rank();
  const bool in_place = args.send == nullptr;
  const size_t esize = isReduction(args.op) ? dtypeSize(args.dtype) : 1;
  agent::RoutedCall call;
  void* commit = nullptr;   // scratch_ -> commit (commit_bytes) after an all-ok agreement
  void* restore = nullptr;  // scratch_ -> restore (commit_bytes) before a redo
  size_t commit_bytes = 0;
  switch (args.op) {
    case RoutedOp::kReduce: {
      call.kind = agent::RoutedCall::Kind::kReduce;
      call.dtype = args.dtype;
      call.op = args.reduce_op;
      call.total = args.count;
      call.in = in_place ? args.recv : args.send;  // MPI_IN_PLACE: the root's input is recv
      call.want.resize(size_t(size) + 1);
      for (int r = 0; r <= size; ++r) call.want[size_t(r)] = r <= args.root ? 0 : args.count;
      if (rank == args.root && in_place) {
        commit = args.recv;
        commit_bytes = args.count * esize;
        call.out = scratchFor(commit_bytes);
      } else {
        call.out = rank == args.root ? args.recv : no_output_;
      }
      break;
    }
    case RoutedOp::kReduceScatter:
    case RoutedOp::kReduceScatterBlock: {
      call.kind = agent::RoutedCall::Kind::kReduce;
      call.dtype = args.dtype;
      call.op = args.reduce_op;
      call.want.resize(size_t(size) + 1);
      for (int r = 0; r < size; ++r)
        call.want[size_t(r) + 1] = call.want[size_t(r)] + args.counts[r];
      call.total = call.want.back();
      call.in = in_place ? args.recv : args.send;  // in place: the whole vector in recv
      const size_t mine = args.counts[rank] * esize;
      if (in_place) {
        commit = args.recv;
        commit_bytes = mine;
        call.out = scratchFor(mine);
      } else {
        call.out = mine ? args.recv : no_output_;
      }
      break;
    }
    case RoutedOp::kAllgather: {
      const size_t b = args.count;
      call.kind = agent::RoutedCall::Kind::kForward;
      call.dtype = Dtype::kUint8;
      call.total = size_t(size) * b;
      call.in_begin = size_t(rank) * b;
      call.in_end = call.in_begin + b;
      call.out = args.recv;
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
      break;
    }
    case RoutedOp::kBcast: {
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
      break;
    }
  }
  last_bytes_sent_ = 0;
  const size_t vector_bytes = routedVectorBytes(args, size);
  // Allgather and bcast leave the same vector on every rank, so a member
  // that missed it can copy it from one that has it: one round trip
  // ("Completion"). Reduce and reduce-scatter results differ per rank: they
  // keep the agreement.
  if (ledger_ && oneRoundTrip(vector_bytes) &&
      (args.op == RoutedOp::kAllgather || args.op == RoutedOp::kBcast)) {
    ledger_->begin();
    const Status mine = streamRouted(call, vector_bytes);
    // The whole vector: recv (a bcast root's own buffer, only read; after
    // a failure there its copy goes to scratch).
    void* whole = args.op == RoutedOp::kBcast && rank == args.root && !mine.ok()
                      ? scratchFor(vector_bytes)
                      : args.recv;
    int source = -1;
    Result<CallOutcome> end = settle(mine, whole, vector_bytes, &source, routedOpName(args.op));
    if (!end.ok()) return end.status();
    if (*end == CallOutcome::kDone) {
      ++routed_calls_;
      ++one_trip_;
      *how = RoutedEnd::kSwitched;
      return Status::Ok();
    }
    if (restore && commit_bytes) std::memcpy(restore, scratch_.data(), commit_bytes);
    if (*end == CallOutcome::kBusy) {
      ++busy_;
      *how = RoutedEnd::kBusy;
      return Status::Ok();
    }
    giveUp(mine, firstFailed(mine, source), routedOpName(args.op),
           "no member had the result (all asked); redone on the previous module");
    *how = RoutedEnd::kFailed;
    return Status::Ok();
  }
  const Status mine = streamRouted(call, vector_bytes);
  std::vector<uint8_t> oks;
  SWITCHAGG_RETURN_IF_ERROR(agree(mine, &oks));
  if (allOnes(oks)) {
    if (commit && commit_bytes) std::memcpy(commit, scratch_.data(), commit_bytes);
    ++routed_calls_;
    *how = RoutedEnd::kSwitched;
    return Status::Ok();
  }
  if (restore && commit_bytes) std::memcpy(restore, scratch_.data(), commit_bytes);
  return endRoutedUnserved(mine, oks, args.op, how);
}

Status AgentSwitchPath::streamRouted(const agent::RoutedCall& call, size_t bytes) {
  const agent::ClientCounters before = group_->counters();
  Status st = group_->routed(call, timeoutFor(bytes));
  countStream(before);
  // A decline here is unexpected (checked before, alike everywhere): no
  // harm done, redo the call, keep the path.
  if (st.code() == Code::kUnsupported || st.code() == Code::kInvalidArgument)
    st = Status(Code::kBusy, "client declined the routed call: " + st.message());
  return st;
}

Status AgentSwitchPath::endRoutedUnserved(const Status& mine, const std::vector<uint8_t>& oks,
                                          RoutedOp op, RoutedEnd* how) {
  if (!anyFailed(oks)) {
    ++busy_;
    *how = RoutedEnd::kBusy;
    return Status::Ok();
  }
  giveUp(mine, firstFailedRank(oks), routedOpName(op), "redone on the previous module");
  *how = RoutedEnd::kFailed;
  return Status::Ok();
}

void* AgentSwitchPath::scratchFor(size_t bytes) {
  if (scratch_.size() < bytes) scratch_.resize(bytes);
  return bytes ? static_cast<void*>(scratch_.data()) : no_output_;
}

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
Status AgentSwitchPath::routedLeaders(const RoutedArgs& args, RoutedEnd* how) {
  const int rank = comm_.rank();
  const bool bcast = args.op == RoutedOp::kBcast;
  const bool in_place = args.send == nullptr;
  const size_t bytes = args.count * (bcast ? 1 : dtypeSize(args.dtype));
  const int node = leaders_->node(), nodes = leaders_->nodes();
  const int root_node = leaders_->nodeOf(args.root);
  const int root_leader = leaders_->leaderOf(root_node);
  agent::RoutedCall call;
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
      call.in_begin = call.in_end = node < root_node ? 0 : args.count;
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
    call.want.resize(size_t(nodes) + 1);
    for (int m = 0; m <= nodes; ++m) call.want[size_t(m)] = m <= root_node ? 0 : args.count;
    // The root's node gets the result: straight into a root leader's recv
    // unless in place (its input), else staging.
    call.out = node != root_node                   ? static_cast<void*>(no_output_)
               : rank == args.root && !in_place ? args.recv
                                                  : scratchFor(bytes);
  }
  last_bytes_sent_ = 0;
  if (mine.ok() && group_) mine = streamRouted(call, bytes);
  std::vector<uint8_t> oks;
  Status agreed = agree(mine, &oks);
  if (!agreed.ok()) {
    leaders_->abandon();
    return agreed;
  }
  if (allOnes(oks)) {
    ++routed_calls_;
    *how = RoutedEnd::kSwitched;
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

}  // namespace switchagg::coll::switch_detail
