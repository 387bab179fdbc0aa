// libFuzzer target: the fabric map loader (fabric_map.h: FabricMap::parse
// and the hostlist expansion), what switchagg-ctl, the SPANK plugin and the
// job's client read. Properties checked beyond "no crash / no sanitizer
// report":
//  * a map that parses serves every listed node from exactly the agent that
//    lists it, and its parents are agents of the map serving no nodes;
//  * placing a job on one agent's nodes leases from that agent only;
//  * placing a job on all nodes of a tree's leaves gives a tree whose last
//    entry is the spine;
//  * a reducer pool's node places K distinct agents of that pool (every K
//    from 1 to its size, the same for the same job), none with nodes of its
//    own, and one more than its size is refused.
#include <algorithm>
#include <cstddef>
#include <set>
#include <string>

#include "switchagg/agent/fabric_map.h"
#include "fuzz_check.h"

using namespace switchagg::agent;

namespace switchagg::fuzz {

const size_t kMaxTextBytes = 16384;

void fuzzText(const std::string& text) {

  // The first line alone as a hostlist.
  std::string first = text.substr(0, std::min<size_t>(text.find('\n'), 512));
  auto hosts = expandHostlist(first);
  if (hosts.ok()) check(hosts->size() <= 65536);

  auto map = FabricMap::parse(text, "fuzz.toml");
  if (!map.ok()) {
    check(!map.status().message().empty());
    return;
  }
  std::set<std::string> spines;
  for (const FabricAgent& a : map->agents()) {
    check(map->find(a.name) == &a);
    for (const std::string& n : a.nodes) check(map->agentOf(n) == &a);
    if (!a.parent.empty()) {
      const FabricAgent* p = map->find(a.parent);
      check(p != nullptr && p->nodes.empty());
      spines.insert(a.parent);
    }
    if (a.nodes.empty()) continue;
    auto own = map->agentsFor(a.nodes);
    check(own.ok() && own->size() == 1 && (*own)[0] == &a);
  }
  for (const FabricPool& pool : map->pools()) {
    check(!pool.nodes.empty() && !pool.agents.empty());
    check(map->poolOf(pool.nodes.front()) == &pool);
    for (size_t k = 1; k <= pool.agents.size() && k <= 8; ++k) {
      const PoolRequest request{int(k), pool.name + std::to_string(k)};
      auto placed = map->agentsFor({pool.nodes.front()}, request);
      check(placed.ok() && placed->size() == k);
      std::set<const FabricAgent*> distinct(placed->begin(), placed->end());
      check(distinct.size() == k);
      for (const FabricAgent* a : *placed) {
        check(a != nullptr && a->nodes.empty());
        check(std::find(pool.agents.begin(), pool.agents.end(), a->name) != pool.agents.end());
      }
      auto again = map->agentsFor({pool.nodes.back()}, request);
      check(again.ok() && *again == *placed);
    }
    check(!map->agentsFor({pool.nodes.front()}, {int(pool.agents.size()) + 1, "x"}).ok());
  }
  for (const std::string& spine : spines) {
    std::vector<std::string> nodes;
    auto leaves = map->childrenOf(spine);
    for (const FabricAgent* leaf : leaves) nodes.insert(nodes.end(), leaf->nodes.begin(), leaf->nodes.end());
    auto placed = map->agentsFor(nodes);
    check(placed.ok());
    if (leaves.size() >= 2) {
      check(FabricMap::isTree(*placed) && placed->back() == map->find(spine));
      check(placed->size() == leaves.size() + 1);
    }
  }
}

}  // namespace switchagg::fuzz
