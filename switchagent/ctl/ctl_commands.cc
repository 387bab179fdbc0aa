#include "ctl_commands.h"

#include <pwd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "switchagg/agent/fabric_lease.h"
#include "switchagg/agent/job_environment.h"
#include "switchagg/common/config.h"

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

// `fabric`: the map that placed the lease ("" = one agent, no map); the
// job's client then also gets the agents' names and the map's absolute path.
void printExports(const LeaseView& l, const std::string& mode, const std::string& fabric = "") {
  std::printf("export %s=%s %s=%s %s=%s", kEnvAgent, l.data_address.c_str(), kEnvLease,
              jobTokens(l).c_str(), kEnvMode, mode.c_str());
  if (!fabric.empty())
    std::printf(" %s=%s %s=%s", kEnvAgentNames, l.agent_names.c_str(), kEnvFabric,
                std::filesystem::absolute(fabric).lexically_normal().c_str());
  std::printf("\n");
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

// One line per data-plane thread: an imbalanced thread stands out.
static void printThreads(const std::vector<DataThreadStatus>& threads) {
  if (threads.empty()) return;
  std::printf("data-plane threads\n  %-6s %-22s %6s %6s %12s %12s %10s %8s\n", "THREAD", "ADDRESS",
              "LEASES", "GROUPS", "BYTES_IN", "BYTES_OUT", "CONTRIBS", "BUSY_S");
  for (size_t i = 0; i < threads.size(); ++i) {
    const auto figure = [&](const char* name) {
      auto it = threads[i].figures.find(name);
      return static_cast<unsigned long long>(it == threads[i].figures.end() ? 0 : it->second);
    };
    std::printf("  %-6zu %-22s %6llu %6llu %12llu %12llu %10llu %8.3f\n", i,
                threads[i].address.c_str(), figure("leases"), figure("groups_active"),
                figure("bytes_in"), figure("bytes_out"), figure("contributions"),
                static_cast<double>(figure("busy_ns")) / 1e9);
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
  printThreads(s->threads);
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

namespace {

int fabricUsage(const std::string& message) {
  std::fprintf(stderr, "switchagg-ctl: %s\n", message.c_str());
  return kExitUsage;
}

// --nodes and --hostfile together; a hostfile line is "host [slots=N ...]",
// '#' starts a comment.
Result<std::vector<std::string>> nodesOf(const CtlOptions& o) {
  std::vector<std::string> nodes;
  if (!o.nodes.empty()) {
    Result<std::vector<std::string>> list = expandHostlist(o.nodes);
    if (!list.ok()) return Status(list.status().code(), "--nodes: " + list.status().message());
    nodes = *list;
  }
  if (!o.hostfile.empty()) {
    std::ifstream in(o.hostfile);
    if (!in) return Status(Code::kIoError, "--hostfile: cannot read " + o.hostfile);
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream words(line.substr(0, line.find('#')));
      std::string host;
      if (words >> host) nodes.push_back(host);
    }
  }
  return nodes;
}

}  // namespace

int cmdFabricLease(const std::string& verb, const ControlClientOptions& base, const CtlOptions& o) {
  if (o.json) return fabricUsage("--json is not supported with a fabric map (--nodes/--fabric)");
  const std::string env = jobEnvironment().fabric;
  const std::string path = !o.fabric.empty() ? o.fabric : !env.empty() ? env : kDefaultFabricMap;
  Result<FabricMap> map = FabricMap::load(path);
  if (!map.ok()) return fabricUsage(map.status().message());
  Result<std::vector<std::string>> nodes = nodesOf(o);
  if (!nodes.ok()) return fabricUsage(nodes.status().message());
  std::vector<const FabricAgent*> agents;
  if (nodes->empty()) {
    if (verb != "delete" && verb != "renew")
      return fabricUsage("lease " + verb + " with a fabric map needs --nodes or --hostfile");
    if (o.reducers > 0)
      return fabricUsage("--reducers picks agents for --nodes or --hostfile");
    agents = allAgents(*map);  // delete frees (renew extends) the job's lease everywhere
  } else if (const FabricPool* pool = (verb == "delete" || verb == "renew") && o.reducers == 0
                                          ? map->poolOf(nodes->front())
                                          : nullptr) {
    // A job of a reducer pool: whichever of the pool's agents hold it.
    for (const std::string& name : pool->agents) agents.push_back(map->find(name));
  } else {
    Result<std::vector<const FabricAgent*>> needed = map->agentsFor(*nodes, {o.reducers, o.job});
    if (!needed.ok()) return fabricUsage("fabric map " + path + ": " + needed.status().message());
    agents = *needed;
  }
  std::string names;
  for (const FabricAgent* a : agents) names += (names.empty() ? "" : ", ") + a->name;
  if (verb == "delete") {
    ApiResult<int> deleted = deleteFabricLease(agents, base, o.job);
    if (!deleted.ok()) return reportError(deleted.failure());
    std::printf("lease of job %s deleted on %d of %zu agent(s) (%s); the others had none\n",
                o.job.c_str(), *deleted, agents.size(), names.c_str());
    return kExitOk;
  }
  if (verb == "renew") {
    // Without nodes (or in a reducer pool): every agent that holds the job's lease.
    int renewed = 0;
    const bool some = nodes->empty() || (o.reducers == 0 && map->poolOf(nodes->front()));
    ApiResult<LeaseView> l = renewFabricLease(agents, base, o.job, o.ttl_s, some, &renewed);
    if (!l.ok()) return reportError(l.failure());
    std::printf("lease of job %s renewed on %d of %zu agent(s) (%s): expires in %lld s\n",
                o.job.c_str(), renewed, agents.size(), names.c_str(),
                static_cast<long long>(l->expires_in_s));
    return kExitOk;
  }
  ApiResult<LeaseView> l = verb == "create"
                               ? createFabricLease(agents, base, o.job, o.uid, o.slots, o.ttl_s)
                               : fetchFabricToken(agents, base, o.job);
  if (!l.ok()) return reportError(l.failure());
  if (verb == "create")
    std::printf("# lease %s job %s on %zu agent(s) (%s%s): %d slots each, expires in %lld s\n",
                l->created ? "created for" : "exists for", o.job.c_str(), agents.size(),
                names.c_str(), FabricMap::isTree(agents) ? "; a tree, the last one its spine" : "",
                l->slots, static_cast<long long>(l->expires_in_s));
  printExports(*l, o.mode, path);
  return kExitOk;
}

}  // namespace switchagg::agent
