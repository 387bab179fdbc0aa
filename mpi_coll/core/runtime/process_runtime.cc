#include "process_runtime.h"

#include <chrono>
#include <unistd.h>

#include <algorithm>
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

thread_local int ProcessRuntime::t_in_call = 0;
std::atomic<int> ProcessRuntime::s_busy{0};
std::atomic<bool> ProcessRuntime::s_track_busy{false};

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

int ProcessRuntime::domains() const {
  return ucx::ThreadGate::enabled() ? std::clamp(params_.thread_domains, 1, kMaxDomains) : 1;
}

int ProcessRuntime::takeDomain() {
  const int n = domains();
  std::lock_guard<std::mutex> lock(domain_count_mutex_);
  int best = 0;
  for (int d = 1; d < n; ++d)
    if (comms_in_domain_[size_t(d)] < comms_in_domain_[size_t(best)]) best = d;
  ++comms_in_domain_[size_t(best)];
  return best;
}

void ProcessRuntime::releaseDomain(int domain) {
  std::lock_guard<std::mutex> lock(domain_count_mutex_);
  --comms_in_domain_[size_t(domain)];
}

int ProcessRuntime::liveComms() {
  std::lock_guard<std::mutex> lock(domain_count_mutex_);
  int live = 0;
  for (int n : comms_in_domain_) live += n;
  return live;
}

void ProcessRuntime::addTuned(const std::string& rules_text) {
  if (params_.tune_file.empty() || rules_text.empty()) return;
  std::lock_guard<std::mutex> lock(tuned_mutex_);
  // One communicator shape per block; a later communicator of the same
  // shape repeats rules that the first match already decides.
  tuned_ += rules_text;
}

void ProcessRuntime::close() {
  writeTuneFile();
  for (Domain& d : domains_) {
    d.extra_progress.clear();
    d.has_progress.store(false, std::memory_order_relaxed);
  }
  const int live = liveComms();
  shutdownRecovery(live == 0);
  if (live > 0) {
    SA_DEBUG("coll", "%d communicators still alive at close; UCX workers left to process exit",
             live);
    for (Domain& d : domains_) (void)d.worker.release();
    (void)context_.release();
    return;
  }
  // The job's rank 0 only (its own process's figure): one line per job.
  if (ucx::ThreadGate::enabled() && domains() > 1 && isJobRankZero())
    SA_INFO("coll", "threads: %d domains, at most %d held at once", domains(),
            ucx::ThreadGate::peakHeld());
  for (Domain& d : domains_) {
    d.worker.reset();
    d.worker_error = Status::Ok();
  }
  context_.reset();
  context_error_ = Status::Ok();
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

int ProcessRuntime::progress(bool only_idle) {
  int events = 0;
  int64_t now = -1;  // read once, at the first domain that can run
  const int n = domains();
  for (int i = 0; i < n; ++i) {
    Domain& d = domains_[size_t(i)];
    if (!d.has_progress.load(std::memory_order_relaxed)) continue;
    // From inside a wait on another domain too: progressing a worker never
    // waits, and that wait may be for a peer that needs this domain first.
    ucx::ThreadGate::TryHold gate(d.gate, /*nest=*/true);
    if (!gate.held() || (!ucx::ThreadGate::enabled() && t_in_call > 0)) continue;
    // A call counts itself before it takes its domain, so once this thread
    // holds the domain a zero means no call is inside it, nor will one be
    // until the pass ends.
    if (only_idle && s_busy.load(std::memory_order_acquire) > 0) continue;
    if (now < 0)
      now = std::chrono::duration_cast<std::chrono::microseconds>(
                std::chrono::steady_clock::now().time_since_epoch())
                .count();
    if (now - d.last_progress_us < kProgressIntervalUs) continue;  // under the domain
    d.last_progress_us = now;
    ++t_in_call;  // a callback that re-enters opal_progress must not recurse here
    if (d.worker && d.worker->progress()) ++events;
    for (auto& [owner, fn] : d.extra_progress) events += fn();
    --t_in_call;
  }
  return events;
}

void ProcessRuntime::addProgress(int domain, const void* owner, std::function<int()> fn) {
  removeProgress(domain, owner);
  Domain& d = domains_[size_t(domain)];
  d.extra_progress.emplace_back(owner, std::move(fn));
  d.has_progress.store(true, std::memory_order_relaxed);
}

void ProcessRuntime::removeProgress(int domain, const void* owner) {
  auto& list = domains_[size_t(domain)].extra_progress;
  for (auto it = list.begin(); it != list.end(); ++it) {
    if (it->first == owner) {
      list.erase(it);
      return;
    }
  }
}

// One context for every domain's worker (with several domains, made for
// workers progressing on different threads at once).
Result<ucx::Context*> ProcessRuntime::context() {
  std::lock_guard<std::mutex> lock(context_mutex_);
  if (context_) return context_.get();
  if (!context_error_.ok()) return context_error_;
  Result<ucx::TransportOptions> options = ucx::TransportOptions::fromEnvironment();
  if (!options.ok()) {
    context_error_ = options.status();
    return context_error_;
  }
  options->workers_on_threads = domains() > 1;
  options->scale = ucx::jobScaleFromLauncher(envOrNull);
  Result<std::unique_ptr<ucx::Context>> context = ucx::Context::create(*options);
  if (!context.ok()) {
    context_error_ = context.status();
    return context_error_;
  }
  context_ = std::move(context.value());
  return context_.get();
}

Result<ucx::Worker*> ProcessRuntime::worker(int domain) {
  Domain& d = domains_[size_t(domain)];
  if (d.worker) return d.worker.get();
  if (!d.worker_error.ok()) return d.worker_error;
  Result<ucx::Context*> context = this->context();
  if (!context.ok()) {
    d.worker_error = context.status();
    return d.worker_error;
  }
  Result<std::unique_ptr<ucx::Worker>> worker = ucx::Worker::create(*context.value());
  if (!worker.ok()) {
    d.worker_error = worker.status();
    return d.worker_error;
  }
  d.worker = std::move(worker.value());
  d.has_progress.store(true, std::memory_order_relaxed);
  return d.worker.get();
}

}  // namespace switchagg::coll
