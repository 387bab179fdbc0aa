// The plugstack.conf arguments of switchagg_spank.so, parsed by a pure
// function into a typed struct. One table (plugin_config.cc) gives every key's
// name, default and help; the parser, the unknown-key error and
// docs/admin-slurm.md all follow it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "switchagg/common/config_table.h"
#include "switchagg/common/status.h"

namespace switchagg::spank {

// What a job asks for: nothing, a lease if one can be had, or a lease or fail.
enum class Mode { kOff, kAuto, kRequire };
const char* modeName(Mode mode);
// "off", "auto", "require" (case-insensitive). The error names `what` and
// lists the valid values.
Result<Mode> parseMode(const std::string& what, const std::string& text);

struct PluginConfig {
  std::string control;            // agent control address; "" = client default
  Mode default_mode = Mode::kOff;  // for jobs that do not say
  int default_slots = 0;          // 0 = the agent's policy default
  int max_slots = 64;             // largest --switch-agg-slots accepted at submission
  int64_t ttl_s = 0;              // lease TTL; 0 = the agent's policy default
  int timeout_ms = 5000;          // bound on one control request
  bool fail_job_on_error = false;  // auto jobs fail too when the agent errs
  std::string state_dir = "/run/switchagg-spank";  // prolog -> task notes
  // Fabric map (fabric_map.h); "" = one agent at `control`. Set: the job's
  // lease goes to every agent its nodes need (`control` is then unused).
  std::string fabric;
};

// Every key's name, default and help (docs/admin-slurm.md, the tests).
const std::vector<ConfigDoc>& pluginConfigKeys();

// Parses "key=value" arguments (plugstack.conf, after the plugin path).
// Errors name the offending argument: unknown keys (listing the valid ones),
// missing '=', repeated keys, bad values, default_slots > max_slots.
Result<PluginConfig> parsePluginArgs(const std::vector<std::string>& args);

}  // namespace switchagg::spank
