// What one job asks of switch aggregation (mode + slots), from the places a
// user can say it, in one stated precedence:
//   --switch-agg / --switch-agg-slots / --switch-agg-reducers (command line
//     or #SBATCH line)
//   > SWITCHAGG_JOB_MODE / SWITCHAGG_JOB_SLOTS / SWITCHAGG_JOB_REDUCERS
//     (environment, for scripts)
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
constexpr const char* kEnvReducers = "SWITCHAGG_JOB_REDUCERS";
// The most reducers a job may ask for (a pool's size is the real bound,
// checked against the fabric map when the lease is made).
constexpr int kMaxReducers = 64;
// Job-control variable carrying the resolved request from the submitting
// command (srun/sbatch/salloc) to the prolog/epilog (which see it with a
// "SPANK_" prefix) and to batch steps (prefix "SLURM_SPANK_").
constexpr const char* kRequestVar = "SWITCHAGG_REQUEST";

struct JobRequest {
  Mode mode = Mode::kOff;
  int slots = 0;  // 0 = plugstack default_slots, else the agent's default
  int reducers = 0;  // K of a reducer pool (fabric map); 0 = the pool's default
  bool operator==(const JobRequest& o) const {
    return mode == o.mode && slots == o.slots && reducers == o.reducers;
  }
};

// --switch-agg-slots and SWITCHAGG_JOB_SLOTS: an integer 1..max_slots; the
// error names `what` and the valid range.
Result<int> parseSlots(const std::string& what, const std::string& text, int max_slots);

// --switch-agg-reducers and SWITCHAGG_JOB_REDUCERS: an integer 1..kMaxReducers.
Result<int> parseReducers(const std::string& what, const std::string& text);

// "mode=require,slots=4,reducers=2" and back (slots, reducers omitted when 0).
std::string encodeRequest(const JobRequest& request);
Result<JobRequest> decodeRequest(const std::string& text);

struct RequestSources {
  std::optional<std::string> option_mode, option_slots;  // --switch-agg[-slots]
  std::optional<std::string> option_reducers;            // --switch-agg-reducers
  std::optional<std::string> env_mode, env_slots;        // SWITCHAGG_JOB_MODE/SLOTS
  std::optional<std::string> env_reducers;               // SWITCHAGG_JOB_REDUCERS
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
