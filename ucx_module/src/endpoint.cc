// Endpoint: one ucp_ep with UCP_ERR_HANDLING_MODE_PEER. A failure marks the
// endpoint failed at once (so new operations fail fast); UCX completes the
// endpoint's pending requests with an error, which Request maps to
// kPeerFailed; owner and worker handlers run deferred, outside UCX.
#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>

#include "switchagg/common/log.h"
#include "transport_internal.h"

namespace switchagg::ucx {

void Endpoint::Impl::errorCallback(void* arg, ucp_ep_h /*ep*/, ucs_status_t status) {
  auto* self = static_cast<Endpoint::Impl*>(arg);
  if (self->failed || self->worker == nullptr) return;
  self->failed = true;
  self->failure = Status(Code::kPeerFailed,
                         "endpoint to " + self->peer_name + " failed: " + ucs_status_string(status));
  SA_DEBUG("ucx", "%s", self->failure.message().c_str());
  Worker::Impl* w = self->worker;
  std::weak_ptr<Worker::Impl*> alive = w->alive;
  ucp_ep_h key = self->ep;
  // The endpoint may be destroyed before the deferred call: look it up again.
  w->defer([alive, key] {
    auto token = alive.lock();
    if (!token || *token == nullptr) return;
    Worker::Impl* wi = *token;
    auto it = wi->endpoints.find(key);
    if (it == wi->endpoints.end()) return;
    Endpoint::Impl* impl = it->second;
    Status failure = impl->failure;
    if (impl->on_failure) impl->on_failure(failure);
    it = wi->endpoints.find(key);  // the hook may have destroyed it
    if (it == wi->endpoints.end()) return;
    if (wi->failure_handler) wi->failure_handler(it->second->owner, failure);
  });
}

void* Endpoint::Impl::startClose() {
  if (ep == nullptr || worker == nullptr) return nullptr;
  worker->endpoints.erase(ep);
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  p.flags = failed ? UCP_EP_CLOSE_FLAG_FORCE : 0;
  ucs_status_ptr_t r = ucp_ep_close_nbx(ep, &p);
  ep = nullptr;
  return UCS_PTR_IS_PTR(r) ? r : nullptr;
}

void closeEndpoints(Worker::Impl* worker, std::vector<std::unique_ptr<Endpoint>>& endpoints,
                    int64_t timeout_ms) {
  std::vector<void*> pending;
  for (auto& e : endpoints) {
    if (!e) continue;
    if (void* r = e->impl()->startClose()) pending.push_back(r);
  }
  if (worker != nullptr && !pending.empty()) {
    (void)worker->waitUntil(
        [&] {
          worker->progressSentinel();
          for (void* r : pending)
            if (ucp_request_check_status(r) == UCS_INPROGRESS) return false;
          return true;
        },
        timeout_ms);
  }
  // A close that did not finish in time completes inside UCX later (or at
  // worker destruction); freeing the handle now is allowed.
  for (void* r : pending) ucp_request_free(r);
  endpoints.clear();
}

Result<std::unique_ptr<Endpoint>> EndpointFactory::create(Worker::Impl* worker,
                                                          ucp_ep_params_t params,
                                                          std::string peer_name,
                                                          ucp_err_handling_mode_t mode,
                                                          bool on_sentinel) {
  auto impl = std::make_unique<Endpoint::Impl>();
  impl->worker = worker;
  impl->ucp_worker = on_sentinel ? worker->sentinel : worker->ucp;
  if (impl->ucp_worker == nullptr) return Status(Code::kUnsupported, "no sentinel worker");
  impl->peer_name = std::move(peer_name);
  impl->err_mode = mode;
  params.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
  params.err_mode = mode;
  if (mode == UCP_ERR_HANDLING_MODE_PEER) {
    params.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLER;
    params.err_handler.cb = Endpoint::Impl::errorCallback;
    params.err_handler.arg = impl.get();
  }
  ucs_status_t st = ucp_ep_create(impl->ucp_worker, &params, &impl->ep);
  if (st != UCS_OK) return statusFromUcs(st, "connect to " + impl->peer_name);
  worker->endpoints[impl->ep] = impl.get();
  Endpoint::Impl* raw = impl.get();
  std::unique_ptr<Endpoint> ep(new Endpoint(std::move(impl)));
  raw->owner = ep.get();
  return ep;
}

Endpoint::Endpoint(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Endpoint::~Endpoint() {
  Worker::Impl* w = impl_->worker;
  void* r = impl_->startClose();
  if (r == nullptr) return;
  (void)w->waitUntil(
      [w, r] {
        w->progressSentinel();
        return ucp_request_check_status(r) != UCS_INPROGRESS;
      },
      w->ctx->options.peer_timeout_ms);
  ucp_request_free(r);
}

static Status splitHostPort(const std::string& host_port, std::string* host, std::string* port) {
  size_t colon = host_port.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == host_port.size())
    return Status(Code::kInvalidArgument, "address '" + host_port + "' is not host:port");
  *host = host_port.substr(0, colon);
  if (host->size() > 2 && host->front() == '[' && host->back() == ']')
    *host = host->substr(1, host->size() - 2);
  *port = host_port.substr(colon + 1);
  return Status::Ok();
}

// Resolves "host:port" (numeric or DNS, IPv4 or IPv6) to a socket address.
Status resolveSockaddr(const std::string& host_port, bool passive, sockaddr_storage* out,
                       socklen_t* out_len) {
  std::string host, port;
  SWITCHAGG_RETURN_IF_ERROR(splitHostPort(host_port, &host, &port));
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(host == "*" ? nullptr : host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0 || res == nullptr)
    return Status(Code::kInvalidArgument,
                  "cannot resolve '" + host_port + "': " + gai_strerror(rc));
  std::memcpy(out, res->ai_addr, res->ai_addrlen);
  *out_len = res->ai_addrlen;
  freeaddrinfo(res);
  return Status::Ok();
}

Result<std::unique_ptr<Endpoint>> Endpoint::connect(Worker& worker, const std::string& host_port) {
  sockaddr_storage ss{};
  socklen_t len = 0;
  SWITCHAGG_RETURN_IF_ERROR(resolveSockaddr(host_port, false, &ss, &len));
  ucp_ep_params_t p{};
  p.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR;
  p.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
  p.sockaddr.addr = reinterpret_cast<const sockaddr*>(&ss);
  p.sockaddr.addrlen = len;
  return EndpointFactory::create(worker.impl(), p, host_port);
}

Result<std::unique_ptr<Endpoint>> EndpointFactory::toAddress(Worker::Impl* worker,
                                                             const std::vector<uint8_t>& address,
                                                             ucp_err_handling_mode_t mode,
                                                             bool on_sentinel) {
  WorkerAddress parts = splitWorkerAddress(address);
  const std::vector<uint8_t>& target = on_sentinel ? parts.sentinel : parts.main;
  if (target.empty())
    return Status(on_sentinel ? Code::kUnsupported : Code::kInvalidArgument,
                  on_sentinel ? "peer has no sentinel worker" : "empty worker address");
  ucp_ep_params_t p{};
  p.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
  p.address = reinterpret_cast<const ucp_address_t*>(target.data());
  size_t h = std::hash<std::string>{}(std::string(parts.main.begin(), parts.main.end()));
  char name[32];
  snprintf(name, sizeof(name), "worker %08zx", h & 0xffffffffu);
  return create(worker, p, name, mode, on_sentinel);
}

Result<std::unique_ptr<Endpoint>> Endpoint::connectAddress(Worker& worker,
                                                           const std::vector<uint8_t>& address) {
  return EndpointFactory::toAddress(worker.impl(), address, UCP_ERR_HANDLING_MODE_PEER);
}

Status Endpoint::amSend(uint16_t id, const void* header, size_t header_length, const void* data,
                        size_t length, Request& request) {
  return amSend(id, header, header_length, data, length, request, SendCompletion{});
}

Status Endpoint::amSend(uint16_t id, const void* header, size_t header_length, const void* data,
                        size_t length, Request& request, const SendCompletion& done) {
  Request::State& s = *request.state();
  if (impl_->ep == nullptr || impl_->failed)
    return impl_->failed ? impl_->failure : Status(Code::kAborted, "endpoint closed");
  if (!req::begin(s, impl_->worker, impl_.get())) return req::beginFailure(s);
  // A completion, even one inside ucp_am_send_nbx, queues the hook on the
  // worker (req::complete): it runs at the end of a progress round.
  if (done.fn != nullptr) s.hook = Hook{done.fn, nullptr, done.ctx, done.id};
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  p.cb.send = req::sendCallback;
  p.flags = UCP_AM_SEND_FLAG_REPLY;  // lets the receiver name this connection
  req::prepare(s, p);
  ucs_status_ptr_t r = ucp_am_send_nbx(impl_->ep, id, header, header_length, data, length, &p);
  req::attach(s, r, "am send", length);
  if (done.fn != nullptr) return Status::Ok();  // started: the outcome goes to `done`
  return (s.done && !s.status.ok()) ? s.status : Status::Ok();
}

Status Endpoint::tagSend(uint64_t tag, const void* data, size_t length, Request& request) {
  Request::State& s = *request.state();
  if (impl_->ep == nullptr || impl_->failed)
    return impl_->failed ? impl_->failure : Status(Code::kAborted, "endpoint closed");
  if (!req::begin(s, impl_->worker, impl_.get())) return req::beginFailure(s);
  req::postTagSend(*impl_, tag, data, length, s);
  return (s.done && !s.status.ok()) ? s.status : Status::Ok();
}

// Parses ucp_ep_print_info's "lane[i]:  2:tcp/lo.0 md[1] -> ..." lines.
std::string Endpoint::transports() const {
  if (impl_->ep == nullptr) return "";
  char* text = nullptr;
  size_t size = 0;
  FILE* f = open_memstream(&text, &size);
  if (f == nullptr) return "";
  ucp_ep_print_info(impl_->ep, f);
  fclose(f);
  std::string info(text, size), out;
  free(text);
  for (size_t pos = info.find("lane["); pos != std::string::npos; pos = info.find("lane[", pos + 1)) {
    size_t colon = info.find(':', info.find(']', pos) + 2);  // after the resource index
    size_t end = info.find_first_of(" .", colon + 1);
    if (colon == std::string::npos || end == std::string::npos) break;
    std::string tl = info.substr(colon + 1, end - colon - 1);
    if (out.find(tl) == std::string::npos) out += (out.empty() ? "" : " ") + tl;
  }
  return out;
}

bool Endpoint::failed() const { return impl_->failed; }
void Endpoint::abandon() {
  if (impl_->failed) return;
  impl_->failed = true;
  impl_->failure = Status(Code::kAborted, "endpoint abandoned by its owner");
}
std::string Endpoint::peerName() const { return impl_->peer_name; }
void* Endpoint::userData() const { return impl_->user_data; }
void Endpoint::setUserData(void* p) { impl_->user_data = p; }

}  // namespace switchagg::ucx
