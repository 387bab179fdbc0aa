// Shared by the fabric map's parser (fabric_map.cc) and its reducer pools
// (fabric_pool.cc); private to switchagg_ctlclient.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "toml_text.h"

#include "switchagg/agent/fabric_map.h"

namespace switchagg::agent::fabric_detail {

Status bad(const std::string& what);
// A string key of table `t` (errors say `where`); "" when absent and not required.
Result<std::string> stringKey(const toml::table& t, const std::string& where, const char* key,
                              bool required);
// `nodes`: a hostlist string or an array of them, expanded; at least one node.
Status nodesOf(const toml::node& n, const std::string& where, std::vector<std::string>* out);

// The [[pool]] tables of `root` (none: fine), checked against the agents:
// each pool's agents exist, serve no nodes, have no parent and are in one
// pool; its nodes are served by nothing else (`served_by`: node -> who
// serves it, "agent 'x'" or "pool 'y'", filled in).
Result<std::vector<FabricPool>> parsePools(const toml::table& root, const FabricMap& map,
                                           std::map<std::string, std::string>* served_by);

// K of the pool's agents for a job (PoolRequest), in pool order.
Result<std::vector<const FabricAgent*>> poolAgents(const FabricMap& map, const FabricPool& pool,
                                                   const PoolRequest& request);

}  // namespace switchagg::agent::fabric_detail
