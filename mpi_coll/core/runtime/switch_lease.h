// The job's switch lease (environment) and the process's one data-plane
// connection to the agent, shared by every communicator's group.
//
//   SWITCHAGG_AGENT  data-plane address "host:port" of the agent; a lease
//                    over several agents (fabric map) lists them comma-
//                    separated, and each communicator stripes its calls
//                    over them (docs/offload.md "Stripes")
//   SWITCHAGG_LEASE  lease token (32 hex chars), or one per agent in the
//                    same order
//   SWITCHAGG_AGENT_NAMES, SWITCHAGG_FABRIC
//                    the agents' names in the fabric map (same order) and
//                    the map's path, when a map placed the lease: leaves
//                    then their spine (FabricMap::isTree) is a tree
//                    (docs/offload.md "Trees"): each rank talks only to the
//                    leaf agent of its node (SWITCHAGG_NODE_NAME, else the short
//                    hostname), which forwards to the spine
//   SWITCHAGG_MODE   auto | require (require: failing to join is an error
//                    line, once per job; the answers stay right either way)
//   SWITCHAGG_SWITCH_*  timeout, window and rejoin (switch_settings.h)
//
// The environment is job-wide (set by the Slurm plugin for every task, or
// exported to every rank by mpirun -x), so every rank sees the same lease
// or none; no lease means no switch candidate and no agent traffic.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "switchagg/coll/switch_settings.h"
#include "switchagg/common/status.h"

namespace switchagg::agent {
class AggClient;
}

namespace switchagg::coll {

struct SwitchLease : SwitchSettings {
  std::string agent;  // the variable as given (messages)
  std::string token;
  std::vector<std::string> agents;  // one per stripe, in the job-wide order
  std::vector<std::string> tokens;  // same order
  std::vector<std::string> names;   // the agents' fabric map names (same order), if given
  bool require = false;
  // A tree lease: agents[leaf] serves this process's node, agents[root] is
  // its parent (the spine); leaf = -1 with tree_error saying why when the
  // node has no agent of the lease (the switch path is then unavailable).
  bool tree = false;
  int leaf = -1, root = -1;
  std::string tree_error;
};

// The lease from the environment, or nullptr when the job has none.
const SwitchLease* switchLease();

// The process's connection to agent k (of lease.agents), connected on first use. After a failure
// the same error is returned without touching the network until the reconnect backoff
// (kReconnectBackoffMs) has passed, so a dead agent costs each new communicator nothing.
// One connection per thread domain (`domain`: the communicator's), used holding it.
Result<std::shared_ptr<agent::AggClient>> switchClient(const SwitchLease& lease, size_t k,
                                                       int domain);

constexpr int64_t kReconnectBackoffMs = 60000;

// SWITCHAGG_MODE=require: the one error line of the job (printed by world
// rank 0, once per process).
void reportRequireFailure(const SwitchLease& lease, const std::string& why);

}  // namespace switchagg::coll
