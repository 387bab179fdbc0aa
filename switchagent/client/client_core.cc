// The data client's protocol state without its transport (client_core.h):
// the agent's frames, the window, a call's set-up and end at the group.
#include "client_core.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "switchagg/common/log.h"
#include "switchagg/common/reduce.h"

namespace switchagg::agent {

using wire::Message;
using wire::MsgType;
using wire::Reason;

int64_t clientNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Status statusForReason(Reason reason, bool abort, const std::string& text) {
  std::string msg = std::string(abort ? "agent aborted the group (" : "agent rejected (") +
                    wire::reasonName(reason) + ")" + (text.empty() ? "" : ": " + text);
  switch (reason) {
    case Reason::kBadToken:
      return Status(Code::kDenied, msg);
    case Reason::kNoResource:
      return Status(Code::kNoResource, msg);
    default:
      return Status(abort ? Code::kAborted : Code::kProtocol, msg);
  }
}

void ClientCore::fail(Status st) {
  if (!failed) {
    failed = true;
    failure = st;
    SA_DEBUG("agent-client", "connection failed: %s", st.toString().c_str());
  }
  // Given up on: its close is forced, cancelling sends still in flight (the
  // agent may be alive but stalled, so a graceful close would not finish).
  abandon();
  for (auto& [id, g] : groups) g->fail(st);
}

void ClientCore::onFrame(const void* header, size_t header_length, const void* data,
                         size_t length) {
  Message m;
  const Reason r = wire::decode(header, header_length, data, length, &m);
  if (r != Reason::kNone)
    return fail(Status(Code::kProtocol,
                       std::string("undecodable message from the agent: ") + wire::reasonName(r)));
  if (m.token != token) {
    // An agent that predates CAPACITY cannot read the token of a type it
    // does not know: its ERROR(bad_type) carries none. That answer, while
    // the question is open, means "no figures", not a broken agent.
    if (m.type == MsgType::kError && m.reason == Reason::kBadType && hello_done &&
        !capacity_done && m.token == wire::Token{}) {
      capacity_done = true;
      return;
    }
    return fail(Status(Code::kProtocol, "message from the agent carries another lease token"));
  }
  auto it = groups.find(m.group_id);
  GroupCore* g = it == groups.end() ? nullptr : it->second;
  switch (m.type) {
    case MsgType::kHelloAck:
      if (hello_done) return;
      agent.max_window = m.window;
      agent.slot_bytes = m.slot_bytes;
      agent.caps = m.caps;
      hello_done = true;
      hello_status = Status::Ok();
      return;
    case MsgType::kJoinAck:
      if (!g || g->acked || g->dead) return;
      if (m.size != static_cast<uint32_t>(g->info.size) ||
          m.rank != static_cast<uint32_t>(g->info.rank))
        return g->fail(Status(Code::kProtocol, "JOIN_ACK for another size or rank"));
      g->info.window = m.window;
      g->info.slot_bytes = m.slot_bytes;
      g->info.caps = m.caps;
      g->acked = true;
      return;
    case MsgType::kResult:
      if (g && !g->dead) onResult(*g, m);
      return;
    case MsgType::kWaiting:
      // A chunk of the call in progress, sent and not answered yet, still
      // waits for other members. Anything else (a call this member already
      // left, a chunk answered since, a group gone) is stale: ignored.
      if (g && !g->dead && g->active && m.chunk >= g->base && m.chunk - g->base < g->next_send &&
          !g->received[static_cast<size_t>(m.chunk - g->base)]) {
        g->waiting_ms = clientNowMs();
        g->waiting_missing = m.count;
        g->waiting_rank = m.rank;
        ++g->counters.keepalives;
        ++counters.keepalives;
      }
      return;
    case MsgType::kCapacityAck:
      agent.capacity = m.capacity;
      capacity_done = true;
      return;
    case MsgType::kAbort:
    case MsgType::kError:
      if (g && m.type == MsgType::kError && m.reason == Reason::kBusy) {
        // The agent refused the call in progress (no free slots right
        // then); the group lives on. One for an earlier call is stale.
        if (g->active && m.chunk >= g->base && m.chunk - g->base < g->n_chunks) g->refused = true;
        return;
      }
      if (g) {
        g->agent_knows = true;
        g->failure_reason = m.reason;
        return g->fail(statusForReason(m.reason, m.type == MsgType::kAbort, m.text));
      }
      if (!hello_done) {  // HELLO refused (group id 0, no group)
        hello_done = true;
        hello_status = statusForReason(m.reason, false, m.text);
      } else if (!capacity_done) {  // an agent that predates CAPACITY
        capacity_done = true;
      }
      return;
    default:
      return fail(Status(Code::kProtocol, "unexpected message type from the agent"));
  }
}


// Of n members (or leaves) with wanted bounds `want` (n + 1 non-decreasing;
// empty: everyone wants everything), those whose range overlaps elements
// [c0, c1) of a routed call: contiguous but for empty ranges between them,
// which get a payload they ignore. false: none (a tree leaf's members may
// want nothing of a chunk).
bool overlapping(const std::vector<size_t>& want, uint32_t n, size_t c0, size_t c1, uint32_t* lo,
                 uint32_t* hi) {
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
bool destinations(const GroupCore& g, size_t c0, size_t c1, uint32_t* lo, uint32_t* hi) {
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
bool keepsOwn(const GroupCore& g, uint32_t lo, uint32_t hi) {
  // Not in a tree: the leaf's partial must hold every member's part.
  return g.mode == wire::kModeReduce && g.leaves == 0 && g.info.size > 1 && lo == hi &&
         lo == static_cast<uint32_t>(g.info.rank) && orderFree(g.dtype);
}

void ClientCore::onResult(GroupCore& g, const Message& m) {
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


// The next chunk's slot, if the call and the window admit it now (not
// refused, its input ready, the result of the chunk `window` back is in).
bool GroupCore::windowAdmits(size_t* slot) const {
  const size_t w = info.window;
  if (refused || next_send >= ready_chunks) return false;
  if (next_send >= w && !received[next_send - w]) return false;
  *slot = (base + next_send) % w;
  return true;
}


int64_t GroupCore::deadline(int64_t bound_ms, int64_t timeout_ms, int64_t limit_ms) const {
  if (waiting_ms == 0 || limit_ms <= 0) return bound_ms;
  const int64_t cap = limit_ms > INT64_MAX / 4 ? INT64_MAX / 4 : bound_ms + limit_ms;
  return std::max(bound_ms, std::min(cap, waiting_ms + timeout_ms));
}

Status GroupCore::timedOut(int64_t waited_ms) const {
  std::string why = "wait timed out after " + std::to_string(waited_ms) + " ms";
  // A tree's leaf relays its parent's WAITING with rank = the leaf's member
  // count + the lowest missing leaf (docs/agent-protocol.md "Waiting
  // members", case 11).
  const auto size = static_cast<uint32_t>(info.size);
  if (waiting_ms && leaves > 0 && waiting_rank >= size)
    why += " (the leaf agent last said chunk waited at the parent for " +
           std::to_string(waiting_missing) + " leaf agent(s), leaf " +
           std::to_string(waiting_rank - size) + " first, " +
           std::to_string(clientNowMs() - waiting_ms) + " ms ago)";
  else if (waiting_ms)
    why += " (the agent last said chunk waited for " + std::to_string(waiting_missing) +
           " member(s), rank " + std::to_string(waiting_rank) + " first, " +
           std::to_string(clientNowMs() - waiting_ms) + " ms ago)";
  return Status(Code::kTimeout, why);
}

Status busyStatus() {
  return Status(Code::kBusy,
                "agent busy: the lease's slots or the agent port's credit were in use when this "
                "call began");
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

Status GroupCore::prepareCall(Dtype d, Op o, const void* send_buf, void* recv_buf, size_t elems) {
  const size_t element_size = dtypeSize(d);
  SWITCHAGG_RETURN_IF_ERROR(checkBuffers(send_buf, recv_buf, elems, element_size));
  const size_t chunk = info.slot_bytes / element_size;
  if (chunk == 0) return Status(Code::kUnsupported, "element larger than a slot");

  const bool in_place = send_buf == recv_buf;
  beginCall(d, o, elems, element_size, chunk);
  if (in_place) staging.resize(elems * element_size);
  send = static_cast<const uint8_t*>(send_buf);
  recv = static_cast<uint8_t*>(recv_buf);
  out = in_place ? staging.data() : recv;
  out_bytes = elems * element_size;
  mode = 0;
  want.clear();
  want_begin = 0;
  want_end = elems;
  active = true;
  return Status::Ok();
}

Status GroupCore::prepareRouted(const RoutedCall& call) {
  const bool forward = call.kind == RoutedCall::Kind::kForward;
  if (!routed_flag) return Status(Code::kUnsupported, "the agent predates routed calls");
  if (!forward && !supports(call.dtype, call.op))
    return Status(Code::kUnsupported, std::string("agent does not reduce ") +
                                          dtypeName(call.dtype) + "/" + opName(call.op));
  const size_t element_size = dtypeSize(call.dtype);
  SWITCHAGG_RETURN_IF_ERROR(checkRouted(call, info.size, info.rank, element_size, leaves));
  const size_t chunk = info.slot_bytes / element_size;
  if (chunk == 0) return Status(Code::kUnsupported, "element larger than a slot");
  // A forwarded RESULT decodes with op kSum (its op byte is 0).
  beginCall(call.dtype, forward ? Op::kSum : call.op, call.total, element_size, chunk);
  mode = forward ? wire::kModeForward : wire::kModeReduce;
  in_begin = forward ? call.in_begin : 0;
  in_end = forward ? call.in_end : call.total;
  want = call.want;
  leaf_want = call.leaf_want;
  call.wanted(info.rank, &want_begin, &want_end);
  send = static_cast<const uint8_t*>(call.in);
  recv = static_cast<uint8_t*>(call.out);
  out_bytes = (want_end - want_begin) * element_size;
  const bool stage = routedOverlaps(call, info.rank, element_size);
  if (stage) staging.resize(out_bytes);
  out = stage ? staging.data() : recv;
  active = true;
  return Status::Ok();
}

Status GroupCore::endCall(Status outcome, ClientCounters& client) {
  active = false;
  // Also after a refusal: the agent skipped the call's whole chunk range.
  next_chunk += n_chunks;
  if (outcome.code() == Code::kBusy) {
    ++counters.busy;
    ++client.busy;
    return outcome;  // nothing of ours is still being sent; the group stays usable
  }
  if (outcome.ok()) {
    if (out != recv && out_bytes) std::memcpy(recv, staging.data(), out_bytes);
    ++counters.allreduces;
    ++client.allreduces;
    return outcome;
  }
  ++counters.failures;
  ++client.failures;
  fail(outcome);
  return failure;
}

}  // namespace switchagg::agent
