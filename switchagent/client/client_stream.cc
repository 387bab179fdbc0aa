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
// RESULT, which frees the slot as any result does.
#include <algorithm>
#include <cstring>

#include "client_internal.h"
#include "switchagg/common/reduce.h"

namespace switchagg::agent {

using wire::Message;
using wire::MsgType;

// Of n members (or leaves) with wanted bounds `want` (n + 1 non-decreasing;
// empty: everyone wants everything), those whose range overlaps elements
// [c0, c1) of a routed call: contiguous but for empty ranges between them,
// which get a payload they ignore. false: none (a tree leaf's members may
// want nothing of a chunk).
static bool overlapping(const std::vector<size_t>& want, uint32_t n, size_t c0, size_t c1,
                        uint32_t* lo, uint32_t* hi) {
  if (want.empty()) {
    *lo = 0;
    *hi = n - 1;
    return true;
  }
  // lo: the first whose range ends after c0; hi: the last that starts before c1.
  const auto first = std::upper_bound(want.begin() + 1, want.end(), c0);
  const auto last = std::lower_bound(want.begin(), want.begin() + n, c1);
  if (first == want.end() || last == want.begin()) return false;
  *lo = static_cast<uint32_t>(first - (want.begin() + 1));
  *hi = static_cast<uint32_t>(last - want.begin()) - 1;
  return *lo <= *hi;
}

// The members that get the result of elements [c0, c1) (false: none).
static bool destinations(const AggGroup::State& g, size_t c0, size_t c1, uint32_t* lo,
                         uint32_t* hi) {
  return overlapping(g.want, static_cast<uint32_t>(g.info.size), c0, c1, lo, hi);
}

// Whether (dtype, op) gives the same bits in any operand order: integers
// (wrap-around arithmetic, min/max, logical and bitwise ops) and MINLOC/
// MAXLOC on integer values. Floats are rounded per step, so they always
// reduce in rank order.
static bool orderFree(Dtype d) {
  switch (d) {
    case Dtype::kFloat32:
    case Dtype::kFloat64:
    case Dtype::kFloatInt:
    case Dtype::kDoubleInt:
      return false;
    default:
      return true;
  }
}

// A reduced chunk whose only destination is this member, of an order-free
// pair: it keeps its own part (sends none, so its link carries what a
// ring's would) and combines the others' result with it on arrival.
static bool keepsOwn(const AggGroup::State& g, uint32_t lo, uint32_t hi) {
  // Not in a tree: the leaf's partial must hold every member's part.
  return g.mode == wire::kModeReduce && g.leaves == 0 && g.info.size > 1 && lo == hi &&
         lo == static_cast<uint32_t>(g.info.rank) && orderFree(g.dtype);
}
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
  if (g.mode == 0) {
    if (m.result_flags != 0) return bad("a routed result for an allreduce");
    std::memcpy(g.out + rel * g.chunk_elems * g.esize, m.payload, m.payload_bytes);
  } else {
    if (((m.result_flags & wire::kResultForward) != 0) != (g.mode == wire::kModeForward))
      return bad("forwarded and reduced chunks mixed up");
    // The part of the chunk this member wants, into `out` (which holds
    // [want_begin, want_end) of the vector).
    const size_t c0 = rel * g.chunk_elems, c1 = c0 + expect;
    const size_t lo = std::max(c0, g.want_begin), hi = std::min(c1, g.want_end);
    if (m.result_flags & wire::kResultNoPayload) {
      // Only a chunk this member forwarded whole comes back without its
      // payload: the member copies its own piece.
      const bool own = g.mode == wire::kModeForward && g.in_begin <= c0 && c1 <= g.in_end;
      if (lo < hi && !own) return bad("no payload for a chunk this member wants");
      if (lo < hi)
        std::memmove(g.out + (lo - g.want_begin) * g.esize, g.send + (lo - g.in_begin) * g.esize,
                     (hi - lo) * g.esize);
    } else if (lo < hi) {
      uint8_t* dst = g.out + (lo - g.want_begin) * g.esize;
      std::memcpy(dst, static_cast<const uint8_t*>(m.payload) + (lo - c0) * g.esize,
                  (hi - lo) * g.esize);
      uint32_t dlo = 0, dhi = 0;
      destinations(g, c0, c1, &dlo, &dhi);
      // The others' result, then this member's own part: (others) op mine.
      if (keepsOwn(g, dlo, dhi))
        (void)reduceInto(g.dtype, g.op, dst, g.send + lo * g.esize, hi - lo);
    }
  }
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
  g.beginCall(dtype, op, count, esize, chunk_elems);
  if (in_place) g.staging.resize(count * esize);
  g.send = static_cast<const uint8_t*>(send);
  g.recv = static_cast<uint8_t*>(recv);
  g.out = in_place ? g.staging.data() : g.recv;
  g.out_bytes = count * esize;
  g.mode = 0;
  g.want.clear();
  g.want_begin = 0;
  g.want_end = count;
  g.active = true;
  return Status::Ok();
}

void RoutedCall::wanted(int rank, size_t* begin, size_t* end) const {
  if (want.empty()) {
    *begin = 0;
    *end = total;
    return;
  }
  *begin = want[size_t(rank)];
  *end = want[size_t(rank) + 1];
}

// Wanted bounds: n + 1 non-decreasing, from 0 to the count (`whole`), or
// (a tree leaf's members) anywhere within the vector.
static bool boundsFit(const std::vector<size_t>& want, size_t n, size_t total, bool whole) {
  return want.empty() ||
         (want.size() == n + 1 && std::is_sorted(want.begin(), want.end()) &&
          want.back() <= total && (!whole || (want.front() == 0 && want.back() == total)));
}

// A routed call's shape: kInvalidArgument (a decline) unless the bounds,
// ranges and buffers are consistent for a group of `size` (a tree's leaf
// group: of `leaves` leaves).
static Status checkRouted(const RoutedCall& call, int size, int rank, size_t esize,
                          uint32_t leaves) {
  if (call.total > SIZE_MAX / esize) return Status(Code::kInvalidArgument, "routed: count too large");
  if (!boundsFit(call.want, size_t(size), call.total, leaves == 0))
    return Status(Code::kInvalidArgument,
                  "routed: the wanted bounds must be size + 1 non-decreasing from 0 to the count");
  if ((leaves == 0 && !call.leaf_want.empty()) || !boundsFit(call.leaf_want, leaves, call.total, true))
    return Status(Code::kInvalidArgument,
                  "routed: the leaves' wanted bounds must be leaves + 1 non-decreasing from 0 to "
                  "the count, in tree groups only");
  if (call.kind == RoutedCall::Kind::kForward) {
    if (call.in_begin > call.in_end || call.in_end > call.total)
      return Status(Code::kInvalidArgument, "routed: input piece outside the vector");
    if (call.in_begin < call.in_end && !call.in)
      return Status(Code::kInvalidArgument, "routed: null input");
  } else if (!call.in) {
    return Status(Code::kInvalidArgument, "routed: null input");
  }
  size_t b = 0, e = 0;
  call.wanted(rank, &b, &e);
  if (b < e && !call.out) return Status(Code::kInvalidArgument, "routed: null output");
  return Status::Ok();
}

// The input stays intact until every chunk was sent and the call succeeded.
bool routedOverlaps(const RoutedCall& call, int rank, size_t esize) {
  size_t b = 0, e = 0;
  call.wanted(rank, &b, &e);
  const size_t in_elems =
      call.kind == RoutedCall::Kind::kForward ? call.in_end - call.in_begin : call.total;
  const auto x = reinterpret_cast<uintptr_t>(call.in);
  const auto y = reinterpret_cast<uintptr_t>(call.out);
  const size_t xb = in_elems * esize, yb = (e - b) * esize;
  return xb && yb && x < y + yb && y < x + xb;
}

Status AggGroup::startRouted(const RoutedCall& call) {
  State& g = *state_;
  AggClient::Impl& c = *client_;
  const bool forward = call.kind == RoutedCall::Kind::kForward;
  if (c.broken()) return c.brokenStatus();
  if (g.dead) return g.failure;
  if (!g.routed_flag) return Status(Code::kUnsupported, "the agent predates routed calls");
  if (!forward && !supports(call.dtype, call.op))
    return Status(Code::kUnsupported, std::string("agent does not reduce ") +
                                          dtypeName(call.dtype) + "/" + opName(call.op));
  const size_t esize = dtypeSize(call.dtype);
  SWITCHAGG_RETURN_IF_ERROR(checkRouted(call, g.info.size, g.info.rank, esize, g.leaves));
  const size_t chunk_elems = g.info.slot_bytes / esize;
  if (chunk_elems == 0) return Status(Code::kUnsupported, "element larger than a slot");
  // A forwarded RESULT decodes with op kSum (its op byte is 0).
  g.beginCall(call.dtype, forward ? Op::kSum : call.op, call.total, esize, chunk_elems);
  g.mode = forward ? wire::kModeForward : wire::kModeReduce;
  g.in_begin = forward ? call.in_begin : 0;
  g.in_end = forward ? call.in_end : call.total;
  g.want = call.want;
  g.leaf_want = call.leaf_want;
  call.wanted(g.info.rank, &g.want_begin, &g.want_end);
  g.send = static_cast<const uint8_t*>(call.in);
  g.recv = static_cast<uint8_t*>(call.out);
  g.out_bytes = (g.want_end - g.want_begin) * esize;
  const bool stage = routedOverlaps(call, g.info.rank, esize);
  if (stage) g.staging.resize(g.out_bytes);
  g.out = stage ? g.staging.data() : g.recv;
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
    if (g.out != g.recv && g.out_bytes) std::memcpy(g.recv, g.staging.data(), g.out_bytes);
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

Status AggGroup::routed(const RoutedCall& call, int64_t timeout_ms) {
  if (call.total == 0) {
    State& g = *state_;
    if (client_->broken()) return client_->brokenStatus();
    if (g.dead) return g.failure;
    return g.routed_flag ? Status::Ok()
                         : Status(Code::kUnsupported, "the agent predates routed calls");
  }
  SWITCHAGG_RETURN_IF_ERROR(startRouted(call));
  return finishCall(stream(*client_, *state_, clientNowMs() + timeout_ms));
}

}  // namespace switchagg::agent
