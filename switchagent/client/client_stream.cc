// AggGroup::allreduce: streams the send buffer in chunks of the group's
// slot size, at most `window` in flight (chunk c goes to slot c % window
// once the result of chunk c - window came back: self-clocking, so the
// agent never holds more than the group's slots), and writes each result
// where it belongs as it arrives.
//
//   chunk:   0   1   2   3   4   5   6 ...     window W = 3
//   slot:    0   1   2   0   1   2   0
//   send 3 after RESULT 0, send 4 after RESULT 1, ...
//
// Contributions are sent straight from the caller's buffer (no copy);
// results are copied once from the message into recv (or, in place, into a
// staging buffer committed only on success).
//
// A routed call (startRouted) streams the same way, as CONTRIB_ROUTED: each
// chunk names the members that get its result (those whose wanted range
// overlaps it) and, forwarded, carries only this member's piece of it
// (maybe none). A member outside a chunk's destinations gets a header-only
// RESULT, which frees the slot as any result does. What the agent's frames
// do, the window's rule and a call's set-up and end: client_core.cc.
#include <algorithm>
#include <cstring>

#include "client_internal.h"

namespace switchagg::agent {

using wire::Message;
using wire::MsgType;

// Sends chunk `rel` of the current call; its slot's previous send must be done.
static Status sendChunk(AggClient::Impl& c, AggGroup::State& g, const uint8_t* send, size_t rel) {
  const uint64_t chunk = g.base + rel;
  const auto slot = static_cast<uint32_t>(chunk % g.info.window);
  Message m;
  m.type = g.mode ? MsgType::kContribRouted : MsgType::kContrib;
  m.token = c.token;
  m.group_id = g.info.group_id;
  m.rank = static_cast<uint32_t>(g.info.rank);
  m.slot = slot;
  m.chunk = chunk;
  m.call_elems = g.count;
  m.dtype = g.dtype;
  m.op = g.op;
  m.count = static_cast<uint32_t>(std::min(g.chunk_elems, g.count - rel * g.chunk_elems));
  const uint8_t* data = send + rel * g.chunk_elems * g.esize;
  size_t bytes = m.count * g.esize;
  if (g.mode) {
    const size_t c0 = rel * g.chunk_elems, c1 = c0 + m.count;
    m.mode = g.mode;
    if (!destinations(g, c0, c1, &m.dest_lo, &m.dest_hi)) {
      m.route_flags = wire::kRouteNoDest;  // a tree leaf's members want none of it
      m.dest_lo = m.dest_hi = 0;
    }
    // Trees: which leaves want it (checkRouted: at least one does).
    if (g.leaves) {
      m.route_flags |= wire::kRouteUp;
      (void)overlapping(g.leaf_want, g.leaves, c0, c1, &m.up_lo, &m.up_hi);
    }
    if (keepsOwn(g, m.dest_lo, m.dest_hi)) {
      data = nullptr;
      bytes = 0;
    } else if (g.mode == wire::kModeForward) {
      // Only this member's piece of the chunk (none: a header alone).
      const size_t lo = std::max(c0, g.in_begin), hi = std::min(c1, g.in_end);
      data = lo < hi ? send + (lo - g.in_begin) * g.esize : nullptr;
      bytes = lo < hi ? (hi - lo) * g.esize : 0;
      m.piece_offset = lo < hi ? static_cast<uint32_t>(lo - c0) : 0;
    }
  }
  const wire::Frame f = wire::encode(m);
  std::memcpy(g.slot_header[slot].data(), f.header.data(), f.header_bytes);
  SWITCHAGG_RETURN_IF_ERROR(c.ep->amSend(wire::kAmToAgent, g.slot_header[slot].data(),
                                         f.header_bytes, data, bytes, *g.slot_request[slot]));
  ++g.counters.chunks_sent;
  g.counters.bytes_sent += bytes;
  ++c.counters.chunks_sent;
  c.counters.bytes_sent += bytes;
  return Status::Ok();
}

// The slot's request object and whether its previous send still runs.
static bool slotSending(AggGroup::State& g, size_t slot) {
  if (!g.slot_request[slot]) g.slot_request[slot] = std::make_unique<ucx::Request>();
  return g.slot_used[slot] && !g.slot_request[slot]->done();
}

static Status sendNext(AggClient::Impl& c, AggGroup::State& g, size_t slot) {
  SWITCHAGG_RETURN_IF_ERROR(sendChunk(c, g, g.send, g.next_send));
  g.slot_used[slot] = 1;
  ++g.next_send;
  return Status::Ok();
}

// Sends every chunk the window allows; waits for a slot's previous send to
// complete locally if it has not yet (its result is back, so it is about to).
static Status pump(AggClient::Impl& c, AggGroup::State& g, int64_t deadline) {
  size_t slot = 0;
  while (g.windowAdmits(&slot)) {
    if (slotSending(g, slot)) {
      ucx::Request& prev = *g.slot_request[slot];
      Status st = c.worker->waitUntil([&] { return prev.done() || c.broken() || g.dead; },
                                      deadline - clientNowMs());
      if (!st.ok()) return st;
      if (c.broken()) return c.brokenStatus();
      if (g.dead) return g.failure;
      if (g.refused) break;
    }
    SWITCHAGG_RETURN_IF_ERROR(sendNext(c, g, slot));
  }
  return Status::Ok();
}

// Bounded by timeout_ms from the start, or (docs/agent-protocol.md
// "Waiting members") by timeout_ms from the agent's last WAITING for this
// call, within the client's wait limit: a member late for I/O does not fail
// the others, an agent that falls silent still ends the call at its bound.
static Status stream(AggClient::Impl& c, AggGroup::State& g, int64_t timeout_ms) {
  const int64_t start = clientNowMs(), bound = start + timeout_ms;
  int64_t deadline = bound;
  for (;;) {
    Status st = pump(c, g, deadline);
    if (st.code() == Code::kTimeout) {
      deadline = g.deadline(bound, timeout_ms, c.wait_limit_ms);
      if (clientNowMs() < deadline) continue;
      return g.timedOut(clientNowMs() - start);
    }
    SWITCHAGG_RETURN_IF_ERROR(st);
    if (g.n_received == g.n_chunks || g.refused) break;
    const size_t seen = g.n_received;
    st = c.worker->waitUntil(
        [&] { return g.n_received != seen || g.refused || g.dead || c.broken(); },
        deadline - clientNowMs());
    if (c.broken()) return c.brokenStatus();
    if (g.dead) return g.failure;
    if (st.code() == Code::kTimeout) {
      deadline = g.deadline(bound, timeout_ms, c.wait_limit_ms);
      if (clientNowMs() < deadline) continue;
      return g.timedOut(clientNowMs() - start);
    }
    if (!st.ok()) return st;
  }
  // Every result is in; the sends' local completions are imminent. Wait so
  // none still reads the caller's buffer after we return.
  std::vector<ucx::Request*> pending;
  for (size_t i = 0; i < g.slot_request.size(); ++i)
    if (g.slot_used[i]) pending.push_back(g.slot_request[i].get());
  const Status st = c.worker->waitAll(pending, std::max<int64_t>(deadline - clientNowMs(), 1));
  if (st.code() == Code::kTimeout) return st;
  // Refused (no slots free when the call began at the agent): no result
  // will come; the agent drops the call's chunks and the group lives on.
  if (g.refused) return busyStatus();
  return Status::Ok();
}

// Why the group cannot take a call now (dead, its connection broken, or the
// pair not reduced), or Ok.
static Status readyFor(const AggGroup& group, AggClient::Impl& c, const AggGroup::State& g,
                       Dtype dtype, Op op) {
  if (c.broken()) return c.brokenStatus();
  if (g.dead) return g.failure;
  if (!group.supports(dtype, op))
    return Status(Code::kUnsupported,
                  std::string("agent does not reduce ") + dtypeName(dtype) + "/" + opName(op));
  return Status::Ok();
}

Status AggGroup::startCall(Dtype dtype, Op op, const void* send, void* recv, size_t count) {
  State& g = *state_;
  SWITCHAGG_RETURN_IF_ERROR(readyFor(*this, *client_, g, dtype, op));
  return g.prepareCall(dtype, op, send, recv, count);
}

Status AggGroup::startRouted(const RoutedCall& call) {
  State& g = *state_;
  AggClient::Impl& c = *client_;
  if (c.broken()) return c.brokenStatus();
  if (g.dead) return g.failure;
  return g.prepareRouted(call);
}

Status AggGroup::stepCall() {
  State& g = *state_;
  AggClient::Impl& c = *client_;
  if (c.broken()) return c.brokenStatus();
  if (g.dead) return g.failure;
  size_t slot = 0;
  while (g.windowAdmits(&slot)) {
    if (slotSending(g, slot)) break;  // next round
    SWITCHAGG_RETURN_IF_ERROR(sendNext(c, g, slot));
  }
  // Refused (busy): no result will come; done once our sends completed.
  if (!g.refused && g.n_received != g.n_chunks)
    return Status(Code::kInProgress, "results outstanding");
  for (size_t i = 0; i < g.slot_request.size(); ++i)
    if (g.slot_used[i] && !g.slot_request[i]->done())
      return Status(Code::kInProgress, "sends completing");
  if (g.refused) return busyStatus();
  return Status::Ok();
}

void AggGroup::setInputReady(size_t elements) {
  state_->setInputReady(elements);
}

size_t AggGroup::resultsReady() {
  return state_->resultsReady();
}

Status AggGroup::finishCall(Status outcome) {
  State& g = *state_;
  AggClient::Impl& c = *client_;
  const Status ended = g.endCall(outcome, c.counters);
  if (outcome.ok() || outcome.code() == Code::kBusy) return ended;
  // Tell the agent (so the other members are aborted now, not after the
  // agent's member timeout), then make sure no send still reads `send`.
  if (!g.agent_knows && !c.broken()) (void)leave(AggClient::kDrainMs);
  std::vector<ucx::Request*> pending;
  for (size_t i = 0; i < g.slot_request.size(); ++i)
    if (g.slot_used[i] && !g.slot_request[i]->done()) pending.push_back(g.slot_request[i].get());
  c.drain(pending, AggClient::kDrainMs);
  return g.failure;
}

Status AggGroup::allreduce(Dtype dtype, Op op, const void* send, void* recv, size_t count,
                           int64_t timeout_ms) {
  if (count == 0) return readyFor(*this, *client_, *state_, dtype, op);
  SWITCHAGG_RETURN_IF_ERROR(startCall(dtype, op, send, recv, count));
  return finishCall(stream(*client_, *state_, timeout_ms));
}

Status AggGroup::routed(const RoutedCall& call, int64_t timeout_ms) {
  if (call.total == 0) {
    State& g = *state_;
    if (client_->broken()) return client_->brokenStatus();
    if (g.dead) return g.failure;
    return g.routed_flag ? Status::Ok()
                         : Status(Code::kUnsupported, "the agent predates routed calls");
  }
  SWITCHAGG_RETURN_IF_ERROR(startRouted(call));
  return finishCall(stream(*client_, *state_, timeout_ms));
}

}  // namespace switchagg::agent
