// The control API's endpoints (docs/control-api.md): routes one parsed
// request from an identified caller to the lease table, policy and data
// plane, and renders the JSON answer. No sockets here: the server
// (control_server.h) feeds it, the fuzz target and unit tests call it
// directly.
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "agent_config.h"
#include "data_plane_view.h"
#include "http_message.h"
#include "lease_table.h"
#include "policy.h"

namespace switchagg::agent {

struct ControlResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
};

// Renders the error body {"error": code, "message": text}.
ControlResponse errorResponse(int http_status, const std::string& code, const std::string& message);

class ControlApi {
 public:
  // `data_plane` may be null (no data plane: counters are zero and
  // data_address comes from the config).
  ControlApi(const AgentConfig& config, LeaseTable& leases, const DataPlaneView* data_plane);

  ControlResponse handle(const HttpRequest& request, const Caller& caller);

  // Refused control requests by error code, for /metrics.
  std::map<std::string, uint64_t> refusedCounts() const;
  // Counts a request refused before routing (bad HTTP, too many connections).
  void countRefused(const std::string& code);

 private:
  ControlResponse route(const HttpRequest& request, const Caller& caller);
  ControlResponse getStatus();
  ControlResponse getLeases();
  ControlResponse createLease(const HttpRequest& request, const Caller& caller);
  ControlResponse leaseAction(const std::string& job, const std::string& action,
                              const HttpRequest& request, const Caller& caller);
  ControlResponse drain(const HttpRequest& request, const Caller& caller);
  ControlResponse metrics();
  std::string dataAddress() const;
  DataPlaneCounters counters() const;

  const AgentConfig config_;
  LeaseTable& leases_;
  const Policy policy_;
  const DataPlaneView* data_plane_;
  mutable std::mutex refused_mu_;
  std::map<std::string, uint64_t> refused_;
};

}  // namespace switchagg::agent
