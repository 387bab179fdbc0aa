// Client side of one control request: connect (Unix or TCP) within a
// deadline, send, read the whole response until the agent closes.
#pragma once

#include <string>

#include "http_message.h"
#include "switchagg/agent/control_client.h"

namespace switchagg::agent {

// Errors: kIoError/kTimeout whose message names the address; kProtocol for a
// malformed answer; kPeerFailed when the agent closed the connection before
// any byte of an answer (it shed it under a flood: worth one retry). Reads
// at most `max_body` bytes of body.
Result<HttpResponse> exchangeHttp(const ControlAddress& address, const std::string& request,
                                  int timeout_ms, size_t max_body = 8u << 20);

// The clock exchangeHttp's deadlines run on (steady, milliseconds).
int64_t controlNowMs();

}  // namespace switchagg::agent
