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
#include <algorithm>
#include <cstring>

#include "client_internal.h"

namespace switchagg::agent {

using wire::Message;
using wire::MsgType;

void AggClient::Impl::onResult(AggGroup::State& g, const Message& m) {
  auto bad = [&](const char* why) {
    g.fail(Status(Code::kProtocol, std::string("invalid RESULT from the agent: ") + why));
  };
  if (!g.active) return bad("no allreduce in progress");
  if (m.chunk < g.base || m.chunk - g.base >= g.n_chunks) return bad("chunk outside this call");
  const size_t rel = static_cast<size_t>(m.chunk - g.base);
  if (rel >= g.next_send || g.received[rel]) return bad("chunk not in flight");
  const size_t expect = std::min(g.chunk_elems, g.count - rel * g.chunk_elems);
  if (m.slot != m.chunk % g.info.window || m.count != expect || m.call_elems != g.count ||
      m.dtype != g.dtype || m.op != g.op)
    return bad("slot, count, dtype or op differ from the contribution");
  std::memcpy(g.out + rel * g.chunk_elems * g.esize, m.payload, m.payload_bytes);
  g.received[rel] = 1;
  ++g.n_received;
  ++g.counters.chunks_received;
  g.counters.bytes_received += m.payload_bytes;
  ++counters.chunks_received;
  counters.bytes_received += m.payload_bytes;
}

Status checkBuffers(const void* send, const void* recv, size_t count, size_t esize) {
  if (!send || !recv || count > SIZE_MAX / esize)
    return Status(Code::kInvalidArgument, "allreduce: null buffer or count too large");
  const auto x = reinterpret_cast<uintptr_t>(send);
  const auto y = reinterpret_cast<uintptr_t>(recv);
  const size_t bytes = count * esize;
  if (x != y && x < y + bytes && y < x + bytes)
    return Status(Code::kInvalidArgument, "allreduce: send and recv overlap without being equal");
  return Status::Ok();
}

// Sends chunk `rel` of the current call; its slot's previous send must be done.
static Status sendChunk(AggClient::Impl& c, AggGroup::State& g, const uint8_t* send, size_t rel) {
  const uint64_t chunk = g.base + rel;
  const auto slot = static_cast<uint32_t>(chunk % g.info.window);
  Message m;
  m.type = MsgType::kContrib;
  m.token = c.token;
  m.group_id = g.info.group_id;
  m.rank = static_cast<uint32_t>(g.info.rank);
  m.slot = slot;
  m.chunk = chunk;
  m.call_elems = g.count;
  m.dtype = g.dtype;
  m.op = g.op;
  m.count = static_cast<uint32_t>(std::min(g.chunk_elems, g.count - rel * g.chunk_elems));
  const wire::Frame f = wire::encode(m);
  std::memcpy(g.slot_header[slot].data(), f.header.data(), f.header_bytes);
  const size_t bytes = m.count * g.esize;
  SWITCHAGG_RETURN_IF_ERROR(c.ep->amSend(wire::kAmToAgent, g.slot_header[slot].data(),
                                         f.header_bytes, send + rel * g.chunk_elems * g.esize,
                                         bytes, *g.slot_request[slot]));
  ++g.counters.chunks_sent;
  g.counters.bytes_sent += bytes;
  ++c.counters.chunks_sent;
  c.counters.bytes_sent += bytes;
  return Status::Ok();
}

// The next chunk's slot, if the call and the window admit it now (not
// refused, its input ready, the result of the chunk `window` back is in).
static bool windowAdmits(const AggGroup::State& g, size_t* slot) {
  const size_t w = g.info.window;
  if (g.refused || g.next_send >= g.ready_chunks) return false;
  if (g.next_send >= w && !g.received[g.next_send - w]) return false;
  *slot = (g.base + g.next_send) % w;
  return true;
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

static Status busyStatus() {
  return Status(Code::kBusy, "agent busy: the lease's slots were in use when this call began");
}

// Sends every chunk the window allows; waits for a slot's previous send to
// complete locally if it has not yet (its result is back, so it is about to).
static Status pump(AggClient::Impl& c, AggGroup::State& g, int64_t deadline) {
  size_t slot = 0;
  while (windowAdmits(g, &slot)) {
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

static Status stream(AggClient::Impl& c, AggGroup::State& g, int64_t deadline) {
  for (;;) {
    SWITCHAGG_RETURN_IF_ERROR(pump(c, g, deadline));
    if (g.n_received == g.n_chunks || g.refused) break;
    const size_t seen = g.n_received;
    Status st = c.worker->waitUntil(
        [&] { return g.n_received != seen || g.refused || g.dead || c.broken(); },
        deadline - clientNowMs());
    if (c.broken()) return c.brokenStatus();
    if (g.dead) return g.failure;
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
  const size_t esize = dtypeSize(dtype);
  SWITCHAGG_RETURN_IF_ERROR(checkBuffers(send, recv, count, esize));
  const size_t chunk_elems = g.info.slot_bytes / esize;
  if (chunk_elems == 0) return Status(Code::kUnsupported, "element larger than a slot");

  const bool in_place = send == recv;
  g.dtype = dtype;
  g.op = op;
  g.count = count;
  g.esize = esize;
  g.chunk_elems = chunk_elems;
  g.n_chunks = (count + chunk_elems - 1) / chunk_elems;
  g.base = g.next_chunk;
  g.next_send = 0;
  g.n_received = 0;
  g.received.assign(g.n_chunks, 0);
  g.ready_chunks = g.n_chunks;
  g.results_prefix = 0;
  g.refused = false;
  if (in_place) g.staging.resize(count * esize);
  g.send = static_cast<const uint8_t*>(send);
  g.recv = static_cast<uint8_t*>(recv);
  g.out = in_place ? g.staging.data() : g.recv;
  g.active = true;
  return Status::Ok();
}

Status AggGroup::stepCall() {
  State& g = *state_;
  AggClient::Impl& c = *client_;
  if (c.broken()) return c.brokenStatus();
  if (g.dead) return g.failure;
  size_t slot = 0;
  while (windowAdmits(g, &slot)) {
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
  State& g = *state_;
  if (!g.active) return;
  g.ready_chunks = elements >= g.count ? g.n_chunks : elements / g.chunk_elems;
}

size_t AggGroup::resultsReady() {
  State& g = *state_;
  if (!g.active || g.out != g.recv) return 0;
  while (g.results_prefix < g.n_chunks && g.received[g.results_prefix]) ++g.results_prefix;
  return std::min(g.results_prefix * g.chunk_elems, g.count);
}

Status AggGroup::finishCall(Status outcome) {
  State& g = *state_;
  AggClient::Impl& c = *client_;
  g.active = false;
  // Also after a refusal: the agent skipped the call's whole chunk range.
  g.next_chunk += g.n_chunks;
  if (outcome.code() == Code::kBusy) {
    ++g.counters.busy;
    ++c.counters.busy;
    return outcome;  // nothing of ours is still being sent; the group stays usable
  }
  if (outcome.ok()) {
    if (g.out != g.recv) std::memcpy(g.recv, g.staging.data(), g.count * g.esize);
    ++g.counters.allreduces;
    ++c.counters.allreduces;
    return outcome;
  }
  ++g.counters.failures;
  ++c.counters.failures;
  g.fail(outcome);
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
  return finishCall(stream(*client_, *state_, clientNowMs() + timeout_ms));
}

}  // namespace switchagg::agent
