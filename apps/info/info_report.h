// What switchagg-info shows: the resolved RoCE profile, the UCX settings it
// applied (read back from UCX's own configuration) or left to the user, and
// the transport options with their effective values.
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

struct InfoReport {
  std::string ucx_version;
  ucx::RoceProfile profile;
  int lanes = 1;
  // Key -> value as UCX's configuration holds it after applyProfile.
  std::vector<std::pair<std::string, std::string>> applied;
  std::vector<OptionRow> options;
};

Result<InfoReport> buildReport(const InfoArgs& args);
std::string renderText(const InfoReport& report);
std::string renderJson(const InfoReport& report);

}  // namespace switchagg::info
