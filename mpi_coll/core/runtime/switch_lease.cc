#include "switch_lease.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "process_runtime.h"
#include "switchagg/agent/control_schema.h"
#include "switchagg/agent/data_client.h"
#include "switchagg/agent/fabric_map.h"
#include "switchagg/agent/job_environment.h"
#include "switchagg/common/config.h"  // splitList
#include "switchagg/common/config_table.h"
#include "switchagg/common/log.h"

namespace switchagg::coll {
namespace {

constexpr int64_t kConnectTimeoutMs = 2000;

int64_t nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// A tree lease (fabric map names + path, FabricMap::isTree: leaves, then
// their spine): which leaf serves this node; the spine is the last agent.
void readTree(const agent::JobEnvironment& env, SwitchLease* lease) {
  const std::string& names = env.agent_names;
  const std::string& path = env.fabric;
  if (names.empty() || path.empty()) return;
  const std::vector<std::string> list = splitList(names);
  if (list.size() != lease->agents.size()) {
    if (isJobRankZero())
      SA_WARN("coll", "%s names %zu agent(s), %s %zu: placement ignored", agent::kEnvAgentNames,
              list.size(), agent::kEnvAgent, lease->agents.size());
    return;
  }
  lease->names = list;
  auto index = [&](const std::string& name) {
    auto it = std::find(list.begin(), list.end(), name);
    return it == list.end() ? -1 : int(it - list.begin());
  };
  Result<agent::FabricMap> map = agent::FabricMap::load(path);
  if (!map.ok()) {
    lease->tree_error = "fabric map " + path + ": " + map.status().message();
    // Without the map a rank cannot tell a tree from stripes: no offload.
    lease->tree = true;
    return;
  }
  std::vector<const agent::FabricAgent*> agents;
  for (const std::string& n : list) {
    const agent::FabricAgent* a = map->find(n);
    if (!a) {
      // Not the map that placed the lease: a rank cannot tell a tree.
      lease->tree = true;
      lease->tree_error = "agent '" + n + "' of " + agent::kEnvAgentNames +
                          " is not in the fabric map " + path;
      return;
    }
    agents.push_back(a);
  }
  // Leaves, then their spine (the placement agentsFor gives a tree).
  lease->tree = agent::FabricMap::isTree(agents);
  if (!lease->tree) return;
  const std::string node = processNodeName(nullptr);
  const agent::FabricAgent* mine = map->agentOf(node);
  const int leaf = mine ? index(mine->name) : -1;
  if (leaf < 0 || leaf + 1 == int(list.size())) {
    lease->tree_error =
        "node '" + node + "' is served by no leaf agent of the lease (" + names + ")";
    return;
  }
  lease->leaf = leaf;
  lease->root = int(list.size()) - 1;
}

std::unique_ptr<SwitchLease> readLease() {
  const agent::JobEnvironment env = agent::jobEnvironment();
  if (env.agents.empty() || env.tokens.empty()) return nullptr;
  auto lease = std::make_unique<SwitchLease>();
  lease->agent = env.agents;
  lease->token = env.tokens;
  lease->agents = splitList(env.agents);
  lease->tokens = splitList(env.tokens);
  // Every rank reads the same variables, so all decline alike.
  if (lease->agents.size() != lease->tokens.size() ||
      std::any_of(lease->agents.begin(), lease->agents.end(), [](auto& a) { return a.empty(); })) {
    if (isJobRankZero())
      SA_WARN("coll",
              "%s names %zu agent(s) but %s %zu token(s) (or an entry is empty); "
              "no switch offload for this job",
              agent::kEnvAgent, lease->agents.size(), agent::kEnvLease, lease->tokens.size());
    return nullptr;
  }
  readTree(env, lease.get());
  lease->require = env.mode == agent::JobMode::kRequire;
  // "off" in the environment means the job asked for no offload at all.
  if (env.mode == agent::JobMode::kOff) return nullptr;
  // A bad value is named once and the default kept: the job still runs.
  switchSettingsTable().applyEnvironmentReporting(*lease, [](const Status& st) {
    SA_WARN("coll", "%s; the default is kept", st.toString().c_str());
  });
  return lease;
}

// Weak: the communicators' switch paths own the connection, so it closes
// with the last of them (at MPI_Finalize at the latest), never in a static
// destructor after MPI and UCX are gone.
struct ClientSlot {
  std::weak_ptr<agent::AggClient> client;
  Status last_error;
  int64_t failed_at_ms = 0;
};

// Per thread domain (ProcessRuntime): a domain's communicators share its
// connections, touched only by threads holding that domain.
ClientSlot& slot(int domain, size_t k) {
  static std::vector<std::vector<ClientSlot>> slots(
      ProcessRuntime::kMaxDomains,
      std::vector<ClientSlot>(switchLease() ? switchLease()->agents.size() : 1));
  return slots.at(size_t(domain)).at(k);
}

}  // namespace

const SwitchLease* switchLease() {
  static const std::unique_ptr<SwitchLease> lease = readLease();
  return lease.get();
}

Result<std::shared_ptr<agent::AggClient>> switchClient(const SwitchLease& lease, size_t k,
                                                       int domain) {
  ClientSlot& s = slot(domain, k);
  std::shared_ptr<agent::AggClient> live = s.client.lock();
  // A dead connection is dropped (its groups keep it alive until they go)
  // and replaced at once: the agent may be back. Only failed connects back
  // off.
  if (live && live->failed()) {
    SA_DEBUG("coll", "agent connection lost (%s); reconnecting",
             live->failure().toString().c_str());
    s.client.reset();
    live.reset();
    s.last_error = Status::Ok();
  }
  if (live) return live;
  if (!s.last_error.ok() && nowMs() - s.failed_at_ms < kReconnectBackoffMs) return s.last_error;
  Result<std::unique_ptr<agent::AggClient>> c =
      agent::AggClient::connect(lease.agents[k], lease.tokens[k], kConnectTimeoutMs);
  if (!c.ok()) {
    s.last_error = c.status();
    s.failed_at_ms = nowMs();
    return s.last_error;
  }
  s.last_error = Status::Ok();
  // Communicators share the connection; its worker also progresses while
  // the process waits in other components (ProcessRuntime::progress), once
  // per connection, for as long as the connection lives.
  agent::AggClient* raw = c.value().release();
  // The agent's WAITING (a member late, outside MPI) extends a call up to
  // coll_switchagg_stall_timeout past its bound; 0 (warn only): no limit but
  // the agent's data.member_timeout (docs/offload.md "Late members").
  const int64_t stall_ms = ProcessRuntime::instance().params().stall.fail_ms;
  raw->setWaitLimit(stall_ms > 0 ? stall_ms : INT64_MAX / 2);
  ProcessRuntime::instance().addProgress(domain, raw, [raw] { return raw->progress(); });
  live = std::shared_ptr<agent::AggClient>(raw, [domain](agent::AggClient* p) {
    ProcessRuntime::instance().removeProgress(domain, p);
    delete p;
  });
  s.client = live;
  return live;
}

void reportRequireFailure(const SwitchLease& lease, const std::string& why) {
  static std::atomic<bool> printed{false};
  if (printed.exchange(true)) return;
  if (!isJobRankZero()) return;
  // Always printed (error level): the job asked for the switch and runs
  // on the host instead.
  SA_ERROR("coll",
           "SWITCHAGG_MODE=require but the switch agent at %s cannot be joined (%s); "
           "allreduce runs on host algorithms (results are correct, not offloaded)",
           lease.agent.c_str(), why.c_str());
}

}  // namespace switchagg::coll
