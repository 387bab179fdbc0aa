// The control API's contract (docs/control-api.md), written once for the
// agent that serves it, the client that calls it (switchagg-ctl, tests) and
// the SPANK plugin: the error vocabulary, the job-id rule, the lease view and
// the names of the variables a job's tasks get. Links no UCX and no MPI.
#pragma once

#include <algorithm>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "switchagg/common/status.h"

namespace switchagg::agent {

// Variables handed to a job's tasks (docs/offload.md): where the data plane
// listens, the lease token (hex), and the job's mode (off|auto|require).
constexpr const char* kEnvAgent = "SWITCHAGG_AGENT";
constexpr const char* kEnvLease = "SWITCHAGG_LEASE";
constexpr const char* kEnvMode = "SWITCHAGG_MODE";
// Set when a fabric map placed the lease (docs/admin.md "Fabric map"): the
// agents' names, comma-joined in SWITCHAGG_AGENT's order (leaves, then the
// spine for a tree), and the map's absolute path, which the job's client
// reads to find its own leaf. SWITCHAGG_FABRIC is also where switchagg-ctl
// looks for the map without --fabric.
constexpr const char* kEnvAgentNames = "SWITCHAGG_AGENT_NAMES";
constexpr const char* kEnvFabric = "SWITCHAGG_FABRIC";

// Job ids travel in URL paths and Prometheus labels: 1-64 of [A-Za-z0-9._+-].
bool isValidJobId(const std::string& job);
// The rule, for the message that refuses a bad id.
constexpr const char* kJobIdRule = "job id must be 1-64 characters of [A-Za-z0-9._+-]";

// Every way a control call can fail. The server sends the first nine as
// {"error": code}; the last two arise on the caller's side.
enum class ApiError {
  kBadRequest,       // 400
  kUnauthenticated,  // 401
  kPolicyDenied,     // 403
  kNotFound,         // 404
  kConflict,         // 409
  kQuotaExceeded,    // 429
  kOverloaded,       // 503: connection budgets full
  kDraining,         // 503
  kInternal,         // 500 (also: an answer the client cannot read)
  kUnreachable,      // client: no answer (connect, I/O, timeout)
  kConfig,           // client: its own configuration is wrong (agent address, plugin arguments)
};
const char* apiErrorCode(ApiError e);  // "quota_exceeded"
int apiErrorHttpStatus(ApiError e);    // 429 (0 for the client-side ones)
Code apiErrorStatusCode(ApiError e);   // kNoResource: the Status code it travels as
// A refusal the agent decided (quota, policy, draining, no lease, another
// uid's job), as opposed to an error (unreachable, misconfigured, internal).
bool isRefusal(ApiError e);
// The error named by a wire code ("quota_exceeded"); nullopt if unknown.
std::optional<ApiError> apiErrorFromCode(const std::string& code);

// Why a call failed: the typed error plus one line for people.
struct ApiFailure {
  ApiError error = ApiError::kInternal;
  std::string message;  // the server's message, or what went wrong here
  // For logs and callers that only need a Status: apiErrorStatusCode(error)
  // and "<code>: <message>" for the server's errors, the message alone for
  // the client-side ones (it names the address or the setting).
  Status status() const;
};

// A value, or the typed failure that explains why there is none.
template <typename T>
class ApiResult : public Result<T> {
 public:
  ApiResult(T value) : Result<T>(std::move(value)) {}  // NOLINT: implicit on purpose
  ApiResult(ApiFailure failure)                         // NOLINT
      : Result<T>(failure.status()), failure_(std::move(failure)) {}
  ApiResult(ApiError error, std::string message) : ApiResult(ApiFailure{error, std::move(message)}) {}
  template <typename U>
  static ApiResult failed(const ApiResult<U>& other) {
    return ApiResult(other.failure());
  }
  // Meaningful only when !ok().
  const ApiFailure& failure() const { return failure_; }
  ApiError error() const { return failure_.error; }

 private:
  ApiFailure failure_;
};

// What the API says about one lease. Each endpoint renders a subset of the
// fields (LeaseFields); a client reads whichever are present.
struct LeaseView {
  std::string job;
  uint32_t uid = 0;
  std::string user;  // listings: the uid's name ("" if unknown)
  int slots = 0;
  int64_t ttl_s = 0;
  int64_t expires_in_s = 0;
  std::string token;         // hex; only from create and token, never in listings
  // UCX address of the data plane ("host:port"); an agent whose data-plane
  // threads spread a lease (data.threads_per_job) lists one per thread,
  // comma-separated: the job stripes over them (jobTokens).
  std::string data_address;
  int groups = 0;            // listings only
  bool created = false;      // client, createLease: true = new (201), false = existing (200)
  // fabric_lease.h only: the agents' names, comma-joined as data_address
  // (SWITCHAGG_AGENT_NAMES); "" from one agent's ControlClient.
  std::string agent_names;
};

// SWITCHAGG_LEASE for a lease's jobs: one token per address of
// data_address (the one agent's token repeated when its threads spread the
// lease; a fabric view's tokens as they are).
inline std::string jobTokens(const LeaseView& l) {
  const size_t addresses = size_t(std::count(l.data_address.begin(), l.data_address.end(), ',')) + 1;
  if (l.token.empty() || l.token.find(',') != std::string::npos || addresses == 1) return l.token;
  std::string out = l.token;
  for (size_t i = 1; i < addresses; ++i) out += "," + l.token;
  return out;
}

// Which fields an endpoint renders (lease_json.h renders and reads them).
enum class LeaseFields {
  kListing,  // GET /v1/leases: job, uid, user, slots, ttl_s, expires_in_s, groups
  kCreated,  // POST /v1/leases: job, uid, slots, ttl_s, expires_in_s, token, data_address
  kToken,    // GET .../token: job, token, data_address, slots
  kRenewed,  // POST .../renew: job, uid, slots, ttl_s, expires_in_s, data_address
};

}  // namespace switchagg::agent
