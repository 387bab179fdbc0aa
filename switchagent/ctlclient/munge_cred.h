// munge credentials for the TCP control listener: the client encodes the
// request line ("POST /v1/leases") as payload, the agent decodes it and takes
// the caller's uid/gid from munged. munged itself rejects replayed and
// expired credentials. Without libmunge at build time both sides report
// kUnsupported.
#pragma once

#include <cstdint>
#include <string>

#include "switchagg/common/status.h"

namespace switchagg::agent {

struct MungeIdentity {
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::string payload;
};

bool mungeBuiltIn();
// `socket_path` empty: libmunge's default (/run/munge/munge.socket.2).
Result<std::string> mungeEncode(const std::string& payload, const std::string& socket_path);
// kDenied for invalid/replayed/expired credentials (message from libmunge).
Result<MungeIdentity> mungeDecode(const std::string& credential, const std::string& socket_path);

}  // namespace switchagg::agent
