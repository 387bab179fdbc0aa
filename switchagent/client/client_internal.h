// Private state of AggClient / AggGroup (data_client.h).
#pragma once

#include <array>
#include <map>
#include <memory>
#include <vector>

#include "switchagg/agent/data_client.h"
#include "switchagg/ucx/transport.h"

namespace switchagg::agent {

struct AggGroup::State {
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

  // One outstanding CONTRIB per slot: its request and header.
  std::vector<std::unique_ptr<ucx::Request>> slot_request;  // created on first use
  std::vector<uint8_t> slot_used;                           // a send was posted on it
  std::vector<std::array<uint8_t, wire::kMaxHeaderBytes>> slot_header;

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
  }

  void fail(Status st) {
    if (dead) return;
    dead = true;
    failure = std::move(st);
  }
};

struct AggClient::Impl {
  std::unique_ptr<ucx::Context> context;
  std::unique_ptr<ucx::Worker> worker;
  std::unique_ptr<ucx::Endpoint> ep;
  wire::Token token{};
  AgentInfo agent;
  ClientCounters counters;
  bool failed = false;
  Status failure;
  bool hello_done = false;
  Status hello_status;
  bool capacity_done = false;  // CAPACITY answered (or refused by an older agent)
  std::map<uint64_t, AggGroup::State*> groups;  // by group id

  void onMessage(const ucx::AmMessage& am);
  void onResult(AggGroup::State& g, const wire::Message& m);
  void fail(Status st);  // the connection is dead: every group with it
  bool broken() const { return failed || (ep && ep->failed()); }
  Status brokenStatus() const;
  // Sends a small control message and waits (bounded) until it left.
  Status sendControl(const wire::Message& m, int64_t timeout_ms);
  // Waits for `pending` sends to complete; closes the connection if they do
  // not within timeout_ms (so no send still reads a caller's buffer).
  void drain(std::vector<ucx::Request*> pending, int64_t timeout_ms);
};

int64_t clientNowMs();
// An allreduce's buffers: kInvalidArgument for a null one, a count too large,
// or send and recv overlapping without being equal (in place); else Ok.
Status checkBuffers(const void* send, const void* recv, size_t count, size_t esize);
// True when a routed call's input and this member's output memory overlap
// (its results must then be staged until the call succeeded).
bool routedOverlaps(const RoutedCall& call, int rank, size_t esize);
Status statusForReason(wire::Reason reason, bool abort, const std::string& text);

}  // namespace switchagg::agent
