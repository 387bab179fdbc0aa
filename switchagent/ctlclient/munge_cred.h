// munge credentials for the TCP control listener: the client encodes its
// request (method, target and the body's SHA-256: mungeRequestPayload) as
// payload, the agent decodes it, checks it against the request it received
// (checkMungeRequestPayload) and takes the caller's uid/gid from munged.
// munged itself rejects replayed and expired credentials. Without libmunge
// at build time both sides report kUnsupported.
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

// The payload a control client signs for one request:
//   "POST /v1/leases body-sha256=<64 lowercase hex digits>"
// (the digest of the body as sent; of "" for a request without one). A
// credential seen on the wire is then good for that method, target and
// body only, and, since munged refuses a replay, once.
std::string mungeRequestPayload(const std::string& method, const std::string& target,
                                const std::string& body);
// Whether a decoded `payload` was made for this request: OK, or kDenied
// saying what does not match (another request line, another body). The
// request line alone ("POST /v1/leases", what clients signed before the
// body was bound) is accepted for a request without a body only: there is
// nothing else to bind, and with a body the message says the client is too
// old.
Status checkMungeRequestPayload(const std::string& payload, const std::string& method,
                                const std::string& target, const std::string& body);

}  // namespace switchagg::agent
