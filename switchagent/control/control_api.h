// The control API's endpoints (docs/control-api.md): routes one parsed
// request from an identified caller to the lease table, policy and data
// plane, and renders the JSON answer. No sockets here: the server
// (control_server.h) feeds it, the fuzz target and unit tests call it
// directly.
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <optional>
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
  std::optional<ApiError> error;  // set by errorResponse: what /metrics counts
};

// Renders the error body {"error": code, "message": text} with the code's
// HTTP status, or `http_status` where a more precise one exists (405, 408,
// 413 are all bad_request).
ControlResponse errorResponse(ApiError error, const std::string& message, int http_status = 0);
ControlResponse errorResponse(const Denial& denial);

class ControlApi {
 public:
  // `data_plane` may be null (no data plane: counters are zero and
  // data_address comes from the config).
  ControlApi(const AgentConfig& config, LeaseTable& leases, const DataPlaneView* data_plane);

  ControlResponse handle(const HttpRequest& request, const Caller& caller);

  // Refused control requests by error code, for /metrics.
  std::map<std::string, uint64_t> refusedCounts() const;
  // Counts a request refused before routing (bad HTTP, too many connections).
  void countRefused(ApiError error);
  // Counts a connection the server shed to keep its budgets, by listener
  // ("unix", "tcp") and reason ("evicted_peer_limit", "timeout", ...).
  void countShed(const std::string& listener, const std::string& reason);

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
  std::string dataAddressFor(const LeaseToken& token) const;  // the lease's data-plane thread
  DataPlaneCounters counters() const;

  const AgentConfig config_;
  LeaseTable& leases_;
  const Policy policy_;
  const DataPlaneView* data_plane_;
  mutable std::mutex refused_mu_;
  std::map<std::string, uint64_t> refused_;
  std::map<std::pair<std::string, std::string>, uint64_t> shed_;
};

}  // namespace switchagg::agent
