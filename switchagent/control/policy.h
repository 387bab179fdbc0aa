// Who may do what on the control API. Callers are identified by the kernel
// (SO_PEERCRED on the Unix socket) or by munge (TCP); anonymous TCP callers
// may at most read. Decisions are pure functions of the caller, the action
// and the site policy, so they are unit-tested without sockets.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "admission.h"
#include "agent_config.h"

namespace switchagg::agent {

struct Caller {
  bool authenticated = false;  // false: anonymous TCP caller
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::string via;             // "unix" or "tcp", for logs
};

enum class Action {
  kRead,        // GET status, leases, metrics
  kCreate,      // POST /v1/leases for target_uid
  kOwnerOnly,   // token, renew, delete of a lease owned by target_uid
  kAdmin,       // drain
};

class Policy {
 public:
  explicit Policy(const AgentConfig& config);

  // Nothing, or the refusal: kUnauthenticated or kPolicyDenied with a
  // one-line reason.
  std::optional<Denial> authorize(const Caller& caller, Action action, uint32_t target_uid) const;

  bool isAdmin(const Caller& caller) const;
  bool mayLeaseForSelf(const Caller& caller) const;

 private:
  bool listedUser(const std::vector<std::string>& list, uint32_t uid) const;
  bool listedGroup(uint32_t uid, uint32_t gid) const;

  bool open_readonly_;
  std::vector<std::string> allowed_users_, allowed_groups_, admin_users_;
};

// User name of `uid` ("" if unknown); used for messages and group lookups.
std::string userName(uint32_t uid);

}  // namespace switchagg::agent
