#include "process_runtime.h"

#include <chrono>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "switchagg/coll/process_settings.h"
#include "switchagg/common/config.h"
#include "switchagg/common/log.h"
#include "switchagg/common/version.h"
#include "switch_recovery.h"
#include "switchagg/ucx/transport.h"

namespace switchagg::coll {

namespace {
thread_local bool t_without_mpi = false;
std::atomic<bool> g_mpi_threads{false};
}  // namespace

void ProcessRuntime::enableThreads(bool mpi_threads) {
  ucx::ThreadGate::enable();
  if (mpi_threads) g_mpi_threads.store(true, std::memory_order_relaxed);
}
bool ProcessRuntime::mpiThreads() { return g_mpi_threads.load(std::memory_order_relaxed); }

void ProcessRuntime::markThreadWithoutMpi() { t_without_mpi = true; }
bool ProcessRuntime::threadWithoutMpi() { return t_without_mpi; }

bool isJobRankZero() {
  // mpirun, PMIx (srun --mpi=pmix), MPICH's PMI (mpiexec.mpich), then Slurm's own task id.
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"})
    if (const char* rank = envOrNull(name)) return std::strcmp(rank, "0") == 0;
  return true;
}

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
  SA_INFO("coll", "coll/switchagg %s", SWITCHAGG_VERSION);
  Result<Selector> selector = Selector::create(params.policy, params.rules_path);
  if (!selector.ok()) return selector.status();
  selector_ = selector.value();
  return Status::Ok();
}

void ProcessRuntime::addTuned(const std::string& rules_text) {
  if (params_.tune_file.empty() || rules_text.empty()) return;
  // One communicator shape per block; a later communicator of the same
  // shape repeats rules that the first match already decides.
  tuned_ += rules_text;
}

void ProcessRuntime::close() {
  writeTuneFile();
  extra_progress_.clear();
  has_progress_.store(false, std::memory_order_relaxed);
  shutdownRecovery(live_comms_ == 0);
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

// The job's rank 0 writes (every rank learnt the same: decisions are agreed).
void ProcessRuntime::writeTuneFile() {
  if (params_.tune_file.empty()) return;
  if (!isJobRankZero()) return;
  std::ofstream out(params_.tune_file, std::ios::trunc);
  out << "# switchagg selection rules learnt online (coll_switchagg_tune=online).\n"
         "# Ship as site rules with coll_switchagg_rules=<this file>; format and\n"
         "# meaning: docs/selection.md. `measured` lines: agreed microseconds per\n"
         "# candidate (the slowest rank's median), shown by switchagg-info --select.\n"
      << tuned_;
  out.flush();
  if (!out) {
    SA_WARN("coll", "cannot write coll_switchagg_tune_file '%s': %s", params_.tune_file.c_str(),
            std::strerror(errno));
    return;
  }
  SA_INFO("coll", "learnt selection rules written to %s", params_.tune_file.c_str());
}

std::string processNodeName(const char* mpi_name) {
  ProcessSettings settings;
  (void)processSettingsTable().applyEnvironment(settings);  // any text is a name
  if (!settings.node_name.empty()) return settings.node_name;
  if (mpi_name && *mpi_name) return mpi_name;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) return "";
  const std::string h = host;
  return h.substr(0, h.find('.'));
}

int ProcessRuntime::progress() {
  if (!has_progress_.load(std::memory_order_relaxed)) return 0;
  ucx::ThreadGate::TryHold gate;
  if (!gate.held() || (!ucx::ThreadGate::enabled() && in_call_ > 0)) return 0;
  const int64_t now = std::chrono::duration_cast<std::chrono::microseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  if (now - last_progress_us_ < kProgressIntervalUs) return 0;  // under the gate
  last_progress_us_ = now;
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
  has_progress_.store(true, std::memory_order_relaxed);
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
  has_progress_.store(true, std::memory_order_relaxed);
  return worker_.get();
}

}  // namespace switchagg::coll
