#include "commands.h"

#include <cstdio>
#include <cstring>

#include "switchagg/agent/fabric_map.h"
#include "switchagg/common/config.h"

namespace switchagg::info {

namespace {

int usage(const std::string& why) {
  std::fprintf(stderr, "switchagg-info: %s\n%s", why.c_str(), fabricUsage().c_str());
  return 2;
}

std::string nodeSummary(const std::vector<std::string>& nodes) {
  std::string out;
  for (size_t i = 0; i < nodes.size() && i < 8; ++i) out += (i ? " " : "") + nodes[i];
  if (nodes.size() > 8) out += " ... (" + std::to_string(nodes.size()) + " nodes)";
  return out;
}

// Every agent with its place in the tree: a leaf's parent, a spine's leaves.
void printMap(const std::string& path, const agent::FabricMap& map) {
  std::printf("fabric map %s: %zu agent(s)\n", path.c_str(), map.agents().size());
  for (const agent::FabricAgent& a : map.agents()) {
    std::printf("  %-12s control %s  data %s  parent %s  ", a.name.c_str(), a.control.c_str(),
                a.data.empty() ? "(as the agent reports)" : a.data.c_str(),
                a.parent.empty() ? "-" : a.parent.c_str());
    const std::vector<const agent::FabricAgent*> children = map.childrenOf(a.name);
    if (children.empty() && a.nodes.empty()) {
      std::printf("in a reducer pool\n");
      continue;
    }
    if (children.empty()) {
      std::printf("nodes %s\n", nodeSummary(a.nodes).c_str());
      continue;
    }
    std::string leaves;
    for (const agent::FabricAgent* c : children) leaves += (leaves.empty() ? "" : " ") + c->name;
    std::printf("spine of %s\n", leaves.c_str());
  }
  for (const agent::FabricPool& p : map.pools()) {
    std::string agents;
    for (const std::string& a : p.agents) agents += (agents.empty() ? "" : " ") + a;
    std::printf("  pool %-7s agents %s  nodes %s  reducers per job %s\n", p.name.c_str(),
                agents.c_str(), nodeSummary(p.nodes).c_str(),
                p.reducers > 0 ? std::to_string(p.reducers).c_str() : "all");
  }
}

// Stripes (agent k takes stripe k) or a tree (the leaves reduce their own
// nodes, the spine, last, reduces the leaves).
void printPlacement(const agent::FabricMap& map, const std::vector<std::string>& nodes,
                    const std::vector<const agent::FabricAgent*>& agents) {
  const bool tree = agent::FabricMap::isTree(agents);
  const bool one_leaf = agents.size() == 1 && !agents[0]->parent.empty();
  const size_t leaves = tree ? agents.size() - 1 : agents.size();
  if (tree)
    std::printf(
        "a job on %zu node(s) leases from %zu agent(s), a tree: %zu leaves, then the "
        "spine '%s':\n",
        nodes.size(), agents.size(), leaves, agents.back()->name.c_str());
  else if (one_leaf)
    std::printf("a job on %zu node(s) leases from its leaf only (the spine '%s' takes no part):\n",
                nodes.size(), agents[0]->parent.c_str());
  else if (const agent::FabricPool* pool = nodes.empty() ? nullptr : map.poolOf(nodes[0]))
    std::printf(
        "a job on %zu node(s) leases from %zu of the %zu agents of pool '%s'; "
        "stripe k goes to agent k:\n",
        nodes.size(), agents.size(), pool->agents.size(), pool->name.c_str());
  else
    std::printf("a job on %zu node(s) leases from %zu agent(s); stripe k goes to agent k:\n",
                nodes.size(), agents.size());
  for (size_t k = 0; k < leaves; ++k) {
    const agent::FabricAgent& a = *agents[k];
    std::vector<std::string> mine;
    for (const std::string& n : nodes)
      if (map.agentOf(n) == &a || map.poolOf(n) != nullptr) mine.push_back(n);
    std::printf("  %s %zu: %-12s control %s  job nodes %s\n", tree || one_leaf ? "leaf" : "stripe",
                k, a.name.c_str(), a.control.c_str(), nodeSummary(mine).c_str());
  }
  if (tree)
    std::printf("  spine:  %-12s control %s  reduces the %zu leaves\n", agents.back()->name.c_str(),
                agents.back()->control.c_str(), leaves);
}

}  // namespace

bool wantsFabricCommand(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--fabric") == 0 || std::strncmp(argv[i], "--fabric=", 9) == 0)
      return true;
  return false;
}

std::string fabricUsage() {
  return "usage: switchagg-info --fabric FILE [--nodes HOSTLIST [--reducers K] [--job ID]]\n"
         "  checks the fabric map FILE and lists its agents, tree (each leaf's spine) and\n"
         "  reducer pools; with --nodes, the agents a job on those nodes leases from:\n"
         "  stripes, a tree (leaves, then their spine), or K agents of a reducer pool (the\n"
         "  ones job ID gets) (docs/admin.md \"Fabric map\")\n";
}

int runFabricCommand(int argc, char** argv) {
  std::string path, nodes, job;
  int reducers = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i], v;
    const size_t eq = a.find('=');
    if (a.rfind("--", 0) == 0 && eq != std::string::npos) {
      v = a.substr(eq + 1);
      a = a.substr(0, eq);
    } else if ((a == "--fabric" || a == "--nodes" || a == "--reducers" || a == "--job") &&
               i + 1 < argc) {
      v = argv[++i];
    }
    if (a == "--fabric" && !v.empty())
      path = v;
    else if (a == "--nodes" && !v.empty())
      nodes = v;
    else if (a == "--job" && !v.empty())
      job = v;
    else if (a == "--reducers" && !v.empty()) {
      Result<int64_t> k = parseInt("--reducers", v, 1, 1 << 16);
      if (!k.ok()) return usage(k.status().message());
      reducers = int(*k);
    } else
      return usage("unknown or incomplete argument '" + std::string(argv[i]) + "'");
  }
  Result<agent::FabricMap> map = agent::FabricMap::load(path);
  if (!map.ok()) return usage(map.status().message());
  if (nodes.empty()) {
    printMap(path, *map);
    return 0;
  }
  Result<std::vector<std::string>> list = agent::expandHostlist(nodes);
  if (!list.ok()) return usage("--nodes: " + list.status().message());
  Result<std::vector<const agent::FabricAgent*>> agents = map->agentsFor(*list, {reducers, job});
  if (!agents.ok()) return usage(agents.status().message());
  printPlacement(*map, *list, *agents);
  return 0;
}

}  // namespace switchagg::info
