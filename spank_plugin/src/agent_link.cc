#include "agent_link.h"

#include "switchagg/agent/fabric_lease.h"

namespace switchagg::spank {
namespace {

agent::ControlClientOptions baseOptions(const PluginConfig& config) {
  agent::ControlClientOptions options;
  options.timeout_ms = config.timeout_ms;
  return options;
}

agent::ApiFailure configFailure(const std::string& message) {
  return {agent::ApiError::kConfig, message};
}

// Runs `call` on the map's agents for the job's nodes.
template <typename T, typename Call>
agent::ApiResult<T> onJobAgents(const PluginConfig& config, const std::string& nodelist,
                                const agent::PoolRequest& pool, Call call) {
  Result<agent::FabricMap> map = agent::FabricMap::load(config.fabric);
  if (!map.ok()) return configFailure(map.status().message());
  if (nodelist.empty())
    return configFailure("the job's node list (SLURM_JOB_NODELIST) is not known");
  Result<std::vector<std::string>> nodes = agent::expandHostlist(nodelist);
  if (!nodes.ok()) return configFailure("job node list: " + nodes.status().message());
  Result<std::vector<const agent::FabricAgent*>> agents = map->agentsFor(*nodes, pool);
  if (!agents.ok())
    return configFailure("fabric map " + config.fabric + ": " + agents.status().message());
  return call(*agents, baseOptions(config));
}

}  // namespace

agent::ApiResult<agent::LeaseView> createJobLease(const PluginConfig& config,
                                                  const std::string& nodelist,
                                                  const std::string& job, int64_t uid,
                                                  const JobRequest& request) {
  if (config.fabric.empty() && request.reducers > 0)
    return configFailure("--switch-agg-reducers=" + std::to_string(request.reducers) +
                         ": this site has no fabric map (plugstack.conf fabric=)");
  if (config.fabric.empty())
    return controlClient(config).createLease(job, uid, request.slots, config.ttl_s);
  return onJobAgents<agent::LeaseView>(
      config, nodelist, {request.reducers, job},
      [&](const auto& agents, const agent::ControlClientOptions& base) {
        return agent::createFabricLease(agents, base, job, uid, request.slots, config.ttl_s);
      });
}

agent::ApiResult<agent::LeaseView> fetchJobToken(const PluginConfig& config,
                                                 const std::string& nodelist,
                                                 const std::string& job, int reducers) {
  if (config.fabric.empty()) return controlClient(config).fetchToken(job);
  return onJobAgents<agent::LeaseView>(
      config, nodelist, {reducers, job},
      [&](const auto& agents, const agent::ControlClientOptions& base) {
        return agent::fetchFabricToken(agents, base, job);
      });
}

agent::ApiResult<bool> deleteJobLease(const PluginConfig& config, const std::string& job) {
  if (config.fabric.empty()) return controlClient(config).deleteLease(job);
  Result<agent::FabricMap> map = agent::FabricMap::load(config.fabric);
  if (!map.ok()) return configFailure(map.status().message());
  agent::ApiResult<int> deleted =
      agent::deleteFabricLease(agent::allAgents(*map), baseOptions(config), job);
  if (!deleted.ok()) return agent::ApiResult<bool>::failed(deleted);
  return *deleted > 0;
}

}  // namespace switchagg::spank
