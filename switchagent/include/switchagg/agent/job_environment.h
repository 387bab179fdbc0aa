// The lease a job's tasks are handed in their environment (docs/offload.md):
// written by the SPANK plugin or `switchagg-ctl lease create` (the names in
// control_schema.h), read by the coll component and the PMPI library
// (mpi_coll/core/runtime/switch_lease.cc), and SWITCHAGG_FABRIC also by
// switchagg-ctl. One table gives each variable its name, help and parser;
// switchagg-info lists them.
#pragma once

#include <string>
#include <strings.h>

#include "switchagg/agent/control_schema.h"
#include "switchagg/common/config_table.h"

namespace switchagg::agent {

// SWITCHAGG_MODE as the job's tasks read it.
enum class JobMode {
  kAuto,     // offload where it pays; failing to join is silent
  kRequire,  // failing to join is an error line, once per job (the answers stay right)
  kOff,      // the job asked for no offload at all
};

struct JobEnvironment {
  std::string agents;       // SWITCHAGG_AGENT: "host:port", comma-separated for several agents
  std::string tokens;       // SWITCHAGG_LEASE: one token (hex) per agent, same order
  JobMode mode = JobMode::kAuto;
  std::string agent_names;  // SWITCHAGG_AGENT_NAMES: the agents' names in the fabric map
  std::string fabric;       // SWITCHAGG_FABRIC: the fabric map's path
};

inline const ConfigTable<JobEnvironment>& jobEnvironmentTable() {
  using J = JobEnvironment;
  static const char* const kModeNames[] = {"auto", "require", "off"};
  static const ConfigTable<J> t({
      {"job.agent", kEnvAgent,
       "the lease's agents' data-plane addresses (host:port), comma-separated in the lease's "
       "order; set by the Slurm plugin or switchagg-ctl (empty: no lease, no offload)",
       stringField(&J::agents)},
      {"job.lease", kEnvLease, "the lease's tokens (32 hex characters), one per agent, same order",
       stringField(&J::tokens)},
      // Case-insensitive, and any other value means auto (as it always has:
      // a job is never stopped over its mode).
      {"job.mode", kEnvMode,
       "auto | require (failing to join the agent is an error line, once per job) | off (no "
       "offload); case-insensitive, any other value: auto",
       customField<J>(
           ConfigKind::kChoice,
           [](const std::string&, J& j, const std::string& text) -> Status {
             j.mode = strcasecmp(text.c_str(), "require") == 0 ? JobMode::kRequire
                      : strcasecmp(text.c_str(), "off") == 0   ? JobMode::kOff
                                                               : JobMode::kAuto;
             return Status::Ok();
           },
           [](const J& j) { return std::string(kModeNames[static_cast<int>(j.mode)]); })},
      {"job.agent_names", kEnvAgentNames,
       "the lease's agents' names in the fabric map, in SWITCHAGG_AGENT's order, when a map "
       "placed the lease (leaves, then their spine: a tree)",
       stringField(&J::agent_names)},
      {"job.fabric", kEnvFabric,
       "the fabric map's path: where a tree lease's ranks find their leaf agent, and "
       "switchagg-ctl's map without --fabric",
       stringField(&J::fabric)},
  });
  return t;
}

// The job's variables as they are now (no value here can be refused).
inline JobEnvironment jobEnvironment() {
  JobEnvironment env;
  (void)jobEnvironmentTable().applyEnvironment(env);
  return env;
}

}  // namespace switchagg::agent
