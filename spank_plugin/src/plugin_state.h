// Per-process state shared by the SPANK callbacks of one context: the parsed
// plugstack arguments and the --switch-agg options. slurmd, srun, sbatch and
// each slurmstepd load the plugin separately, so this is never shared across
// jobs.
#pragma once

#include "slurm_spank.h"

#include <optional>
#include <string>

#include "job_request.h"
#include "plugin_config.h"
#include "switchagg/agent/control_schema.h"

namespace switchagg::spank {

struct PluginState {
  Result<PluginConfig> config = PluginConfig{};
  std::optional<std::string> option_mode, option_slots;  // set by option callbacks
  std::optional<std::string> option_reducers;
  std::string task_failure;  // remote: why tasks must not start ("" = fine)
};

PluginState& state();

// Parses the plugstack arguments into state().config. On a broken line it
// logs the problem once per process (naming the key) and returns false.
bool loadConfig(int argc, char** argv);
// The configuration to act on: the parsed one, or the defaults when broken.
const PluginConfig& configOrDefaults();
// kConfig, "plugstack.conf: unknown key 'x' (...)", for a broken line.
agent::ApiFailure configProblem();

// Registers --switch-agg, --switch-agg-slots and --switch-agg-reducers
// (local, allocator, remote).
int registerOptions(spank_t sp);
// Reads an option in a callback where spank_option_getopt works (job
// script, user_init, task_init); falls back to the value the option
// callbacks stored in this process.
std::optional<std::string> getModeOption(spank_t sp);
std::optional<std::string> getSlotsOption(spank_t sp);
std::optional<std::string> getReducersOption(spank_t sp);

// A spank_getenv() value ("" = unset) in remote context.
std::optional<std::string> stepEnv(spank_t sp, const char* name);

}  // namespace switchagg::spank
