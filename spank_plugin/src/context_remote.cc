// Remote context: slurmstepd of each job step (batch script included), on
// every node of the step. user_init runs once per node with the job user's
// effective uid, so the agent authorises the token fetch as the lease's
// owner (SO_PEERCRED on the Unix socket, munge on TCP); the token goes only
// into the tasks' environment. A job that must not run is stopped in
// task_init, in each task before exec: failing there ends the tasks with
// exit code 1, while failing user_init of a batch step would drain the node.
#include "agent_link.h"
#include "contexts.h"
#include "job_request.h"
#include "lease_note.h"
#include "plugin_state.h"
#include "spank_log.h"
#include "task_plan.h"

namespace switchagg::spank {
namespace {

constexpr uint32_t kExternStep = 0xfffffffc;  // SLURM_EXTERN_CONT: runs no user tasks

// The step's own option (srun line, or sbatch's for the batch step; Slurm
// also exports the job's option to sruns inside a batch script), then the
// user's SWITCHAGG_JOB_* variables, then what the submission recorded
// (SLURM_SPANK_SWITCHAGG_REQUEST, present in batch jobs).
RequestSources stepSources(spank_t sp) {
  RequestSources s;
  s.option_mode = getModeOption(sp);
  s.option_slots = getSlotsOption(sp);
  s.option_reducers = getReducersOption(sp);
  s.env_mode = stepEnv(sp, kEnvJobMode);
  s.env_slots = stepEnv(sp, kEnvSlots);
  s.env_reducers = stepEnv(sp, kEnvReducers);
  s.recorded = stepEnv(sp, (std::string("SLURM_SPANK_") + kRequestVar).c_str());
  return s;
}

void applyPlan(spank_t sp, const TaskPlan& plan) {
  for (const std::string& name : plan.unset) spank_unsetenv(sp, name.c_str());
  for (const auto& [name, value] : plan.set) {
    spank_err_t rc = spank_setenv(sp, name.c_str(), value.c_str(), 1);
    if (rc != ESPANK_SUCCESS) logError("cannot set %s for the tasks: %s", name.c_str(), spank_strerror(rc));
  }
}

}  // namespace

int remoteInit(spank_t sp) { return registerOptions(sp); }

int remoteUserInit(spank_t sp) {
  uint32_t job = 0, step = 0, node = 0;
  if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS) return 0;
  spank_get_item(sp, S_JOB_STEPID, &step);
  spank_get_item(sp, S_JOB_NODEID, &node);
  if (step == kExternStep) return 0;
  const PluginConfig& config = configOrDefaults();

  TaskInputs in;
  in.job = job;
  in.fail_job_on_error = config.fail_job_on_error;
  in.fabric = config.fabric;
  Result<ResolvedRequest> req = resolveRequest(stepSources(sp), config);
  if (!req.ok()) {
    state().task_failure = req.status().message();
    return 0;
  }
  in.mode = req->request.mode;
  in.explicit_mode = req->explicit_mode;
  if (in.mode != Mode::kOff) {
    if (!state().config.ok()) {
      in.token = configProblem();
    } else {
      in.token = fetchJobToken(config, stepEnv(sp, "SLURM_JOB_NODELIST").value_or(""),
                               std::to_string(job), req->request.reducers);
    }
    LeaseNote note = readNote(config.state_dir, job);
    in.prolog_error = note.error;
    in.prolog_note = note.text;
  }

  TaskPlan plan = planTaskEnv(in);
  // A batch script that already warned hands SWITCHAGG_MODE without a lease
  // to the steps inside it: read before applyPlan() changes the variables.
  const bool warned_before =
      stepEnv(sp, kEnvTaskMode).value_or("") == modeName(in.mode) && !stepEnv(sp, kEnvLease);
  applyPlan(sp, plan);
  if (!plan.failure.empty()) {
    state().task_failure = plan.failure;
  } else if (!plan.warning.empty()) {
    // One line for the user (it reaches slurmd's log too); other nodes, and
    // steps inside a batch script that already warned, log only.
    if (node == 0 && !warned_before) {
      userLine("%s", plan.warning.c_str());
    } else {
      logInfo("%s", plan.warning.c_str());
    }
  }
  return 0;
}

int remoteTaskInit(spank_t sp) {
  const std::string& failure = state().task_failure;
  if (failure.empty()) return 0;
  int local_task = -1;
  spank_get_item(sp, S_TASK_ID, &local_task);
  if (local_task == 0) logError("%s", failure.c_str());
  return -1;
}

}  // namespace switchagg::spank
