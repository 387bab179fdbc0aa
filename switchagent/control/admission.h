// Whether a lease may exist: one pure check that create, renew and restore
// (the lease file at start-up) all call, so every policy bound (pool size,
// per-job and per-user slots, TTL range, draining) applies the same way on
// each path. Refusals are typed: an ApiError carries its wire code and HTTP
// status (control_schema.h), so nothing downstream parses message text back.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "switchagg/agent/control_schema.h"
#include "switchagg/agent/defaults.h"

namespace switchagg::agent {

// A refusal: the API error (with its HTTP status, control_schema.h) and
// one line naming the bound and the numbers.
using Denial = ApiFailure;

// The shortest TTL a lease is granted (create, renew, and in the lease file).
constexpr int64_t kMinTtlMs = 1000;

// The site's bounds on leases (pool.slots and the policy.* keys).
struct LeaseLimits {
  int pool_slots = kDefaultPoolSlots;
  int max_slots_per_job = kDefaultMaxSlotsPerJob;
  int max_slots_per_user = kDefaultMaxSlotsPerUser;
  int64_t max_ttl_ms = kDefaultMaxTtlMs;
  int64_t idle_reclaim_ms = kDefaultIdleReclaimMs;  // 0: never (LeaseTable::expireAt)
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
