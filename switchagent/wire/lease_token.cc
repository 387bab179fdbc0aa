#include "switchagg/agent/lease_token.h"

#include <sys/random.h>

#include <cerrno>

namespace switchagg::agent {

Result<LeaseToken> LeaseToken::random() {
  LeaseToken t;
  size_t got = 0;
  while (got < kBytes) {
    ssize_t n = getrandom(t.data() + got, kBytes - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status(Code::kIoError, std::string("getrandom: ") + std::strerror(errno));
    }
    got += static_cast<size_t>(n);
  }
  return t;
}

std::optional<LeaseToken> LeaseToken::fromHex(std::string_view hex) {
  if (hex.size() != 2 * kBytes) return std::nullopt;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  LeaseToken t;
  for (size_t i = 0; i < kBytes; ++i) {
    const int hi = nibble(hex[2 * i]);
    const int lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    t.bytes_[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return t;
}

std::string LeaseToken::hex() const {
  static const char kHex[] = "0123456789abcdef";
  std::string s(2 * kBytes, '0');
  for (size_t i = 0; i < kBytes; ++i) {
    s[2 * i] = kHex[bytes_[i] >> 4];
    s[2 * i + 1] = kHex[bytes_[i] & 15];
  }
  return s;
}

bool operator==(const LeaseToken& a, const LeaseToken& b) {
  uint8_t diff = 0;
  for (size_t i = 0; i < LeaseToken::kBytes; ++i) {
    diff = static_cast<uint8_t>(diff | (a.bytes_[i] ^ b.bytes_[i]));
  }
  return diff == 0;
}

}  // namespace switchagg::agent
