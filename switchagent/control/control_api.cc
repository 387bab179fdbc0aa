#include "control_api.h"

#include <nlohmann/json.hpp>
#include <cstdlib>
#include <optional>

#include "lease_json.h"
#include "lease_store.h"
#include "metrics.h"
#include "switchagg/common/log.h"
#include "switchagg/common/version.h"

namespace switchagg::agent {

using nlohmann::json;

namespace {

constexpr const char* kPart = "agent";
// Larger TTLs are not malformed, just beyond policy (admitLease refuses
// them); the bound only keeps ttl_s * 1000 from overflowing.
constexpr int64_t kMaxTtlSeconds = 1000000000000LL;

// Nesting deeper than any valid body is refused before parsing, so hostile
// input cannot make the parser or the destructor recurse deeply.
bool shallowEnough(const std::string& body, int max_depth) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : body) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return false;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return true;
}

// The request body as a JSON object whose keys are all in `allowed`.
Result<json> parseBody(const std::string& body, const std::vector<std::string>& allowed) {
  if (body.empty()) return json::object();
  if (!shallowEnough(body, 8)) return Status(Code::kInvalidArgument, "body nests too deeply");
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return Status(Code::kInvalidArgument, "body must be a JSON object");
  }
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool known = false;
    for (const std::string& a : allowed) known = known || it.key() == a;
    if (!known) return Status(Code::kInvalidArgument, "unknown field '" + it.key() + "'");
  }
  return j;
}

// An optional integer field within [lo, hi].
Result<std::optional<int64_t>> intField(const json& j, const char* key, int64_t lo, int64_t hi) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::optional<int64_t>();
  int64_t v = 0;
  if (it->is_number_integer()) v = it->get<int64_t>();
  else if (it->is_number_unsigned() && it->get<uint64_t>() <= static_cast<uint64_t>(hi))
    v = static_cast<int64_t>(it->get<uint64_t>());
  else
    return Status(Code::kInvalidArgument, std::string(key) + " must be an integer");
  if (v < lo || v > hi) {
    return Status(Code::kInvalidArgument, std::string(key) + " must be within " +
                                              std::to_string(lo) + ".." + std::to_string(hi));
  }
  return std::optional<int64_t>(v);
}

ControlResponse jsonResponse(int status, const json& body) {
  ControlResponse r;
  r.status = status;
  r.body = body.dump() + "\n";
  return r;
}

// A body parser's complaint: the request is malformed.
ControlResponse badRequest(const Status& st) {
  return errorResponse(ApiError::kBadRequest, st.message());
}

// The optional "ttl_s" field in ms, or `default_ms`. Its range is
// admitLease's to judge; here only its shape.
Result<int64_t> ttlMsField(const json& j, int64_t default_ms) {
  auto ttl = intField(j, "ttl_s", 0, kMaxTtlSeconds);
  if (!ttl.ok()) return ttl.status();
  return ttl->has_value() ? **ttl * 1000 : default_ms;
}

int64_t secondsLeft(const Lease& lease) {
  int64_t ms = lease.expires_at_ms - steadyNowMs();
  return ms <= 0 ? 0 : (ms + 999) / 1000;
}

// Each data-plane thread's address and share (counters are their sums).
json threadsJson(const DataPlaneCounters& c) {
  json out = json::array();
  for (const DataThreadCounters& t : c.threads) {
    const size_t colon = t.address.rfind(':');
    const long port = colon == std::string::npos ? 0 : std::atol(t.address.c_str() + colon + 1);
    const DataPlaneScalars& k = t.counters;
    out.push_back({{"index", t.index}, {"address", t.address}, {"port", port},
                   {"leases", t.leases}, {"groups_active", k.groups_active},
                   {"groups_created", k.groups_created}, {"groups_aborted", k.groups_aborted},
                   {"bytes_in", k.bytes_in}, {"bytes_out", k.bytes_out},
                   {"contributions", k.contributions}, {"chunks_reduced", k.chunks_reduced},
                   {"clients_connected", k.clients_connected}, {"busy_ns", t.busy_ns},
                   {"bytes_in_by_job", t.bytes_in_by_job}, {"groups_by_job", t.groups_by_job}});
  }
  return out;
}

// /v1/status's "counters": every row of SWITCHAGG_DATA_PLANE_COUNTERS by its
// field's name, and the rejections' total.
json countersJson(const DataPlaneCounters& c) {
  json out = json::object();
  for (const CounterInfo& k : kDataPlaneCounters) out[k.field] = c.*k.member;
  uint64_t rejected_total = 0;
  for (const auto& [reason, n] : c.rejected) rejected_total += n;
  out["rejected_total"] = rejected_total;
  return out;
}

LeaseView viewOf(const Lease& l, const std::string& data_address) {
  LeaseView v;
  v.job = l.job;
  v.uid = l.uid;
  v.slots = l.slots;
  v.ttl_s = l.ttl_ms / 1000;
  v.expires_in_s = secondsLeft(l);
  v.token = l.token.hex();
  v.data_address = data_address;
  return v;
}

}  // namespace

ControlResponse errorResponse(ApiError error, const std::string& message, int http_status) {
  ControlResponse r =
      jsonResponse(http_status != 0 ? http_status : apiErrorHttpStatus(error),
                   json{{"error", apiErrorCode(error)}, {"message", message}});
  r.error = error;
  return r;
}

ControlResponse errorResponse(const Denial& denial) {
  return errorResponse(denial.error, denial.message);
}

ControlApi::ControlApi(const AgentConfig& config, LeaseTable& leases,
                       const DataPlaneView* data_plane)
    : config_(config), leases_(leases), policy_(config), data_plane_(data_plane) {}

std::map<std::string, uint64_t> ControlApi::refusedCounts() const {
  std::lock_guard<std::mutex> lock(refused_mu_);
  return refused_;
}

void ControlApi::countRefused(ApiError error) {
  std::lock_guard<std::mutex> lock(refused_mu_);
  ++refused_[apiErrorCode(error)];
}

void ControlApi::countShed(const std::string& listener, const std::string& reason) {
  std::lock_guard<std::mutex> lock(refused_mu_);
  ++shed_[{listener, reason}];
}

std::string ControlApi::dataAddress() const {
  return data_plane_ != nullptr ? data_plane_->address() : config_.data.listen;
}

std::string ControlApi::dataAddressFor(const LeaseToken& token) const {
  // A lease's jobs go to its home data-plane thread (data_thread.h).
  return data_plane_ != nullptr ? data_plane_->addressFor(token.hex()) : config_.data.listen;
}

DataPlaneCounters ControlApi::counters() const {
  if (data_plane_ == nullptr) return DataPlaneCounters{};
  DataPlaneCounters c = data_plane_->counters();
  // Each lease counts on its home thread (the one its jobs are sent to).
  if (!c.threads.empty())
    for (const Lease& l : leases_.list()) {
      const auto k = static_cast<size_t>(data_plane_->threadOf(l.token.hex()));
      ++c.threads[k < c.threads.size() ? k : 0].leases;
    }
  return c;
}

ControlResponse ControlApi::handle(const HttpRequest& request, const Caller& caller) {
  ControlResponse r;
  try {
    r = route(request, caller);
  } catch (const std::exception& e) {
    // nlohmann::json throws on misuse; a request must never take the agent down.
    SA_ERROR(kPart, "control: %s %s failed: %s", request.method.c_str(), request.path.c_str(),
             e.what());
    r = errorResponse(ApiError::kInternal, "internal error");
  }
  if (r.error) countRefused(*r.error);
  return r;
}

ControlResponse ControlApi::route(const HttpRequest& req, const Caller& caller) {
  const std::string& p = req.path;
  const std::string& m = req.method;
  auto wrongMethod = [&](const char* allowed) {
    return errorResponse(ApiError::kBadRequest,
                         m + " is not allowed on " + p + " (use " + allowed + ")", 405);
  };
  bool read_path = p == "/v1/status" || p == "/v1/leases" || p == "/metrics";
  if (read_path && m == "GET") {
    if (auto denial = policy_.authorize(caller, Action::kRead, 0)) return errorResponse(*denial);
    if (p == "/v1/status") return getStatus();
    if (p == "/metrics") return metrics();
    return getLeases();
  }
  if (p == "/v1/leases") return m == "POST" ? createLease(req, caller) : wrongMethod("GET, POST");
  if (p == "/v1/status" || p == "/metrics") return wrongMethod("GET");
  if (p == "/v1/drain") return m == "POST" ? drain(req, caller) : wrongMethod("POST");
  const std::string prefix = "/v1/leases/";
  if (p.compare(0, prefix.size(), prefix) == 0) {
    std::string rest = p.substr(prefix.size());
    size_t slash = rest.find('/');
    std::string job = rest.substr(0, slash);
    std::string action = slash == std::string::npos ? "" : rest.substr(slash + 1);
    if (!job.empty() && action.find('/') == std::string::npos) {
      return leaseAction(job, action, req, caller);
    }
  }
  return errorResponse(ApiError::kNotFound, "no endpoint " + p);
}

ControlResponse ControlApi::getStatus() {
  DataPlaneCounters c = counters();
  json caps = json::array();
  if (data_plane_ != nullptr) {
    for (const auto& [dtype, ops] : data_plane_->capabilities()) {
      json names = json::array();
      for (Op op : ops) names.push_back(opName(op));
      caps.push_back({{"dtype", dtypeName(dtype)}, {"ops", names}});
    }
  }
  json body = {
      {"version", SWITCHAGG_VERSION},
      {"draining", leases_.draining()},
      {"data_address", dataAddress()},
      {"slots_total", config_.limits.pool_slots},
      {"slots_in_use", leases_.slotsInUse()},
      {"slot_bytes", config_.data.engine.slot_bytes},
      {"leases", leases_.list().size()},
      {"groups", c.groups_active},
      {"capabilities", caps},
      {"counters", countersJson(c)},
      {"rejected", c.rejected},
      {"data_threads", threadsJson(c)},
      {"lease_file", leases_.leaseFile()},
      {"lease_file_save_failures", leases_.leaseFileSaveFailures()},
  };
  return jsonResponse(200, body);
}

ControlResponse ControlApi::getLeases() {
  DataPlaneCounters c = counters();
  json list = json::array();
  for (const Lease& l : leases_.list()) {
    LeaseView v = viewOf(l, "");
    v.user = userName(l.uid);
    auto g = c.groups_by_job.find(l.job);
    v.groups = g == c.groups_by_job.end() ? 0 : static_cast<int>(g->second);
    list.push_back(leaseJson(v, LeaseFields::kListing));
  }
  return jsonResponse(200, json{{"leases", list}});
}

ControlResponse ControlApi::createLease(const HttpRequest& req, const Caller& caller) {
  // Anonymous callers learn nothing about the body's checks.
  if (!caller.authenticated) return errorResponse(policy_.authorize(caller, Action::kCreate, 0).value());
  Result<json> body = parseBody(req.body, {"job", "uid", "slots", "ttl_s"});
  if (!body.ok()) return badRequest(body.status());
  const json& j = *body;
  std::string job;
  auto jit = j.find("job");
  if (jit != j.end() && jit->is_string()) job = jit->get<std::string>();
  else if (jit != j.end() && jit->is_number_unsigned()) job = std::to_string(jit->get<uint64_t>());
  else return errorResponse(ApiError::kBadRequest, "job (a string) is required");
  auto uid = intField(j, "uid", 0, 0xfffffffeLL);
  auto slots = intField(j, "slots", 1, 1 << 20);
  Result<int64_t> ttl_ms = ttlMsField(j, config_.default_ttl_ms);
  if (!uid.ok()) return badRequest(uid.status());
  if (!slots.ok()) return badRequest(slots.status());
  if (!ttl_ms.ok()) return badRequest(ttl_ms.status());
  uint32_t target = uid->has_value() ? static_cast<uint32_t>(**uid) : caller.uid;
  if (auto denial = policy_.authorize(caller, Action::kCreate, target)) {
    return errorResponse(*denial);
  }
  int n = slots->has_value() ? static_cast<int>(**slots) : config_.default_slots;
  ApiResult<LeaseTable::Created> created = leases_.create(job, target, n, *ttl_ms);
  if (!created.ok()) {
    SA_INFO(kPart, "lease for job %s (uid %u, %d slots) refused: %s", job.c_str(), target, n,
            created.status().message().c_str());
    return errorResponse(created.failure());
  }
  const Lease& l = created->lease;
  if (created->created) {
    SA_INFO(kPart, "lease created: job %s uid %u slots %d ttl %lld s (by uid %u via %s)",
            l.job.c_str(), l.uid, l.slots, static_cast<long long>(l.ttl_ms / 1000), caller.uid,
            caller.via.c_str());
  }
  return jsonResponse(created->created ? 201 : 200,
                      leaseJson(viewOf(l, dataAddressFor((l).token)), LeaseFields::kCreated));
}

ControlResponse ControlApi::leaseAction(const std::string& job, const std::string& action,
                                        const HttpRequest& req, const Caller& caller) {
  bool is_delete = action.empty() && req.method == "DELETE";
  bool is_token = action == "token" && req.method == "GET";
  bool is_renew = action == "renew" && req.method == "POST";
  if (!is_delete && !is_token && !is_renew) {
    if (action.empty() || action == "token" || action == "renew") {
      return errorResponse(ApiError::kBadRequest,
                           req.method + " is not allowed on " + req.path, 405);
    }
    return errorResponse(ApiError::kNotFound, "no endpoint " + req.path);
  }
  if (!caller.authenticated) {
    return errorResponse(policy_.authorize(caller, Action::kOwnerOnly, 0).value());
  }
  std::optional<Lease> lease = leases_.findByJob(job);
  if (!lease) {
    if (is_delete) return jsonResponse(200, {{"deleted", false}});
    return errorResponse(ApiError::kNotFound, "no lease for job " + job);
  }
  if (auto denial = policy_.authorize(caller, Action::kOwnerOnly, lease->uid)) {
    return errorResponse(*denial);
  }
  if (is_delete) {
    bool deleted = leases_.remove(job, "lease deleted");
    if (deleted) SA_INFO(kPart, "lease deleted: job %s (by uid %u)", job.c_str(), caller.uid);
    return jsonResponse(200, {{"deleted", deleted}});
  }
  if (is_token) {
    return jsonResponse(200, leaseJson(viewOf(*lease, dataAddressFor((*lease).token)), LeaseFields::kToken));
  }
  Result<json> body = parseBody(req.body, {"ttl_s"});
  if (!body.ok()) return badRequest(body.status());
  Result<int64_t> ttl_ms = ttlMsField(*body, config_.default_ttl_ms);
  if (!ttl_ms.ok()) return badRequest(ttl_ms.status());
  ApiResult<Lease> renewed = leases_.renew(job, *ttl_ms);
  if (!renewed.ok()) return errorResponse(renewed.failure());
  return jsonResponse(200, leaseJson(viewOf(*renewed, dataAddressFor((*renewed).token)), LeaseFields::kRenewed));
}

ControlResponse ControlApi::drain(const HttpRequest& req, const Caller& caller) {
  if (auto denial = policy_.authorize(caller, Action::kAdmin, 0)) return errorResponse(*denial);
  Result<json> body = parseBody(req.body, {"drain"});
  if (!body.ok()) return badRequest(body.status());
  bool on = true;
  auto it = body->find("drain");
  if (it != body->end()) {
    if (!it->is_boolean()) {
      return errorResponse(ApiError::kBadRequest, "drain must be true or false");
    }
    on = it->get<bool>();
  }
  leases_.setDraining(on);
  SA_INFO(kPart, "drain %s (by uid %u)", on ? "on" : "off", caller.uid);
  return jsonResponse(200, {{"draining", on}});
}

ControlResponse ControlApi::metrics() {
  MetricsInput in;
  in.config = &config_;
  in.leases = leases_.list();
  in.slots_in_use = leases_.slotsInUse();
  in.draining = leases_.draining();
  in.data = counters();
  {
    std::lock_guard<std::mutex> lock(refused_mu_);
    in.control_refused = refused_;
    in.control_shed = shed_;
  }
  in.lease_file_save_failures = leases_.leaseFileSaveFailures();
  ControlResponse r;
  r.content_type = "text/plain; version=0.0.4";
  r.body = renderMetrics(in);
  return r;
}

}  // namespace switchagg::agent
