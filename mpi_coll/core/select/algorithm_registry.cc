#include "algorithm_registry.h"

#include <strings.h>

#include <algorithm>

#include "cost_model.h"

namespace switchagg::coll {
namespace {

// Adapts a host algorithm that does not look at the node layout.
template <Status (*Run)(HostComm&, const AllreduceArgs&)>
Status flat(HostComm& comm, const AllreduceArgs& args, const NodeLayout& /*layout*/) {
  return Run(comm, args);
}

}  // namespace

const std::vector<AlgorithmInfo>& algorithmRegistry() {
  // Tie order: the latency-optimal algorithms first, the previous module
  // last (when the model cannot tell them apart, e.g. p == 1).
  static const std::vector<AlgorithmInfo> kRegistry = {
      {Algorithm::kRing, "ring",
       "reduce-scatter + allgather around a ring, pipelined in segments; bandwidth-optimal",
       3, flat<allreduceRing>, predictRingUs},
      {Algorithm::kRecursiveDoubling, "recursive_doubling",
       "log2(p) pairwise exchanges of the whole vector; latency-optimal for small messages",
       1, flat<allreduceRecursiveDoubling>, predictRecursiveDoublingUs},
      {Algorithm::kRabenseifner, "rabenseifner",
       "recursive halving reduce-scatter + recursive doubling allgather; medium/large messages",
       2, flat<allreduceRabenseifner>, predictRabenseifnerUs},
      {Algorithm::kHierarchical, "hierarchical",
       "reduce inside each node over shared memory, leaders allreduce across nodes, "
       "broadcast inside the node",
       4, allreduceHierarchical, predictHierarchicalUs},
      {Algorithm::kSwitch, "switch",
       "offload to the switch aggregation agent: each rank sends N bytes and receives N",
       5, nullptr, predictSwitchUs},
      {Algorithm::kPrevious, "previous",
       "the coll module that was selected before switchagg (Open MPI tuned, han, ...)",
       6, nullptr, predictPreviousUs},
  };
  return kRegistry;
}

const AlgorithmInfo& algorithmInfo(Algorithm a) {
  return algorithmRegistry()[static_cast<size_t>(a)];
}

const std::vector<const AlgorithmInfo*>& algorithmsInTieOrder() {
  static const std::vector<const AlgorithmInfo*> kOrder = [] {
    std::vector<const AlgorithmInfo*> order;
    for (const AlgorithmInfo& info : algorithmRegistry()) order.push_back(&info);
    std::stable_sort(order.begin(), order.end(), [](const auto* x, const auto* y) {
      return x->tie_order < y->tie_order;
    });
    return order;
  }();
  return kOrder;
}

const char* algorithmName(Algorithm a) {
  const auto i = static_cast<size_t>(a);
  return i < kNumAlgorithms ? algorithmRegistry()[i].name : "unknown";
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

}  // namespace switchagg::coll
