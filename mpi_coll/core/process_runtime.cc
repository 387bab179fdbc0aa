#include "process_runtime.h"

#include "switchagg/common/log.h"
#include "switchagg/ucx/transport.h"

namespace switchagg::coll {

void ProcessRuntime::enableThreads() { ucx::ThreadGate::enable(); }

ProcessRuntime& ProcessRuntime::instance() {
  static ProcessRuntime runtime;
  return runtime;
}

Status ProcessRuntime::open(const ComponentParams& params) {
  params_ = params;
  // coll_switchagg_verbose drives the shared log level: 1 = one line per
  // communicator (info), 2 = per call (debug), 3+ = transport detail.
  if (params.verbose >= 3) setLogLevel(LogLevel::kTrace);
  else if (params.verbose == 2) setLogLevel(LogLevel::kDebug);
  else if (params.verbose == 1) setLogLevel(LogLevel::kInfo);
  Result<Selector> selector = Selector::create(params.policy, params.rules_path);
  if (!selector.ok()) return selector.status();
  selector_ = selector.value();
  return Status::Ok();
}

void ProcessRuntime::close() {
  extra_progress_.clear();
  if (live_comms_ > 0) {
    SA_DEBUG("coll", "%d communicators still alive at close; UCX worker left to process exit",
             live_comms_);
    (void)worker_.release();
    (void)context_.release();
    return;
  }
  worker_.reset();
  context_.reset();
  worker_error_ = Status::Ok();
}

int ProcessRuntime::progress() {
  ucx::ThreadGate::TryHold gate;
  if (!gate.held() || (!ucx::ThreadGate::enabled() && in_call_ > 0)) return 0;
  ++in_call_;  // a callback that re-enters opal_progress must not recurse here
  int events = 0;
  if (worker_ && worker_->progress()) ++events;
  for (auto& [owner, fn] : extra_progress_) events += fn();
  --in_call_;
  return events;
}

void ProcessRuntime::addProgress(const void* owner, std::function<int()> fn) {
  removeProgress(owner);
  extra_progress_.emplace_back(owner, std::move(fn));
}

void ProcessRuntime::removeProgress(const void* owner) {
  for (auto it = extra_progress_.begin(); it != extra_progress_.end(); ++it) {
    if (it->first == owner) {
      extra_progress_.erase(it);
      return;
    }
  }
}

Result<ucx::Worker*> ProcessRuntime::worker() {
  if (worker_) return worker_.get();
  if (!worker_error_.ok()) return worker_error_;
  Result<ucx::TransportOptions> options = ucx::TransportOptions::fromEnvironment();
  if (!options.ok()) {
    worker_error_ = options.status();
    return worker_error_;
  }
  Result<std::unique_ptr<ucx::Context>> context = ucx::Context::create(*options);
  if (!context.ok()) {
    worker_error_ = context.status();
    return worker_error_;
  }
  Result<std::unique_ptr<ucx::Worker>> worker = ucx::Worker::create(*context.value());
  if (!worker.ok()) {
    worker_error_ = worker.status();
    return worker_error_;
  }
  context_ = std::move(context.value());
  worker_ = std::move(worker.value());
  return worker_.get();
}

}  // namespace switchagg::coll
