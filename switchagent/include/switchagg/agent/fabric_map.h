// The fabric map (docs/admin.md "Fabric map"): one admin file saying which
// aggregation agents exist, where their control API and data plane listen,
// which compute nodes each serves, and each agent's parent in a tree (leaf
// -> spine, two levels at most). switchagg-ctl and the SPANK plugin read it
// to place a job's lease on every agent its nodes need; the job's client
// reads it to find its own leaf. Links no UCX and no MPI.
//
//   [[agent]]
//   name = "leaf1"
//   control = "10.0.0.1:18516"     # as switchagg-ctl --agent
//   data = "10.0.0.1:18515"        # optional: what jobs dial (default: what the agent reports)
//   nodes = "node[01-16]"          # a hostlist, or an array of them
//   parent = "spine"               # optional: the spine above this leaf
//
//   [[agent]]
//   name = "spine"                 # a parent serves no nodes itself
//   control = "10.0.0.9:18516"
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "switchagg/common/status.h"

namespace switchagg::agent {

// A reducer pool (docs/admin.md "Reducer pools"): agents on reducer hosts
// that together serve every node of the pool, a job taking K of them and
// striping each call over those K. Its agents serve no nodes of their own.
//
//   [[pool]]
//   name = "reducers"
//   agents = ["r1", "r2", "r3", "r4"]  # [[agent]] tables without nodes or parent
//   nodes = "node[01-64]"
//   reducers = 2                       # optional: K a job gets by default (default: all)
//   rails = true                       # optional: agent k serves rail k of every node
//
// A rail pool (rails = true): the agents are the nodes' rails in order, the
// agent of rail k in switch plane k, reached through each node's rail-k NIC.
// Every job takes all of them, in pool order, so stripe k goes over rail k.
struct FabricPool {
  std::string name;
  std::vector<std::string> agents;  // agent names, in file order
  std::vector<std::string> nodes;   // expanded
  int reducers = 0;                 // K by default; 0 = every agent of the pool
  bool rails = false;               // agent k is rail k's; jobs take every agent
};

// What a job asks of a reducer pool; ignored outside pools unless reducers
// is set (then an error: the nodes are in no pool).
struct PoolRequest {
  int reducers = 0;  // K; 0 = the pool's default
  // The K agents are consecutive in pool order from a place the job id
  // picks (FNV-1a modulo the pool's size), so jobs spread over the pool and
  // every caller with the same job, nodes and K gets the same agents.
  std::string job;
};

struct FabricAgent {
  std::string name;
  std::string control;  // control API address (ControlAddress syntax)
  // Data-plane address handed to jobs ("host:port"); "" = the one the agent
  // reports when the lease is created (its [data] listen).
  std::string data;
  std::vector<std::string> nodes;  // expanded, in file order; empty for a spine
  std::string parent;              // "" = a root
  bool rail = false;               // an agent of a rail pool (stripe k is rail k's)
};

class FabricMap {
 public:
  // Parses the map's TOML text; `origin` names it in errors. Errors name the
  // problem: unknown key, missing or duplicate agent, a node served twice,
  // an unknown parent or a parent cycle, a bad hostlist, a parent (spine)
  // that serves nodes itself, an agent without nodes that is nobody's
  // parent, a tree deeper than two levels (leaf -> spine).
  static Result<FabricMap> parse(const std::string& text, const std::string& origin);
  static Result<FabricMap> load(const std::string& path);

  const std::vector<FabricAgent>& agents() const { return agents_; }
  const std::vector<FabricPool>& pools() const { return pools_; }
  const FabricPool* poolOf(const std::string& node) const;  // nullptr: in no pool
  const FabricAgent* find(const std::string& name) const;
  // The agent serving `node`, or nullptr.
  const FabricAgent* agentOf(const std::string& node) const;
  // The agents whose parent is `name`, in map order (empty for a leaf).
  std::vector<const FabricAgent*> childrenOf(const std::string& name) const;

  // The agents a job on the given nodes leases from, each once, in an order
  // every caller computes alike. Let S be the agents serving the nodes, in
  // map (file) order:
  //   * none of S has a parent: S (the job stripes over them);
  //   * S is one agent (a leaf with a parent or not): S, the job stays inside
  //     its leaf and the spine takes no part;
  //   * S are two or more leaves of one spine: S, then the spine, last
  //     (isTree() of the result is true).
  // Nodes of a reducer pool: K of the pool's agents (PoolRequest), in pool
  // order (the job stripes over them).
  // kInvalidArgument names the first node no agent serves, or the agents of
  // a placement that is not supported: leaves mixed with parentless agents,
  // leaves of different spines, a pool's nodes with others, more reducers
  // than the pool has, reducers asked for nodes in no pool.
  Result<std::vector<const FabricAgent*>> agentsFor(const std::vector<std::string>& nodes,
                                                    const PoolRequest& request = {}) const;

  // True if `list` (as agentsFor gives it) is a tree: two or more agents,
  // the last one a root and the parent of every other one (leaves, then
  // their spine). False for stripes: one agent, or agents without parents.
  static bool isTree(const std::vector<const FabricAgent*>& list);

 private:
  Status checkTree() const;

  std::vector<FabricAgent> agents_;
  std::vector<FabricPool> pools_;
  // Who serves each node (parse() checked a node has one owner): an
  // agent's index, or -(index + 1) of a pool. agentOf/poolOf look it up,
  // so placing a job is linear in its nodes, not nodes x map.
  std::unordered_map<std::string, long> owner_;
};

// Expands a Slurm-style hostlist: "n[01-03,7],gpu1" -> n01 n02 n03 n7 gpu1
// (leading zeros kept as in the range's first bound). At most 65536 names.
Result<std::vector<std::string>> expandHostlist(const std::string& text);

}  // namespace switchagg::agent
