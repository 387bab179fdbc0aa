// What the job's tasks get, decided from the job's mode and what the agent
// answered: the SWITCHAGG_* variables to set or clear, one warning line, or
// a failure with the reason. Pure; context_remote.cc applies the plan.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "plugin_config.h"
#include "switchagg/agent/control_client.h"

namespace switchagg::spank {

// Variables handed to the job's tasks (ARCHITECTURE.md).
constexpr const char* kEnvAgent = "SWITCHAGG_AGENT";
constexpr const char* kEnvLease = "SWITCHAGG_LEASE";
constexpr const char* kEnvTaskMode = "SWITCHAGG_MODE";

// One line a user can act on, from a failed control call: says whether the
// agent is unreachable, the quota is exhausted, the policy refused, the
// agent is draining, or the job has no lease. Never contains a token.
std::string explainLeaseFailure(const Status& status);

// True when a control error code (agent::controlErrorOf) is a refusal the
// agent decided (quota, policy, draining, no lease) rather than an error
// (unreachable, protocol, internal).
bool isRefusal(const std::string& control_error);

struct TaskPlan {
  std::vector<std::pair<std::string, std::string>> set;  // name, value
  std::vector<std::string> unset;
  std::string warning;  // non-empty: print once (auto without a lease)
  std::string failure;  // non-empty: the job's tasks must not start
};

struct TaskInputs {
  uint32_t job = 0;
  Mode mode = Mode::kOff;
  bool explicit_mode = false;  // off by the user's choice, not the site default
  bool fail_job_on_error = false;
  // The agent's answer to GET /v1/leases/{job}/token (unused when mode off).
  Result<agent::LeaseInfo> token = Status(Code::kAborted, "not_found: not asked");
  // What the prolog met when it could not create the lease: the control
  // error code and explainLeaseFailure() text ("" when it did not fail).
  std::string prolog_error, prolog_note;
};

TaskPlan planTaskEnv(const TaskInputs& in);

}  // namespace switchagg::spank
