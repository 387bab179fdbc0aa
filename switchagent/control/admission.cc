#include "admission.h"

#include <algorithm>

namespace switchagg::agent {

namespace {

std::string seconds(int64_t ms) { return std::to_string(ms / 1000) + " s"; }

}  // namespace

Admission admitLease(const LeaseLimits& limits, Admit kind, const LeaseAsk& ask,
                     const PoolUse& use) {
  Admission a;
  auto refuse = [&](ApiError e, std::string message) {
    a.denial = Denial{e, std::move(message)};
    return a;
  };
  if (!isValidJobId(ask.job)) {
    return refuse(ApiError::kBadRequest, kJobIdRule);
  }
  if (ask.slots < 1) {
    return refuse(ApiError::kBadRequest,
                  "slots must be at least 1, got " + std::to_string(ask.slots));
  }
  if (kind != Admit::kRestore && ask.ttl_ms < kMinTtlMs) {
    return refuse(ApiError::kBadRequest, "ttl must be at least 1 s");
  }
  a.ttl_ms = ask.ttl_ms;
  if (ask.ttl_ms > limits.max_ttl_ms) {
    if (kind != Admit::kRestore) {
      return refuse(ApiError::kQuotaExceeded, "ttl_s " + std::to_string(ask.ttl_ms / 1000) +
                                                  " exceeds policy.max_ttl (" +
                                                  seconds(limits.max_ttl_ms) + ")");
    }
    a.ttl_ms = limits.max_ttl_ms;
    a.ttl_cut = true;
  }
  if (kind == Admit::kCreate && use.draining) {
    return refuse(ApiError::kDraining, "agent is draining: no new leases");
  }
  if (ask.slots > limits.max_slots_per_job) {
    return refuse(ApiError::kQuotaExceeded,
                  "job " + ask.job + " asks for " + std::to_string(ask.slots) +
                      " slots; policy.max_slots_per_job is " +
                      std::to_string(limits.max_slots_per_job));
  }
  if (use.user_slots + ask.slots > limits.max_slots_per_user) {
    return refuse(ApiError::kQuotaExceeded,
                  "uid " + std::to_string(ask.uid) + " holds " + std::to_string(use.user_slots) +
                      " slots and asks for " + std::to_string(ask.slots) +
                      " more; policy.max_slots_per_user is " +
                      std::to_string(limits.max_slots_per_user));
  }
  int free_slots = std::max(0, limits.pool_slots - use.slots_in_use);
  if (ask.slots > free_slots) {
    return refuse(ApiError::kQuotaExceeded,
                  "job " + ask.job + " asks for " + std::to_string(ask.slots) + " slots; " +
                      std::to_string(free_slots) + " of " + std::to_string(limits.pool_slots) +
                      " pool slots are free");
  }
  return a;
}

}  // namespace switchagg::agent
