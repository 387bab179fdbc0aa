// Worker: one ucp_worker, its progress loop (busy-poll or blocking on the
// worker's event fd) and the deferred-work queue that keeps user callbacks
// out of UCX callbacks.
#include <poll.h>

#include <algorithm>

#include "switchagg/common/log.h"
#include "transport_internal.h"

namespace switchagg::ucx {
namespace {

// UCX runs its keepalive (peer-failure detection on shared memory) only
// every few dozen progress calls, so an idle blocking wait wakes up on this
// tick and progresses a short burst to keep detection within the bound.
constexpr int kIdleTickMs = 20;
constexpr int kIdleProgressBurst = 64;

}  // namespace

Worker::Impl::~Impl() {
  *alive = nullptr;
  pending_am.clear();
  // Endpoints that outlive the worker are closed here and disowned, so their
  // destructors become no-ops rather than touching a destroyed worker.
  for (auto& [ep, impl] : endpoints) {
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    p.flags = UCP_EP_CLOSE_FLAG_FORCE;
    ucs_status_ptr_t r = ucp_ep_close_nbx(ep, &p);
    if (UCS_PTR_IS_PTR(r)) {
      while (ucp_request_check_status(r) == UCS_INPROGRESS) ucp_worker_progress(ucp);
      ucp_request_free(r);
    }
    impl->ep = nullptr;
    impl->worker = nullptr;
    impl->failed = true;
    impl->failure = Status(Code::kAborted, "worker destroyed");
  }
  endpoints.clear();
  for (auto& [id, slot] : am_slots) {
    ucp_am_handler_param_t p{};
    p.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB;
    p.id = id;
    p.cb = nullptr;
    (void)ucp_worker_set_am_recv_handler(ucp, &p);
  }
  deferred.clear();
  if (ucp != nullptr) ucp_worker_destroy(ucp);
}

bool Worker::Impl::runDeferred() {
  bool any = false;
  while (!deferred.empty()) {
    std::vector<std::function<void()>> batch;
    batch.swap(deferred);
    for (auto& fn : batch) fn();
    any = true;
  }
  return any;
}

bool Worker::Impl::progress() {
  bool any = ucp_worker_progress(ucp) != 0;
  return runDeferred() || any;
}

Endpoint* Worker::Impl::endpointFor(ucp_ep_h ep) const {
  auto it = endpoints.find(ep);
  return it == endpoints.end() ? nullptr : it->second->owner;
}

Status Worker::Impl::waitUntil(const std::function<bool()>& pred, int64_t timeout_ms) {
  const int64_t deadline = nowMs() + std::max<int64_t>(timeout_ms, 0);
  const bool blocking = ctx->options.wait_mode == WaitMode::kBlocking && efd >= 0;
  for (;;) {
    bool any = progress();
    if (pred()) return Status::Ok();
    int64_t now = nowMs();
    if (now >= deadline)
      return Status(Code::kTimeout, "wait timed out after " + std::to_string(timeout_ms) + " ms");
    if (any || !blocking) continue;
    ucs_status_t st = ucp_worker_arm(ucp);
    if (st == UCS_ERR_BUSY) continue;
    if (st != UCS_OK) return statusFromUcs(st, "ucp_worker_arm");
    pollfd pfd{efd, POLLIN, 0};
    int wait_ms = static_cast<int>(std::min<int64_t>(deadline - now, kIdleTickMs));
    if (poll(&pfd, 1, wait_ms) == 0) {
      for (int i = 0; i < kIdleProgressBurst; ++i) ucp_worker_progress(ucp);
    }
  }
}

Worker::Worker(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Worker::~Worker() = default;

Result<std::unique_ptr<Worker>> Worker::create(Context& context) {
  auto impl = std::make_unique<Impl>();
  impl->context = &context;
  impl->ctx = context.impl();
  impl->alive = std::make_shared<Worker::Impl*>(impl.get());
  impl->group_slots.assign(128, false);
  ucp_worker_params_t params{};
  params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  params.thread_mode = UCS_THREAD_MODE_SINGLE;
  ucs_status_t st = ucp_worker_create(impl->ctx->ucp, &params, &impl->ucp);
  if (st != UCS_OK) return statusFromUcs(st, "ucp_worker_create");
  if (context.options().wait_mode == WaitMode::kBlocking) {
    st = ucp_worker_get_efd(impl->ucp, &impl->efd);
    if (st != UCS_OK) {
      SA_WARN("ucx", "no worker event fd (%s); waits will busy-poll", ucs_status_string(st));
      impl->efd = -1;
    }
  }
  return std::unique_ptr<Worker>(new Worker(std::move(impl)));
}

std::vector<uint8_t> Worker::address() const {
  ucp_address_t* addr = nullptr;
  size_t len = 0;
  if (ucp_worker_get_address(impl_->ucp, &addr, &len) != UCS_OK) return {};
  const auto* p = reinterpret_cast<const uint8_t*>(addr);
  std::vector<uint8_t> out(p, p + len);
  ucp_worker_release_address(impl_->ucp, addr);
  return out;
}

bool Worker::progress() { return impl_->progress(); }

Status Worker::waitUntil(const std::function<bool()>& pred, int64_t timeout_ms) {
  return impl_->waitUntil(pred, timeout_ms);
}

Status Worker::wait(Request& request, int64_t timeout_ms) {
  Status st = impl_->waitUntil([&] { return request.done(); }, timeout_ms);
  if (!st.ok()) return st;
  return request.status();
}

Status Worker::waitAll(const std::vector<Request*>& requests, int64_t timeout_ms) {
  Status st = impl_->waitUntil(
      [&] {
        return std::all_of(requests.begin(), requests.end(), [](Request* r) { return r->done(); });
      },
      timeout_ms);
  if (!st.ok()) return st;
  for (Request* r : requests)
    if (!r->status().ok()) return r->status();
  return Status::Ok();
}

void Worker::setFailureHandler(std::function<void(Endpoint*, const Status&)> handler) {
  impl_->failure_handler = std::move(handler);
}

Context& Worker::context() { return *impl_->context; }

Status Worker::tagRecv(uint64_t tag, uint64_t tag_mask, void* data, size_t length,
                       Request& request) {
  Request::State& s = *request.state();
  SWITCHAGG_RETURN_IF_ERROR(req::begin(s, impl_.get(), nullptr));
  req::postTagRecv(*impl_, tag, tag_mask, data, length, s);
  return (s.done && !s.status.ok()) ? s.status : Status::Ok();
}

}  // namespace switchagg::ucx
