// Worker: one ucp_worker, its progress loop (busy-poll or blocking on the
// worker's event fd) and the deferred-work queue that keeps user callbacks
// out of UCX callbacks.
#include <poll.h>
#include <time.h>

#include <algorithm>
#include <atomic>

#include "switchagg/common/log.h"
#include "switchagg/ucx/thread_gate.h"
#include "transport_internal.h"

namespace switchagg::ucx {
namespace {

// UCX runs its keepalive (peer-failure detection on shared memory) only
// every few dozen progress calls, so an idle blocking wait wakes up on this
// tick and progresses a short burst to keep detection within the bound.
constexpr int kIdleTickMs = 20;
constexpr int kIdleProgressBurst = 64;
// The sentinel worker polls TCP sockets; keeping it off the hot path is its
// whole point, and failure detection needs no finer grain than this.
constexpr int64_t kSentinelPeriodMs = 1;
constexpr char kAddressMagic[4] = {'S', 'A', 'W', '1'};

void putU32(std::vector<uint8_t>& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

bool getU32(const std::vector<uint8_t>& in, size_t* pos, uint32_t* v) {
  if (*pos + 4 > in.size()) return false;
  *v = 0;
  for (int i = 0; i < 4; ++i) *v |= uint32_t(in[*pos + i]) << (8 * i);
  *pos += 4;
  return true;
}

std::vector<uint8_t> ucpAddress(ucp_worker_h worker) {
  ucp_address_t* addr = nullptr;
  size_t len = 0;
  if (worker == nullptr || ucp_worker_get_address(worker, &addr, &len) != UCS_OK) return {};
  const auto* p = reinterpret_cast<const uint8_t*>(addr);
  std::vector<uint8_t> out(p, p + len);
  ucp_worker_release_address(worker, addr);
  return out;
}

ucs_status_t createUcpWorker(ucp_context_h ctx, ucp_worker_h* out) {
  ucp_worker_params_t params{};
  params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  // Serialized, never single: a worker may be created on one thread and
  // progressed on another (the agent's data-plane threads; an MPI program
  // calling from a thread other than MPI_Init's), one at a time, and with the
  // gate on threads take turns at it. UCX 1.18 asserts single mode's owner
  // thread on every ucp_worker_progress (1.13 did not check).
  params.thread_mode = UCS_THREAD_MODE_SERIALIZED;
  return ucp_worker_create(ctx, &params, out);
}

std::atomic<WaitHook> g_wait_hook{nullptr};
thread_local bool t_in_wait_hook = false;

// Runs the wait hook unless this thread is inside it already.
void runWaitHook() {
  const WaitHook hook = g_wait_hook.load(std::memory_order_acquire);
  if (hook == nullptr || t_in_wait_hook) return;
  t_in_wait_hook = true;
  hook();
  t_in_wait_hook = false;
}

}  // namespace

void setWaitHook(WaitHook hook) { g_wait_hook.store(hook, std::memory_order_release); }

std::vector<uint8_t> joinWorkerAddress(const WorkerAddress& parts) {
  std::vector<uint8_t> out(kAddressMagic, kAddressMagic + 4);
  putU32(out, static_cast<uint32_t>(parts.main.size()));
  out.insert(out.end(), parts.main.begin(), parts.main.end());
  putU32(out, static_cast<uint32_t>(parts.sentinel.size()));
  out.insert(out.end(), parts.sentinel.begin(), parts.sentinel.end());
  return out;
}

WorkerAddress splitWorkerAddress(const std::vector<uint8_t>& bytes) {
  WorkerAddress parts;
  size_t pos = 4;
  uint32_t n = 0;
  if (bytes.size() < 8 || !std::equal(kAddressMagic, kAddressMagic + 4, bytes.begin()) ||
      !getU32(bytes, &pos, &n) || pos + n > bytes.size()) {
    parts.main = bytes;
    return parts;
  }
  parts.main.assign(bytes.begin() + pos, bytes.begin() + pos + n);
  pos += n;
  if (getU32(bytes, &pos, &n) && pos + n <= bytes.size())
    parts.sentinel.assign(bytes.begin() + pos, bytes.begin() + pos + n);
  return parts;
}

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
      while (ucp_request_check_status(r) == UCS_INPROGRESS) ucp_worker_progress(impl->ucp_worker);
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
  if (sentinel != nullptr) ucp_worker_destroy(sentinel);
  if (ucp != nullptr) ucp_worker_destroy(ucp);
}

bool Worker::Impl::runDeferred() {
  bool any = false;
  while (!completions.empty() || !deferred.empty()) {
    // Index loop: a hook may complete more operations (appending).
    for (size_t i = 0; i < completions.size(); ++i) {
      PendingCompletion c = std::move(completions[i]);
      if (c.hook.complete != nullptr) c.hook.complete(c.hook.ctx, c.hook.id, c.status, c.length);
    }
    completions.clear();
    std::vector<std::function<void()>> batch;
    batch.swap(deferred);
    for (auto& fn : batch) fn();
    any = true;
  }
  return any;
}

void Worker::Impl::runHooksFor(void* ctx) {
  for (size_t i = 0; i < completions.size(); ++i) {
    if (completions[i].hook.ctx != ctx) continue;
    PendingCompletion c = std::move(completions[i]);
    completions[i].hook = Hook{};
    c.hook.complete(c.hook.ctx, c.hook.id, c.status, c.length);
  }
}

void Worker::Impl::forgetHooks(void* ctx) {
  for (auto& c : completions)
    if (c.hook.ctx == ctx) c.hook = Hook{};
}

void Worker::Impl::progressSentinel() {
  if (sentinel == nullptr) return;
  while (ucp_worker_progress(sentinel) != 0) {
  }
  next_sentinel_ms = nowMs() + kSentinelPeriodMs;
}

bool Worker::Impl::progress() {
  bool any = ucp_worker_progress(ucp) != 0;
  if (sentinel != nullptr && (++progress_calls & 63) == 0 && nowMs() >= next_sentinel_ms)
    progressSentinel();
  if (!completions.empty() || !deferred.empty()) any = runDeferred() || any;
  // Another thread's request may have completed here while it sleeps.
  if (any) ThreadGate::wakeSleepers();
  return any;
}

Endpoint* Worker::Impl::endpointFor(ucp_ep_h ep) const {
  auto it = endpoints.find(ep);
  return it == endpoints.end() ? nullptr : it->second->owner;
}

// The fine clock for the spin budget (nowMs is too coarse for microseconds).
static int64_t nowUs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

Status Worker::Impl::waitUntil(const std::function<bool()>& pred, int64_t timeout_ms) {
  return waitFor(pred, timeout_ms, false);
}

Status Worker::Impl::waitFor(const std::function<bool()>& pred, int64_t timeout_ms, bool quiet) {
  Impl* self = this;
  return waitOn(&self, 1, pred, timeout_ms, quiet);
}

// The wait over n workers (one, or a striped call's connections): each
// round progresses them all; a blocking wait arms every one (and its
// sentinel) and sleeps on all their event fds at once.
Status Worker::Impl::waitOn(Impl* const* ws, size_t n, const std::function<bool()>& pred,
                            int64_t timeout_ms, bool quiet) {
  if (pred()) return Status::Ok();  // e.g. a send that completed in place
  const int64_t deadline = nowMs() + std::max<int64_t>(timeout_ms, 0);
  bool blocking = n > 0 && n <= kMaxWaitWorkers;  // none: a bounded spin on pred
  for (size_t i = 0; i < n; ++i)
    blocking = blocking && ws[i]->ctx->options.wait_mode == WaitMode::kBlocking && ws[i]->efd >= 0;
  // Blocking waits spin up to spin_us after the last event before they arm
  // the workers and sleep: an answer that comes within it costs no wake-up.
  const int64_t spin_us = blocking ? ws[0]->ctx->options.spin_us : 0;
  bool in_spin = spin_us > 0;
  int64_t spin_end_us = 0;  // 0: starts at the next clock reading
  const auto progressAll = [ws, n] {
    bool any = false;
    for (size_t i = 0; i < n; ++i) any = ws[i]->progress() || any;
    return any;
  };
  for (uint32_t spin = 1;; ++spin) {
    bool any = progressAll();
    if (pred()) return Status::Ok();
    if (any && spin_us > 0) {
      in_spin = true;
      spin_end_us = 0;
    }
    // Reading the clock costs as much as an idle progress round: while
    // spinning, look at it every 16th round only.
    if ((any || !blocking || in_spin) && (spin & 15) != 0) continue;
    // Between rounds (every 16th while spinning, each wake-up while
    // blocking): the MPI layer's other pending operations (setWaitHook).
    runWaitHook();
    if (pred()) return Status::Ok();
    int64_t now = nowMs();
    if (now >= deadline)
      return quiet ? Status(Code::kTimeout, std::string())
                   : Status(Code::kTimeout, "wait timed out after " + std::to_string(timeout_ms) + " ms");
    if (in_spin && !any) {
      const int64_t us = nowUs();
      if (spin_end_us == 0) spin_end_us = us + spin_us;
      in_spin = us < spin_end_us;
    }
    if (any || !blocking || in_spin) {
      ThreadGate::yield();  // others' turn at the gate between spin rounds
      continue;
    }
    // What the hook or pred just did (a striped call's next sends) may
    // need a progress round before the workers sleep.
    if (progressAll()) continue;
    // Arm every worker (busy: an event came meanwhile, progress again), and
    // each one's sentinel; sleep on all their fds.
    pollfd pfd[2 * kMaxWaitWorkers];
    Impl* owner[2 * kMaxWaitWorkers];
    int nfds = 0;
    bool again = false;
    for (size_t i = 0; i < n && !again; ++i) {
      Impl& w = *ws[i];
      ucs_status_t st = ucp_worker_arm(w.ucp);
      if (st == UCS_ERR_BUSY) again = true;
      else if (st != UCS_OK) return statusFromUcs(st, "ucp_worker_arm");
      pfd[nfds] = {w.efd, POLLIN, 0};
      owner[nfds++] = nullptr;
      if (w.sentinel_efd >= 0 && !again) {
        w.progressSentinel();
        if (!w.completions.empty() || !w.deferred.empty()) again = true;  // e.g. a failure to report
        else if (ucp_worker_arm(w.sentinel) == UCS_OK) {
          pfd[nfds] = {w.sentinel_efd, POLLIN, 0};
          owner[nfds++] = &w;
        }
      }
    }
    if (again) continue;
    int wait_ms = static_cast<int>(std::min<int64_t>(
        deadline - now, g_wait_hook.load(std::memory_order_relaxed) != nullptr ? kWaitHookTickMs
                                                                               : kIdleTickMs));
    for (size_t i = 0; i < n; ++i) ++ws[i]->sleeps;
    if (ThreadGate::poll(pfd, nfds, wait_ms) == 0) {
      unsigned events = 0;
      for (size_t i = 0; i < n; ++i)
        for (int b = 0; b < kIdleProgressBurst; ++b) {
          events += ucp_worker_progress(ws[i]->ucp);
          if (ws[i]->sentinel != nullptr) events += ucp_worker_progress(ws[i]->sentinel);
        }
      // What this burst completed may be another thread's: that thread may
      // have armed the worker before we drained its event, and would sleep
      // out its tick (as progress() does after its events).
      if (events != 0) ThreadGate::wakeSleepers();
      if (events != 0 && spin_us > 0) {  // woken by an event: spin again before sleeping
        in_spin = true;
        spin_end_us = 0;
      }
    } else {
      for (int f = 0; f < nfds; ++f)
        if (owner[f] != nullptr && pfd[f].revents != 0) owner[f]->progressSentinel();
    }
  }
}

Status Worker::Impl::flush(int64_t timeout_ms) {
  ucp_request_param_t p{};
  ucs_status_ptr_t r = ucp_worker_flush_nbx(ucp, &p);
  if (r == nullptr) return Status::Ok();
  if (UCS_PTR_IS_ERR(r)) return statusFromUcs(UCS_PTR_STATUS(r), "ucp_worker_flush");
  Status st = waitUntil([r] { return ucp_request_check_status(r) != UCS_INPROGRESS; }, timeout_ms);
  if (st.ok()) st = statusFromUcs(ucp_request_check_status(r), "ucp_worker_flush");
  // A flush still running when the bound passed is cancelled by freeing it:
  // UCX completes it internally.
  ucp_request_free(r);
  if (st.code() == Code::kTimeout)
    return Status(Code::kTimeout, "worker flush: operations towards peers still incomplete after " +
                                      std::to_string(timeout_ms) + " ms");
  return st;
}

Worker::Worker(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Worker::~Worker() = default;

Result<std::unique_ptr<Worker>> Worker::create(Context& context) {
  auto impl = std::make_unique<Impl>();
  impl->context = &context;
  impl->ctx = context.impl();
  impl->alive = std::make_shared<Worker::Impl*>(impl.get());
  impl->group_slots.assign(PeerGroup::kMaxSlot + 1, false);  // slot 0 + 1..kMaxSlot
  ucs_status_t st = createUcpWorker(impl->ctx->ucp, &impl->ucp);
  if (st != UCS_OK) return statusFromUcs(st, "ucp_worker_create");
  if (impl->ctx->sentinel != nullptr) {
    st = createUcpWorker(impl->ctx->sentinel, &impl->sentinel);
    if (st != UCS_OK) return statusFromUcs(st, "ucp_worker_create (sentinel)");
  }
  if (context.options().wait_mode == WaitMode::kBlocking) {
    st = ucp_worker_get_efd(impl->ucp, &impl->efd);
    if (st != UCS_OK) {
      SA_WARN("ucx", "no worker event fd (%s); waits will busy-poll", ucs_status_string(st));
      impl->efd = -1;
    }
    if (impl->sentinel != nullptr && ucp_worker_get_efd(impl->sentinel, &impl->sentinel_efd) != UCS_OK)
      impl->sentinel_efd = -1;
  }
  return std::unique_ptr<Worker>(new Worker(std::move(impl)));
}

std::vector<uint8_t> Worker::address() const {
  WorkerAddress parts{ucpAddress(impl_->ucp), ucpAddress(impl_->sentinel)};
  if (parts.main.empty()) return {};
  return joinWorkerAddress(parts);
}

std::array<uint64_t, 2> Worker::busyGroupSlots() const {
  std::array<uint64_t, 2> mask{1, 0};  // slot 0: raw tag users
  for (size_t slot = 1; slot < impl_->group_slots.size(); ++slot)
    if (impl_->group_slots[slot]) mask[slot / 64] |= uint64_t(1) << (slot % 64);
  return mask;
}

bool Worker::progress() { return impl_->progress(); }

uint64_t Worker::sleeps() const { return impl_->sleeps; }

void Worker::post(std::function<void()> fn) { impl_->defer(std::move(fn)); }

Status Worker::flush(int64_t timeout_ms) { return impl_->flush(timeout_ms); }

Status Worker::waitUntil(const std::function<bool()>& pred, int64_t timeout_ms) {
  return impl_->waitUntil(pred, timeout_ms);
}

Status Worker::waitAny(const std::vector<Worker*>& workers, const std::function<bool()>& pred,
                       int64_t timeout_ms) {
  std::vector<Impl*> ws;
  for (Worker* w : workers) ws.push_back(w->impl_.get());
  return Impl::waitOn(ws.data(), ws.size(), pred, timeout_ms, false);
}

bool Worker::waitIdle(const std::function<bool()>& pred, int64_t timeout_ms) {
  return impl_->waitFor(pred, timeout_ms, true).ok();
}

Status Worker::wait(Request& request, int64_t timeout_ms) {
  if (!request.done()) {
    Status st = impl_->waitUntil([&] { return request.done(); }, timeout_ms);
    if (!st.ok()) return st;
  }
  return request.status().ok() ? Status::Ok() : request.status();
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
  if (!req::begin(s, impl_.get(), nullptr)) return req::beginFailure(s);
  req::postTagRecv(*impl_, tag, tag_mask, data, length, s);
  return (s.done && !s.status.ok()) ? s.status : Status::Ok();
}

}  // namespace switchagg::ucx
