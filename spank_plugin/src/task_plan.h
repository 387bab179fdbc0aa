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

// Variables handed to the job's tasks (control_schema.h; kEnvJobMode here is
// the user's SWITCHAGG_JOB_MODE, job_request.h).
using agent::kEnvAgent;
using agent::kEnvAgentNames;
using agent::kEnvFabric;
using agent::kEnvLease;
constexpr const char* kEnvTaskMode = agent::kEnvMode;

// One line a user can act on, from a failed control call: says whether the
// agent is unreachable, the quota is exhausted, the policy refused, the
// agent is draining, or the job has no lease. Never contains a token.
std::string explainLeaseFailure(const agent::ApiFailure& failure);

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
  // The fabric map that placed the lease (plugstack fabric=, an absolute
  // path), "" for one agent: with it the tasks also get SWITCHAGG_AGENT_NAMES
  // and SWITCHAGG_FABRIC.
  std::string fabric;
  // The agent's answer to GET /v1/leases/{job}/token (unused when mode off).
  agent::ApiResult<agent::LeaseView> token =
      agent::ApiFailure{agent::ApiError::kNotFound, "not asked"};
  // What the prolog met when it could not create the lease: the control
  // error code (lease_note.h) and explainLeaseFailure() text ("" when it
  // did not fail).
  std::string prolog_error, prolog_note;
};

TaskPlan planTaskEnv(const TaskInputs& in);

}  // namespace switchagg::spank
