// Reducer pools of the fabric map (fabric_map.h FabricPool): parsing and
// which K agents a job gets.
#include <algorithm>
#include <optional>
#include <set>

#include "fabric_map_internal.h"

namespace switchagg::agent::fabric_detail {
namespace {

// FNV-1a, 64 bits: where in the pool a job's agents start.
uint64_t fnv1a(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

Result<FabricPool> parsePool(const toml::table& t, const std::string& where_in,
                             const FabricMap& map, std::set<std::string>* pooled) {
  for (const auto& [key, value] : t) {
    const std::string k(key.str());
    if (k != "name" && k != "agents" && k != "nodes" && k != "reducers" && k != "rails")
      return bad(where_in + "." + k +
                 ": unknown key (keys: name, agents, nodes, reducers, rails)");
  }
  FabricPool pool;
  Result<std::string> name = stringKey(t, where_in, "name", true);
  if (!name.ok()) return name.status();
  pool.name = *name;
  const std::string where = "pool '" + pool.name + "'";
  const toml::array* agents = t.get("agents") ? t.get("agents")->as_array() : nullptr;
  if (agents == nullptr || agents->empty())
    return bad(where + ".agents: expected a non-empty array of agent names");
  for (const toml::node& item : *agents) {
    if (!item.is_string()) return bad(where + ".agents: expected agent names (strings)");
    const std::string agent = *item.value<std::string>();
    const FabricAgent* a = map.find(agent);
    if (a == nullptr) return bad(where + ": agent '" + agent + "' is not an [[agent]] of the map");
    if (!a->nodes.empty())
      return bad(where + ": agent '" + agent +
                 "' serves nodes of its own (a pool's agents serve the pool's nodes only)");
    if (!a->parent.empty() || !map.childrenOf(agent).empty())
      return bad(where + ": agent '" + agent + "' is part of a tree (pools are not trees)");
    if (!pooled->insert(agent).second)
      return bad(where + ": agent '" + agent + "' is in more than one pool (or twice in this one)");
    pool.agents.push_back(agent);
  }
  const toml::node* nodes = t.get("nodes");
  if (nodes == nullptr) return bad(where + ": missing key 'nodes'");
  SWITCHAGG_RETURN_IF_ERROR(nodesOf(*nodes, where, &pool.nodes));
  if (const toml::node* k = t.get("reducers")) {
    const std::optional<int64_t> v = k->value<int64_t>();
    if (!k->is_integer() || !v || *v < 1 || *v > int64_t(pool.agents.size()))
      return bad(where + ".reducers: expected an integer from 1 to " +
                 std::to_string(pool.agents.size()) + " (its agents)");
    pool.reducers = int(*v);
  }
  if (const toml::node* r = t.get("rails")) {
    if (!r->is_boolean()) return bad(where + ".rails: expected true or false");
    pool.rails = *r->value<bool>();
    if (pool.rails && pool.reducers > 0 && pool.reducers != int(pool.agents.size()))
      return bad(where + ".reducers: a rail pool's jobs take all " +
                 std::to_string(pool.agents.size()) + " agents (one per rail), not " +
                 std::to_string(pool.reducers));
  }
  return pool;
}

}  // namespace

Result<std::vector<FabricPool>> parsePools(const toml::table& root, const FabricMap& map,
                                           std::map<std::string, std::string>* served_by) {
  std::vector<FabricPool> out;
  const toml::node* list_node = root.get("pool");
  if (list_node == nullptr) return out;
  const toml::array* list = list_node->as_array();
  if (list == nullptr) return bad("pool: expected [[pool]] tables");
  std::set<std::string> pooled;
  size_t index = 0;
  for (const toml::node& n : *list) {
    const std::string where = "pool #" + std::to_string(++index);
    const toml::table* t = n.as_table();
    if (t == nullptr) return bad(where + ": expected a table ([[pool]])");
    Result<FabricPool> pool = parsePool(*t, where, map, &pooled);
    if (!pool.ok()) return pool.status();
    for (const FabricPool& other : out)
      if (other.name == pool->name) return bad("pool '" + pool->name + "': defined twice");
    for (const std::string& node : pool->nodes) {
      auto [it, fresh] = served_by->emplace(node, "pool '" + pool->name + "'");
      if (!fresh)
        return bad("node " + node + " is served by both " + it->second + " and pool '" +
                   pool->name + "'");
    }
    out.push_back(std::move(*pool));
  }
  return out;
}

Result<std::vector<const FabricAgent*>> poolAgents(const FabricMap& map, const FabricPool& pool,
                                                   const PoolRequest& request) {
  const size_t size = pool.agents.size();
  const size_t k = size_t(request.reducers > 0 ? request.reducers
                          : pool.reducers > 0  ? pool.reducers
                                               : int(size));
  if (pool.rails && k != size)
    return bad("reducers=" + std::to_string(k) + ": pool '" + pool.name + "' is one agent per "
               "rail; a job takes all " + std::to_string(size) + " (stripe k on rail k)");
  if (k > size)
    return bad("reducers=" + std::to_string(k) + ": pool '" + pool.name + "' has " +
               std::to_string(size) + " agent(s)");
  const size_t start = size_t(fnv1a(request.job) % size);
  std::vector<size_t> picked;
  for (size_t i = 0; i < k; ++i) picked.push_back((start + i) % size);
  std::sort(picked.begin(), picked.end());  // stripes in pool order
  std::vector<const FabricAgent*> out;
  for (size_t i : picked) out.push_back(map.find(pool.agents[i]));
  return out;
}

}  // namespace switchagg::agent::fabric_detail
