#include "switchagg/agent/control_schema.h"

#include "lease_json.h"

namespace switchagg::agent {

using nlohmann::json;

namespace {

struct ApiErrorRow {
  ApiError error;
  const char* code;
  int http_status;  // 0: never on the wire
  Code status_code;
  bool refusal;
};

// docs/control-api.md lists the same table for people.
constexpr ApiErrorRow kApiErrors[] = {
    {ApiError::kBadRequest, "bad_request", 400, Code::kInvalidArgument, false},
    {ApiError::kUnauthenticated, "unauthenticated", 401, Code::kDenied, true},
    {ApiError::kPolicyDenied, "policy_denied", 403, Code::kDenied, true},
    {ApiError::kNotFound, "not_found", 404, Code::kAborted, true},
    {ApiError::kConflict, "conflict", 409, Code::kDenied, true},
    {ApiError::kQuotaExceeded, "quota_exceeded", 429, Code::kNoResource, true},
    {ApiError::kOverloaded, "overloaded", 503, Code::kNoResource, false},
    {ApiError::kDraining, "draining", 503, Code::kUnsupported, true},
    {ApiError::kInternal, "internal", 500, Code::kInternal, false},
    {ApiError::kUnreachable, "unreachable", 0, Code::kIoError, false},
    {ApiError::kConfig, "config", 0, Code::kInvalidArgument, false},
};

const ApiErrorRow& rowOf(ApiError e) {
  for (const ApiErrorRow& r : kApiErrors) {
    if (r.error == e) return r;
  }
  return rowOf(ApiError::kInternal);
}

}  // namespace

const char* apiErrorCode(ApiError e) { return rowOf(e).code; }
int apiErrorHttpStatus(ApiError e) { return rowOf(e).http_status; }
Code apiErrorStatusCode(ApiError e) { return rowOf(e).status_code; }
bool isRefusal(ApiError e) { return rowOf(e).refusal; }

std::optional<ApiError> apiErrorFromCode(const std::string& code) {
  for (const ApiErrorRow& r : kApiErrors) {
    if (code == r.code) return r.error;
  }
  return std::nullopt;
}

Status ApiFailure::status() const {
  if (apiErrorHttpStatus(error) == 0) return Status(apiErrorStatusCode(error), message);
  return Status(apiErrorStatusCode(error), std::string(apiErrorCode(error)) + ": " + message);
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

json leaseJson(const LeaseView& l, LeaseFields fields) {
  json j = {{"job", l.job}, {"slots", l.slots}};
  if (fields != LeaseFields::kToken) {
    j["uid"] = l.uid;
    j["ttl_s"] = l.ttl_s;
    j["expires_in_s"] = l.expires_in_s;
  }
  if (fields == LeaseFields::kListing) {
    j["user"] = l.user;
    j["groups"] = l.groups;
  } else {
    j["data_address"] = l.data_address;
  }
  if (fields == LeaseFields::kCreated || fields == LeaseFields::kToken) j["token"] = l.token;
  return j;
}

LeaseView leaseFromJson(const json& j) {
  LeaseView l;
  l.job = jsonString(j, "job");
  l.uid = static_cast<uint32_t>(jsonInt(j, "uid"));
  l.user = jsonString(j, "user");
  l.slots = static_cast<int>(jsonInt(j, "slots"));
  l.ttl_s = jsonInt(j, "ttl_s");
  l.expires_in_s = jsonInt(j, "expires_in_s");
  l.token = jsonString(j, "token");
  l.data_address = jsonString(j, "data_address");
  l.groups = static_cast<int>(jsonInt(j, "groups"));
  return l;
}

std::string jsonString(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

int64_t jsonInt(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) return 0;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_number_unsigned()) return static_cast<int64_t>(it->get<uint64_t>());
  if (it->is_number_float()) {
    // Out of int64's range (1e300, found by fuzz_http_response) the cast is
    // undefined: such a field reads as mistyped, 0.
    double d = it->get<double>();
    return d > -9.2e18 && d < 9.2e18 ? static_cast<int64_t>(d) : 0;
  }
  return 0;
}

bool jsonFlag(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() && it->get<bool>();
}

}  // namespace switchagg::agent
