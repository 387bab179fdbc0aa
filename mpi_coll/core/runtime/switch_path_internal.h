// The switch candidate's insides, shared by its files (one concern each):
//
//   switch_path.cc          lifetime, describe, counters, failure and rejoin
//   switch_join.cc          the collective join (placement in trees, stripes)
//   switch_allreduce.cc     MPI_Allreduce and the MPI_Iallreduce stream
//   switch_completion.cc    one-round-trip completion: ledger, settle, recovery
//   switch_routed.cc        reduce, reduce-scatter, allgather, bcast
//   switch_routed_plan.cc   a routed call's description, placement, agent call
//   switch_routed_leaders.cc  the same with node leaders (node steps)
//   switch_barrier_path.cc  MPI_Barrier
//
// Nothing outside these files includes this header: the rest of the
// component sees the path only as a SwitchPath (switch_path.h).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "switch_leaders.h"
#include "switch_lease.h"
#include "switch_path.h"
#include "switch_recovery.h"
#include "switch_rejoin.h"
#include "switchagg/agent/data_client.h"
#include "switchagg/common/log.h"

namespace switchagg::coll::switch_detail {


struct JoinHello {
  uint64_t nonce;
  uint8_t connected;
  uint8_t pad;
  uint16_t leaf;  // a tree lease: 1 + the index of this rank's leaf agent (0: not a tree)
  // What the agent told this rank's connection (CAPACITY_ACK). Ranks asked
  // at different moments, so everyone uses rank 0's: the selector's input
  // must be the same on every rank.
  agent::wire::Capacity capacity;
  // Each of this rank's agents' link rate, in the lease's order (0 past
  // the K-th or unknown): the stripe weights. Everyone cuts with rank 0's,
  // so every member's stripes are alike by construction.
  uint32_t stripe_mbps[agent::kMaxWeightedStripes];
};

// The one-byte outcome agreement of a call (allreduce or barrier): every
// rank's CallOutcome (kDone, kBusy, kFailed) into *oks, in rank order, over
// the previous module. An error: the allgather itself failed.
inline Status agreeOutcome(CommGroup& comm, const Status& mine, std::vector<uint8_t>* oks) {
  const uint8_t outcome = uint8_t(outcomeOf(mine));
  oks->assign(size_t(comm.size()), uint8_t(CallOutcome::kPending));
  return comm.allgather(&outcome, oks->data(), 1);
}

inline bool allDone(const std::vector<uint8_t>& oks) {
  return std::all_of(oks.begin(), oks.end(),
                     [](uint8_t o) { return o == uint8_t(CallOutcome::kDone); });
}

inline bool anyFailed(const std::vector<uint8_t>& oks) {
  return std::find(oks.begin(), oks.end(), uint8_t(CallOutcome::kFailed)) != oks.end();
}

inline int firstFailedRank(const std::vector<uint8_t>& oks) {
  int first_bad = 0;
  while (first_bad < int(oks.size()) && oks[size_t(first_bad)] != uint8_t(CallOutcome::kFailed))
    ++first_bad;
  return first_bad;
}

inline uint64_t randomNonce() {
  std::random_device rd;
  return (uint64_t(rd()) << 32) ^ rd() ^
         uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
}

// Where a tree communicator's participants (ranks, or nodes with node
// leaders) sit (docs/offload.md "Trees"): its leaves are the leaf agents
// of their nodes in the map's order; placement order is the leaves in that
// order, each leaf's participants in participant order. Routed calls lay
// their vector out in placement order, so each leaf's members own one
// contiguous part of it. Not a tree (leaves < 2): placement is participant
// order.
struct TreeLayout {
  uint32_t leaves = 0;        // the communicator's leaves (0 or 1: not a tree)
  uint32_t leaf = 0;          // this member's leaf
  std::vector<uint32_t> leaf_of;  // per participant
  std::vector<int> placed;    // participants in placement order
  std::vector<int> pos;       // per participant: its place in placement order
  std::vector<size_t> first;  // where each leaf's participants begin in it (leaves + 1)

  bool active() const { return leaves > 1; }
  int placeOf(int p) const { return active() ? pos[size_t(p)] : p; }
  int at(int i) const { return active() ? placed[size_t(i)] : i; }  // who is placed at i
  // Placement order is participant order (each leaf's participants
  // adjacent, the leaves' in map order).
  bool inOrder() const;
  // This member's leaf call of a routed call whose `want` bounds are in
  // placement order (place i wants [want[i], want[i + 1])): this leaf's
  // members' bounds and the leaves' (RoutedCall::leaf_want). Not a tree:
  // unchanged.
  agent::RoutedCall localize(const agent::RoutedCall& call) const;
  // The agent's order of a tree reduction (each leaf's participants, then
  // the leaves) over `parts` (per participant, `n` elements each) into out.
  Status fold(Dtype dtype, Op op, void* out, const std::vector<std::vector<uint8_t>>& parts,
              size_t n) const;
};

struct Joined {
  bool ok = false;  // every rank joined (a non-leader has no group)
  bool routed = false;  // every member's agent serves routed calls (agreed)
  // One group per agent (stripe); holds the clients. Null on a non-leader.
  std::unique_ptr<agent::StripedGroup> group;
  agent::wire::Capacity capacity;  // the agent's figures as agreed (rank 0's)
  agent::GroupInfo info;           // the group's geometry, alike on every rank
  TreeLayout tree;                 // a tree communicator's placement (alike on every rank)
};

// The collective join (first or rejoin); no group on every rank alike when
// any rank failed. `first`: report a `require` failure and say why at info
// level (a failed rejoin is logged at debug level only: its first failure
// was already reported). `leaders`: null, or only they join the agent.
Joined joinGroup(CommGroup& comm, const SwitchLease& lease, bool first, NodeLeaders* leaders);

// A routed call as this member streams it: the agent call, and where an
// in-place call's staged bytes (scratch) go: `commit` after an all-ok end,
// `restore` (an in-place allgather's own block) before a redo.
struct RoutedPlan {
  agent::RoutedCall call;
  size_t lo = 0, hi = 0;  // reductions: this member's part of the vector, in bytes
  bool unplace = false;   // the result is in placed_ (placement order): unplace() into recv
  void* commit = nullptr;
  void* restore = nullptr;
  size_t commit_bytes = 0;
};

// Milliseconds on the steady clock (the MPI_Iallreduce stream's deadline).
int64_t steadyMs();
// A client's decline of a routed call, taken as busy (redo, path kept).
Status routedDecline(const Status& st);
// reduce, reduce_scatter(_block): the routed call reduces (else it forwards bytes).
bool isReduction(CollKind op);

class AgentSwitchPath : public SwitchPath {
 public:
  AgentSwitchPath(CommGroup& comm, const SwitchLease& lease, Joined joined,
                  std::unique_ptr<NodeLeaders> leaders)
      : comm_(comm), lease_(lease), leaders_(std::move(leaders)),
        group_(std::move(joined.group)),
        capacity_(joined.capacity), info_(joined.info), joined_(joined.ok),
        routed_(joined.routed), tree_(std::move(joined.tree)),
        rejoin_(lease.rejoin_calls, lease.rejoin_ms) {
    makeLedger();
  }
  ~AgentSwitchPath() override;

  // The task (switch_task.cc): each kind's own entries below.
  void rejoinIfDue() override;
  const char* describe(const SwitchCall& call, SelectionInput* in) const override;
  Status start(const SwitchCall& call, CallOutcome* how) override;
  Status step(CallOutcome* how) override;
  bool settles() const override { return stream_.one_trip; }
  Status settle(CallOutcome outcome, CallOutcome* agreed) override;
  CallOutcome finish(CallOutcome agreed, int first_rank) override;
  bool counter(const std::string& name, uint64_t* value) const override;
  uint64_t epoch() const override { return failed_ + rejoined_; }

 private:
  // Each kind's entries, reached only through the task above.
  void describe(const AllreduceArgs& args, SelectionInput* in) const;
  Status allreduce(const AllreduceArgs& args);
  Status barrier(CallOutcome* how);
  const char* describeRouted(const RoutedArgs& args, SelectionInput* in) const;
  Status routed(const RoutedArgs& args, CallOutcome* how);
  // The streamed calls (iallreduce.h): started here, then step()
  // (stepStream), settle() and finish().
  const char* describeRoutedStream(const RoutedArgs& args, SelectionInput* in) const;
  Status startRoutedStream(const RoutedArgs& args);
  void describeStream(const AllreduceArgs& args, SelectionInput* in) const;
  Status startStream(const AllreduceArgs& args, bool barrier = false);
  Status stepStream();

 public:
  Status routedLeaders(const RoutedArgs& args, CallOutcome* how);  // bcast, reduce
  // routedLeaders()'s node step and the leaders' call it describes.
  Status routedLeadersNodeStep(const RoutedArgs& args, size_t bytes, agent::RoutedCall* out);
  // reduce_scatter(_block), allgather with node leaders
  Status routedLeadersBlocks(const RoutedArgs& args, CallOutcome* how);
  // routedLeadersBlocks()'s steps: the vector's blocks in rank and node
  // order, the node step and the leaders' call it describes, the call's
  // outcome on every rank, the delivery inside the node.
  struct BlockLayout {
    int size;
    size_t esize;
    std::vector<size_t> count, at_rank, at_node, part;
    size_t total, vector_bytes, lo, hi;
    std::vector<size_t> local_bytes;
    bool contiguous;
    void copyBlocks(uint8_t* to, const std::vector<size_t>& to_at, const uint8_t* from,
                    const std::vector<size_t>& from_at) const;
  };
  BlockLayout blockLayout(const RoutedArgs& args);
  Status routedBlocksNodeStep(const RoutedArgs& args, const BlockLayout& l,
                              agent::RoutedCall* out, const void** own_copy);
  Result<CallOutcome> routedBlocksOutcome(const RoutedArgs& args, const BlockLayout& l,
                                          const agent::RoutedCall& call, const Status& mine,
                                          bool one_trip, std::vector<uint8_t>* oks);
  Status deliverBlocks(const RoutedArgs& args, const BlockLayout& l,
                       const agent::RoutedCall& call, uint8_t* shared);
  // Reduce and reduce-scatter in one round trip; [lo, hi): this rank's
  // part of the vector in bytes; commit: where scratch's result goes (in place).
  Status routedReduction(const RoutedArgs& args, const agent::RoutedCall& call, size_t lo,
                         size_t hi, void* commit, CallOutcome* how);
  // A member's end of a one-round-trip reduction: its own outcome, or after
  // a failure here the result folded from the members' inputs into out.
  Result<CallOutcome> settleReduction(const Status& mine, const RoutedArgs& args,
                                      const void* input, size_t vector_bytes, uint8_t* out,
                                      size_t lo, size_t hi);
  Status endRoutedOneRoundTrip(CallOutcome outcome, const Status& mine, CollKind op,
                               CallOutcome* how);
  // A routed reduction through node leaders on a wide uplink (the same
  // choice as allreduce's, wideUplink): the leaders' call switched to the
  // wide type, its input the node's fp64 sum, its result in wide_out_,
  // narrowed once into `narrow_to` (where the 16-bit call would have put
  // it; null on a leader that gets no result) when the call is done.
  struct WideRouted {
    bool on = false;
    Dtype half = Dtype::kFloat16;
    size_t scale = 1;           // wide bytes per 16-bit byte (2 or 4)
    void* narrow_to = nullptr;  // the 16-bit result's place here
    size_t count = 0;           // elements of the result here
  };
  WideRouted widenRouted(const RoutedArgs& args, agent::RoutedCall* call, size_t count);
  bool widensRouted(const RoutedArgs& args, size_t total) const;  // widenRouted's choice
  // args with the wide dtype (what the leaders' call and its recovery fold).
  static RoutedArgs wideRoutedArgs(const RoutedArgs& args, const agent::RoutedCall& call);
  void narrowRouted(const WideRouted& w) const;
  Status routedLeadersOneRoundTrip(const RoutedArgs& args, const agent::RoutedCall& call,
                                   const Status& mine, size_t bytes, const WideRouted& w,
                                   CallOutcome* how);
 private:
  void fill(SelectionInput* in) const;  // describe's switch fields
  // A tree's placement order is not rank order here (no node leaders):
  // blocks are staged in placement order (placed_).
  bool staged() const;
  BlockLayout placementLayout(const RoutedArgs& args) const;
  void unplace(const RoutedArgs& args, const RoutedPlan& plan);  // placed_ into recv
  // One-round-trip completion (switch_recovery.h, docs/offload.md
  // "Completion"): on every rank alike, whether a call of `bytes` ends
  // without the outcome agreement.
  bool oneRoundTrip(size_t bytes) const {
    return one_round_trip_ && bytes <= lease_.keep_bytes;
  }
  void makeLedger();
  // Test-only fault point (switch_allreduce.cc): SWITCHAGG_TEST_CUT=RANK:CALL.
  // `st` of a one-round-trip call that succeeded here, or the cut's
  // PeerFailed (the group left) when this rank and ledger call are armed.
  Status testCut(const Status& st);
  Status allreduceOneRoundTrip(const AllreduceArgs& args, size_t bytes);
  // Rail leaders (switch_leaders.h): every rank alike; their blocking
  // allreduce; an agreed call's host redo, busy or failed.
  bool railLeaders() const { return leaders_ && leaders_->rails() > 1; }
  Status allreduceRails(const AllreduceArgs& args);
  Status redoAgreed(const Status& mine, const std::vector<uint8_t>& oks);
  Status barrierOneRoundTrip(CallOutcome* how);
  // A member's end of a one-round-trip call: its own outcome, or after a
  // failure what the other members said (recovery). *source: the member
  // that gave the result. An error: recovery could not decide (bounded).
  Result<CallOutcome> settle(const Status& mine, void* out, size_t bytes, int* source,
                             const char* what);
  // What settle and settleReduction share. Done or busy here is final and
  // recorded in the ledger (done keeps `kept`, `bytes` of it, for a peer
  // that missed the call); nullopt: the call failed here, which the caller
  // records (it knows what it can keep) before asking the other members.
  std::optional<CallOutcome> settledHere(const Status& mine, const void* kept, size_t bytes);
  void logFailedHere(const Status& mine, const char* what) const;
  Result<CallOutcome> endOneRoundTrip(const Status& mine, void* out, void* node_result,
                                      size_t bytes, int* source, const char* what);
  // The outcome agreement of a call that has one, counted.
  Status agree(const Status& mine, std::vector<uint8_t>* oks) {
    ++agreements_;
    return agreeOutcome(comm_, mine, oks);
  }
  bool serves(const AllreduceArgs& args) const {
    return joined_ && info_.caps.supports(args.dtype, args.op);
  }
  int64_t timeoutFor(size_t bytes) const {
    // A slow but alive agent on a loaded machine: ~4 MB/s at least (the
    // benchmark saw 16 MiB calls over 3 s under load 19 on 2 cores).
    return lease_.call_timeout_ms + int64_t(bytes / 4096);
  }
  Status stream(const AllreduceArgs& args, const void* input, void* out, size_t bytes);
  // Wide partials on the leaders' uplink (switch_wide_uplink.cc): whether
  // this call's leaders stream fp64 node sums (alike on every rank), its
  // fp64 call (the leader's wideSum() into wide_out_), the one rounding of
  // wide_out_ into `out`, and the blocking stream of all three.
  bool wideUplink(const AllreduceArgs& args) const;
  // (begin: from that element of the node's sum: a rail leader's stripe)
  AllreduceArgs wideArgs(const AllreduceArgs& args, size_t begin = 0);
  const void* wideInput(size_t count, size_t begin = 0);  // the node's sum as the uplink sends it
  void narrowWideTo(Dtype half, void* out, size_t count) const;  // wide_out_ rounded once
  void narrowWide(const AllreduceArgs& args, void* out) const;
  Status streamWide(const AllreduceArgs& args, void* out);
  // This rank's agent call for a flat routed call (scratch_ holds an
  // in-place allgather's own block, a bcast root's returning copy).
  RoutedPlan planRouted(const RoutedArgs& args);
  // planRouted() per collective.
  RoutedPlan planReduction(const RoutedArgs& args);  // reduce, reduce-scatter
  RoutedPlan planAllgather(const RoutedArgs& args);
  RoutedPlan planBcast(const RoutedArgs& args);
  // An allgather's or bcast's whole vector, kept or recovered (recv; a bcast
  // root whose call failed: scratch).
  void* routedWhole(const RoutedArgs& args, const Status& mine, size_t bytes);
  // The routed stream's one-round-trip end (settle).
  Result<CallOutcome> settleRoutedStream(const Status& mine, int* source);
  // The routed stream's end (finish): commit or restore, counted.
  CallOutcome endRoutedStream(CallOutcome agreed, int first_rank);
  // A nonblocking call with node leaders: the node step (stepNode), and for
  // the routed calls (switch_istream_leaders.cc) the node's inputs posted,
  // the leader's routed call, its one-round-trip end, the delivery once
  // the outcome is final, and what the leader's node message carries.
  Status stepNode();
  Status startRoutedLeadersStream();
  Status startLeaderRouted();
  Result<CallOutcome> settleRoutedLeaders(const Status& mine, int* source);
  void deliverRoutedLeaders();
  const void* leaderNodeResult() const;
  void countStream(const agent::ClientCounters& before);  // the call's bytes and chunks
  // A routed call's stream (counted); a client decline is taken as busy:
  // nothing was sent, the ranks redo the call and keep the path.
  // Allgather and bcast in one round trip (the same vector on every rank).
  Status routedForwardOneRoundTrip(const RoutedArgs& args, const RoutedPlan& plan,
                                   size_t vector_bytes, CallOutcome* how);
  Status streamRouted(const agent::RoutedCall& call, size_t bytes);
  // A routed call the ranks did not all finish: busy, or given up.
  Status endRoutedUnserved(const Status& mine, const std::vector<uint8_t>& oks, CollKind op,
                           CallOutcome* how);
  // scratch_ of at least `bytes` (a dummy for 0: a member that gets nothing).
  void* scratchFor(size_t bytes);
  // `what` failed ("allreduce", "barrier", "reduce", ...); `after` says
  // what became of the call ("result recomputed on the host", ...).
  // first_bad: the lowest rank that failed, if known (-1: not known here).
  void giveUp(const Status& mine, int first_bad, const char* what, const char* after);
  // An allreduce refused busy on every rank: counted, redone on the host, path kept.
  Status redoBusy() {
    ++busy_;
    if (busy_ == 1 && comm_.rank() == 0)
      SA_INFO("coll",
              "comm %s: switch busy (the lease's slots or the agent port's credit were in "
              "use by other calls); call redone on the host (fallback:switch-busy), switch "
              "path kept",
              comm_.name().c_str());
    return Status(Code::kUnsupported, "switch busy; redone on the host");
  }
  int firstFailed(const Status& mine, int /*source*/) const { return mine.ok() ? -1 : comm_.rank(); }
  void logSummary() const;

  CommGroup& comm_;
  const SwitchLease& lease_;
  std::unique_ptr<NodeLeaders> leaders_;  // null: every rank is a member
  // One group per agent of the lease (stripes), holding their clients.
  // Null after a failure, until a rejoin; always null on a non-leader.
  std::unique_ptr<agent::StripedGroup> group_;
  // Agreed at the first join and kept (a rejoin does not change the
  // selector's input: decisions are memoised per call shape).
  agent::wire::Capacity capacity_;
  agent::GroupInfo info_;  // the group's geometry (rank 0's; its slowest stripe's), every rank
  bool joined_;            // false after a failure, until a rejoin
  bool routed_;            // every member's agent routes (agreed at each join)
  TreeLayout tree_;        // placement of a tree communicator's participants
  std::vector<uint8_t> scratch_;  // in-place results until all ranks agree
  std::vector<double> wide_out_;  // a wide uplink's result (wideArgs; fp32 in its front)
  std::vector<float> wide_f32_;   // half_uplink=float32: the node sum sent
  std::vector<uint8_t> placed_;   // a staged call's vector in placement order (staged())
  RejoinSchedule rejoin_;  // after a failure: when to join again (alike on every rank)
  uint64_t calls_ = 0, bytes_sent_ = 0, chunks_ = 0, failed_ = 0, rejoined_ = 0, busy_ = 0;
  uint64_t last_bytes_sent_ = 0;
  uint64_t barriers_ = 0, barrier_failed_ = 0, barrier_busy_ = 0;
  uint64_t pipelined_ = 0;  // served calls whose node phases overlapped the stream
  uint64_t routed_calls_ = 0;  // switch:routed_calls, routed collectives served
  uint8_t no_output_[8] = {};  // `out` of a member that receives nothing
  // Members only: this member's calls for recovery (null on a non-leader,
  // or without a host transport: then every call has its agreement).
  std::unique_ptr<CallLedger> ledger_;
  bool one_round_trip_ = false;  // alike on every rank (setting + host transport)
  uint64_t agreements_ = 0;      // switch:agreements, outcome agreements run
  uint64_t one_trip_ = 0;        // switch:one_round_trip, calls completed without one
  uint64_t recovered_ = 0;       // switch:recovered, results copied from another member
  int32_t barrier_sink_ = 0;     // the node reduce's output of a barrier (unused)
  // The MPI_Iallreduce stream in flight (one per communicator at a time).
  struct Stream {
    AllreduceArgs args;
    size_t bytes = 0;
    int64_t deadline_ms = 0;
    agent::ClientCounters before;
    Status mine;
    void* out = nullptr;    // where the result goes (scratch for in place)
    bool one_trip = false;  // ends without the agreement (settle)
    bool settled = false;   // settle ran
    bool node_phase = false;  // node leaders: the node's step runs (stepNode)
    bool node_failed = false;  // node leaders: it failed here (no node message goes)
    bool barrier = false;     // an MPI_Ibarrier (counted as a barrier)
    bool routed = false;      // MPI_Iallgather / MPI_Ibcast: rargs, plan
    bool wide = false;        // a wide uplink (wideUplink): narrowed once done
    WideRouted wide_routed;   // node leaders' MPI_Ireduce_scatter_block on a wide uplink
    RoutedArgs rargs;
    std::vector<size_t> counts;  // rargs.counts (reduce-scatter)
    RoutedPlan plan;
    BlockLayout layout;  // node leaders: reduce-scatter's, allgather's
    std::vector<uint8_t> node_in;  // node leaders: node-order input, the node's blocks
  } stream_;
  uint64_t streamed_ = 0;  // switch:streamed, MPI_Iallreduce calls served
};

}  // namespace switchagg::coll::switch_detail
