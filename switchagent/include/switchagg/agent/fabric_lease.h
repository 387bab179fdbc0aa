// One job's lease over several agents (the fabric map's agents for its
// nodes), for switchagg-ctl and the SPANK plugin. Each agent mints its own
// token (the control API has no caller-chosen token), so the job carries K
// tokens: the combined LeaseView's data_address and token list every
// agent's, comma-joined in the map's order (SWITCHAGG_AGENT /
// SWITCHAGG_LEASE as the job gets them). One agent gives exactly what
// ControlClient gives. Links no UCX and no MPI.
#pragma once

#include <string>
#include <vector>

#include "switchagg/agent/control_client.h"
#include "switchagg/agent/fabric_map.h"

namespace switchagg::agent {

// All or nothing: creates the job's lease on every agent in order; when one
// refuses or cannot be reached, deletes the leases this call created (a
// lease that already existed is left alone) and fails with that agent's
// error, its message naming the agent ("agent 'leaf2' (10.0.0.2:18516):
// quota_exceeded: ..."). `base` gives the timeout and munge settings; the
// address comes from each agent. slots/ttl/created are the first agent's
// (created: any agent made a new lease).
ApiResult<LeaseView> createFabricLease(const std::vector<const FabricAgent*>& agents,
                                       const ControlClientOptions& base, const std::string& job,
                                       int64_t uid, int slots, int64_t ttl_s);

// Every agent's token for the job, combined as above; fails on the first
// agent that has none (naming it).
ApiResult<LeaseView> fetchFabricToken(const std::vector<const FabricAgent*>& agents,
                                      const ControlClientOptions& base, const std::string& job);

// Deletes the job's lease on every agent (each idempotent), trying all of
// them even after a failure; the value is how many existed. The first
// failure is returned, naming its agent (the others' TTL is the backstop).
ApiResult<int> deleteFabricLease(const std::vector<const FabricAgent*>& agents,
                                 const ControlClientOptions& base, const std::string& job);

// Every agent of the map, in order (lease delete needs no node list).
std::vector<const FabricAgent*> allAgents(const FabricMap& map);

}  // namespace switchagg::agent
