#include "algorithm_registry.h"

#include <strings.h>

namespace switchagg::coll {

const std::vector<AlgorithmInfo>& algorithmRegistry() {
  static const std::vector<AlgorithmInfo> kRegistry = {
      {Algorithm::kRing, "ring",
       "reduce-scatter + allgather around a ring, pipelined in segments; bandwidth-optimal"},
      {Algorithm::kRecursiveDoubling, "recursive_doubling",
       "log2(p) pairwise exchanges of the whole vector; latency-optimal for small messages"},
      {Algorithm::kRabenseifner, "rabenseifner",
       "recursive halving reduce-scatter + recursive doubling allgather; medium/large messages"},
      {Algorithm::kHierarchical, "hierarchical",
       "reduce inside each node over shared memory, leaders allreduce across nodes, "
       "broadcast inside the node"},
      {Algorithm::kSwitch, "switch",
       "offload to the switch aggregation agent: each rank sends N bytes and receives N"},
      {Algorithm::kPrevious, "previous",
       "the coll module that was selected before switchagg (Open MPI tuned, han, ...)"},
  };
  return kRegistry;
}

const char* algorithmName(Algorithm a) {
  for (const AlgorithmInfo& info : algorithmRegistry()) {
    if (info.id == a) return info.name;
  }
  return "unknown";
}

bool parseAlgorithm(const std::string& name, Algorithm* out) {
  for (const AlgorithmInfo& info : algorithmRegistry()) {
    if (strcasecmp(info.name, name.c_str()) == 0) {
      *out = info.id;
      return true;
    }
  }
  return false;
}

std::string algorithmNameList(const char* separator) {
  std::string list;
  for (const AlgorithmInfo& info : algorithmRegistry()) {
    if (!list.empty()) list += separator;
    list += info.name;
  }
  return list;
}

bool isHostAlgorithm(Algorithm a) {
  return a != Algorithm::kSwitch && a != Algorithm::kPrevious;
}

}  // namespace switchagg::coll
