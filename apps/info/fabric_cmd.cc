#include "fabric_cmd.h"

#include <cstdio>
#include <cstring>

#include "switchagg/agent/fabric_map.h"

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

}  // namespace

bool wantsFabricCommand(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--fabric") == 0 || std::strncmp(argv[i], "--fabric=", 9) == 0)
      return true;
  return false;
}

std::string fabricUsage() {
  return "usage: switchagg-info --fabric FILE [--nodes HOSTLIST]\n"
         "  checks the fabric map FILE and lists its agents; with --nodes, the agents a job\n"
         "  on those nodes leases from, in stripe order (docs/admin.md \"Fabric map\")\n";
}

int runFabricCommand(int argc, char** argv) {
  std::string path, nodes;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i], v;
    const size_t eq = a.find('=');
    if (a.rfind("--", 0) == 0 && eq != std::string::npos) {
      v = a.substr(eq + 1);
      a = a.substr(0, eq);
    } else if ((a == "--fabric" || a == "--nodes") && i + 1 < argc) {
      v = argv[++i];
    }
    if (a == "--fabric" && !v.empty())
      path = v;
    else if (a == "--nodes" && !v.empty())
      nodes = v;
    else
      return usage("unknown or incomplete argument '" + std::string(argv[i]) + "'");
  }
  Result<agent::FabricMap> map = agent::FabricMap::load(path);
  if (!map.ok()) return usage(map.status().message());
  if (nodes.empty()) {
    std::printf("fabric map %s: %zu agent(s)\n", path.c_str(), map->agents().size());
    for (const agent::FabricAgent& a : map->agents())
      std::printf("  %-12s control %s  data %s  parent %s  nodes %s\n", a.name.c_str(),
                  a.control.c_str(), a.data.empty() ? "(as the agent reports)" : a.data.c_str(),
                  a.parent.empty() ? "-" : a.parent.c_str(), nodeSummary(a.nodes).c_str());
    return 0;
  }
  Result<std::vector<std::string>> list = agent::expandHostlist(nodes);
  if (!list.ok()) return usage("--nodes: " + list.status().message());
  Result<std::vector<const agent::FabricAgent*>> agents = map->agentsFor(*list);
  if (!agents.ok()) return usage(agents.status().message());
  std::printf("a job on %zu node(s) leases from %zu agent(s); stripe k goes to agent k:\n",
              list->size(), agents->size());
  for (size_t k = 0; k < agents->size(); ++k) {
    const agent::FabricAgent& a = *(*agents)[k];
    std::vector<std::string> mine;
    for (const std::string& n : *list)
      if (map->agentOf(n) == &a) mine.push_back(n);
    std::printf("  stripe %zu: %-12s control %s  job nodes %s\n", k, a.name.c_str(),
                a.control.c_str(), nodeSummary(mine).c_str());
  }
  return 0;
}

}  // namespace switchagg::info
