// Local (srun) and allocator (sbatch, salloc) context: runs on the submit
// host as the submitting user, before the job exists. Bad values fail the
// submission here, with the valid values in the message. The resolved
// request travels to the prolog/epilog in the job-control environment
// (SWITCHAGG_REQUEST); the options themselves also reach remote steps.
#include <cstdlib>

#include "contexts.h"
#include "job_request.h"
#include "plugin_state.h"
#include "spank_log.h"
#include "switchagg/common/config.h"

namespace switchagg::spank {
namespace {

std::optional<std::string> processEnv(const char* name) {
  const char* v = envOrNull(name);
  return v != nullptr ? std::optional<std::string>(v) : std::nullopt;
}

}  // namespace

int submitInit(spank_t sp) { return registerOptions(sp); }

int submitPostOpt(spank_t sp) {
  PluginState& st = state();
  RequestSources sources;
  sources.option_mode = st.option_mode;
  sources.option_slots = st.option_slots;
  sources.option_reducers = st.option_reducers;
  sources.env_mode = processEnv(kEnvJobMode);
  sources.env_slots = processEnv(kEnvSlots);
  sources.env_reducers = processEnv(kEnvReducers);
  Result<ResolvedRequest> resolved = resolveRequest(sources, configOrDefaults());
  if (!resolved.ok()) {
    logError("%s", resolved.status().message().c_str());
    return -1;
  }
  const JobRequest& request = resolved->request;
  if (!st.config.ok() && request.mode != Mode::kOff) {
    // The line was already reported by loadConfig(); say what it means here.
    if (request.mode == Mode::kRequire) {
      logError("cannot honour --switch-agg=require: switch aggregation is misconfigured "
               "(ask your administrator)");
      return -1;
    }
    userLine("warning: switch aggregation is misconfigured; the job runs without it");
  }
  bool user_said = resolved->explicit_mode || sources.option_slots || sources.env_slots ||
                   sources.option_reducers || sources.env_reducers;
  if (!user_said) return 0;
  const std::string encoded = encodeRequest(request);
  spank_err_t rc = spank_job_control_setenv(sp, kRequestVar, encoded.c_str(), 1);
  if (rc != ESPANK_SUCCESS) {
    logError("cannot record the request (%s) for the job: %s", encoded.c_str(), spank_strerror(rc));
    return request.mode == Mode::kRequire ? -1 : 0;
  }
  logDebug("job request %s", encoded.c_str());
  return 0;
}

}  // namespace switchagg::spank
