// GET /metrics: the agent's state in Prometheus text format (version 0.0.4).
// Lease tokens never appear here.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "agent_config.h"
#include "data_plane_view.h"
#include "lease_table.h"

namespace switchagg::agent {

struct MetricsInput {
  const AgentConfig* config = nullptr;
  std::vector<Lease> leases;
  int slots_in_use = 0;
  bool draining = false;
  DataPlaneCounters data;
  std::map<std::string, uint64_t> control_refused;  // API error code -> count
  // (listener, reason) -> connections shed by the control server's budgets
  std::map<std::pair<std::string, std::string>, uint64_t> control_shed;
  uint64_t lease_file_save_failures = 0;             // state.lease_file writes that failed
};

std::string renderMetrics(const MetricsInput& in);

}  // namespace switchagg::agent
