// The data client's protocol state without its transport (no UCX): what a
// group's call looks like, what the agent's frames do to the connection and
// its groups, which chunk the window admits next, and how a call ends at the
// group. AggClient::Impl and AggGroup::State (client_internal.h) add the
// UCX endpoint and the per-slot send requests on top; tests/fuzz/
// fuzz_client.cc drives this part alone with arbitrary agent frames.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "switchagg/agent/data_client.h"

namespace switchagg::agent {

int64_t clientNowMs();  // the steady clock, ms

struct GroupCore {
  GroupInfo info;
  bool acked = false;        // JOIN_ACK arrived
  bool dead = false;         // failed or left; `failure` says why
  bool agent_knows = false;  // the agent dropped the group (ABORT/ERROR) or we sent LEAVE
  Status failure;
  wire::Reason failure_reason = wire::Reason::kNone;  // of the agent's ERROR/ABORT, if that
  bool busy_flag = true;  // JOIN says kJoinFlagBusy (cleared for an agent that predates it)
  bool routed_flag = true;  // JOIN says kJoinFlagRouted (cleared for an agent that predates it)
  uint32_t leaves = 0;      // a tree group's leaves (0: not a tree's)
  ClientCounters counters;
  uint64_t next_chunk = 0;  // absolute sequence number of the next call's first chunk

  // The call in progress (active == true).
  bool active = false;
  bool refused = false;  // the agent answered ERROR(busy) for this call
  // The agent's last WAITING for a chunk of this call still in flight
  // (docs/agent-protocol.md "Waiting members"): when it came (clientNowMs;
  // 0: none this call), how many members the chunk lacked, the lowest.
  int64_t waiting_ms = 0;
  uint32_t waiting_missing = 0, waiting_rank = 0;
  Dtype dtype = Dtype::kInt32;
  Op op = Op::kSum;
  size_t count = 0, esize = 0, chunk_elems = 0, n_chunks = 0, next_send = 0, n_received = 0;
  size_t ready_chunks = 0;     // chunks whose input may be read (setInputReady)
  size_t results_prefix = 0;   // chunks [0, results_prefix) received
  uint64_t base = 0;
  const uint8_t* send = nullptr;  // the caller's input
  uint8_t* recv = nullptr;        // the caller's output
  uint8_t* out = nullptr;         // recv, or `staging` for in-place calls
  size_t out_bytes = 0;           // bytes of recv the call writes
  // A routed call (startRouted): its mode (kModeReduce/kModeForward; 0 for
  // an allreduce), this member's input piece [in_begin, in_end) (forward;
  // `send` points at in_begin), the members' wanted bounds (empty: all)
  // and this member's wanted range [want_begin, want_end), which `out` holds.
  uint8_t mode = 0;
  size_t in_begin = 0, in_end = 0;
  std::vector<size_t> want;
  size_t want_begin = 0, want_end = 0;
  std::vector<size_t> leaf_want;  // trees: the leaves' wanted bounds (empty: all)
  std::vector<uint8_t> received;  // per chunk of the call
  std::vector<uint8_t> staging;   // in-place results until the call succeeds

  // Sets the call up (every field both kinds of call share).
  void beginCall(Dtype d, Op o, size_t elems, size_t element_size, size_t chunk) {
    dtype = d;
    op = o;
    count = elems;
    esize = element_size;
    chunk_elems = chunk;
    n_chunks = (elems + chunk - 1) / chunk;
    base = next_chunk;
    next_send = 0;
    n_received = 0;
    received.assign(n_chunks, 0);
    ready_chunks = n_chunks;
    results_prefix = 0;
    refused = false;
    waiting_ms = 0;
  }

  void fail(Status st) {
    if (dead) return;
    dead = true;
    failure = std::move(st);
  }

  bool supports(Dtype d, Op o) const { return info.caps.supports(d, o); }
  // An allreduce (count > 0) or routed call set up on a live, acked group:
  // checks the buffers / the call's shape (kInvalidArgument, kUnsupported:
  // declines that leave the group as it was), then sets the call up.
  Status prepareCall(Dtype dtype, Op op, const void* send, void* recv, size_t count);
  Status prepareRouted(const RoutedCall& call);
  // The next chunk's slot, if the call and the window admit it now (not
  // refused, its input ready, the result of the chunk `window` back is in).
  bool windowAdmits(size_t* slot) const;
  // Partial input (a pipeline's producer): chunks wholly inside the first
  // `elements` may be sent (stripes.cc). Partial results: the elements of
  // the leading run of received chunks, already in the caller's output (0
  // while staged: nothing is there before the call ends).
  void setInputReady(size_t elements);
  size_t resultsReady();
  // The call's deadline: `bound_ms` (its own bound, `timeout_ms` after it
  // began), or past it while the agent keeps saying the call waits for
  // other members: timeout_ms after the last WAITING, never past
  // bound_ms + limit_ms (the wait limit; 0: WAITING extends nothing).
  int64_t deadline(int64_t bound_ms, int64_t timeout_ms, int64_t limit_ms) const;
  // Why a call past its deadline failed: the time waited and, if the agent
  // said so, the members it still waited for.
  Status timedOut(int64_t waited_ms) const;
  // The call's end at the group, whatever the transport still has to do:
  // Ok commits in-place staging; kBusy leaves the group usable; any other
  // outcome fails the group (returns its failure). Counts into `client`.
  Status endCall(Status outcome, ClientCounters& client);
};

struct ClientCore {
  virtual ~ClientCore() = default;

  wire::Token token{};
  AgentInfo agent;
  ClientCounters counters;
  bool failed = false;
  Status failure;
  bool hello_done = false;
  Status hello_status;
  bool capacity_done = false;  // CAPACITY answered (or refused by an older agent)
  // How far WAITING may extend a call past its own bound (setWaitLimit).
  int64_t wait_limit_ms = kDefaultWaitLimitMs;
  std::map<uint64_t, GroupCore*> groups;  // by group id

  // One message from the agent (its active-message header and data).
  void onFrame(const void* header, size_t header_length, const void* data, size_t length);
  void onResult(GroupCore& g, const wire::Message& m);
  void fail(Status st);  // the connection is dead: every group with it

 protected:
  // The transport's part of fail(): give the connection up (no-op here).
  virtual void abandon() {}
};

// Of n members (or leaves) with wanted bounds `want` (n + 1 non-decreasing;
// empty: everyone wants everything), those whose range overlaps elements
// [c0, c1) of a routed call; false: none.
bool overlapping(const std::vector<size_t>& want, uint32_t n, size_t c0, size_t c1, uint32_t* lo,
                 uint32_t* hi);
// The members that get the result of elements [c0, c1) (false: none).
bool destinations(const GroupCore& g, size_t c0, size_t c1, uint32_t* lo, uint32_t* hi);
// Whether this member keeps its own part of a reduced chunk whose
// destinations are [lo, hi] (sends none, combines on arrival).
bool keepsOwn(const GroupCore& g, uint32_t lo, uint32_t hi);
// An allreduce's buffers: kInvalidArgument for a null one, a count too large,
// or send and recv overlapping without being equal (in place); else Ok.
Status checkBuffers(const void* send, const void* recv, size_t count, size_t esize);
// True when a routed call's input and this member's output memory overlap
// (its results must then be staged until the call succeeded).
bool routedOverlaps(const RoutedCall& call, int rank, size_t esize);
// Striped calls (stripes.cc; stripeOf in data_client.h). The same routed
// call on the stripe [S, S + n) of the vector: input piece, wanted bounds
// and this rank's output (`out`: its whole wanted range) cut to it.
RoutedCall stripeRoutedCall(const RoutedCall& call, int rank, size_t S, size_t n, size_t esize,
                            uint8_t* out);
// Of the caller's first `elements` ready, those of stripe r (its own count).
size_t stripeInputReady(size_t elements, const StripeRange& r);
// The leading elements of a striped call whose results are in: stripes in
// order, skipping empty and finished ones, up to the first still running
// (stripe_ready(k): its own resultsReady) or not started (none of it).
size_t stripedResultsReady(size_t count, const std::vector<StripeRange>& ranges,
                           const std::vector<uint8_t>& running, const std::vector<uint8_t>& done,
                           const std::function<size_t(size_t)>& stripe_ready);
Status statusForReason(wire::Reason reason, bool abort, const std::string& text);
Status busyStatus();

}  // namespace switchagg::agent
