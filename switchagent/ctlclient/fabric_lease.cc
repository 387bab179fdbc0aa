#include "switchagg/agent/fabric_lease.h"

#include <algorithm>
#include <optional>

#include "switchagg/common/config.h"  // splitList

namespace switchagg::agent {

namespace {

ControlClient clientFor(const FabricAgent& a, const ControlClientOptions& base) {
  ControlClientOptions o = base;
  o.address = a.control;
  return ControlClient(o);
}

ApiFailure named(const FabricAgent& a, const ApiFailure& f) {
  return {f.error, "agent '" + a.name + "' (" + a.control + "): " + f.status().message()};
}

// Folds agent k's view into the job's combined one: one stripe, or with
// `threads` one per data-plane thread the agent lists (fabric_lease.h).
void add(LeaseView* all, const FabricAgent& a, const LeaseView& one, bool first, bool threads) {
  std::vector<std::string> data = splitList(one.data_address);
  if (data.empty()) data.push_back(one.data_address);
  if (!threads || data.size() == 1) {
    data = {a.data.empty() ? data[0] : a.data};
  } else if (!a.data.empty()) {
    const std::string host = a.data.substr(0, a.data.rfind(':'));
    for (std::string& d : data)
      if (const size_t colon = d.rfind(':'); colon != std::string::npos) d = host + d.substr(colon);
  }
  for (size_t i = 0; i < data.size(); ++i) {
    if (first && i == 0) {
      *all = one;
      all->data_address = data[0];
      all->agent_names = a.name;
      continue;
    }
    all->data_address += "," + data[i];
    all->agent_names += "," + a.name;
    all->token += "," + one.token;
  }
  if (!first) all->created = all->created || one.created;
}

// Whether the agents' data-plane threads may each be a stripe: not in a
// tree (a leaf talks to its spine whole) nor a rail pool (stripe k is rail k).
bool threadStripes(const std::vector<const FabricAgent*>& agents) {
  return !FabricMap::isTree(agents) &&
         std::none_of(agents.begin(), agents.end(), [](const FabricAgent* a) { return a->rail; });
}

}  // namespace

std::vector<const FabricAgent*> allAgents(const FabricMap& map) {
  std::vector<const FabricAgent*> out;
  for (const FabricAgent& a : map.agents()) out.push_back(&a);
  return out;
}

ApiResult<LeaseView> createFabricLease(const std::vector<const FabricAgent*>& agents,
                                       const ControlClientOptions& base, const std::string& job,
                                       int64_t uid, int slots, int64_t ttl_s) {
  if (agents.empty()) return ApiFailure{ApiError::kConfig, "no agent for the job"};
  LeaseView all;
  std::vector<const FabricAgent*> made;  // created by this call, to undo
  for (size_t k = 0; k < agents.size(); ++k) {
    ControlClient client = clientFor(*agents[k], base);
    ApiResult<LeaseView> one = client.createLease(job, uid, slots, ttl_s);
    if (!one.ok()) {
      for (const FabricAgent* a : made) (void)clientFor(*a, base).deleteLease(job);
      return named(*agents[k], one.failure());
    }
    if (one->created) made.push_back(agents[k]);
    add(&all, *agents[k], *one, k == 0, threadStripes(agents));
  }
  return all;
}

ApiResult<LeaseView> fetchFabricToken(const std::vector<const FabricAgent*>& agents,
                                      const ControlClientOptions& base, const std::string& job) {
  if (agents.empty()) return ApiFailure{ApiError::kConfig, "no agent for the job"};
  LeaseView all;
  for (size_t k = 0; k < agents.size(); ++k) {
    ApiResult<LeaseView> one = clientFor(*agents[k], base).fetchToken(job);
    if (!one.ok()) return named(*agents[k], one.failure());
    add(&all, *agents[k], *one, k == 0, threadStripes(agents));
  }
  return all;
}

ApiResult<LeaseView> renewFabricLease(const std::vector<const FabricAgent*>& agents,
                                      const ControlClientOptions& base, const std::string& job,
                                      int64_t ttl_s, bool skip_missing, int* renewed) {
  *renewed = 0;
  if (agents.empty()) return ApiFailure{ApiError::kConfig, "no agent for the job"};
  LeaseView all;
  std::optional<ApiFailure> first;
  for (const FabricAgent* a : agents) {
    ApiResult<LeaseView> one = clientFor(*a, base).renewLease(job, ttl_s);
    if (!one.ok()) {
      if (skip_missing && one.failure().error == ApiError::kNotFound) continue;
      // Every failed agent is named; the first one's error is the result's.
      const ApiFailure f = named(*a, one.failure());
      if (!first)
        first = f;
      else
        first->message += "; " + f.message;
      continue;
    }
    const int64_t earliest =
        *renewed == 0 ? one->expires_in_s : std::min(all.expires_in_s, one->expires_in_s);
    add(&all, *a, *one, *renewed == 0, threadStripes(agents));
    all.expires_in_s = earliest;
    ++*renewed;
  }
  if (first) return *first;
  if (*renewed == 0)
    return ApiFailure{ApiError::kNotFound, "no lease for job " + job + " on any agent of the map"};
  return all;
}

ApiResult<int> deleteFabricLease(const std::vector<const FabricAgent*>& agents,
                                 const ControlClientOptions& base, const std::string& job) {
  int existed = 0;
  std::optional<ApiFailure> first;
  for (const FabricAgent* a : agents) {
    ApiResult<bool> deleted = clientFor(*a, base).deleteLease(job);
    if (deleted.ok())
      existed += *deleted ? 1 : 0;
    else if (!first)
      first = named(*a, deleted.failure());
  }
  if (first) return *first;
  return existed;
}

}  // namespace switchagg::agent
