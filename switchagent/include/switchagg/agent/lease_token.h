// LeaseToken: the 128-bit secret that proves a job holds a lease. Raw bytes
// everywhere inside (the wire carries them, the agent indexes leases by
// them); hex only at the edges: JSON, the lease file and SWITCHAGG_LEASE.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "switchagg/common/status.h"

namespace switchagg::agent {

class LeaseToken {
 public:
  static constexpr size_t kBytes = 16;

  LeaseToken() = default;  // all zero: no token (a message sent before any lease)

  // 128 bits from getrandom().
  static Result<LeaseToken> random();
  // Exactly 32 hex characters, either case; nullopt for anything else.
  static std::optional<LeaseToken> fromHex(std::string_view hex);
  // 32 lowercase hex characters.
  std::string hex() const;

  uint8_t* data() { return bytes_.data(); }
  const uint8_t* data() const { return bytes_.data(); }
  static constexpr size_t size() { return kBytes; }
  uint8_t& operator[](size_t i) { return bytes_[i]; }
  uint8_t operator[](size_t i) const { return bytes_[i]; }

  // Constant time: a timing side channel must not reveal how many leading
  // bytes of a guessed token are right.
  friend bool operator==(const LeaseToken& a, const LeaseToken& b);
  friend bool operator!=(const LeaseToken& a, const LeaseToken& b) { return !(a == b); }

 private:
  std::array<uint8_t, kBytes> bytes_{};
};

}  // namespace switchagg::agent

// Tokens are uniformly random, so a few of their bytes are a good hash (and
// a lookup by hash reveals nothing about the rest).
template <>
struct std::hash<switchagg::agent::LeaseToken> {
  size_t operator()(const switchagg::agent::LeaseToken& t) const noexcept {
    size_t h = 0;
    std::memcpy(&h, t.data(), sizeof h);
    return h;
  }
};
