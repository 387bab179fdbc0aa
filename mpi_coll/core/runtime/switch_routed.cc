// The routed collectives through the switch path (docs/offload.md "Routed
// collectives"): reduce, reduce-scatter, allgather, bcast; bcast and reduce
// also with node leaders.
#include "switch_path_internal.h"

#include <cinttypes>
#include <cstring>

#include "process_runtime.h"
#include "switchagg/common/log.h"
#include "switchagg/common/reduce.h"

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
  // Node leaders wrap the leaders' call in node steps (routedLeaders,
  // routedLeadersBlocks). On one node the whole call is node steps:
  // nothing for the agent to route.
  if (leaders_ && leaders_->nodes() == 1) return "node-leaders";
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
  // Reduce and reduce-scatter: a result per rank, recovered from the
  // members' inputs after a failure; one round trip ("Completion").
  if (ledger_ && oneRoundTrip(vector_bytes) && isReduction(args.op)) {
    size_t lo = 0, hi = 0;  // this rank's part of the vector, in bytes
    if (args.op == RoutedOp::kReduce) {
      if (rank == args.root) hi = vector_bytes;
    } else {
      lo = call.want[size_t(rank)] * esize;
      hi = call.want[size_t(rank) + 1] * esize;
    }
    return routedReduction(args, call, lo, hi, commit, how);
  }
  // Allgather and bcast leave the same vector on every rank, so a member
  // that missed it can copy it from one that has it: one round trip
  // ("Completion").
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

// A routed reduction in one round trip. Success: this member's input is
// kept (a member whose call failed may need its part), its result
// committed. Failure here: the parts [lo, hi) of every member's input,
// folded in member order with the agent's kernel, give the agent's bits
// whenever some member is done (docs/offload.md "Completion").
Status AgentSwitchPath::routedReduction(const RoutedArgs& args, const agent::RoutedCall& call,
                                        size_t lo, size_t hi, void* commit, RoutedEnd* how) {
  const size_t vector_bytes = call.total * dtypeSize(args.dtype);
  ledger_->begin();
  Status mine = streamRouted(call, vector_bytes);
  if (mine.ok() && testCutNow(comm_.rank(), ledger_->seq())) {
    (void)group_->leave(agent::AggClient::kDrainMs);  // unusable from now on, as after a cut
    mine = Status(Code::kPeerFailed, "test fault: agent connection cut after the call");
  }
  // The result: the caller's buffer, or scratch until committed (in place).
  uint8_t* out = static_cast<uint8_t*>(commit ? scratch_.data() : call.out);
  Result<CallOutcome> end = settleReduction(mine, args, call.in, vector_bytes, out, lo, hi);
  if (!end.ok()) return end.status();
  if (*end == CallOutcome::kDone && commit && hi > lo) std::memcpy(commit, out, hi - lo);
  return endRoutedOneRoundTrip(*end, mine, args.op, how);
}

Result<CallOutcome> AgentSwitchPath::settleReduction(const Status& mine, const RoutedArgs& args,
                                                     const void* input, size_t vector_bytes,
                                                     uint8_t* out, size_t lo, size_t hi) {
  const char* what = routedOpName(args.op);
  if (mine.ok()) {
    ledger_->done(input, vector_bytes);
    return CallOutcome::kDone;
  }
  if (mine.code() == Code::kBusy) {
    ledger_->busy();
    return CallOutcome::kBusy;
  }
  // No input here (the node's reduce failed first): this member sent
  // nothing, so nobody can be done and nobody needs its part.
  ledger_->failed(input, input ? vector_bytes : 0);
  SA_DEBUG("coll", "comm %s rank %d: switch %s call %" PRIu64 " failed here (%s); asking the other members",
           comm_.name().c_str(), comm_.rank(), what, ledger_->seq(), mine.toString().c_str());
  std::vector<std::vector<uint8_t>> parts;
  Result<Recovery> r = ledger_->gatherInputs(lo, input ? hi : lo, &parts,
                                             ProcessRuntime::instance().params().stall);
  if (!r.ok()) return r.status();
  if (r->outcome != CallOutcome::kDone) return r->outcome;
  if (hi > lo) {
    std::vector<const void*> in;
    for (const std::vector<uint8_t>& p : parts) in.push_back(p.data());
    SWITCHAGG_RETURN_IF_ERROR(reduceMany(args.dtype, args.reduce_op, out, in.data(), in.size(),
                                         (hi - lo) / dtypeSize(args.dtype)));
  }
  ++recovered_;
  SA_INFO("coll",
          "comm %s rank %d: switch %s call %" PRIu64 " failed here (%s); rank %d had finished "
          "it, so its result was folded from the members' inputs in the agent's order "
          "(switch:recovered), switch path kept",
          comm_.name().c_str(), comm_.rank(), what, ledger_->seq(), mine.toString().c_str(),
          r->source);
  return CallOutcome::kDone;
}

// A one-round-trip routed call's outcome on every rank, counted.
Status AgentSwitchPath::endRoutedOneRoundTrip(CallOutcome outcome, const Status& mine,
                                              RoutedOp op, RoutedEnd* how) {
  if (outcome == CallOutcome::kDone) {
    ++routed_calls_;
    ++one_trip_;
    *how = RoutedEnd::kSwitched;
  } else if (outcome == CallOutcome::kBusy) {
    ++busy_;
    *how = RoutedEnd::kBusy;
  } else {
    giveUp(mine, firstFailed(mine, -1), routedOpName(op),
           "no member had finished the call (all asked); redone on the previous module");
    *how = RoutedEnd::kFailed;
  }
  return Status::Ok();
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
  if (args.op != RoutedOp::kBcast && args.op != RoutedOp::kReduce)
    return routedLeadersBlocks(args, how);
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
  // One round trip for a call up to the keep limit (alike on every rank).
  const bool one_trip = oneRoundTrip(bytes);
  if (one_trip && ledger_) ledger_->begin();
  if (mine.ok() && group_) mine = streamRouted(call, bytes);
  else if (mine.ok() && leaders_->leader())
    mine = Status(Code::kAborted, "the switch group was lost in an earlier call");
  if (one_trip) return routedLeadersOneRoundTrip(args, call, mine, bytes, how);
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

// The leaders' one round trip of a routed call: each leader settles its
// outcome (a bcast's vector recovered from another leader, a reduce's
// result folded from the leaders' inputs, after a failure here), then one
// broadcast per node hands [outcome] and, where the node needs it (every
// node of a bcast, the root's node of a reduce), the result. The root
// takes it from there; every other rank writes only its scratch.
Status AgentSwitchPath::routedLeadersOneRoundTrip(const RoutedArgs& args,
                                                  const agent::RoutedCall& call,
                                                  const Status& mine, size_t bytes,
                                                  RoutedEnd* how) {
  const int rank = comm_.rank();
  const bool bcast = args.op == RoutedOp::kBcast;
  const bool root_node = leaders_->node() == leaders_->nodeOf(args.root);
  const bool in_place = args.send == nullptr;
  // A leader's copy of the node's result: a bcast's vector (a root
  // leader's echo goes to scratch), the reduce's result on the root's node.
  void* leader_result = bcast ? (rank == args.root ? scratchFor(bytes) : args.recv) : call.out;
  CallOutcome outcome = CallOutcome::kDone;
  if (ledger_) {
    int source = -1;
    Result<CallOutcome> end =
        bcast ? settle(mine, leader_result, bytes, &source, routedOpName(args.op))
              : settleReduction(mine, args, call.in, bytes, static_cast<uint8_t*>(call.out), 0,
                                root_node ? bytes : 0);
    if (!end.ok()) {
      leaders_->abandon();
      return end.status();
    }
    outcome = *end;
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
Status AgentSwitchPath::routedLeadersBlocks(const RoutedArgs& args, RoutedEnd* how) {
  const int size = comm_.size(), rank = comm_.rank();
  const bool reduction = isReduction(args.op);
  const bool in_place = args.send == nullptr;
  const bool leader = leaders_->leader();
  const size_t esize = reduction ? dtypeSize(args.dtype) : 1;
  const std::vector<int>& by_node = leaders_->byNode();
  const int node = leaders_->node(), nodes = leaders_->nodes();
  // Elements (allgather: bytes) of each rank's block; where each starts in
  // rank order and in node order; where each node's part starts.
  std::vector<size_t> count(static_cast<size_t>(size)), at_rank(static_cast<size_t>(size) + 1),
      at_node(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) {
    count[size_t(r)] = reduction ? args.counts[r] : args.count;
    at_rank[size_t(r) + 1] = at_rank[size_t(r)] + count[size_t(r)];
  }
  std::vector<size_t> part(size_t(nodes) + 1);
  size_t offset = 0;
  for (size_t i = 0; i < by_node.size(); ++i) {
    const int r = by_node[i];
    const int n = leaders_->nodeOf(r);
    if (r == leaders_->leaderOf(n)) part[size_t(n)] = offset;
    at_node[size_t(r)] = offset;
    offset += count[size_t(r)];
  }
  const size_t total = offset, vector_bytes = total * esize;
  part[size_t(nodes)] = total;
  const size_t lo = part[size_t(node)], hi = part[size_t(node) + 1];
  const std::vector<int>& locals = leaders_->locals();
  std::vector<size_t> local_bytes;
  for (int r : locals) local_bytes.push_back(count[size_t(r)] * esize);
  const bool contiguous = leaders_->nodesContiguous();

  agent::RoutedCall call;
  Status mine;
  // Allgather, in place: the leader's own block, put back after a failure
  // (the agent's result lands in its recv).
  const void* own_copy = nullptr;
  if (reduction) {
    char* acc = leaders_->accumulator(vector_bytes);
    const uint8_t* in = static_cast<const uint8_t*>(in_place ? args.recv : args.send);
    if (contiguous) {
      if (vector_bytes) std::memcpy(acc, in, vector_bytes);
    } else {
      for (int r = 0; r < size; ++r)
        if (count[size_t(r)])
          std::memcpy(acc + at_node[size_t(r)] * esize, in + at_rank[size_t(r)] * esize,
                      count[size_t(r)] * esize);
    }
    Result<const void*> node_input = leaders_->reduceAccumulator(args.dtype, args.reduce_op, total);
    mine = node_input.status();
    call.kind = agent::RoutedCall::Kind::kReduce;
    call.dtype = args.dtype;
    call.op = args.reduce_op;
    call.total = total;
    call.want = part;  // each node its part
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
    own_copy = in_place && leader && mine.ok() ? node_blocks.value() : nullptr;
    call.out = !leader ? static_cast<void*>(no_output_)
               : contiguous ? args.recv
                            : scratchFor(vector_bytes);
  }
  last_bytes_sent_ = 0;
  const bool one_trip = oneRoundTrip(vector_bytes);
  if (one_trip && ledger_) ledger_->begin();
  if (mine.ok() && group_) mine = streamRouted(call, vector_bytes);
  else if (mine.ok() && leader)
    mine = Status(Code::kAborted, "the switch group was lost in an earlier call");

  // The call's outcome on every rank.
  CallOutcome outcome = CallOutcome::kDone;
  std::vector<uint8_t> oks;
  if (one_trip) {
    if (ledger_) {
      int source = -1;
      Result<CallOutcome> end =
          reduction ? settleReduction(mine, args, call.in, vector_bytes,
                                      static_cast<uint8_t*>(call.out), lo * esize, hi * esize)
                    : settle(mine, call.out, vector_bytes, &source, routedOpName(args.op));
      if (!end.ok()) {
        leaders_->abandon();
        return end.status();
      }
      outcome = *end;
    }
  } else {
    Status agreed = agree(mine, &oks);
    if (!agreed.ok()) {
      leaders_->abandon();
      return agreed;
    }
    outcome = allOnes(oks) ? CallOutcome::kDone : CallOutcome::kFailed;
  }
  if (outcome != CallOutcome::kDone && own_copy && args.count)
    std::memcpy(static_cast<uint8_t*>(args.recv) + size_t(rank) * args.count, own_copy, args.count);

  // Delivery inside the node: [outcome][result] from the leader.
  uint8_t shared = uint8_t(outcome);
  if (reduction) {
    // A non-leader's block straight into its recv (written only when done).
    SWITCHAGG_RETURN_IF_ERROR(leaders_->scatterOutcome(&shared, call.out, local_bytes, args.recv));
    if (CallOutcome(shared) == CallOutcome::kDone && leader && local_bytes[0])
      std::memcpy(args.recv, call.out, local_bytes[0]);
  } else {
    void* whole = contiguous ? args.recv : scratchFor(vector_bytes);
    SWITCHAGG_RETURN_IF_ERROR(leaders_->shareOutcome(&shared, call.out, whole, vector_bytes));
    if (CallOutcome(shared) == CallOutcome::kDone && !contiguous)
      for (int r = 0; r < size; ++r)
        if (count[size_t(r)])
          std::memcpy(static_cast<uint8_t*>(args.recv) + at_rank[size_t(r)],
                      static_cast<const uint8_t*>(whole) + at_node[size_t(r)], count[size_t(r)]);
  }
  if (one_trip) return endRoutedOneRoundTrip(CallOutcome(shared), mine, args.op, how);
  if (CallOutcome(shared) == CallOutcome::kDone) {
    ++routed_calls_;
    *how = RoutedEnd::kSwitched;
    return Status::Ok();
  }
  return endRoutedUnserved(mine, oks, args.op, how);
}

}  // namespace switchagg::coll::switch_detail
