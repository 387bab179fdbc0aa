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
  ApiResult<ControlReply> reply = client.request(method, path, body);
  if (!reply.ok()) return reportError(reply.failure());
  std::fputs(reply->body.c_str(), stdout);
  if (reply->http_status >= 200 && reply->http_status < 300) return kExitOk;
  return reportError(failureOf(*reply, client.address()));
}

void printExports(const LeaseView& l, const std::string& mode) {
  std::printf("export %s=%s %s=%s %s=%s\n", kEnvAgent, l.data_address.c_str(), kEnvLease,
              l.token.c_str(), kEnvMode, mode.c_str());
}

}  // namespace

int reportError(const ApiFailure& failure) {
  std::fprintf(stderr, "switchagg-ctl: %s\n", failure.status().message().c_str());
  switch (failure.error) {
    case ApiError::kUnreachable:
      return kExitUnreachable;
    case ApiError::kUnauthenticated:
    case ApiError::kPolicyDenied:
      return kExitDenied;
    case ApiError::kQuotaExceeded:
    case ApiError::kDraining:
    case ApiError::kOverloaded:
      return kExitNoResource;
    case ApiError::kConfig:
      return kExitUsage;  // e.g. a malformed --agent address
    default:
      return kExitRefused;
  }
}

int cmdStatus(ControlClient& client, const CtlOptions& o) {
  if (o.json) return rawJson(client, "GET", "/v1/status", "");
  ApiResult<AgentStatus> s = client.status();
  if (!s.ok()) return reportError(s.failure());
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
  ApiResult<std::vector<LeaseView>> leases = client.listLeases();
  if (!leases.ok()) return reportError(leases.failure());
  std::printf("%-16s %-12s %6s %10s %7s\n", "JOB", "USER", "SLOTS", "EXPIRES_IN", "GROUPS");
  for (const LeaseView& l : *leases) {
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
  ApiResult<LeaseView> l = client.createLease(o.job, o.uid, o.slots, o.ttl_s);
  if (!l.ok()) return reportError(l.failure());
  std::printf("# lease %s job %s: uid %u (%s), %d slots, expires in %lld s, agent %s\n",
              l->created ? "created for" : "exists for", l->job.c_str(), l->uid,
              userOf(l->uid).c_str(), l->slots, static_cast<long long>(l->expires_in_s),
              l->data_address.c_str());
  printExports(*l, o.mode);
  return kExitOk;
}

int cmdLeaseToken(ControlClient& client, const CtlOptions& o) {
  if (o.json) return rawJson(client, "GET", "/v1/leases/" + o.job + "/token", "");
  ApiResult<LeaseView> l = client.fetchToken(o.job);
  if (!l.ok()) return reportError(l.failure());
  printExports(*l, o.mode);
  return kExitOk;
}

int cmdLeaseRenew(ControlClient& client, const CtlOptions& o) {
  if (o.json) {
    json req = json::object();
    if (o.ttl_s > 0) req["ttl_s"] = o.ttl_s;
    return rawJson(client, "POST", "/v1/leases/" + o.job + "/renew", req.dump());
  }
  ApiResult<LeaseView> l = client.renewLease(o.job, o.ttl_s);
  if (!l.ok()) return reportError(l.failure());
  std::printf("lease of job %s renewed: expires in %lld s\n", l->job.c_str(),
              static_cast<long long>(l->expires_in_s));
  return kExitOk;
}

int cmdLeaseDelete(ControlClient& client, const CtlOptions& o) {
  if (o.json) return rawJson(client, "DELETE", "/v1/leases/" + o.job, "");
  ApiResult<bool> deleted = client.deleteLease(o.job);
  if (!deleted.ok()) return reportError(deleted.failure());
  std::printf(*deleted ? "lease of job %s deleted\n" : "no lease for job %s (nothing to do)\n",
              o.job.c_str());
  return kExitOk;
}

int cmdDrain(ControlClient& client, const CtlOptions& o) {
  if (o.json) return rawJson(client, "POST", "/v1/drain", json{{"drain", !o.off}}.dump());
  ApiResult<bool> draining = client.drain(!o.off);
  if (!draining.ok()) return reportError(draining.failure());
  std::printf(*draining ? "agent draining: new leases are refused, existing ones run on\n"
                        : "agent accepting new leases\n");
  return kExitOk;
}

int cmdMetrics(ControlClient& client, const CtlOptions&) {
  ApiResult<ControlReply> reply = client.request("GET", "/metrics", "");
  if (!reply.ok()) return reportError(reply.failure());
  std::fputs(reply->body.c_str(), stdout);
  return reply->http_status == 200 ? kExitOk : kExitRefused;
}

}  // namespace switchagg::agent
