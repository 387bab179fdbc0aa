// The wire codec's private pieces shared by its encoder (wire.cc) and its
// decoder (wire_decode.cc): byte-by-byte little-endian writer and reader,
// and each message type's fixed header size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "switchagg/agent/wire.h"

namespace switchagg::agent::wire::codec {

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

inline constexpr size_t kTypeHeader[kMaxMsgType + 1] = {
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

}  // namespace switchagg::agent::wire::codec
