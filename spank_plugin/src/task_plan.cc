#include "task_plan.h"

namespace switchagg::spank {

std::string explainLeaseFailure(const agent::ApiFailure& failure) {
  using agent::ApiError;
  const std::string& m = failure.message;
  switch (failure.error) {
    case ApiError::kUnreachable:
      return "the switch agent is unreachable (" + m + ")";
    case ApiError::kQuotaExceeded:
      return "quota exceeded (" + m + ")";
    case ApiError::kPolicyDenied:
    case ApiError::kUnauthenticated:
      return "the agent's policy refused the lease (" + m + ")";
    case ApiError::kConfig:
      return "switch aggregation is misconfigured on this node (" + m + ")";
    case ApiError::kDraining:
      return "the switch agent is draining for maintenance";
    case ApiError::kNotFound:
      return "the job holds no lease";
    case ApiError::kBadRequest:
    case ApiError::kConflict:
      return "the agent rejected the request (" + failure.status().message() + ")";
    default:
      return "the switch agent failed (" + failure.status().message() + ")";
  }
}

TaskPlan planTaskEnv(const TaskInputs& in) {
  TaskPlan plan;
  const std::string job = std::to_string(in.job);
  if (in.mode == Mode::kOff) {
    // An explicit off inside a job that holds a lease hides it from this step.
    if (in.explicit_mode) {
      plan.unset = {kEnvAgent, kEnvLease, kEnvAgentNames};
      plan.set.emplace_back(kEnvTaskMode, "off");
    }
    return plan;
  }
  if (in.token.ok() && !in.token.value().token.empty()) {
    const agent::LeaseView& lease = in.token.value();
    plan.set.emplace_back(kEnvAgent, lease.data_address);
    plan.set.emplace_back(kEnvLease, agent::jobTokens(lease));
    plan.set.emplace_back(kEnvTaskMode, modeName(in.mode));
    if (in.fabric.empty()) {
      plan.unset = {kEnvAgentNames};  // none left from an outer step's map
    } else {
      plan.set.emplace_back(kEnvAgentNames, lease.agent_names);
      plan.set.emplace_back(kEnvFabric, in.fabric);
    }
    return plan;
  }
  agent::ApiFailure why = in.token.ok() ? agent::ApiFailure{agent::ApiError::kInternal,
                                                           "the agent returned no token"}
                                        : in.token.failure();
  // "No lease" is explained by what the prolog met when it tried to create it.
  agent::ApiError error = why.error;
  std::string reason = explainLeaseFailure(why);
  if (error == agent::ApiError::kNotFound && !in.prolog_note.empty()) {
    error = agent::apiErrorFromCode(in.prolog_error).value_or(agent::ApiError::kInternal);
    reason = in.prolog_note;
  }
  bool fail = in.mode == Mode::kRequire || (in.fail_job_on_error && !agent::isRefusal(error));
  if (fail) {
    plan.failure = in.mode == Mode::kRequire
                       ? "job " + job + " requires switch aggregation (--switch-agg=require) but has no lease: "
                       : "job " + job + " has no switch aggregation lease and this site fails such jobs "
                                        "(fail_job_on_error=true): ";
    plan.failure += reason;
    return plan;
  }
  plan.unset = {kEnvAgent, kEnvLease, kEnvAgentNames};
  plan.set.emplace_back(kEnvTaskMode, modeName(in.mode));
  plan.warning = "warning: job " + job + " runs without switch aggregation (host algorithms only): " +
                 reason;
  return plan;
}

}  // namespace switchagg::spank
