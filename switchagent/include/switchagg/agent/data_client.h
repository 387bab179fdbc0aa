// switchagg_dataclient: the client side of the agent's data plane, for the
// MPI component (switch path) and tests. Protocol and semantics:
// docs/agent-protocol.md.
//
//   auto c = AggClient::connect(getenv("SWITCHAGG_AGENT"), getenv("SWITCHAGG_LEASE"), 2000);
//   auto g = (*c)->join(group_id, comm_size, comm_rank, 5000);   // collective
//   if ((*g)->supports(Dtype::kFloat32, Op::kSum))
//     st = (*g)->allreduce(Dtype::kFloat32, Op::kSum, send, recv, count, 2000);
//
// Failure semantics (what the MPI fallback relies on):
// * Every call returns within its timeout_ms (after a failure plus at most
//   2 x kDrainMs for the LEAVE and the in-flight sends, and one bounded
//   close if the agent hangs with the connection open); nothing blocks
//   forever, nothing aborts.
// * allreduce returns Ok only when every chunk's result arrived and was
//   validated: never a partial result as success.
// * On failure `send` is never modified; with send == recv (in place) the
//   buffer still holds the caller's input (results are staged internally
//   and copied in only on success, which costs one extra copy of N bytes
//   for in-place calls); with send != recv, recv's content is unspecified.
// * After an allreduce failure the group is dead (usable() == false; the
//   agent aborted it or will): later calls return its first failure at once
//   without talking to the agent. A connection failure kills every group of
//   the client. Codes: kPeerFailed (agent unreachable/died), kAborted (agent
//   aborted the group: member failed/silent, lease revoked/expired, agent
//   shutdown, protocol violation; message names the reason), kTimeout,
//   kDenied (unknown/expired lease token), kNoResource (no free slots),
//   kProtocol (the agent sent something invalid).
// * kBusy: the agent refused this call because its lease's slots (or the
//   pool's, or memory) were in use by other groups when the call began. It
//   is per call: nothing was reduced, the input is intact as after a
//   failure, and the group stays usable - the next call may be served.
//   Members of one call all see kBusy (or a real failure). Only agents that
//   know JOIN flags refuse calls; join() says it understands them and falls
//   back to a plain JOIN with an agent that predates them.
// * Success is local: one member may see Ok while another times out (the
//   agent died after sending some results). Members must agree on the
//   outcome (e.g. a host allreduce of the status) before trusting results.
// * kUnsupported / kInvalidArgument are declines: nothing was sent and the
//   group stays usable.
//
// Not thread-safe: one thread uses a client and its groups. Destroy groups
// before their client.
//
// connect() sets glibc's mmap/trim thresholds once per process (32/256 MiB)
// unless the user tunes malloc or sets SWITCHAGG_MALLOC_TUNING=0: large
// per-message receive buffers otherwise page-fault in on every chunk
// (switchagent/include/switchagg/agent/malloc_tuning.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "switchagg/agent/wire.h"
#include "switchagg/common/dtype.h"
#include "switchagg/common/status.h"

namespace switchagg::ucx {
class Worker;
}

namespace switchagg::agent {

// What HELLO_ACK told us about the agent and the lease.
struct AgentInfo {
  uint32_t max_window = 0;  // the lease's slots: the largest window a group can get
  size_t slot_bytes = 0;    // the agent's chunk size (a group may get less)
  wire::CapTable caps;      // (dtype, op) pairs the agent reduces
  // The agent's CAPACITY_ACK (all 0 when it predates it or does not tell),
  // for the component's cost model.
  wire::Capacity capacity;
};

// What JOIN_ACK told us; identical at every member.
struct GroupInfo {
  uint64_t group_id = 0;
  int size = 0;
  int rank = 0;
  uint32_t window = 0;    // chunks in flight (slots of this group)
  size_t slot_bytes = 0;  // payload bytes per chunk for this group
  wire::CapTable caps;
};

// A routed call (docs/agent-protocol.md "Routed calls"): the collectives
// beyond allreduce, over a vector of `total` elements that every member
// describes alike.
//   kReduce:  every member contributes all `total` elements of `in`; the
//             agent reduces them in rank order (as for allreduce).
//   kForward: member r contributes only its piece [in_begin, in_end) of the
//             vector (`in` points at element in_begin; empty: nothing); the
//             pieces of all members must tile the vector in rank order; the
//             agent forwards them (no op). Allgather: member r owns
//             [r·n, (r+1)·n); bcast: the root owns everything.
// Results: member r receives the elements [want[r], want[r+1]) into `out`
// (want: size+1 non-decreasing bounds, want[size] == total), or, with want
// empty, all of them. The agent sends a chunk's payload only to the members
// whose range overlaps it (the others get a header-only RESULT that keeps
// their window moving). Reduce to root: want = 0 up to root, total after;
// reduce-scatter: the prefix sums of the receive counts.
// Tree groups (TreeJoin): the vector is in the tree's placement order
// (leaves in index order, each leaf's members in rank order), `want`
// bounds this leaf's members only (size + 1 non-decreasing, anywhere in
// the vector; a member at a leaf whose members want nothing of the call has
// an empty range), `leaf_want` the leaves' (leaves + 1 bounds from 0 to
// `total`; empty: every leaf wants everything), and every member sends the
// whole chunk to reduce. A forwarded call's pieces of one leaf's members
// tile one contiguous range of the vector. A chunk's payload goes up only
// to the leaves whose leaf_want range overlaps it.
// Failure semantics as for allreduce: Ok only when every wanted element
// arrived; on failure `in` is never modified and `out` is unspecified
// unless it overlaps `in` (then results are staged, `in` stays intact).
struct RoutedCall {
  enum class Kind { kReduce, kForward };
  Kind kind = Kind::kReduce;
  Dtype dtype = Dtype::kUint8;
  Op op = Op::kSum;  // kReduce only
  size_t total = 0;
  const void* in = nullptr;
  size_t in_begin = 0, in_end = 0;  // kForward only (kReduce: [0, total))
  void* out = nullptr;
  std::vector<size_t> want;
  std::vector<size_t> leaf_want;  // tree groups only (see above)
  // This member's wanted range [*begin, *end) (all of it when want is empty).
  void wanted(int rank, size_t* begin, size_t* end) const;
};

struct ClientCounters {
  uint64_t bytes_sent = 0;      // payload bytes contributed
  uint64_t bytes_received = 0;  // result payload bytes received
  uint64_t chunks_sent = 0;
  uint64_t chunks_received = 0;
  uint64_t allreduces = 0;  // completed successfully
  uint64_t failures = 0;    // allreduce/join calls that failed
  uint64_t busy = 0;        // allreduce calls the agent refused as busy (group still usable)
  uint64_t keepalives = 0;  // WAITING taken for a call in progress (another member was late)
};

// How far, by default, the agent's WAITING keepalives may extend a call
// past its own bound (AggClient::setWaitLimit): the MPI layer's default
// coll_switchagg_stall_timeout.
inline constexpr int64_t kDefaultWaitLimitMs = 300000;

// A group that spans several leaf agents of a tree (docs/offload.md
// "Trees"): each member joins the leaf agent of its node with size/rank
// among the group's members there, and says where the leaf's part goes: the
// parent (spine) agent's lease token and this leaf's place among the
// group's leaves (every member of one leaf says the same). Allreduce
// results are reduced in rank order within each leaf and leaves in index
// order; routed calls go through the tree too (RoutedCall's tree fields)
// when the leaf agent serves them (else routedSupported() is false).
struct TreeJoin {
  std::string parent_token_hex;  // the job's lease token at the parent agent
  uint32_t leaf_index = 0;       // this leaf among the group's leaves (map order)
  uint32_t leaves = 0;           // leaves the group spans (>= 2)
};

class AggGroup;

class AggClient {
 public:
  static constexpr int64_t kDrainMs = 1000;

  // Connects to the agent's data plane ("host:port", SWITCHAGG_AGENT) and
  // checks the lease token (32 hex chars, SWITCHAGG_LEASE) with a HELLO
  // round trip, all within timeout_ms. kInvalidArgument: bad address or
  // token syntax; kDenied: token unknown or expired; kPeerFailed/kTimeout:
  // agent unreachable.
  static Result<std::unique_ptr<AggClient>> connect(const std::string& agent_address,
                                                    const std::string& token_hex,
                                                    int64_t timeout_ms);
  ~AggClient();
  AggClient(const AggClient&) = delete;
  AggClient& operator=(const AggClient&) = delete;

  const AgentInfo& agent() const;
  bool supports(Dtype dtype, Op op) const;

  // Collective over the group's members: each calls join with the same
  // group_id and size and its own rank; returns when all have joined (or
  // the agent refused, or timeout_ms passed). window_request 0 = as many
  // slots as the lease has (members' smallest nonzero request wins); the
  // group takes them from the lease only while one of its calls runs.
  // The group id must be unique among the lease's live groups (e.g. derived
  // from the communicator and agreed by its members).
  // With `tree`, the group is this leaf's part of a tree group (TreeJoin);
  // a leaf agent that predates trees or has no parent refuses it (never
  // retried as a plain group).
  Result<std::unique_ptr<AggGroup>> join(uint64_t group_id, int size, int rank, int64_t timeout_ms,
                                         uint32_t window_request = 0,
                                         const TreeJoin* tree = nullptr);

  // UCX transports of the connection, e.g. "tcp/lo" (logs, benchmarks).
  std::string transports() const;
  // One round of progress on the client's worker outside any call (the
  // component drives it from Open MPI's progress engine); events seen.
  int progress();
  // The connection's UCX worker, for the client's whole life (StripedGroup
  // sleeps on all its stripes' workers at once: ucx::Worker::waitAny).
  ucx::Worker* worker() const;
  bool failed() const;                     // the connection is dead
  const Status& failure() const;           // why (Ok while not failed)
  const ClientCounters& counters() const;  // totals over all groups
  // A call whose chunks the agent says still wait for other members
  // (WAITING: a member late, docs/agent-protocol.md "Waiting members") runs
  // on past its timeout_ms, until timeout_ms after the last WAITING, but
  // never more than limit_ms past its own bound. 0: WAITING extends
  // nothing (every call ends at its timeout); above INT64_MAX / 4: no
  // limit but the agent's (data.member_timeout). Default kDefaultWaitLimitMs.
  void setWaitLimit(int64_t limit_ms);

  struct Impl;

 private:
  friend class AggGroup;
  explicit AggClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class AggGroup {
 public:
  ~AggGroup();  // leaves the group if still usable (bounded by kDrainMs)
  AggGroup(const AggGroup&) = delete;
  AggGroup& operator=(const AggGroup&) = delete;

  const GroupInfo& info() const;
  bool supports(Dtype dtype, Op op) const;

  // recv[i] = op over members of send[i], i < count. send == recv allowed
  // (MPI_IN_PLACE). Streams slot_bytes chunks with `window` in flight.
  // Failure semantics: see the top of this file.
  Status allreduce(Dtype dtype, Op op, const void* send, void* recv, size_t count,
                   int64_t timeout_ms);

  // A routed call (RoutedCall above): reduce to one member, reduce-scatter,
  // allgather, bcast. kUnsupported (a decline: nothing sent, group usable)
  // when the group's agent predates routed calls (routed() false) or does
  // not reduce the pair.
  Status routed(const RoutedCall& call, int64_t timeout_ms);
  // Every member's JOIN and the agent understood routed calls.
  bool routedSupported() const;

  // Leaves the group (members leave collectively, e.g. at communicator
  // free). The group is unusable afterwards.
  Status leave(int64_t timeout_ms);

  bool usable() const;
  const Status& failure() const;           // first failure (Ok while usable)
  const ClientCounters& counters() const;  // this group only
  // The deadline of the call in progress begun with bound `bound_ms` (its
  // start + timeout_ms): bound_ms, or later while the agent's WAITING says
  // it waits for other members (AggClient::setWaitLimit).
  int64_t deadline(int64_t bound_ms, int64_t timeout_ms) const;

  struct State;

 private:
  friend class AggClient;
  friend class StripedGroup;
  AggGroup(AggClient::Impl* client, std::unique_ptr<State> state);
  // allreduce in three steps, so several groups can stream at once
  // (StripedGroup): start checks and sets the call up (a decline leaves the
  // group as it was), step sends what the window allows and never waits
  // (kInProgress until every result is in and every send has completed),
  // finish commits the in-place staging on success or fails the group
  // (leave + drain, as allreduce does).
  Status startCall(Dtype dtype, Op op, const void* send, void* recv, size_t count);
  Status startRouted(const RoutedCall& call);
  Status stepCall();
  Status finishCall(Status outcome);
  // For a call whose input is filled while it runs (StripedGroup's).
  void setInputReady(size_t elements);
  size_t resultsReady();
  AggClient::Impl* client_;
  std::unique_ptr<State> state_;
};

// Stripes: the element range stripe k of `stripes` gets out of `count`
// elements. Contiguous, in order, cut on element boundaries; the first
// count % stripes stripes get one element more; with fewer elements than
// stripes the last ones are empty (count 0).
struct StripeRange {
  size_t begin = 0;
  size_t count = 0;
};
StripeRange stripeOf(size_t count, size_t k, size_t stripes);

// Stripes in proportion to weights (the agents' link rates, so that stripes
// on unequal reducers end together): stripe k is [⌊count·S_k/S⌋,
// ⌊count·S_(k+1)/S⌋), S_k the sum of the weights before k and S their
// total. Contiguous, in order, every element once, each stripe within one
// element of its share. When the weights do not all differ from 0, are more
// than kMaxWeightedStripes or all equal, exactly stripeOf(count, k, K).
inline constexpr size_t kMaxWeightedStripes = 16;
StripeRange stripeOf(size_t count, size_t k, const std::vector<uint32_t>& weights);
// True when stripeOf cuts by these weights (not equal stripes).
bool stripesWeighted(const std::vector<uint32_t>& weights);

// One communicator's group at each of K agents (a job whose lease spans
// several agents, docs/offload.md "Stripes"): allreduce cuts the vector into
// K stripes (stripeOf), stripe k streams through group k, all stripes at
// once (one loop progresses every client's worker), bounded by timeout_ms.
// Ok only when every non-empty stripe succeeded; on any failure the other
// stripes are stopped too and every group is dead, with the failure
// semantics of AggGroup (send untouched, in-place input intact). K = 1 is
// exactly AggGroup::allreduce. Holds its clients, so they outlive the groups.
class StripedGroup {
 public:
  StripedGroup(std::vector<std::shared_ptr<AggClient>> clients,
               std::vector<std::unique_ptr<AggGroup>> groups);
  ~StripedGroup();  // groups first, then their clients
  StripedGroup(const StripedGroup&) = delete;
  StripedGroup& operator=(const StripedGroup&) = delete;

  size_t stripes() const { return groups_.size(); }
  // Cut calls in proportion to `weights` (one per stripe; stripeOf). Every
  // member of the groups must set the same weights before its first call
  // (the switch path takes rank 0's from the join's allgather); empty:
  // equal stripes (the default).
  void setWeights(std::vector<uint32_t> weights) { weights_ = std::move(weights); }
  const std::vector<uint32_t>& weights() const { return weights_; }
  // What a failure names for stripe k, in the message's "stripe k of K
  // (LABEL)": the switch path gives each agent's fabric map name and
  // address (a rail pool's "rail2 at 10.0.2.1:18515"). Empty: the index only.
  void setLabels(std::vector<std::string> labels) { labels_ = std::move(labels); }
  AggGroup& stripe(size_t k) { return *groups_[k]; }
  const AggGroup& stripe(size_t k) const { return *groups_[k]; }
  const GroupInfo& info() const { return groups_.front()->info(); }  // stripe 0's
  // For the cost model: stripe 0's, with the smallest window and slot any
  // stripe's agent granted (the slowest stripe ends the call).
  GroupInfo slowestInfo() const;
  bool supports(Dtype dtype, Op op) const;                           // every stripe's agent
  Status allreduce(Dtype dtype, Op op, const void* send, void* recv, size_t count,
                   int64_t timeout_ms);
  // A routed call cut into the same K stripes of `total` (each stripe's
  // agent routes its part); the failure semantics of allreduce.
  Status routed(const RoutedCall& call, int64_t timeout_ms);
  bool routedSupported() const;  // every stripe's group
  // allreduce in steps, for a caller that interleaves the stream with other
  // work (the switch path's node leaders): startCall returns kInProgress
  // once the stripes run (else the call's end: Ok for count 0, or the
  // decline/failure), stepCall steps every stripe once and progresses the
  // clients, never waits, and returns kInProgress until the call ended with
  // allreduce's outcome; the caller bounds it and calls abortCall(timeout)
  // past its deadline (kTimeout, every group failed, as allreduce does).
  Status startCall(Dtype dtype, Op op, const void* send, void* recv, size_t count);
  Status startRouted(const RoutedCall& call);  // a routed call in steps, as startCall
  Status stepCall();
  Status abortCall(int64_t timeout_ms);
  // The deadline of the call in progress begun with bound `bound_ms`: the
  // earliest of its running stripes' (AggGroup::deadline), so a stripe's
  // agent that falls silent ends the call at its own bound however long
  // another stripe's agent says it waits.
  int64_t deadline(int64_t bound_ms, int64_t timeout_ms) const;
  // A call whose input is still being written (the node leaders' pipeline):
  // after startCall only `send`'s first `elements` elements are read (until
  // this is called again with more; all by default). resultsReady(): the
  // elements [0, n) whose results are already in `recv` (0 for an in-place
  // call: its results are staged until the end).
  void setInputReady(size_t elements);
  size_t resultsReady();
  Status leave(int64_t timeout_ms);  // every group; the first failure
  bool usable() const;               // every group usable
  const Status& failure() const;  // the first failed call's, else a dead group's (Ok while usable)
  ClientCounters counters() const;  // summed over the stripes

 private:
  std::vector<std::shared_ptr<AggClient>> clients_;
  std::vector<std::unique_ptr<AggGroup>> groups_;
  std::vector<uint32_t> weights_;  // empty: equal stripes
  std::vector<std::string> labels_;  // setLabels()
  // st of stripe k, its message prefixed "stripe k of K (label): " (K > 1).
  Status stripeFailed(size_t k, const Status& st) const;
  std::string stripeName(size_t k) const;  // "k (label)" or "k"
  StripeRange range(size_t count, size_t k) const {
    return weights_.size() == groups_.size() ? stripeOf(count, k, weights_)
                                             : stripeOf(count, k, groups_.size());
  }
  Status endCall();  // finishes the stripes of the call in flight
  Status runToEnd(Status started, int64_t timeout_ms);  // steps a started call to its end
  Status resetCall(size_t count);  // a new call's state; the first dead group's failure
  // A routed call whose input and output overlap: its results are staged
  // here for all stripes and copied to routed_out_ only on success.
  std::vector<uint8_t> routed_staging_;
  uint8_t* routed_out_ = nullptr;
  Status failure_;  // the first failed call's
  // The call in flight: stripes started / ended, its failure or refusal.
  std::vector<uint8_t> running_, done_;
  size_t call_count_ = 0;
  Status call_failed_, call_busy_;
};

}  // namespace switchagg::agent
