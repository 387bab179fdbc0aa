#include "task_plan.h"

namespace switchagg::spank {
namespace {

std::string serverMessage(const Status& status) {
  // Control errors read "<code>: <message>"; keep the message part.
  const std::string& m = status.message();
  size_t colon = m.find(": ");
  return colon == std::string::npos ? m : m.substr(colon + 2);
}

}  // namespace

std::string explainLeaseFailure(const Status& status) {
  const std::string code = agent::controlErrorOf(status);
  if (code == "unreachable") return "the switch agent is unreachable (" + status.message() + ")";
  if (code == "quota_exceeded") return "quota exceeded (" + serverMessage(status) + ")";
  if (code == "policy_denied" || code == "unauthenticated") {
    return "the agent's policy refused the lease (" + serverMessage(status) + ")";
  }
  if (code == "config") {
    return "switch aggregation is misconfigured on this node (" + serverMessage(status) + ")";
  }
  if (code == "draining") return "the switch agent is draining for maintenance";
  if (code == "not_found") return "the job holds no lease";
  if (code == "bad_request" || code == "conflict") {
    return "the agent rejected the request (" + status.message() + ")";
  }
  return "the switch agent failed (" + status.message() + ")";
}

bool isRefusal(const std::string& code) {
  return code == "quota_exceeded" || code == "policy_denied" || code == "unauthenticated" ||
         code == "draining" || code == "not_found" || code == "conflict";
}

TaskPlan planTaskEnv(const TaskInputs& in) {
  TaskPlan plan;
  const std::string job = std::to_string(in.job);
  if (in.mode == Mode::kOff) {
    // An explicit off inside a job that holds a lease hides it from this step.
    if (in.explicit_mode) {
      plan.unset = {kEnvAgent, kEnvLease};
      plan.set.emplace_back(kEnvTaskMode, "off");
    }
    return plan;
  }
  if (in.token.ok() && !in.token.value().token.empty()) {
    plan.set.emplace_back(kEnvAgent, in.token.value().data_address);
    plan.set.emplace_back(kEnvLease, in.token.value().token);
    plan.set.emplace_back(kEnvTaskMode, modeName(in.mode));
    return plan;
  }
  Status why = in.token.ok() ? Status(Code::kProtocol, "internal: the agent returned no token")
                             : in.token.status();
  // "No lease" is explained by what the prolog met when it tried to create it.
  std::string code = agent::controlErrorOf(why);
  std::string reason = explainLeaseFailure(why);
  if (code == "not_found" && !in.prolog_note.empty()) {
    code = in.prolog_error;
    reason = in.prolog_note;
  }
  bool fail = in.mode == Mode::kRequire || (in.fail_job_on_error && !isRefusal(code));
  if (fail) {
    plan.failure = in.mode == Mode::kRequire
                       ? "job " + job + " requires switch aggregation (--switch-agg=require) but has no lease: "
                       : "job " + job + " has no switch aggregation lease and this site fails such jobs "
                                        "(fail_job_on_error=true): ";
    plan.failure += reason;
    return plan;
  }
  plan.unset = {kEnvAgent, kEnvLease};
  plan.set.emplace_back(kEnvTaskMode, modeName(in.mode));
  plan.warning = "warning: job " + job + " runs without switch aggregation (host algorithms only): " +
                 reason;
  return plan;
}

}  // namespace switchagg::spank
