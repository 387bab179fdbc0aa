#include "ctl_commands.h"

#include <pwd.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <vector>

namespace switchagg::agent {

using nlohmann::json;

namespace {

std::string userOf(uint32_t uid) {
  passwd* pw = getpwuid(uid);
  return pw != nullptr ? pw->pw_name : std::to_string(uid);
}

std::string humanBytes(uint64_t b) {
  if (b >= (1ull << 20) && b % (1ull << 20) == 0) return std::to_string(b >> 20) + " MiB";
  if (b >= (1ull << 10) && b % (1ull << 10) == 0) return std::to_string(b >> 10) + " KiB";
  return std::to_string(b) + " B";
}

// --json: the agent's own JSON on stdout, errors too; exit code from the
// answer. Used by every command so scripts see exactly what the API says.
int rawJson(ControlClient& client, const std::string& method, const std::string& path,
            const std::string& body) {
  Result<ControlReply> reply = client.request(method, path, body);
  if (!reply.ok()) return reportError(reply.status());
  std::fputs(reply->body.c_str(), stdout);
  if (reply->http_status >= 200 && reply->http_status < 300) return kExitOk;
  json j = json::parse(reply->body, nullptr, false);
  std::string error = j.is_object() && j.contains("error") && j["error"].is_string()
                          ? j["error"].get<std::string>()
                          : "internal";
  std::string message = j.is_object() && j.contains("message") && j["message"].is_string()
                            ? j["message"].get<std::string>()
                            : "";
  return reportError(Status(codeForControlError(error), error + ": " + message));
}

void printExports(const LeaseInfo& l, const std::string& mode) {
  std::printf("export SWITCHAGG_AGENT=%s SWITCHAGG_LEASE=%s SWITCHAGG_MODE=%s\n",
              l.data_address.c_str(), l.token.c_str(), mode.c_str());
}

}  // namespace

int reportError(const Status& status) {
  std::fprintf(stderr, "switchagg-ctl: %s\n", status.message().c_str());
  std::string error = controlErrorOf(status);
  if (error == "unreachable") return kExitUnreachable;
  if (error == "unauthenticated" || error == "policy_denied") return kExitDenied;
  if (error == "quota_exceeded" || error == "draining" || error == "overloaded") {
    return kExitNoResource;
  }
  if (status.code() == Code::kInvalidArgument && error != "bad_request" && error != "conflict") {
    return kExitUsage;  // e.g. a malformed --agent address
  }
  return kExitRefused;
}

int cmdStatus(ControlClient& client, const CtlOptions& o) {
  if (o.json) return rawJson(client, "GET", "/v1/status", "");
  Result<AgentStatus> s = client.status();
  if (!s.ok()) return reportError(s.status());
  std::printf("agent         %s (version %s)%s\n", client.address().c_str(), s->version.c_str(),
              s->draining ? " DRAINING" : "");
  std::printf("data plane    %s\n", s->data_address.c_str());
  std::printf("slots         %d of %d leased, %s each\n", s->slots_in_use, s->slots_total,
              humanBytes(s->slot_bytes).c_str());
  std::printf("leases        %d\ngroups        %d\n", s->leases, s->groups);
  if (s->lease_file.empty()) {
    std::printf("persistence   off (leases are lost when the agent restarts)\n");
  } else {
    std::printf("persistence   on, %s (%llu save failures)\n", s->lease_file.c_str(),
                static_cast<unsigned long long>(s->lease_file_save_failures));
  }
  for (const Capability& c : s->capabilities) {
    std::string ops;
    for (const std::string& op : c.ops) ops += (ops.empty() ? "" : ",") + op;
    std::printf("reduces       %-10s %s\n", c.dtype.c_str(), ops.c_str());
  }
  for (const auto& [name, value] : s->counters) {
    std::printf("  %-20s %llu\n", name.c_str(), static_cast<unsigned long long>(value));
  }
  return kExitOk;
}

int cmdLeases(ControlClient& client, const CtlOptions& o) {
  if (o.json) return rawJson(client, "GET", "/v1/leases", "");
  Result<std::vector<LeaseInfo>> leases = client.listLeases();
  if (!leases.ok()) return reportError(leases.status());
  std::printf("%-16s %-12s %6s %10s %7s\n", "JOB", "USER", "SLOTS", "EXPIRES_IN", "GROUPS");
  for (const LeaseInfo& l : *leases) {
    std::printf("%-16s %-12s %6d %9llds %7d\n", l.job.c_str(), userOf(l.uid).c_str(), l.slots,
                static_cast<long long>(l.expires_in_s), l.groups);
  }
  return kExitOk;
}

int cmdLeaseCreate(ControlClient& client, const CtlOptions& o) {
  if (o.json) {
    json req = {{"job", o.job}};
    if (o.uid >= 0) req["uid"] = o.uid;
    if (o.slots > 0) req["slots"] = o.slots;
    if (o.ttl_s > 0) req["ttl_s"] = o.ttl_s;
    return rawJson(client, "POST", "/v1/leases", req.dump());
  }
  Result<LeaseInfo> l = client.createLease(o.job, o.uid, o.slots, o.ttl_s);
  if (!l.ok()) return reportError(l.status());
  std::printf("# lease %s job %s: uid %u (%s), %d slots, expires in %lld s, agent %s\n",
              l->created ? "created for" : "exists for", l->job.c_str(), l->uid,
              userOf(l->uid).c_str(), l->slots, static_cast<long long>(l->expires_in_s),
              l->data_address.c_str());
  printExports(*l, o.mode);
  return kExitOk;
}

int cmdLeaseToken(ControlClient& client, const CtlOptions& o) {
  if (o.json) return rawJson(client, "GET", "/v1/leases/" + o.job + "/token", "");
  Result<LeaseInfo> l = client.fetchToken(o.job);
  if (!l.ok()) return reportError(l.status());
  printExports(*l, o.mode);
  return kExitOk;
}

int cmdLeaseRenew(ControlClient& client, const CtlOptions& o) {
  if (o.json) {
    json req = json::object();
    if (o.ttl_s > 0) req["ttl_s"] = o.ttl_s;
    return rawJson(client, "POST", "/v1/leases/" + o.job + "/renew", req.dump());
  }
  Result<LeaseInfo> l = client.renewLease(o.job, o.ttl_s);
  if (!l.ok()) return reportError(l.status());
  std::printf("lease of job %s renewed: expires in %lld s\n", l->job.c_str(),
              static_cast<long long>(l->expires_in_s));
  return kExitOk;
}

int cmdLeaseDelete(ControlClient& client, const CtlOptions& o) {
  if (o.json) return rawJson(client, "DELETE", "/v1/leases/" + o.job, "");
  Result<bool> deleted = client.deleteLease(o.job);
  if (!deleted.ok()) return reportError(deleted.status());
  std::printf(*deleted ? "lease of job %s deleted\n" : "no lease for job %s (nothing to do)\n",
              o.job.c_str());
  return kExitOk;
}

int cmdDrain(ControlClient& client, const CtlOptions& o) {
  if (o.json) return rawJson(client, "POST", "/v1/drain", json{{"drain", !o.off}}.dump());
  Result<bool> draining = client.drain(!o.off);
  if (!draining.ok()) return reportError(draining.status());
  std::printf(*draining ? "agent draining: new leases are refused, existing ones run on\n"
                        : "agent accepting new leases\n");
  return kExitOk;
}

int cmdMetrics(ControlClient& client, const CtlOptions&) {
  Result<ControlReply> reply = client.request("GET", "/metrics", "");
  if (!reply.ok()) return reportError(reply.status());
  std::fputs(reply->body.c_str(), stdout);
  return reply->http_status == 200 ? kExitOk : kExitRefused;
}

}  // namespace switchagg::agent
