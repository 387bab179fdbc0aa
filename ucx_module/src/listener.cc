// Listener: ucp_listener on a socket address; each connection request
// becomes an Endpoint (peer error handling on) handed to the owner's
// on_accept outside the UCX callback.
#include <arpa/inet.h>
#include <netinet/in.h>

#include "switchagg/common/log.h"
#include "transport_internal.h"

namespace switchagg::ucx {

struct Listener::Impl {
  Worker::Impl* worker = nullptr;
  ucp_listener_h ucp = nullptr;
  uint16_t port = 0;
  std::function<void(std::unique_ptr<Endpoint>)> on_accept;
  std::shared_ptr<Listener::Impl*> alive;
  ~Impl() {
    *alive = nullptr;
    if (ucp != nullptr) ucp_listener_destroy(ucp);
  }
};

namespace {

std::string sockaddrName(const sockaddr_storage& ss) {
  char host[INET6_ADDRSTRLEN] = "?";
  uint16_t port = 0;
  if (ss.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
    port = ntohs(in->sin_port);
    return std::string(host) + ":" + std::to_string(port);
  }
  if (ss.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
    port = ntohs(in6->sin6_port);
    return "[" + std::string(host) + "]:" + std::to_string(port);
  }
  return "unknown";
}

void connHandler(ucp_conn_request_h conn_request, void* arg) {
  auto* self = static_cast<Listener::Impl*>(arg);
  std::string name = "client";
  ucp_conn_request_attr_t attr{};
  attr.field_mask = UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ADDR;
  if (ucp_conn_request_query(conn_request, &attr) == UCS_OK) name = sockaddrName(attr.client_address);
  ucp_ep_params_t p{};
  p.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST;
  p.conn_request = conn_request;
  auto ep = EndpointFactory::create(self->worker, p, name);
  if (!ep.ok()) {
    SA_WARN("ucx", "accepting %s failed: %s", name.c_str(), ep.status().toString().c_str());
    return;
  }
  std::weak_ptr<Listener::Impl*> alive = self->alive;
  auto shared = std::make_shared<std::unique_ptr<Endpoint>>(std::move(ep.value()));
  self->worker->defer([alive, shared] {
    auto token = alive.lock();
    if (!token || *token == nullptr || !(*token)->on_accept) return;  // endpoint closes
    (*token)->on_accept(std::move(*shared));
  });
}

}  // namespace

Listener::Listener(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Listener::~Listener() = default;
uint16_t Listener::port() const { return impl_->port; }

Result<std::unique_ptr<Listener>> Listener::listen(
    Worker& worker, const std::string& host_port,
    std::function<void(std::unique_ptr<Endpoint>)> on_accept) {
  sockaddr_storage ss{};
  socklen_t len = 0;
  SWITCHAGG_RETURN_IF_ERROR(resolveSockaddr(host_port, true, &ss, &len));
  auto impl = std::make_unique<Impl>();
  impl->worker = worker.impl();
  impl->on_accept = std::move(on_accept);
  impl->alive = std::make_shared<Listener::Impl*>(impl.get());
  ucp_listener_params_t p{};
  p.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
  p.sockaddr.addr = reinterpret_cast<const sockaddr*>(&ss);
  p.sockaddr.addrlen = len;
  p.conn_handler.cb = connHandler;
  p.conn_handler.arg = impl.get();
  ucs_status_t st = ucp_listener_create(worker.impl()->ucp, &p, &impl->ucp);
  if (st != UCS_OK) return statusFromUcs(st, "listen on " + host_port);
  ucp_listener_attr_t attr{};
  attr.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
  st = ucp_listener_query(impl->ucp, &attr);
  if (st != UCS_OK) return statusFromUcs(st, "query listener " + host_port);
  const auto& bound = attr.sockaddr;
  if (bound.ss_family == AF_INET)
    impl->port = ntohs(reinterpret_cast<const sockaddr_in*>(&bound)->sin_port);
  else if (bound.ss_family == AF_INET6)
    impl->port = ntohs(reinterpret_cast<const sockaddr_in6*>(&bound)->sin6_port);
  SA_DEBUG("ucx", "listening on %s", sockaddrName(bound).c_str());
  return std::unique_ptr<Listener>(new Listener(std::move(impl)));
}

}  // namespace switchagg::ucx
