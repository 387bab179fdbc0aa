// What one job asks of switch aggregation (mode + slots), from the places a
// user can say it, in one stated precedence:
//   --switch-agg / --switch-agg-slots (command line or #SBATCH line)
//   > SWITCHAGG_JOB_MODE / SWITCHAGG_JOB_SLOTS (environment, for scripts)
//   > the request recorded at submission (SWITCHAGG_REQUEST job env)
//   > plugstack.conf defaults (mode=, default_slots=).
// Pure functions; the SPANK context files gather the inputs.
#pragma once

#include <optional>
#include <string>

#include "plugin_config.h"

namespace switchagg::spank {

// Environment variables users may set instead of the options.
constexpr const char* kEnvJobMode = "SWITCHAGG_JOB_MODE";
constexpr const char* kEnvSlots = "SWITCHAGG_JOB_SLOTS";
// Job-control variable carrying the resolved request from the submitting
// command (srun/sbatch/salloc) to the prolog/epilog (which see it with a
// "SPANK_" prefix) and to batch steps (prefix "SLURM_SPANK_").
constexpr const char* kRequestVar = "SWITCHAGG_REQUEST";

struct JobRequest {
  Mode mode = Mode::kOff;
  int slots = 0;  // 0 = plugstack default_slots, else the agent's default
  bool operator==(const JobRequest& o) const { return mode == o.mode && slots == o.slots; }
};

// --switch-agg-slots and SWITCHAGG_JOB_SLOTS: an integer 1..max_slots; the
// error names `what` and the valid range.
Result<int> parseSlots(const std::string& what, const std::string& text, int max_slots);

// "mode=require,slots=4" and back (slots omitted when 0).
std::string encodeRequest(const JobRequest& request);
Result<JobRequest> decodeRequest(const std::string& text);

struct RequestSources {
  std::optional<std::string> option_mode, option_slots;  // --switch-agg[-slots]
  std::optional<std::string> env_mode, env_slots;        // SWITCHAGG_JOB_MODE/SLOTS
  std::optional<std::string> recorded;                   // SWITCHAGG_REQUEST
};

struct ResolvedRequest {
  JobRequest request;
  bool explicit_mode = false;  // the user said a mode (not the site default)
};

// Applies the precedence above. Errors name the source ("--switch-agg",
// "SWITCHAGG_JOB_MODE", ...) and list the valid values.
Result<ResolvedRequest> resolveRequest(const RequestSources& sources, const PluginConfig& config);

}  // namespace switchagg::spank
