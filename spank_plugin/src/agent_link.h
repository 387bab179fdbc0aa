// The plugin's one way to the agents: a control client configured from the
// plugstack arguments (address, timeout), or, with fabric= set, the fabric
// map's agents for the job's nodes (one lease on each, all or nothing; the
// job's SWITCHAGG_AGENT / SWITCHAGG_LEASE then list one entry per agent).
#pragma once

#include <string>

#include "job_request.h"
#include "plugin_config.h"
#include "switchagg/agent/control_client.h"

namespace switchagg::spank {

inline agent::ControlClient controlClient(const PluginConfig& config) {
  agent::ControlClientOptions options;
  options.address = config.control;
  options.timeout_ms = config.timeout_ms;
  return agent::ControlClient(options);
}

// `nodelist`: the job's nodes as Slurm writes them (SLURM_JOB_NODELIST);
// unused without a fabric map. A bad map, a node no agent serves or a
// reducer count the nodes' pool cannot give is a kConfig failure naming the
// problem. `reducers` (the request's): K agents of the nodes' reducer pool,
// the same K in the prolog and at every step, so both find the same agents.
agent::ApiResult<agent::LeaseView> createJobLease(const PluginConfig& config,
                                                  const std::string& nodelist,
                                                  const std::string& job, int64_t uid,
                                                  const JobRequest& request);
agent::ApiResult<agent::LeaseView> fetchJobToken(const PluginConfig& config,
                                                 const std::string& nodelist,
                                                 const std::string& job, int reducers);
// With a fabric map: every agent of the map (no node list needed); true if
// any had the lease.
agent::ApiResult<bool> deleteJobLease(const PluginConfig& config, const std::string& job);

}  // namespace switchagg::spank
