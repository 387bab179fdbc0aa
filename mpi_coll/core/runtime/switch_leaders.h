// Node leaders for the switch path: with several ranks of a communicator on
// one node, the node's ranks reduce among themselves over shared memory
// (the hierarchical algorithm's local phases, in rank order), only the
// node's lowest rank - its leader - is a member of the agent's group
// (member rank = node index, group size = nodes) and streams the node's
// partial result, and the leader broadcasts the agent's result inside the
// node. Each node's uplink carries N per allreduce whatever the ranks per
// node.
//
// The switch path (switch_path.cc and its files) keeps everything else: the agreement
// allgathers over the whole communicator, failure and rejoin rules,
// counters. Non-leaders open no agent connection; they take part in every
// agreement and say "ok" for the agent steps they do not run.
#pragma once

#include <memory>
#include <vector>

#include "comm_group.h"
#include "host_algorithms.h"
#include "switchagg/agent/data_client.h"
#include "switchagg/common/status.h"

namespace switchagg::coll {

class NodeLeaders {
 public:
  // nullptr when every rank should be a member itself: one rank per node,
  // no host transport, or node leaders turned off (SWITCHAGG_SWITCH_LEADERS).
  static std::unique_ptr<NodeLeaders> create(CommGroup& comm, bool enabled);

  bool leader() const { return groups_.locals.front() == comm_.rank(); }
  // Rail leaders (docs/offload.md "Rail leaders"): with rails() = R > 1 the
  // node's local ranks 0..R-1 are members, local rank k of agent k (rail
  // k) with stripe k of every call (agent::stripeOf(count, k, R): the same
  // cut on every rank, from the call's count and R alone). Set once, alike
  // on every rank, before the join; R <= the ranks of every node.
  void setRails(int rails) { rails_ = rails; }
  int rails() const { return rails_; }
  int rail() const { return localIndex() < rails_ ? localIndex() : -1; }  // -1: none
  bool member() const { return rails_ > 1 ? rail() >= 0 : leader(); }
  // The node's inputs reduced stripe by stripe, stripe k into local rank
  // k's copy (a binomial tree rooted there); returns stripe rail() of the
  // node's sum on a rail leader, nullptr elsewhere. The caller's input
  // stays intact. Starts the call's host transport.
  Result<const void*> railReduce(const AllreduceArgs& args);
  // Once every rank agreed: stripe k of rail leader k's args.recv into
  // every rank of the node. Ends the call.
  Status railBroadcast(const AllreduceArgs& args);
  int node() const { return groups_.node; }
  int nodes() const { return int(groups_.leaders.size()); }

  // Step 1 of a call: the node's inputs (args.send, or args.recv in place;
  // never written) reduced into the leader's accumulator, returned on the
  // leader; nullptr on the other ranks. Starts the call's host transport.
  Result<const void*> reduce(const AllreduceArgs& args);
  // Step 3, once every rank agreed the agent's result is good: the leader's
  // args.recv (the result) into every rank of its node. Ends the call.
  Status broadcast(const AllreduceArgs& args);
  // One-round-trip calls (docs/offload.md "Completion"): once the leader
  // knows the call's outcome (*outcome, a CallOutcome), one broadcast hands
  // every rank of its node [outcome][result]: the leader sends
  // `leader_result` (bytes; read only when the outcome is done), a
  // non-leader gets *outcome and, only when it is done, the result in
  // `result`. Ends the call (after reduce()).
  Status shareOutcome(uint8_t* outcome, const void* leader_result, void* result, size_t bytes);
  // Ends a call that failed (no broadcast).
  void abandon() { host_.reset(); }

  // The collectives with a block per rank (reduce-scatter, allgather). Node
  // order: every rank of the communicator by node (nodes in index order),
  // each node's ranks ascending; a node's blocks are contiguous in it. With
  // every node's ranks adjacent in the communicator it is rank order.
  const std::vector<int>& byNode() const { return by_node_; }
  bool nodesContiguous() const { return contiguous_; }
  // Reduce-scatter's node step: accumulator(bytes) for the caller to fill
  // with its input (in node order), then reduceAccumulator() reduces the
  // node's accumulators into the leader's as reduce() does (returned on the
  // leader, null elsewhere). Starts the call's host transport.
  char* accumulator(size_t bytes);
  Result<const void*> reduceAccumulator(Dtype dtype, Op op, size_t count);
  // Allgather's node step: every rank's `bytes` block to its leader, which
  // gets the node's blocks in local order (returned on the leader, null
  // elsewhere; `block` is only read). Starts the call's host transport.
  Result<const void*> gather(const void* block, size_t bytes);
  // Reduce-scatter's delivery, the counterpart of shareOutcome(): the leader
  // hands local rank i [outcome] and, when it is done, its block (bytes[i]
  // of `leader_result`, the node's blocks in local order); a non-leader
  // gets *outcome and, only when it is done, its block in `result`. Ends
  // the call.
  Status scatterOutcome(uint8_t* outcome, const void* leader_result,
                        const std::vector<size_t>& bytes, void* result);
  // The nonblocking calls' node steps, none of which waits (docs/offload.md
  // "MPI_Iallreduce", "MPI_Iallgather, ..."): startFlat() posts a non-leader's
  // input to its leader and its receive of [outcome][result], and the
  // leader's receives of the node's inputs. stepFlat() tests them: on the
  // leader *ready once every input is in (MPI_Iallreduce's: folded, in rank
  // order, into nodeSum()); on a non-leader once [outcome][result] came
  // (flatOutcome(), flatResult()). finishFlat() (the leader, once it knows
  // the call's outcome) sends every other rank of the node [outcome][its
  // part of `result`] and ends the call.
  // wide: a 16-bit float SUM whose uplink carries fp64 partials (the
  // leader also keeps the node's fp64 sum in wideSum()).
  Status startFlat(const AllreduceArgs& args, bool wide = false);
  // The same steps for any shape, per local rank i (the leader is i = 0):
  // in[i] bytes from rank i to the leader (this rank sends `input`; 0:
  // nothing), and out[i] bytes at out_at[i] of the leader's result back.
  struct FlatShape {
    std::vector<size_t> in, out, out_at;
  };
  Status startFlatShape(const void* input, FlatShape shape);
  Status stepFlat(bool* ready);
  const void* nodeSum() const { return acc_.data(); }
  // The leader's fp64 node sum of a 16-bit float SUM (reduce(), or a wide
  // startFlat() once ready): exact for binary16 (common/half.h).
  const double* wideSum() const { return wide_.data(); }
  // wideSum() = the fp64 fold of the node's 16-bit inputs, in rank order
  // (switch_wide_uplink.cc).
  void foldWide(const std::vector<const void*>& in);
  // The same fold of `count` elements of `dtype` under `op` (a routed
  // reduce-scatter's node step: MPI_Ireduce_scatter_block).
  void foldWide(const std::vector<const void*>& in, Dtype dtype, Op op, size_t count);
  // The leader, once ready: local rank i's input (i = 0: its own).
  const void* flatInput(size_t i) const;
  Status finishFlat(uint8_t outcome, const void* result);
  uint8_t flatOutcome() const { return staging_.empty() ? 0 : staging_[0]; }
  int flatMissing() const;  // the leader: the first rank whose input is not here
  const void* flatResult() const { return staging_.data() + 1; }
  int localIndex() const { return localIndexOf(comm_.rank()); }  // this rank's place in its node
  int localIndexOf(int rank) const;  // `rank`'s place among this node's ranks, or -1
  const std::vector<int>& locals() const { return groups_.locals; }

  // The routed calls' node steps (MPI_Bcast, MPI_Reduce with a root that
  // may be any rank). begin(): starts the call's host transport; every rank
  // calls it once per call (the transport's sequence is per call).
  Status begin();
  // `bytes` from rank `from` to rank `to` of this node over the call's
  // transport (send on `from`, receive on `to`, nothing on the others).
  Status move(int from, int to, const void* send, void* recv, size_t bytes);
  // The leader's `buffer` (bytes; only read there) into every other rank's
  // `buffer` of this node. Ends the call.
  Status broadcastBytes(void* buffer, size_t bytes);
  int nodeOf(int rank) const { return comm_.layout().node_of[size_t(rank)]; }
  int leaderOf(int node) const { return groups_.leaders[size_t(node)]; }

  // The three steps of a large call overlapped, segment by segment
  // (`segment` elements each, the last one shorter): the node reduces
  // segment s+1 while the leader streams s through `group` (one agent call
  // for the whole vector that reads only the segments reduced so far) and
  // the leader sends s's result to its node as soon as it is all back, while
  // later segments stream. The results land in `out` on the leader (never the
  // caller's input) and in result() on the other ranks: nothing reaches a
  // non-leader's args.recv before the agreement. Same combine order as
  // reduce() + broadcast(), so the same bits. `group` is the leader's (null
  // on the others); once the stream failed or was refused the leader still
  // runs the node's phases to their end (the others' messages are all
  // matched). Returns the stream's outcome, or the
  // host transport's failure; bounded by timeout_ms. Ends the call.
  Status pipelined(const AllreduceArgs& args, size_t segment, agent::StripedGroup* group,
                   void* out, int64_t timeout_ms);
  // A non-leader's result of the last pipelined call.
  const void* result() const { return result_.data(); }

  // After a join every rank agreed on: the group's window, slot size and
  // (dtype, op) table as rank 0 (a leader) got them, so that non-leaders
  // decline and describe calls exactly as the leaders do. Collective.
  Status shareInfo(const agent::GroupInfo* group, agent::GroupInfo* info);

 private:
  NodeLeaders(CommGroup& comm, NodeGroups groups);

  // Each segment's messages use their own kNodePhaseTags tags.
  static constexpr size_t kMaxSegments = kAlgorithmTagSpace / kNodePhaseTags;

  // pipelined()'s two sides (switch_leaders_pipeline.cc): a call's segments, the
  // leader's state, a non-leader's blocking phases, the leader's loop.
  struct Pipeline;
  struct Lead;
  Status pipelinedFollow(const Pipeline& p);
  // The leader's [outcome][part of `result`] to each other rank of the node
  // (f.out[i] bytes at f.out_at[i]; one message for all when the parts are
  // the same) on `tag`, waited for: finishFlat's and scatterOutcome's.
  Status sendOutcomes(HostComm& host, uint32_t tag, uint8_t outcome, const void* result,
                      const FlatShape& f);
  Status pipelinedLead(const Pipeline& p, agent::StripedGroup* group, void* out,
                       int64_t timeout_ms);

  // Elements [begin, begin + count) of acc_ reduced into local rank
  // `root`'s (a binomial tree over the node's ranks from there, tags from
  // tag_base); true on the root.
  Result<bool> reduceRange(Dtype dtype, Op op, size_t begin, size_t count, int root,
                           uint32_t tag_base);
  // The node's ranks in local order starting at local rank `root`.
  std::vector<int> rootedAt(int root) const;

  CommGroup& comm_;
  NodeGroups groups_;
  std::unique_ptr<HostComm> host_;  // the current call's transport
  std::vector<char> acc_, scratch_, result_;
  std::vector<double> wide_;  // the fp64 node sum of a 16-bit float SUM
  std::vector<uint8_t> staging_;  // shareOutcome's [outcome][result]
  std::vector<char> gathered_;    // gather()'s node blocks on the leader
  std::vector<int> by_node_;      // byNode()
  struct Flat {                   // a nonblocking call's node steps in flight
    AllreduceArgs args;            // MPI_Iallreduce's (fold: the node's sum)
    bool fold = false;
    bool wide = false;  // the fold kept in fp64 too (wideSum())
    const void* input = nullptr;
    FlatShape shape;
    std::vector<size_t> in_at;     // where local rank i's input sits in gathered_
    std::vector<HostComm::Handle> handles;  // the leader: local ranks 1.., else send, recv
    std::vector<bool> done;
  } flat_;
  bool contiguous_ = true;
  int rails_ = 1;
};

}  // namespace switchagg::coll
