// Whether a lease may exist: one pure check that create, renew and restore
// (the lease file at start-up) all call, so every policy bound (pool size,
// per-job and per-user slots, TTL range, draining) applies the same way on
// each path. Refusals are typed: an ApiError carries its wire code and HTTP
// status, so nothing downstream parses message text back.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "switchagg/common/status.h"

namespace switchagg::agent {

// The control API's error codes (docs/control-api.md), each with its HTTP
// status: the one table both the server and the API render from.
enum class ApiError {
  kBadRequest,       // 400
  kUnauthenticated,  // 401
  kPolicyDenied,     // 403
  kNotFound,         // 404
  kConflict,         // 409
  kQuotaExceeded,    // 429
  kOverloaded,       // 503: connection budgets full
  kDraining,         // 503
  kInternal,         // 500
};
const char* apiErrorCode(ApiError e);  // "quota_exceeded"
int apiErrorHttpStatus(ApiError e);    // 429

struct Denial {
  ApiError error;
  std::string message;  // one line naming the bound and the numbers
};

// The lease table's Status codes carry exactly one ApiError each
// (kInvalidArgument bad_request, kDenied conflict, kNoResource
// quota_exceeded, kUnsupported draining, kAborted not_found); these two
// functions are that mapping, both ways.
Status toStatus(const Denial& d);
ApiError apiErrorOf(Code code);

// Job ids travel in URL paths and Prometheus labels: 1-64 of [A-Za-z0-9._+-].
bool isValidJobId(const std::string& job);

// The site's bounds on leases (pool.slots and the policy.* keys).
struct LeaseLimits {
  int pool_slots = 64;
  int max_slots_per_job = 16;
  int max_slots_per_user = 32;
  int64_t max_ttl_ms = 7LL * 24 * 3600 * 1000;
};

enum class Admit {
  kCreate,   // a new lease: every bound, and not while draining
  kRenew,    // a new TTL for a held lease: TTL range
  kRestore,  // a lease from the lease file: every bound but draining; a
             // remaining time beyond policy.max_ttl is cut to it, not refused
};

struct LeaseAsk {
  std::string job;
  uint32_t uid = 0;
  int slots = 0;
  int64_t ttl_ms = 0;  // restore: the time the lease has left
};

// What the rest of the pool holds, this job's own lease excluded.
struct PoolUse {
  int slots_in_use = 0;  // all jobs
  int user_slots = 0;    // the asking uid's other leases
  bool draining = false;
};

// The TTL to grant (restore: possibly cut to max_ttl), or the refusal.
struct Admission {
  std::optional<Denial> denial;
  int64_t ttl_ms = 0;
  bool ttl_cut = false;  // restore only: the remaining time exceeded max_ttl
};

Admission admitLease(const LeaseLimits& limits, Admit kind, const LeaseAsk& ask,
                     const PoolUse& use);

}  // namespace switchagg::agent
