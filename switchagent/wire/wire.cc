// Wire codec: fixed little-endian layouts written and read byte by byte
// (no struct punning, so alignment and padding never matter), and a decoder
// that trusts nothing: every length is checked before it is read.
#include "switchagg/agent/wire.h"

#include <cstring>

#include "switchagg/common/reduce.h"

namespace switchagg::agent::wire {
namespace {

class Writer {
 public:
  explicit Writer(uint8_t* p) : p_(p) {}
  void u8(uint8_t v) { p_[n_++] = v; }
  void u16(uint16_t v) {
    for (int i = 0; i < 2; ++i) u8(static_cast<uint8_t>(v >> (8 * i)));
  }
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) u8(static_cast<uint8_t>(v >> (8 * i)));
  }
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) u8(static_cast<uint8_t>(v >> (8 * i)));
  }
  void bytes(const uint8_t* b, size_t n) {
    std::memcpy(p_ + n_, b, n);
    n_ += n;
  }
  size_t size() const { return n_; }

 private:
  uint8_t* p_;
  size_t n_ = 0;
};

// Reads within [p, p+n); callers check the total length first.
class Reader {
 public:
  Reader(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  bool has(size_t k) const { return n_ - off_ >= k; }
  uint8_t u8() { return p_[off_++]; }
  uint16_t u16() {
    uint16_t v = 0;
    for (int i = 0; i < 2; ++i) v |= static_cast<uint16_t>(u8() << (8 * i));
    return v;
  }
  uint32_t u32() {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(u8()) << (8 * i);
    return v;
  }
  uint64_t u64() {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(u8()) << (8 * i);
    return v;
  }
  void bytes(uint8_t* out, size_t k) {
    std::memcpy(out, p_ + off_, k);
    off_ += k;
  }

 private:
  const uint8_t* p_;
  size_t n_;
  size_t off_ = 0;
};

constexpr size_t kTypeHeader[kMaxMsgType + 1] = {
    0,   // unused
    32,  // HELLO
    40,  // HELLO_ACK: window u32, slot_bytes u32
    48,  // JOIN: size, rank, window, flags
    48,  // JOIN_ACK: size, rank, window, slot_bytes
    64,  // CONTRIB: rank, slot, chunk u64, call_elems u64, dtype, op, rsv u16, count
    64,  // RESULT: same layout as CONTRIB
    40,  // LEAVE: rank, reserved
    40,  // ABORT: reason u16, rsv u16, rsv u32
    48,  // ERROR: reason u16, rsv u16, rsv u32, chunk u64
    40,  // CAPACITY: reserved u64
    48,  // CAPACITY_ACK: reduce_mbps, link_mbps, turnaround_us, reserved u32
    80,  // CONTRIB_ROUTED: CONTRIB's fields with mode u8 in op's pad, then
         // dest_lo, dest_hi, piece_offset, reserved u32
    48,  // WAITING: chunk u64, missing u32, lowest missing rank u32
};

void encodeChunkFields(Writer& w, const Message& m) {
  const bool routed = m.type == MsgType::kContribRouted;
  const bool forward = routed ? m.mode == kModeForward
                              : m.type == MsgType::kResult && (m.result_flags & kResultForward);
  w.u32(m.rank);
  w.u32(m.slot);
  w.u64(m.chunk);
  w.u64(m.call_elems);
  w.u8(static_cast<uint8_t>(m.dtype));
  w.u8(forward ? 0 : static_cast<uint8_t>(m.op));
  if (routed) {
    w.u8(m.mode);
    w.u8(m.route_flags);
  } else {
    w.u16(m.type == MsgType::kResult ? m.result_flags : 0);
  }
  w.u32(m.count);
  if (routed) {
    w.u32(m.dest_lo);
    w.u32(m.dest_hi);
    w.u32(m.piece_offset);
    w.u32((m.route_flags & kRouteUp) ? (m.up_lo | (m.up_hi << 16)) : 0);
  }
}

std::vector<uint8_t> encodeCaps(const CapTable& caps) {
  std::vector<uint8_t> out(1, 0);
  for (int d = 1; d <= kNumDtypes; ++d) {
    if (!caps.mask[d]) continue;
    out.push_back(static_cast<uint8_t>(d));
    out.push_back(0);
    out.push_back(static_cast<uint8_t>(caps.mask[d] & 0xff));
    out.push_back(static_cast<uint8_t>(caps.mask[d] >> 8));
    ++out[0];
  }
  return out;
}

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

const char* reasonName(Reason r) {
  static const char* const kNames[kMaxReason + 1] = {"none",
                                                     "bad_token",
                                                     "malformed",
                                                     "version",
                                                     "bad_type",
                                                     "bad_dtype_op",
                                                     "unknown_group",
                                                     "size_mismatch",
                                                     "rank_out_of_range",
                                                     "duplicate_join",
                                                     "no_resource",
                                                     "slot_out_of_range",
                                                     "chunk_out_of_window",
                                                     "duplicate_contribution",
                                                     "count_mismatch",
                                                     "op_mismatch",
                                                     "oversize",
                                                     "wrong_member",
                                                     "not_joined",
                                                     "member_failed",
                                                     "member_timeout",
                                                     "member_left",
                                                     "join_timeout",
                                                     "lease_revoked",
                                                     "shutdown",
                                                     "busy",
                                                     "route_mismatch",
                                                     "parent_failed"};
  const auto i = static_cast<uint16_t>(r);
  return i <= kMaxReason ? kNames[i] : "unknown";
}

bool CapTable::supports(Dtype d, Op o) const {
  const auto di = static_cast<unsigned>(d);
  const auto oi = static_cast<unsigned>(o);
  return di >= 1 && di <= kNumDtypes && oi >= 1 && oi <= kNumOps && (mask[di] >> oi) & 1u;
}

void CapTable::add(Dtype d, Op o) {
  const auto di = static_cast<unsigned>(d);
  const auto oi = static_cast<unsigned>(o);
  if (di >= 1 && di <= kNumDtypes && oi >= 1 && oi <= kNumOps)
    mask[di] = static_cast<uint16_t>(mask[di] | (1u << oi));
}

size_t headerBytes(MsgType t) {
  const auto i = static_cast<unsigned>(t);
  return (i >= 1 && i <= kMaxMsgType) ? kTypeHeader[i] : 0;
}

bool carriesPayload(MsgType t) {
  return t == MsgType::kContrib || t == MsgType::kResult || t == MsgType::kContribRouted;
}

Frame encode(const Message& m) {
  Frame f;
  Writer w(f.header.data());
  w.u32(kMagic);
  w.u8(kVersion);
  w.u8(static_cast<uint8_t>(m.type));
  w.u16(0);
  w.bytes(m.token.data(), kTokenBytes);
  w.u64(m.group_id);
  switch (m.type) {
    case MsgType::kHello:
      break;
    case MsgType::kHelloAck:
      w.u32(m.window);
      w.u32(m.slot_bytes);
      f.body = encodeCaps(m.caps);
      break;
    case MsgType::kJoin:
    case MsgType::kJoinAck:
      w.u32(m.size);
      w.u32(m.rank);
      w.u32(m.window);
      w.u32(m.type == MsgType::kJoinAck ? m.slot_bytes : m.flags);
      if (m.type == MsgType::kJoinAck) f.body = encodeCaps(m.caps);
      if (m.type == MsgType::kJoin && (m.flags & kJoinFlagTree)) {
        f.body.resize(kTreeJoinBodyBytes);
        Writer b(f.body.data());
        b.bytes(m.parent_token.data(), kTokenBytes);
        b.u32(m.tree_index);
        b.u32(m.tree_size);
      }
      break;
    case MsgType::kContrib:
    case MsgType::kResult:
    case MsgType::kContribRouted:
      encodeChunkFields(w, m);
      break;
    case MsgType::kLeave:
      w.u32(m.rank);
      w.u32(0);
      break;
    case MsgType::kCapacity:
      w.u64(0);
      break;
    case MsgType::kCapacityAck:
      w.u32(m.capacity.reduce_mbps);
      w.u32(m.capacity.link_mbps);
      w.u32(m.capacity.turnaround_us);
      w.u32(0);
      break;
    case MsgType::kWaiting:
      w.u64(m.chunk);
      w.u32(m.count);
      w.u32(m.rank);
      break;
    case MsgType::kAbort:
    case MsgType::kError:
      w.u16(static_cast<uint16_t>(m.reason));
      w.u16(0);
      w.u32(0);
      if (m.type == MsgType::kError) w.u64(m.chunk);
      for (char c : m.text) {
        if (f.body.size() == kMaxTextBytes) break;
        f.body.push_back((c >= 0x20 && c <= 0x7e) ? static_cast<uint8_t>(c) : '?');
      }
      break;
  }
  f.header_bytes = w.size();
  return f;
}

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

std::vector<uint8_t> toFramed(const Frame& f, const void* payload, size_t payload_bytes) {
  std::vector<uint8_t> out;
  out.reserve(2 + f.header_bytes + f.body.size() + payload_bytes);
  out.push_back(static_cast<uint8_t>(f.header_bytes & 0xff));
  out.push_back(static_cast<uint8_t>(f.header_bytes >> 8));
  out.insert(out.end(), f.header.begin(), f.header.begin() + static_cast<long>(f.header_bytes));
  out.insert(out.end(), f.body.begin(), f.body.end());
  const auto* p = static_cast<const uint8_t*>(payload);
  if (p) out.insert(out.end(), p, p + payload_bytes);
  return out;
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
