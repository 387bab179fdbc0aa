// Control API client. Everything that can throw (nlohmann::json, std::string
// allocation) stays inside the try blocks of this file: the SPANK plugin
// calls us from slurmd, where an escaping exception would kill the daemon.
#include "switchagg/agent/control_client.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "control_transport.h"
#include "lease_json.h"
#include "munge_cred.h"
#include "switchagg/common/config.h"

namespace switchagg::agent {

using nlohmann::json;

namespace {

constexpr const char* kDefaultMungeSocket = "/run/munge/munge.socket.2";

Status invalidAddress(const std::string& text, const std::string& why) {
  return Status(Code::kInvalidArgument, "agent address '" + text + "': " + why +
                                            " (forms: unix:/path, http://host:port, host:port)");
}

ApiResult<json> parseObject(const ApiResult<std::string>& body, const std::string& address) {
  if (!body.ok()) return ApiResult<json>::failed(body);
  json j = json::parse(body.value(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return ApiFailure{ApiError::kInternal,
                      "agent at " + address + " sent a body that is not a JSON object"};
  }
  return j;
}

// Job ids go into URL paths: refused here as the agent would refuse them.
std::optional<ApiFailure> checkJob(const std::string& job) {
  if (isValidJobId(job)) return std::nullopt;
  return ApiFailure{ApiError::kBadRequest, kJobIdRule};
}

ApiFailure unexpected(const char* what) {
  return ApiFailure{ApiError::kInternal,
                    std::string("control client: unexpected exception in ") + what};
}

// One request on a fresh connection (with a fresh munge credential).
Result<HttpResponse> attemptOnce(const ControlClientOptions& options, const ControlAddress& addr,
                                 const std::string& method, const std::string& path,
                                 const std::string& body, int timeout_ms) {
  HttpHeaders headers;
  if (!addr.is_unix && options.use_munge && mungeBuiltIn()) {
    const std::string& sock = options.munge_socket;
    // libmunge retries a missing socket for seconds; skip it when munged
    // plainly is not there and go anonymous.
    struct stat sb {};
    if (stat(sock.empty() ? kDefaultMungeSocket : sock.c_str(), &sb) == 0) {
      Result<std::string> cred = mungeEncode(mungeRequestPayload(method, path, body), sock);
      if (cred.ok()) headers.emplace_back("X-Switchagg-Munge", *cred);
    }
  }
  std::string host = addr.is_unix ? "localhost" : addr.toString();
  return exchangeHttp(addr, formatHttpRequest(method, path, host, headers, body), timeout_ms);
}

}  // namespace

std::string ControlAddress::toString() const {
  if (is_unix) return "unix:" + path;
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

Result<ControlAddress> parseControlAddress(const std::string& text) {
  ControlAddress a;
  if (text.rfind("unix:", 0) == 0 || (!text.empty() && text[0] == '/')) {
    a.is_unix = true;
    a.path = text[0] == '/' ? text : text.substr(5);
    if (a.path.empty()) return invalidAddress(text, "empty socket path");
    return a;
  }
  std::string rest = text;
  if (rest.rfind("http://", 0) == 0) rest = rest.substr(7);
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  size_t colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0) return invalidAddress(text, "missing host or port");
  std::string host = rest.substr(0, colon);
  if (host.front() == '[') {
    if (host.back() != ']' || host.size() < 3) return invalidAddress(text, "bad [IPv6] host");
    host = host.substr(1, host.size() - 2);
  }
  Result<int64_t> port = parseInt("port", rest.substr(colon + 1), 1, 65535);
  if (!port.ok()) return invalidAddress(text, "port must be 1-65535");
  a.is_unix = false;
  a.host = host;
  a.port = static_cast<int>(*port);
  return a;
}

const ConfigTable<ControlEnvironment>& controlEnvironmentTable() {
  using E = ControlEnvironment;
  static const ConfigTable<E> t({
      {"control.address", "SWITCHAGG_CONTROL",
       "the agent's control API for switchagg-ctl and other control clients without an "
       "address of their own: unix:/path, http://host:port or host:port",
       stringField(&E::address,
                   [](const std::string& key, const std::string& text) -> Status {
                     Result<ControlAddress> a = parseControlAddress(text);
                     if (a.ok()) return Status::Ok();
                     return Status(Code::kInvalidArgument, key + ": " + a.status().message());
                   })},
      {"control.munge_socket", "SWITCHAGG_MUNGE_SOCKET",
       "munged socket a control client's credentials come from (\"\": libmunge's default)",
       stringField(&E::munge_socket, checkSocketPath)},
  });
  return t;
}

ApiFailure failureOf(const ControlReply& reply, const std::string& address) {
  json j = json::parse(reply.body, nullptr, false);
  std::optional<ApiError> error;
  if (j.is_object()) error = apiErrorFromCode(jsonString(j, "error"));
  if (!error) {
    return ApiFailure{ApiError::kInternal, "agent at " + address + " answered HTTP " +
                                               std::to_string(reply.http_status) +
                                               " without an error body"};
  }
  return ApiFailure{*error, jsonString(j, "message")};
}

ControlClient::ControlClient(ControlClientOptions options) : options_(std::move(options)) {
  try {
    const ConfigTable<ControlEnvironment>& table = controlEnvironmentTable();
    ControlEnvironment env;
    Status st = Status::Ok();
    if (options_.address.empty()) st = table.applyEnvironment(env, "control.address");
    if (st.ok() && options_.use_munge && options_.munge_socket.empty())
      st = table.applyEnvironment(env, "control.munge_socket");
    if (!st.ok()) config_error_ = st.message();
    if (options_.address.empty()) options_.address = env.address;
    if (options_.munge_socket.empty()) options_.munge_socket = env.munge_socket;
    address_ = options_.address;
  } catch (...) {
    address_.clear();
    config_error_ = "control client: unexpected exception reading its environment";
  }
}

ControlClient::ControlClient(const std::string& address)
    : ControlClient([&] {
        ControlClientOptions o;
        o.address = address;
        return o;
      }()) {}

ApiResult<ControlReply> ControlClient::request(const std::string& method,
                                               const std::string& path, const std::string& body) {
  try {
    if (!config_error_.empty()) return ApiFailure{ApiError::kConfig, config_error_};
    Result<ControlAddress> addr = parseControlAddress(address_);
    if (!addr.ok()) return ApiFailure{ApiError::kConfig, addr.status().message()};
    // A connection the agent cut before answering (shed under a connection
    // flood) is tried again, each time with a fresh credential (munge
    // refuses a replayed one) and a short pause growing from 5 ms, until
    // the same timeout: under a flood of another user's connections the
    // agent may cut more than one attempt in a row.
    const int timeout_ms = options_.timeout_ms > 0 ? options_.timeout_ms : 5000;  // exchangeHttp's
    const int64_t deadline = controlNowMs() + timeout_ms;
    Result<HttpResponse> resp = attemptOnce(options_, *addr, method, path, body, timeout_ms);
    for (int pause_ms = 5; !resp.ok() && resp.status().code() == Code::kPeerFailed;
         pause_ms = std::min(2 * pause_ms, 100)) {
      if (deadline - controlNowMs() <= pause_ms) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
      resp = attemptOnce(options_, *addr, method, path, body, int(deadline - controlNowMs()));
    }
    if (!resp.ok()) {
      // A garbled answer is the agent's fault; an address we cannot even
      // use (a socket path longer than sun_path) is the caller's; anything
      // else means no answer.
      const Code c = resp.status().code();
      ApiError e = c == Code::kProtocol          ? ApiError::kInternal
                   : c == Code::kInvalidArgument ? ApiError::kConfig
                                                 : ApiError::kUnreachable;
      return ApiFailure{e, resp.status().message()};
    }
    return ControlReply{resp->status, std::move(resp->body)};
  } catch (...) {
    return unexpected("request");
  }
}

ApiResult<std::string> ControlClient::call(const std::string& method, const std::string& path,
                                           const std::string& body, int* http_status) {
  ApiResult<ControlReply> reply = request(method, path, body);
  if (!reply.ok()) return ApiResult<std::string>::failed(reply);
  if (http_status != nullptr) *http_status = reply->http_status;
  if (reply->http_status >= 200 && reply->http_status < 300) return std::move(reply->body);
  return failureOf(*reply, address_);
}

ApiResult<AgentStatus> ControlClient::status() {
  try {
    ApiResult<json> j = parseObject(call("GET", "/v1/status", ""), address_);
    if (!j.ok()) return j.failure();
    AgentStatus s;
    s.version = jsonString(*j, "version");
    s.draining = jsonFlag(*j, "draining");
    s.data_address = jsonString(*j, "data_address");
    s.slots_total = static_cast<int>(jsonInt(*j, "slots_total"));
    s.slots_in_use = static_cast<int>(jsonInt(*j, "slots_in_use"));
    s.slot_bytes = static_cast<uint64_t>(jsonInt(*j, "slot_bytes"));
    s.leases = static_cast<int>(jsonInt(*j, "leases"));
    s.groups = static_cast<int>(jsonInt(*j, "groups"));
    s.lease_file = jsonString(*j, "lease_file");
    s.lease_file_save_failures = static_cast<uint64_t>(jsonInt(*j, "lease_file_save_failures"));
    auto caps = j->find("capabilities");
    if (caps != j->end() && caps->is_array()) {
      for (const json& c : *caps) {
        if (!c.is_object()) continue;
        Capability cap;
        cap.dtype = jsonString(c, "dtype");
        auto ops = c.find("ops");
        if (ops != c.end() && ops->is_array()) {
          for (const json& o : *ops) {
            if (o.is_string()) cap.ops.push_back(o.get<std::string>());
          }
        }
        s.capabilities.push_back(std::move(cap));
      }
    }
    auto counters = j->find("counters");
    if (counters != j->end() && counters->is_object()) {
      for (auto it = counters->begin(); it != counters->end(); ++it) {
        if (it->is_number()) s.counters[it.key()] = static_cast<uint64_t>(jsonInt(*counters, it.key().c_str()));
      }
    }
    const json threads = j->value("data_threads", json::array());
    for (const json& t : threads.is_array() ? threads : json::array()) {
      if (!t.is_object()) continue;
      DataThreadStatus& ts = s.threads.emplace_back();
      ts.address = jsonString(t, "address");
      for (const auto& [name, v] : t.items())
        if (v.is_number_unsigned()) ts.figures[name] = v.get<uint64_t>();
    }
    return s;
  } catch (...) {
    return unexpected("status");
  }
}

ApiResult<std::vector<LeaseView>> ControlClient::listLeases() {
  try {
    ApiResult<json> j = parseObject(call("GET", "/v1/leases", ""), address_);
    if (!j.ok()) return j.failure();
    std::vector<LeaseView> out;
    auto leases = j->find("leases");
    if (leases != j->end() && leases->is_array()) {
      for (const json& l : *leases) {
        if (l.is_object()) out.push_back(leaseFromJson(l));
      }
    }
    return out;
  } catch (...) {
    return unexpected("listLeases");
  }
}

ApiResult<LeaseView> ControlClient::createLease(const std::string& job, int64_t uid, int slots,
                                             int64_t ttl_s) {
  try {
    if (auto bad = checkJob(job)) return *bad;
    json req = {{"job", job}};
    if (uid >= 0) req["uid"] = uid;
    if (slots > 0) req["slots"] = slots;
    if (ttl_s > 0) req["ttl_s"] = ttl_s;
    int http_status = 0;
    ApiResult<json> j = parseObject(call("POST", "/v1/leases", req.dump(), &http_status), address_);
    if (!j.ok()) return j.failure();
    LeaseView l = leaseFromJson(*j);
    l.created = http_status == 201;
    return l;
  } catch (...) {
    return unexpected("createLease");
  }
}

ApiResult<LeaseView> ControlClient::fetchToken(const std::string& job) {
  try {
    if (auto bad = checkJob(job)) return *bad;
    ApiResult<json> j = parseObject(call("GET", "/v1/leases/" + job + "/token", ""), address_);
    if (!j.ok()) return j.failure();
    return leaseFromJson(*j);
  } catch (...) {
    return unexpected("fetchToken");
  }
}

ApiResult<LeaseView> ControlClient::renewLease(const std::string& job, int64_t ttl_s) {
  try {
    if (auto bad = checkJob(job)) return *bad;
    json req = json::object();
    if (ttl_s > 0) req["ttl_s"] = ttl_s;
    ApiResult<json> j = parseObject(call("POST", "/v1/leases/" + job + "/renew", req.dump()), address_);
    if (!j.ok()) return j.failure();
    return leaseFromJson(*j);
  } catch (...) {
    return unexpected("renewLease");
  }
}

ApiResult<bool> ControlClient::deleteLease(const std::string& job) {
  try {
    if (auto bad = checkJob(job)) return *bad;
    ApiResult<json> j = parseObject(call("DELETE", "/v1/leases/" + job, ""), address_);
    if (!j.ok()) return j.failure();
    return jsonFlag(*j, "deleted");
  } catch (...) {
    return unexpected("deleteLease");
  }
}

ApiResult<bool> ControlClient::drain(bool on) {
  try {
    json req = {{"drain", on}};
    ApiResult<json> j = parseObject(call("POST", "/v1/drain", req.dump()), address_);
    if (!j.ok()) return j.failure();
    return jsonFlag(*j, "draining");
  } catch (...) {
    return unexpected("drain");
  }
}

}  // namespace switchagg::agent
