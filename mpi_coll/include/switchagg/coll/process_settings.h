// Process-wide settings of the collective runtime that belong to neither
// the switch path (switch_settings.h) nor the PMPI layer (pmpi_params.h):
// one table gives each its name, variable, help and parser; switchagg-info
// lists them.
#pragma once

#include <string>

#include "switchagg/common/config_table.h"

namespace switchagg::coll {

struct ProcessSettings {
  std::string node_name;  // empty: the MPI library's name, else the short host name
};

inline const ConfigTable<ProcessSettings>& processSettingsTable() {
  static const ConfigTable<ProcessSettings> t({
      {"process.node_name", "SWITCHAGG_NODE_NAME",
       "this process's node for node leaders, hierarchical steps and the leaf of a tree lease "
       "(tests place ranks on emulated nodes of one machine with it); empty: the MPI "
       "library's node name, else the host name up to its first dot",
       stringField(&ProcessSettings::node_name)},
  });
  return t;
}

}  // namespace switchagg::coll
