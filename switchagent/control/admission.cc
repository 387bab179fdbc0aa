#include "admission.h"

#include <algorithm>

namespace switchagg::agent {

namespace {

struct ApiErrorRow {
  ApiError error;
  const char* code;
  int http_status;
  Code status_code;  // the lease table's Status code for it (kInternal: none)
};

constexpr ApiErrorRow kApiErrors[] = {
    {ApiError::kBadRequest, "bad_request", 400, Code::kInvalidArgument},
    {ApiError::kUnauthenticated, "unauthenticated", 401, Code::kInternal},
    {ApiError::kPolicyDenied, "policy_denied", 403, Code::kInternal},
    {ApiError::kNotFound, "not_found", 404, Code::kAborted},
    {ApiError::kConflict, "conflict", 409, Code::kDenied},
    {ApiError::kQuotaExceeded, "quota_exceeded", 429, Code::kNoResource},
    {ApiError::kOverloaded, "overloaded", 503, Code::kInternal},
    {ApiError::kDraining, "draining", 503, Code::kUnsupported},
    {ApiError::kInternal, "internal", 500, Code::kInternal},
};

const ApiErrorRow& rowOf(ApiError e) {
  for (const ApiErrorRow& r : kApiErrors) {
    if (r.error == e) return r;
  }
  return kApiErrors[sizeof kApiErrors / sizeof kApiErrors[0] - 1];
}

Denial deny(ApiError e, std::string message) { return Denial{e, std::move(message)}; }

std::string seconds(int64_t ms) { return std::to_string(ms / 1000) + " s"; }

}  // namespace

const char* apiErrorCode(ApiError e) { return rowOf(e).code; }
int apiErrorHttpStatus(ApiError e) { return rowOf(e).http_status; }

Status toStatus(const Denial& d) { return Status(rowOf(d.error).status_code, d.message); }

ApiError apiErrorOf(Code code) {
  for (const ApiErrorRow& r : kApiErrors) {
    if (r.status_code == code && code != Code::kInternal) return r.error;
  }
  return ApiError::kInternal;
}

// Slurm ids look like "1234", "1234_7" (array) or "1234+0" (het job).
bool isValidJobId(const std::string& job) {
  if (job.empty() || job.size() > 64) return false;
  for (char c : job) {
    bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              c == '.' || c == '_' || c == '-' || c == '+';
    if (!ok) return false;
  }
  return true;
}

Admission admitLease(const LeaseLimits& limits, Admit kind, const LeaseAsk& ask,
                     const PoolUse& use) {
  Admission a;
  auto refuse = [&](ApiError e, std::string message) {
    a.denial = deny(e, std::move(message));
    return a;
  };
  if (!isValidJobId(ask.job)) {
    return refuse(ApiError::kBadRequest, "job id must be 1-64 characters of [A-Za-z0-9._+-]");
  }
  if (ask.slots < 1) {
    return refuse(ApiError::kBadRequest,
                  "slots must be at least 1, got " + std::to_string(ask.slots));
  }
  if (kind != Admit::kRestore && ask.ttl_ms < 1000) {
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
