// The routed collectives through the switch path (docs/offload.md "Routed
// collectives"): reduce, reduce-scatter, allgather, bcast, every rank a
// member; with node leaders: switch_routed_leaders.cc.
#include "switch_path_internal.h"

#include <cinttypes>
#include <cstring>

#include "process_runtime.h"
#include "switchagg/common/log.h"
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

// Allgather and bcast leave the same vector on every rank, so a member
// that missed it can copy it from one that has it: one round trip
// ("Completion").
Status AgentSwitchPath::routedForwardOneRoundTrip(const RoutedArgs& args, const RoutedPlan& plan,
                                                  size_t vector_bytes, CallOutcome* how) {
  ledger_->begin();
  const Status mine = streamRouted(plan.call, vector_bytes);
  if (mine.ok()) unplace(args, plan);
  void* whole = routedWhole(args, mine, vector_bytes);
  int source = -1;
  Result<CallOutcome> end = settle(mine, whole, vector_bytes, &source, collKindName(args.op));
  if (!end.ok()) return end.status();
  if (*end == CallOutcome::kDone) {
    ++routed_calls_;
    ++one_trip_;
    *how = CallOutcome::kDone;
    return Status::Ok();
  }
  if (plan.restore && plan.commit_bytes)
    std::memcpy(plan.restore, scratch_.data(), plan.commit_bytes);
  if (*end == CallOutcome::kBusy) {
    ++busy_;
    *how = CallOutcome::kBusy;
    return Status::Ok();
  }
  giveUp(mine, firstFailed(mine, source), collKindName(args.op),
         "no member had the result (all asked); redone on the previous module");
  *how = CallOutcome::kFailed;
  return Status::Ok();
}

// One routed call: the RoutedCall for this rank (planRouted), the client's
// stream (all stripes), then the allreduce's one-byte outcome agreement (or
// one round trip: "Completion").
Status AgentSwitchPath::routed(const RoutedArgs& args, CallOutcome* how) {
  if (describeRouted(args, nullptr) != nullptr || (!leaders_ && !group_))
    return Status(Code::kUnsupported, "switch path cannot route this call");
  if (leaders_) return routedLeaders(args, how);
  const int size = comm_.size();
  const RoutedPlan plan = planRouted(args);
  const agent::RoutedCall& call = plan.call;
  last_bytes_sent_ = 0;
  const size_t vector_bytes = routedVectorBytes(args, size);
  // Reduce and reduce-scatter: a result per rank, recovered from the
  // members' inputs after a failure; one round trip ("Completion").
  if (ledger_ && oneRoundTrip(vector_bytes) && isReduction(args.op))
    return routedReduction(args, call, plan.lo, plan.hi, plan.commit, how);
  if (ledger_ && oneRoundTrip(vector_bytes) &&
      (args.op == SWITCHAGG_COLL_ALLGATHER || args.op == SWITCHAGG_COLL_BCAST))
    return routedForwardOneRoundTrip(args, plan, vector_bytes, how);
  const Status mine = streamRouted(call, vector_bytes);
  if (mine.ok()) unplace(args, plan);  // recv is only output: written before the agreement
  std::vector<uint8_t> oks;
  SWITCHAGG_RETURN_IF_ERROR(agree(mine, &oks));
  if (allDone(oks)) {
    if (plan.commit && plan.commit_bytes)
      std::memcpy(plan.commit, scratch_.data(), plan.commit_bytes);
    ++routed_calls_;
    *how = CallOutcome::kDone;
    return Status::Ok();
  }
  if (plan.restore && plan.commit_bytes)
    std::memcpy(plan.restore, scratch_.data(), plan.commit_bytes);
  return endRoutedUnserved(mine, oks, args.op, how);
}

// A routed reduction in one round trip. Success: this member's input is
// kept (a member whose call failed may need its part), its result
// committed. Failure here: the parts [lo, hi) of every member's input,
// folded in member order with the agent's kernel, give the agent's bits
// whenever some member is done (docs/offload.md "Completion").
Status AgentSwitchPath::routedReduction(const RoutedArgs& args, const agent::RoutedCall& call,
                                        size_t lo, size_t hi, void* commit, CallOutcome* how) {
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
  const char* what = collKindName(args.op);
  if (std::optional<CallOutcome> here = settledHere(mine, input, vector_bytes)) return *here;
  // No input here (the node's reduce failed first): this member sent
  // nothing, so nobody can be done and nobody needs its part.
  ledger_->failed(input, input ? vector_bytes : 0);
  logFailedHere(mine, what);
  std::vector<std::vector<uint8_t>> parts;
  Result<Recovery> r = ledger_->gatherInputs(lo, input ? hi : lo, &parts,
                                             ProcessRuntime::instance().params().stall);
  if (!r.ok()) return r.status();
  if (r->outcome != CallOutcome::kDone) return r->outcome;
  if (hi > lo)  // the agent's order: rank order, or a tree's (leaf by leaf)
    SWITCHAGG_RETURN_IF_ERROR(
        tree_.fold(args.dtype, args.reduce_op, out, parts, (hi - lo) / dtypeSize(args.dtype)));
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
                                              CollKind op, CallOutcome* how) {
  if (outcome == CallOutcome::kDone) {
    ++routed_calls_;
    ++one_trip_;
    *how = CallOutcome::kDone;
  } else if (outcome == CallOutcome::kBusy) {
    ++busy_;
    *how = CallOutcome::kBusy;
  } else {
    giveUp(mine, firstFailed(mine, -1), collKindName(op),
           "no member had finished the call (all asked); redone on the previous module");
    *how = CallOutcome::kFailed;
  }
  return Status::Ok();
}

// A client's decline of a routed call is unexpected (checked before, alike
// everywhere): no harm done, redo the call, keep the path.
Status routedDecline(const Status& st) {
  if (st.code() == Code::kUnsupported || st.code() == Code::kInvalidArgument)
    return Status(Code::kBusy, "client declined the routed call: " + st.message());
  return st;
}

Status AgentSwitchPath::streamRouted(const agent::RoutedCall& call, size_t bytes) {
  const agent::ClientCounters before = group_->counters();
  Status st = group_->routed(tree_.localize(call), timeoutFor(bytes));
  countStream(before);
  return routedDecline(st);
}

// The whole vector of an allgather or bcast, kept for peers or recovered
// into: recv (a bcast root's own buffer, only read; after a failure there
// its copy goes to scratch).
void* AgentSwitchPath::routedWhole(const RoutedArgs& args, const Status& mine, size_t bytes) {
  return args.op == SWITCHAGG_COLL_BCAST && comm_.rank() == args.root && !mine.ok()
             ? scratchFor(bytes)
             : args.recv;
}

// MPI_Iallgather, MPI_Ibcast, MPI_Ireduce_scatter_block, every rank a
// member or with node leaders (switch_istream_leaders.cc). Decided when
// posted: not joined_.
const char* AgentSwitchPath::describeRoutedStream(const RoutedArgs& args,
                                                  SelectionInput* in) const {
  if (leaders_ && leaders_->nodes() == 1) return "one-node";
  if (!routed_) return "agent-not-routed";
  if (isReduction(args.op) && !info_.caps.supports(args.dtype, args.reduce_op)) return "dtype-op";
  if (in) fill(in);
  return nullptr;
}

// As routed() without the blocking parts: the stream runs from progress
// (stepStream), ends in one round trip up to the keep limit (settleStream,
// the same recovery as the blocking call) or on the glue's agreement.
Status AgentSwitchPath::startRoutedStream(const RoutedArgs& args) {
  // Alike on every rank: joined_ (an earlier call's failure, agreed before
  // this one started), leaders_, routed_ (a non-leader never holds a group).
  if (describeRouted(args, nullptr) != nullptr || (!leaders_ && !group_))
    return Status(Code::kUnsupported, "switch path cannot stream this routed call");
  stream_ = Stream{};
  stream_.routed = true;
  stream_.rargs = args;
  if (args.counts) {
    // The caller's counts may not outlive the posting call.
    stream_.counts.assign(args.counts, args.counts + comm_.size());
    stream_.rargs.counts = stream_.counts.data();
  }
  stream_.bytes = routedVectorBytes(args, comm_.size());
  stream_.deadline_ms = steadyMs() + timeoutFor(stream_.bytes);
  stream_.out = args.recv;
  stream_.one_trip = oneRoundTrip(stream_.bytes) && (leaders_ || ledger_);
  if (stream_.one_trip && ledger_) ledger_->begin();
  last_bytes_sent_ = 0;
  if (leaders_) return startRoutedLeadersStream();
  stream_.plan = planRouted(stream_.rargs);
  stream_.before = group_->counters();
  Status st = group_->startRouted(tree_.localize(stream_.plan.call));
  if (st.code() == Code::kInProgress) return st;
  countStream(stream_.before);
  stream_.mine = routedDecline(st);
  return stream_.mine;
}

// A routed stream's one-round-trip end (settleStream): allgather and bcast
// as the blocking calls (the whole vector kept or copied), reductions with
// their inputs kept and folded (settleReduction).
Result<CallOutcome> AgentSwitchPath::settleRoutedStream(const Status& mine, int* source) {
  const RoutedArgs& args = stream_.rargs;
  if (!isReduction(args.op))
    return settle(mine, routedWhole(args, mine, stream_.bytes), stream_.bytes, source,
                  collKindName(args.op));
  const agent::RoutedCall& call = stream_.plan.call;
  uint8_t* out = static_cast<uint8_t*>(stream_.plan.commit ? scratch_.data() : call.out);
  return settleReduction(mine, args, call.in, stream_.bytes, out, stream_.plan.lo,
                         stream_.plan.hi);
}

CallOutcome AgentSwitchPath::endRoutedStream(CallOutcome agreed, int first_rank) {
  const RoutedPlan& plan = stream_.plan;
  const char* what = collKindName(stream_.rargs.op);
  if (agreed == CallOutcome::kDone) {
    if (leaders_) deliverRoutedLeaders();
    else if (plan.commit && plan.commit_bytes)
      std::memcpy(plan.commit, scratch_.data(), plan.commit_bytes);
    ++routed_calls_;
    return CallOutcome::kDone;
  }
  if (plan.restore && plan.commit_bytes)
    std::memcpy(plan.restore, scratch_.data(), plan.commit_bytes);
  if (agreed == CallOutcome::kBusy) {  // redone on the previous module
    ++busy_;
    return CallOutcome::kBusy;
  }
  giveUp(stream_.mine, first_rank, what,
         stream_.settled ? "no member had the result (all asked); redone on the previous module"
                         : "redone on the previous module");
  return CallOutcome::kFailed;  // redone on the previous module
}

Status AgentSwitchPath::endRoutedUnserved(const Status& mine, const std::vector<uint8_t>& oks,
                                          CollKind op, CallOutcome* how) {
  if (!anyFailed(oks)) {
    ++busy_;
    *how = CallOutcome::kBusy;
    return Status::Ok();
  }
  giveUp(mine, firstFailedRank(oks), collKindName(op), "redone on the previous module");
  *how = CallOutcome::kFailed;
  return Status::Ok();
}

void* AgentSwitchPath::scratchFor(size_t bytes) {
  if (scratch_.size() < bytes) scratch_.resize(bytes);
  return bytes ? static_cast<void*>(scratch_.data()) : no_output_;
}

}  // namespace switchagg::coll::switch_detail
