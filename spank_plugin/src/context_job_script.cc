// Job script context: slurmd runs `slurmstepd spank prolog|epilog` as root
// on every node of the job, before the job's first step there and after the
// job ends however it ended (normal exit, scancel, time limit, node-side
// task crash). So the prolog creates the job's one lease, for the job's uid
// (root may act for any uid), and the epilog deletes it. Both calls are
// idempotent per job, so several nodes doing the same is harmless.
//
// Neither may fail: a failed prolog or epilog drains the node. The prolog
// leaves the reason for a missing lease in a note (lease_note.h); the job's
// tasks turn it into a failure (require) or a warning (auto).
#include <sys/types.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "agent_link.h"
#include "contexts.h"
#include "job_request.h"
#include "lease_note.h"
#include "plugin_state.h"
#include "spank_log.h"
#include "task_plan.h"

namespace switchagg::spank {
namespace {

struct ScriptJob {
  uint32_t id = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  const PluginConfig* config = nullptr;  // the plugin's, loaded by startScript
};

bool jobOf(spank_t sp, ScriptJob* job) {
  return spank_get_item(sp, S_JOB_ID, &job->id) == ESPANK_SUCCESS &&
         spank_get_item(sp, S_JOB_UID, &job->uid) == ESPANK_SUCCESS &&
         spank_get_item(sp, S_JOB_GID, &job->gid) == ESPANK_SUCCESS;
}

// What the prolog and the epilog start with: the plugin's configuration
// (plugstack.conf arguments) and the job as Slurm tells it; false, with
// `problem` logged, when Slurm does not tell it.
bool startScript(spank_t sp, int argc, char** argv, const char* problem, ScriptJob* job) {
  loadConfig(argc, argv);
  job->config = &configOrDefaults();
  if (!jobOf(sp, job)) {
    logError("%s", problem);
    return false;
  }
  return true;
}

// Slurm hands the job-control environment to prolog/epilog with "SPANK_"
// in front, options as SPANK__SLURM_SPANK_OPTION_switchagg_* (read by
// spank_option_getopt).
Result<ResolvedRequest> scriptRequest(spank_t sp, const PluginConfig& config) {
  RequestSources sources;
  sources.option_mode = getModeOption(sp);
  sources.option_slots = getSlotsOption(sp);
  sources.option_reducers = getReducersOption(sp);
  const char* recorded = std::getenv((std::string("SPANK_") + kRequestVar).c_str());
  if (recorded != nullptr && recorded[0] != '\0') sources.recorded = recorded;
  return resolveRequest(sources, config);
}

// The job's nodes: Slurm puts them in the prolog's environment (needed
// only with a fabric map).
std::string jobNodeList() {
  for (const char* name : {"SLURM_JOB_NODELIST", "SLURM_NODELIST"}) {
    const char* v = std::getenv(name);
    if (v != nullptr && *v) return v;
  }
  return "";
}

void noteFailure(const PluginConfig& config, const ScriptJob& job, const agent::ApiFailure& why) {
  LeaseNote note{agent::apiErrorCode(why.error), explainLeaseFailure(why)};
  logError("job %u: no lease: %s", job.id, note.text.c_str());
  Status st = writeNote(config.state_dir, job.id, job.uid, job.gid, note);
  if (!st.ok()) logError("job %u: cannot leave the reason for the job: %s", job.id, st.toString().c_str());
}

}  // namespace

int jobProlog(spank_t sp, int argc, char** argv) {
  ScriptJob job;
  if (!startScript(sp, argc, argv, "prolog: cannot read the job id/uid from Slurm", &job)) return 0;
  const PluginConfig& config = *job.config;
  Result<ResolvedRequest> req = scriptRequest(sp, config);
  if (!req.ok()) {
    noteFailure(config, job, {agent::ApiError::kConfig, req.status().message()});
    return 0;
  }
  if (req->request.mode == Mode::kOff) return 0;
  removeNote(config.state_dir, job.id);  // a requeued job starts clean
  if (!state().config.ok()) {
    noteFailure(config, job, configProblem());
    return 0;
  }
  agent::ApiResult<agent::LeaseView> lease =
      createJobLease(config, jobNodeList(), std::to_string(job.id), job.uid, req->request);
  if (!lease.ok()) {
    noteFailure(config, job, lease.failure());
    return 0;
  }
  // Never log the token.
  logInfo("job %u: lease %s for uid %u: %d slots, ttl %llds (mode %s)%s%s", job.id,
          lease->created ? "created" : "already held", static_cast<unsigned>(job.uid), lease->slots,
          static_cast<long long>(lease->ttl_s), modeName(req->request.mode),
          lease->agent_names.empty() ? "" : ", agents ", lease->agent_names.c_str());
  return 0;
}

// An agent restarting (or stopped for a moment) must not leave the lease
// behind until its TTL: the epilog retries while the agent is unreachable
// or overloaded, for at most `budget_ms` (3x the plugin's timeout), then
// gives up with the TTL as the backstop. The first failed attempt is logged
// with the job id; *retries counts the attempts after it.
namespace {

agent::ApiResult<bool> deleteWithRetry(const PluginConfig& config, uint32_t job,
                                       int64_t budget_ms, int* retries) {
  using Clock = std::chrono::steady_clock;
  const auto end = Clock::now() + std::chrono::milliseconds(budget_ms);
  for (*retries = 0;; ++*retries) {
    agent::ApiResult<bool> deleted = deleteJobLease(config, std::to_string(job));
    const agent::ApiError error = deleted.error();
    if (deleted.ok() || (error != agent::ApiError::kUnreachable &&
                         error != agent::ApiError::kOverloaded)) {
      return deleted;
    }
    if (Clock::now() + std::chrono::milliseconds(250) >= end) return deleted;
    if (*retries == 0)
      logInfo("job %u: cannot delete the lease yet (%s); retrying for up to %lld ms", job,
              deleted.status().message().c_str(), static_cast<long long>(budget_ms));
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
}

}  // namespace

int jobEpilog(spank_t sp, int argc, char** argv) {
  ScriptJob job;
  if (!startScript(sp, argc, argv, "epilog: cannot read the job id from Slurm", &job)) return 0;
  const PluginConfig& config = *job.config;
  removeNote(config.state_dir, job.id);
  Result<ResolvedRequest> req = scriptRequest(sp, config);
  if (req.ok() && req->request.mode == Mode::kOff) return 0;
  int retries = 0;
  agent::ApiResult<bool> deleted =
      deleteWithRetry(config, job.id, 3 * int64_t{config.timeout_ms}, &retries);
  if (!deleted.ok()) {
    logError("job %u: cannot delete the lease (%s) after %d retries; the agent's TTL will expire it",
             job.id, deleted.status().message().c_str(), retries);
    return 0;
  }
  if (retries > 0)
    logInfo("job %u: lease %s after %d retries", job.id, *deleted ? "deleted" : "already gone",
            retries);
  else
    logInfo("job %u: lease %s", job.id, *deleted ? "deleted" : "already gone");
  return 0;
}

}  // namespace switchagg::spank
