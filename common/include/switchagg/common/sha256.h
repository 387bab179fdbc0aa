// SHA-256 (FIPS 180-4), one-shot: the digest that binds a control request's
// body to its munge credential (switchagent/ctlclient/munge_cred.h). Small
// inputs only (request bodies, at most the HTTP parser's 64 KiB); not a
// streaming API and not tuned for speed.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace switchagg {

using Sha256Digest = std::array<uint8_t, 32>;

Sha256Digest sha256(std::string_view data);
// The digest as 64 lowercase hex digits.
std::string sha256Hex(std::string_view data);

}  // namespace switchagg
