// Wire decoder: trusts nothing; every length is checked before it is read
// (the encoder and the layouts: wire.cc, wire_codec.h).
#include <cstring>

#include "switchagg/agent/wire.h"
#include "switchagg/common/reduce.h"
#include "wire_codec.h"

namespace switchagg::agent::wire {
namespace {

using codec::kTypeHeader;
using codec::Reader;

Reason decodeCaps(const uint8_t* p, size_t n, CapTable* caps) {
  if (n < 1) return Reason::kMalformed;
  const size_t entries = p[0];
  if (n != 1 + 4 * entries) return Reason::kMalformed;
  constexpr uint16_t kValidOps = static_cast<uint16_t>(((1u << (kNumOps + 1)) - 1) & ~1u);
  for (size_t e = 0; e < entries; ++e) {
    const uint8_t* q = p + 1 + 4 * e;
    const uint16_t mask = static_cast<uint16_t>(q[2] | (q[3] << 8));
    if (!isValidDtype(q[0]) || q[1] != 0 || mask == 0 || (mask & ~kValidOps))
      return Reason::kMalformed;
    if (caps->mask[q[0]]) return Reason::kMalformed;  // duplicate dtype entry
    caps->mask[q[0]] = mask;
  }
  return Reason::kNone;
}

Reason decodeText(const uint8_t* p, size_t n, std::string* text) {
  if (n > kMaxTextBytes) return Reason::kMalformed;
  for (size_t i = 0; i < n; ++i)
    if (p[i] < 0x20 || p[i] > 0x7e) return Reason::kMalformed;
  text->assign(reinterpret_cast<const char*>(p), n);
  return Reason::kNone;
}

Reason decodeChunk(Reader& r, const uint8_t* body, size_t body_bytes, Message* m) {
  const bool routed = m->type == MsgType::kContribRouted;
  m->rank = r.u32();
  m->slot = r.u32();
  m->chunk = r.u64();
  m->call_elems = r.u64();
  const uint8_t dtype = r.u8();
  const uint8_t op = r.u8();
  uint16_t reserved = 0;
  if (routed) {
    m->mode = r.u8();
    m->route_flags = r.u8();
  } else {
    reserved = r.u16();
  }
  m->count = r.u32();
  if (routed) {
    m->dest_lo = r.u32();
    m->dest_hi = r.u32();
    m->piece_offset = r.u32();
    const uint32_t up = r.u32();
    if (m->mode != kModeReduce && m->mode != kModeForward) return Reason::kMalformed;
    if (m->dest_lo > m->dest_hi || m->dest_hi >= kMaxGroupSize) return Reason::kMalformed;
    // Trees: the up-range (kRouteUp), and no destination at the leaf
    // (kRouteNoDest, only with an up-range: the destinations are elsewhere).
    if (m->route_flags & ~(kRouteUp | kRouteNoDest)) return Reason::kMalformed;
    if (m->route_flags & kRouteUp) {
      m->up_lo = up & 0xffff;
      m->up_hi = up >> 16;
      if (m->up_lo > m->up_hi || m->up_hi >= kMaxGroupSize) return Reason::kMalformed;
    } else if (up != 0 || m->route_flags != 0) {
      return Reason::kMalformed;
    }
    if ((m->route_flags & kRouteNoDest) && (m->dest_lo != 0 || m->dest_hi != 0))
      return Reason::kMalformed;
  } else if (m->type == MsgType::kResult) {
    m->result_flags = reserved;
    if (reserved & ~kResultKnownFlags) return Reason::kMalformed;
    reserved = 0;
  }
  if (reserved != 0) return Reason::kMalformed;
  const bool forward = routed ? m->mode == kModeForward : (m->result_flags & kResultForward) != 0;
  if (!isValidDtype(dtype)) return Reason::kBadDtypeOp;
  m->dtype = static_cast<Dtype>(dtype);
  if (forward) {
    // Forwarded, not reduced: any dtype, no op (the byte is 0).
    if (op != 0) return Reason::kMalformed;
  } else {
    if (!isValidOp(op)) return Reason::kBadDtypeOp;
    m->op = static_cast<Op>(op);
    if (!reduceSupported(m->dtype, m->op)) return Reason::kBadDtypeOp;
  }
  if (m->type == MsgType::kResult && m->rank != 0) return Reason::kMalformed;
  if (m->count == 0) return Reason::kMalformed;
  const uint64_t bytes = static_cast<uint64_t>(m->count) * dtypeSize(m->dtype);
  if (bytes > kMaxSlotBytes) return Reason::kOversize;
  if (m->call_elems < m->count) return Reason::kMalformed;
  if (routed && forward) {
    // The member's piece: whole elements inside the chunk (maybe none).
    const size_t esize = dtypeSize(m->dtype);
    if (body_bytes % esize != 0) return Reason::kMalformed;
    if (uint64_t(m->piece_offset) + body_bytes / esize > m->count) return Reason::kMalformed;
    if (body_bytes == 0 && m->piece_offset != 0) return Reason::kMalformed;
  } else {
    if (routed && m->piece_offset != 0) return Reason::kMalformed;
    const bool empty = m->type == MsgType::kResult && (m->result_flags & kResultNoPayload);
    // A routed reduce chunk's sole destination, and only it, may keep its
    // own part (no body).
    const bool may_skip = routed && m->route_flags == 0 && m->dest_lo == m->dest_hi &&
                          m->dest_lo == m->rank;
    if (body_bytes != (empty ? 0 : bytes) && !(may_skip && body_bytes == 0))
      return Reason::kMalformed;
  }
  m->payload = body_bytes ? body : nullptr;
  m->payload_bytes = body_bytes;
  return Reason::kNone;
}

Reason decodeFields(Reader& r, const uint8_t* body, size_t body_bytes, Message* m) {
  const bool has_body = carriesPayload(m->type) || m->type == MsgType::kHelloAck ||
                        m->type == MsgType::kJoinAck || m->type == MsgType::kJoin ||
                        m->type == MsgType::kAbort || m->type == MsgType::kError;
  if (!has_body && body_bytes != 0) return Reason::kMalformed;
  switch (m->type) {
    case MsgType::kHello:
      return Reason::kNone;
    case MsgType::kHelloAck:
      m->window = r.u32();
      m->slot_bytes = r.u32();
      if (m->window > kMaxWindow || m->slot_bytes == 0 || m->slot_bytes > kMaxSlotBytes)
        return Reason::kMalformed;
      return decodeCaps(body, body_bytes, &m->caps);
    case MsgType::kJoin:
    case MsgType::kJoinAck: {
      m->size = r.u32();
      m->rank = r.u32();
      m->window = r.u32();
      const uint32_t last = r.u32();
      if (m->size == 0 || m->size > kMaxGroupSize) return Reason::kMalformed;
      if (m->rank >= m->size) return Reason::kRankOutOfRange;
      if (m->window > kMaxWindow) return Reason::kMalformed;
      if (m->type == MsgType::kJoin) {
        m->flags = last;
        if ((last & ~kJoinKnownFlags) != 0) return Reason::kMalformed;
        if (!(last & kJoinFlagTree)) return body_bytes == 0 ? Reason::kNone : Reason::kMalformed;
        // A tree JOIN's body: the parent's token, this leaf's index, leaves.
        if ((last & kJoinFlagUplink) || body_bytes != kTreeJoinBodyBytes) return Reason::kMalformed;
        Reader b(body, body_bytes);
        b.bytes(m->parent_token.data(), kTokenBytes);
        m->tree_index = b.u32();
        m->tree_size = b.u32();
        if (m->tree_size < 2 || m->tree_size > kMaxGroupSize) return Reason::kMalformed;
        return m->tree_index < m->tree_size ? Reason::kNone : Reason::kRankOutOfRange;
      }
      m->slot_bytes = last;
      if (m->window == 0 || m->slot_bytes == 0 || m->slot_bytes > kMaxSlotBytes)
        return Reason::kMalformed;
      return decodeCaps(body, body_bytes, &m->caps);
    }
    case MsgType::kContrib:
    case MsgType::kResult:
    case MsgType::kContribRouted:
      return decodeChunk(r, body, body_bytes, m);
    case MsgType::kLeave:
      m->rank = r.u32();
      return r.u32() == 0 ? Reason::kNone : Reason::kMalformed;
    case MsgType::kCapacity:
      return r.u64() == 0 ? Reason::kNone : Reason::kMalformed;
    case MsgType::kCapacityAck:
      m->capacity.reduce_mbps = r.u32();
      m->capacity.link_mbps = r.u32();
      m->capacity.turnaround_us = r.u32();
      return r.u32() == 0 ? Reason::kNone : Reason::kMalformed;
    case MsgType::kWaiting:
      m->chunk = r.u64();
      m->count = r.u32();
      m->rank = r.u32();
      if (m->count == 0 || m->count > kMaxGroupSize || m->rank >= kMaxGroupSize)
        return Reason::kMalformed;
      return Reason::kNone;
    case MsgType::kAbort:
    case MsgType::kError: {
      const uint16_t reason = r.u16();
      if (r.u16() != 0 || r.u32() != 0) return Reason::kMalformed;
      if (reason == 0 || reason > kMaxReason) return Reason::kMalformed;
      m->reason = static_cast<Reason>(reason);
      if (m->type == MsgType::kError) m->chunk = r.u64();
      return decodeText(body, body_bytes, &m->text);
    }
  }
  return Reason::kBadType;
}

}  // namespace

Reason decode(const void* header, size_t header_bytes, const void* body, size_t body_bytes,
              Message* out) {
  *out = Message();
  const auto* h = static_cast<const uint8_t*>(header);
  if (!h || header_bytes < kCommonHeaderBytes) return Reason::kMalformed;
  if (body_bytes && !body) return Reason::kMalformed;
  Reader r(h, header_bytes);
  if (r.u32() != kMagic) return Reason::kMalformed;
  if (r.u8() != kVersion) return Reason::kVersion;
  const uint8_t type = r.u8();
  const bool known = type >= 1 && type <= kMaxMsgType;
  const uint16_t reserved = r.u16();
  // The token and group id of a type this side does not know are still read
  // (the common header is there), so the ERROR that answers it carries them
  // and a newer peer can tell its own request was refused.
  r.bytes(out->token.data(), kTokenBytes);
  out->group_id = r.u64();
  if (!known) return Reason::kBadType;
  if (reserved != 0) return Reason::kMalformed;
  if (header_bytes != kTypeHeader[type]) return Reason::kMalformed;
  out->type = static_cast<MsgType>(type);
  const Reason reason = decodeFields(r, static_cast<const uint8_t*>(body), body_bytes, out);
  if (reason != Reason::kNone) {
    out->payload = nullptr;
    out->payload_bytes = 0;
  }
  return reason;
}

Reason decodeFramed(const void* data, size_t bytes, Message* out) {
  const auto* p = static_cast<const uint8_t*>(data);
  if (!p || bytes < 2) return Reason::kMalformed;
  const size_t hlen = static_cast<size_t>(p[0]) | (static_cast<size_t>(p[1]) << 8);
  if (hlen > bytes - 2) return Reason::kMalformed;
  const size_t blen = bytes - 2 - hlen;
  return decode(p + 2, hlen, blen ? p + 2 + hlen : nullptr, blen, out);
}

}  // namespace switchagg::agent::wire
