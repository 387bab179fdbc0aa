#include "policy.h"

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <vector>

namespace switchagg::agent {

namespace {

Denial denied(const std::string& message) { return Denial{ApiError::kPolicyDenied, message}; }

// The name getpwuid_r or getgrgid_r (`lookup`) gives `id` ("" if none):
// Entry is passwd or group, `name` its pw_name or gr_name.
template <typename Entry, typename Lookup>
std::string nameOf(Lookup lookup, uint32_t id, char* Entry::*name) {
  std::vector<char> buf(16384);
  Entry entry{};
  Entry* out = nullptr;
  if (lookup(id, &entry, buf.data(), buf.size(), &out) != 0 || out == nullptr) return "";
  return entry.*name;
}

std::string groupName(uint32_t gid) {
  return nameOf<group>(getgrgid_r, gid, &group::gr_name);
}

// Caller's primary gid plus the supplementary groups of its user name.
std::vector<uint32_t> groupsOf(uint32_t uid, uint32_t gid) {
  std::vector<uint32_t> out{gid};
  std::string name = userName(uid);
  if (name.empty()) return out;
  int n = 64;
  std::vector<gid_t> gids(static_cast<size_t>(n));
  if (getgrouplist(name.c_str(), gid, gids.data(), &n) < 0) {
    gids.resize(static_cast<size_t>(n));
    if (getgrouplist(name.c_str(), gid, gids.data(), &n) < 0) return out;
  }
  for (int i = 0; i < n; ++i) out.push_back(gids[static_cast<size_t>(i)]);
  return out;
}

bool matches(const std::string& entry, uint32_t id, const std::string& name) {
  if (entry == "*") return true;
  if (!name.empty() && entry == name) return true;
  return entry == std::to_string(id);
}

std::string describe(uint32_t uid) {
  std::string name = userName(uid);
  return "uid " + std::to_string(uid) + (name.empty() ? "" : " (" + name + ")");
}

}  // namespace

std::string userName(uint32_t uid) {
  return nameOf<passwd>(getpwuid_r, uid, &passwd::pw_name);
}

Policy::Policy(const AgentConfig& config)
    : open_readonly_(config.open_readonly),
      allowed_users_(config.allowed_users),
      allowed_groups_(config.allowed_groups),
      admin_users_(config.admin_users) {}

bool Policy::listedUser(const std::vector<std::string>& list, uint32_t uid) const {
  if (list.empty()) return false;
  std::string name = userName(uid);
  for (const std::string& entry : list) {
    if (matches(entry, uid, name)) return true;
  }
  return false;
}

bool Policy::listedGroup(uint32_t uid, uint32_t gid) const {
  if (allowed_groups_.empty()) return false;
  for (uint32_t g : groupsOf(uid, gid)) {
    std::string name = groupName(g);
    for (const std::string& entry : allowed_groups_) {
      if (matches(entry, g, name)) return true;
    }
  }
  return false;
}

bool Policy::isAdmin(const Caller& caller) const {
  if (!caller.authenticated) return false;
  if (caller.uid == 0) return true;
  // "*" in admin_users would make everyone root-equivalent: not honoured.
  std::string name = userName(caller.uid);
  for (const std::string& entry : admin_users_) {
    if (entry != "*" && matches(entry, caller.uid, name)) return true;
  }
  return false;
}

bool Policy::mayLeaseForSelf(const Caller& caller) const {
  if (!caller.authenticated) return false;
  return isAdmin(caller) || listedUser(allowed_users_, caller.uid) ||
         listedGroup(caller.uid, caller.gid);
}

std::optional<Denial> Policy::authorize(const Caller& caller, Action action,
                                        uint32_t target_uid) const {
  if (!caller.authenticated) {
    if (action == Action::kRead && open_readonly_) return std::nullopt;
    return Denial{ApiError::kUnauthenticated,
                  action == Action::kRead
                      ? "control.open_readonly is off; send a munge credential or use the Unix "
                        "socket"
                      : "this request needs a munge credential on TCP, or the Unix socket"};
  }
  switch (action) {
    case Action::kRead:
      return std::nullopt;
    case Action::kAdmin:
      if (isAdmin(caller)) return std::nullopt;
      return denied(describe(caller.uid) + " is not root or in policy.admin_users");
    case Action::kCreate:
      if (isAdmin(caller)) return std::nullopt;
      if (!mayLeaseForSelf(caller)) {
        return denied(describe(caller.uid) +
                      " may not lease slots (not in policy.allowed_users or policy.allowed_groups)");
      }
      if (target_uid != caller.uid) {
        return denied(describe(caller.uid) + " may only lease for itself, not for uid " +
                      std::to_string(target_uid) + " (policy.admin_users may)");
      }
      return std::nullopt;
    case Action::kOwnerOnly:
      if (isAdmin(caller) || target_uid == caller.uid) return std::nullopt;
      return denied("the lease belongs to uid " + std::to_string(target_uid) + ", not to " +
                    describe(caller.uid));
  }
  return denied("unknown action");
}

}  // namespace switchagg::agent
