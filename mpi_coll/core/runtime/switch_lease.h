// The job's switch lease (environment) and the process's one data-plane
// connection to the agent, shared by every communicator's group.
//
//   SWITCHAGG_AGENT  data-plane address "host:port" of the agent
//   SWITCHAGG_LEASE  lease token (32 hex chars)
//   SWITCHAGG_MODE   auto | require (require: failing to join is an error
//                    line, once per job; the answers stay right either way)
//   SWITCHAGG_SWITCH_TIMEOUT_MS  base bound of one offloaded call (2000)
//   SWITCHAGG_SWITCH_WINDOW      slots each communicator's group asks for
//                    (default: half the lease, so a second communicator
//                    still finds slots; later ones may find none -> host)
//   SWITCHAGG_SWITCH_REJOIN_CALLS  after a switch failure, allreduce calls on
//                    the host before the communicator tries to rejoin (100;
//                    doubles after each failed rejoin up to kMaxRejoinCalls;
//                    0: never rejoin)
//
// The environment is job-wide (set by the Slurm plugin for every task, or
// exported to every rank by mpirun -x), so every rank sees the same lease
// or none; no lease means no switch candidate and no agent traffic.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "switchagg/common/status.h"

namespace switchagg::agent {
class AggClient;
}

namespace switchagg::coll {

struct SwitchLease {
  std::string agent;
  std::string token;
  bool require = false;
  int64_t call_timeout_ms = 2000;
  uint32_t window_request = 0;  // 0: half of the lease's slots
  uint32_t rejoin_calls = 100;   // 0: a failed switch path stays off
};

constexpr int64_t kMaxRejoinCalls = 1 << 20;

// The lease from the environment, or nullptr when the job has none.
const SwitchLease* switchLease();

// The process's connection, connected on first use. After a failure the
// same error is returned without touching the network until the reconnect
// backoff (kReconnectBackoffMs) has passed, so a dead agent costs each new
// communicator nothing.
Result<std::shared_ptr<agent::AggClient>> switchClient(const SwitchLease& lease);

constexpr int64_t kReconnectBackoffMs = 60000;

// SWITCHAGG_MODE=require: the one error line of the job (printed by world
// rank 0, once per process).
void reportRequireFailure(const SwitchLease& lease, const std::string& why);

}  // namespace switchagg::coll
