// Control API client. Everything that can throw (nlohmann::json, std::string
// allocation) stays inside the try blocks of this file: the SPANK plugin
// calls us from slurmd, where an escaping exception would kill the daemon.
#include "switchagg/agent/control_client.h"

#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "control_transport.h"
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

std::string str(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

int64_t num(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) return 0;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_number_unsigned()) return static_cast<int64_t>(it->get<uint64_t>());
  if (it->is_number_float()) return static_cast<int64_t>(it->get<double>());
  return 0;
}

bool flag(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() && it->get<bool>();
}

LeaseInfo leaseFromJson(const json& j) {
  LeaseInfo l;
  l.job = str(j, "job");
  l.uid = static_cast<uint32_t>(num(j, "uid"));
  l.slots = static_cast<int>(num(j, "slots"));
  l.ttl_s = num(j, "ttl_s");
  l.expires_in_s = num(j, "expires_in_s");
  l.token = str(j, "token");
  l.data_address = str(j, "data_address");
  l.groups = static_cast<int>(num(j, "groups"));
  return l;
}

Result<json> parseObject(const std::string& body, const std::string& address) {
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return Status(Code::kProtocol, "agent at " + address + " sent a body that is not a JSON object");
  }
  return j;
}

// Job ids go into URL paths; the agent accepts the same set (lease_table.cc).
Status checkJob(const std::string& job) {
  bool ok = !job.empty() && job.size() <= 64;
  for (char c : job) {
    ok = ok && ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                c == '.' || c == '_' || c == '-' || c == '+');
  }
  if (ok) return Status::Ok();
  return Status(Code::kInvalidArgument,
                "bad_request: job id must be 1-64 characters of [A-Za-z0-9._+-]");
}

Status unexpected(const char* what) {
  return Status(Code::kInternal, std::string("control client: unexpected exception in ") + what);
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

std::string defaultControlAddress() {
  const char* env = envOrNull("SWITCHAGG_CONTROL");
  return env != nullptr ? env : std::string("unix:") + kDefaultControlSocket;
}

Code codeForControlError(const std::string& error) {
  if (error == "bad_request" || error == "conflict") return Code::kInvalidArgument;
  if (error == "unauthenticated" || error == "policy_denied") return Code::kDenied;
  if (error == "quota_exceeded" || error == "overloaded") return Code::kNoResource;
  if (error == "draining") return Code::kUnsupported;
  if (error == "not_found") return Code::kAborted;
  return Code::kInternal;
}

std::string controlErrorOf(const Status& status) {
  if (status.ok()) return "";
  if (status.code() == Code::kIoError || status.code() == Code::kTimeout) return "unreachable";
  const std::string& m = status.message();
  size_t colon = m.find(':');
  if (colon == std::string::npos) return "internal";
  return m.substr(0, colon);
}

ControlClient::ControlClient(ControlClientOptions options) : options_(std::move(options)) {
  try {
    address_ = options_.address.empty() ? defaultControlAddress() : options_.address;
  } catch (...) {
    address_.clear();
  }
}

ControlClient::ControlClient(const std::string& address)
    : ControlClient([&] {
        ControlClientOptions o;
        o.address = address;
        return o;
      }()) {}

Result<ControlReply> ControlClient::request(const std::string& method, const std::string& path,
                                            const std::string& body) {
  try {
    Result<ControlAddress> addr = parseControlAddress(address_);
    if (!addr.ok()) return addr.status();
    HttpHeaders headers;
    if (!addr->is_unix && options_.use_munge && mungeBuiltIn()) {
      std::string sock = options_.munge_socket;
      if (sock.empty() && envOrNull("SWITCHAGG_MUNGE_SOCKET") != nullptr) {
        sock = envOrNull("SWITCHAGG_MUNGE_SOCKET");
      }
      // libmunge retries a missing socket for seconds; skip it when munged
      // plainly is not there and go anonymous.
      struct stat sb {};
      if (stat(sock.empty() ? kDefaultMungeSocket : sock.c_str(), &sb) == 0) {
        Result<std::string> cred = mungeEncode(method + " " + path, sock);
        if (cred.ok()) headers.emplace_back("X-Switchagg-Munge", *cred);
      }
    }
    std::string host = addr->is_unix ? "localhost" : addr->toString();
    std::string wire = formatHttpRequest(method, path, host, headers, body);
    Result<HttpResponse> resp = exchangeHttp(*addr, wire, options_.timeout_ms);
    if (!resp.ok()) return resp.status();
    return ControlReply{resp->status, std::move(resp->body)};
  } catch (...) {
    return unexpected("request");
  }
}

Result<std::string> ControlClient::call(const std::string& method, const std::string& path,
                                        const std::string& body, int* http_status) {
  Result<ControlReply> reply = request(method, path, body);
  if (!reply.ok()) return reply.status();
  if (http_status != nullptr) *http_status = reply->http_status;
  if (reply->http_status >= 200 && reply->http_status < 300) return std::move(reply->body);
  json j = json::parse(reply->body, nullptr, false);
  if (j.is_discarded() || !j.is_object() || str(j, "error").empty()) {
    return Status(Code::kProtocol, "agent at " + address_ + " answered HTTP " +
                                       std::to_string(reply->http_status) + " without an error body");
  }
  std::string error = str(j, "error");
  return Status(codeForControlError(error), error + ": " + str(j, "message"));
}

Result<AgentStatus> ControlClient::status() {
  try {
    Result<std::string> body = call("GET", "/v1/status", "");
    if (!body.ok()) return body.status();
    Result<json> j = parseObject(*body, address_);
    if (!j.ok()) return j.status();
    AgentStatus s;
    s.version = str(*j, "version");
    s.draining = flag(*j, "draining");
    s.data_address = str(*j, "data_address");
    s.slots_total = static_cast<int>(num(*j, "slots_total"));
    s.slots_in_use = static_cast<int>(num(*j, "slots_in_use"));
    s.slot_bytes = static_cast<uint64_t>(num(*j, "slot_bytes"));
    s.leases = static_cast<int>(num(*j, "leases"));
    s.groups = static_cast<int>(num(*j, "groups"));
    s.lease_file = str(*j, "lease_file");
    s.lease_file_save_failures = static_cast<uint64_t>(num(*j, "lease_file_save_failures"));
    auto caps = j->find("capabilities");
    if (caps != j->end() && caps->is_array()) {
      for (const json& c : *caps) {
        if (!c.is_object()) continue;
        Capability cap;
        cap.dtype = str(c, "dtype");
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
        if (it->is_number()) s.counters[it.key()] = static_cast<uint64_t>(num(*counters, it.key().c_str()));
      }
    }
    return s;
  } catch (...) {
    return unexpected("status");
  }
}

Result<std::vector<LeaseInfo>> ControlClient::listLeases() {
  try {
    Result<std::string> body = call("GET", "/v1/leases", "");
    if (!body.ok()) return body.status();
    Result<json> j = parseObject(*body, address_);
    if (!j.ok()) return j.status();
    std::vector<LeaseInfo> out;
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

Result<LeaseInfo> ControlClient::createLease(const std::string& job, int64_t uid, int slots,
                                             int64_t ttl_s) {
  try {
    SWITCHAGG_RETURN_IF_ERROR(checkJob(job));
    json req = {{"job", job}};
    if (uid >= 0) req["uid"] = uid;
    if (slots > 0) req["slots"] = slots;
    if (ttl_s > 0) req["ttl_s"] = ttl_s;
    int http_status = 0;
    Result<std::string> body = call("POST", "/v1/leases", req.dump(), &http_status);
    if (!body.ok()) return body.status();
    Result<json> j = parseObject(*body, address_);
    if (!j.ok()) return j.status();
    LeaseInfo l = leaseFromJson(*j);
    l.created = http_status == 201;
    return l;
  } catch (...) {
    return unexpected("createLease");
  }
}

Result<LeaseInfo> ControlClient::fetchToken(const std::string& job) {
  try {
    SWITCHAGG_RETURN_IF_ERROR(checkJob(job));
    Result<std::string> body = call("GET", "/v1/leases/" + job + "/token", "");
    if (!body.ok()) return body.status();
    Result<json> j = parseObject(*body, address_);
    if (!j.ok()) return j.status();
    return leaseFromJson(*j);
  } catch (...) {
    return unexpected("fetchToken");
  }
}

Result<LeaseInfo> ControlClient::renewLease(const std::string& job, int64_t ttl_s) {
  try {
    SWITCHAGG_RETURN_IF_ERROR(checkJob(job));
    json req = json::object();
    if (ttl_s > 0) req["ttl_s"] = ttl_s;
    Result<std::string> body = call("POST", "/v1/leases/" + job + "/renew", req.dump());
    if (!body.ok()) return body.status();
    Result<json> j = parseObject(*body, address_);
    if (!j.ok()) return j.status();
    return leaseFromJson(*j);
  } catch (...) {
    return unexpected("renewLease");
  }
}

Result<bool> ControlClient::deleteLease(const std::string& job) {
  try {
    SWITCHAGG_RETURN_IF_ERROR(checkJob(job));
    Result<std::string> body = call("DELETE", "/v1/leases/" + job, "");
    if (!body.ok()) return body.status();
    Result<json> j = parseObject(*body, address_);
    if (!j.ok()) return j.status();
    return flag(*j, "deleted");
  } catch (...) {
    return unexpected("deleteLease");
  }
}

Result<bool> ControlClient::drain(bool on) {
  try {
    json req = {{"drain", on}};
    Result<std::string> body = call("POST", "/v1/drain", req.dump());
    if (!body.ok()) return body.status();
    Result<json> j = parseObject(*body, address_);
    if (!j.ok()) return j.status();
    return flag(*j, "draining");
  } catch (...) {
    return unexpected("drain");
  }
}

}  // namespace switchagg::agent
