// Wire codec, the encoder: fixed little-endian layouts written byte by byte
// (no struct punning, so alignment and padding never matter). The decoder,
// which trusts nothing, is wire_decode.cc; the layouts' sizes wire_codec.h.
#include "switchagg/agent/wire.h"

#include <cstring>

#include "switchagg/common/reduce.h"

#include "wire_codec.h"

namespace switchagg::agent::wire {
namespace {

using codec::kTypeHeader;
using codec::Writer;

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

}  // namespace switchagg::agent::wire
