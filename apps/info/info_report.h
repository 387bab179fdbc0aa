// What switchagg-info shows: the resolved RoCE profile, the UCX settings it
// applied (read back from UCX's own configuration) or left to the user, and
// every SWITCHAGG_* option with its effective value.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "switchagg/common/status.h"
#include "switchagg/ucx/transport.h"

namespace switchagg::info {

// Command-line overrides; they beat SWITCHAGG_ROCE_* (command line >
// environment > default).
struct InfoArgs {
  bool json = false;
  std::optional<std::string> sysfs_root;
  std::optional<std::string> device;
  std::optional<std::string> netdev;
};

struct OptionRow {
  std::string name, env, value, default_value, source, help;
};

// One field of a UCX transport/memory-domain config as UCX will build it.
struct EffectiveRow {
  std::string table;   // "rc_mlx5 transport"
  std::string name;    // "UCX_RC_MLX5_SL"
  std::string value;   // "3"
  std::string source;  // "profile IB_SL", "environment UCX_RC_MLX5_SL", "default"
};

struct InfoReport {
  std::string ucx_version;
  ucx::RoceProfile profile;
  int lanes = 1;
  // Key -> value as UCX's configuration holds it after applyProfile.
  std::vector<std::pair<std::string, std::string>> applied;
  // Every transport field the profile's keys reach (rc/dc/ud on mlx5 and
  // verbs, the IB memory domain), with the value UCX will use there.
  std::vector<EffectiveRow> effective;
  std::vector<OptionRow> options;
  // Each dtype the kernels reduce (the agent's wire table is built from
  // them) and its ops, e.g. {"float16", {"sum", "min", "max"}}.
  std::vector<std::pair<std::string, std::vector<std::string>>> reductions;
};

Result<InfoReport> buildReport(const InfoArgs& args);
std::string renderText(const InfoReport& report);
std::string renderJson(const InfoReport& report);

}  // namespace switchagg::info
