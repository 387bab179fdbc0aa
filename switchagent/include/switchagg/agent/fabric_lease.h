// One job's lease over several agents (the fabric map's agents for its
// nodes), for switchagg-ctl and the SPANK plugin. Each agent mints its own
// token (the control API has no caller-chosen token), so the job carries K
// tokens: the combined LeaseView's data_address, token and agent_names list
// every agent's, comma-joined in the order FabricMap::agentsFor gives
// (SWITCHAGG_AGENT / SWITCHAGG_LEASE / SWITCHAGG_AGENT_NAMES as the job gets
// them; a tree's spine is the last one). One agent gives what ControlClient
// gives, plus its name. An agent whose data-plane threads spread a lease
// (data.threads_per_job > 1: its data_address lists one address per thread)
// is one stripe per thread, its name and token repeated, when the job
// stripes over plain agents or a reducer pool; in a tree or a rail pool it
// stays one stripe (its first address, or the map's `data`, where thread 0
// serves the lease whole). A map's `data` address keeps its host and takes
// each thread's port. Links no UCX and no MPI.
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

// Renews the job's lease on every agent (ttl_s 0: each agent's policy
// default), trying all of them even after a failure, so a job that loses
// one agent keeps the others' leases alive. The combined view's
// expires_in_s is the earliest of the agents'. With `skip_missing` an agent
// without a lease for the job is passed over (renew over a whole map), but
// at least one must hold it. A failure names every agent that failed
// ("agent 'b' (...): ...; agent 'c' (...): ..."), with the first one's
// error; *renewed counts the agents that renewed.
ApiResult<LeaseView> renewFabricLease(const std::vector<const FabricAgent*>& agents,
                                      const ControlClientOptions& base, const std::string& job,
                                      int64_t ttl_s, bool skip_missing, int* renewed);

// Deletes the job's lease on every agent (each idempotent), trying all of
// them even after a failure; the value is how many existed. The first
// failure is returned, naming its agent (the others' TTL is the backstop).
ApiResult<int> deleteFabricLease(const std::vector<const FabricAgent*>& agents,
                                 const ControlClientOptions& base, const std::string& job);

// Every agent of the map, in order (lease delete needs no node list).
std::vector<const FabricAgent*> allAgents(const FabricMap& map);

}  // namespace switchagg::agent
