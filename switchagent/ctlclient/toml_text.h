// TOML text -> table with an error that says where ("file:line:col: what"),
// for the two TOML files the agent side reads: agent.toml
// (control/config_toml.cc) and the fabric map (fabric_map.cc). Needs
// toml++ on the include path (TOMLPP_INCLUDE_DIR).
#pragma once

#include <string>

#include <toml++/toml.h>

#include "switchagg/common/status.h"

namespace switchagg::agent {

Result<toml::table> parseTomlText(const std::string& text, const std::string& origin);

}  // namespace switchagg::agent
