// The fabric map (docs/admin.md "Fabric map"): one admin file saying which
// aggregation agents exist, where their control API and data plane listen,
// which compute nodes each serves, and (for trees, not forwarded yet) each
// agent's parent. switchagg-ctl and the SPANK plugin read it to place a job's
// lease on every agent its nodes need. Links no UCX and no MPI.
//
//   [[agent]]
//   name = "leaf1"
//   control = "10.0.0.1:18516"     # as switchagg-ctl --agent
//   data = "10.0.0.1:18515"        # optional: what jobs dial (default: what the agent reports)
//   nodes = "node[01-16]"          # a hostlist, or an array of them
//   parent = "spine"               # optional
#pragma once

#include <string>
#include <vector>

#include "switchagg/common/status.h"

namespace switchagg::agent {

struct FabricAgent {
  std::string name;
  std::string control;  // control API address (ControlAddress syntax)
  // Data-plane address handed to jobs ("host:port"); "" = the one the agent
  // reports when the lease is created (its [data] listen).
  std::string data;
  std::vector<std::string> nodes;  // expanded, in file order
  std::string parent;              // "" = a root
};

class FabricMap {
 public:
  // Parses the map's TOML text; `origin` names it in errors. Errors name the
  // problem: unknown key, missing or duplicate agent, a node served twice,
  // an unknown parent or a parent cycle, a bad hostlist.
  static Result<FabricMap> parse(const std::string& text, const std::string& origin);
  static Result<FabricMap> load(const std::string& path);

  const std::vector<FabricAgent>& agents() const { return agents_; }
  const FabricAgent* find(const std::string& name) const;
  // The agent serving `node`, or nullptr.
  const FabricAgent* agentOf(const std::string& node) const;

  // The agents the given nodes need, each once, in map (file) order so that
  // every caller computes the same list for the same job. kInvalidArgument names
  // the first node no agent serves.
  Result<std::vector<const FabricAgent*>> agentsFor(const std::vector<std::string>& nodes) const;

 private:
  std::vector<FabricAgent> agents_;
};

// Expands a Slurm-style hostlist: "n[01-03,7],gpu1" -> n01 n02 n03 n7 gpu1
// (leading zeros kept as in the range's first bound). At most 65536 names.
Result<std::vector<std::string>> expandHostlist(const std::string& text);

}  // namespace switchagg::agent
