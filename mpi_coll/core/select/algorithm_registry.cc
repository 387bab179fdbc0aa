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
  //
  // Default cost constants {alpha_us, beta_ns, gamma_ns}, calibrated with
  // benchmarks/coll_calibrate.sh (np=4, 3 reps, up to 16 MiB) on the
  // reference machine while it was quiet (2 cores, 4 ranks oversubscribed,
  // Open MPI 4.1 vader for `previous`, UCX posix shm for ours; gamma from
  // --measure-gamma; see docs/tuning.md to recalibrate). An earlier table
  // was fitted under load ~15 and modelled scheduler time. `net` and
  // `switch` rows are a RoCE-class estimate (~5 us, ~10 GB/s) until
  // measured on one.
  static const std::vector<AlgorithmInfo> kRegistry = {
      {Algorithm::kRing, "ring",
       "reduce-scatter + allgather around a ring, pipelined in segments; bandwidth-optimal",
       3, flat<allreduceRing>, flatCost<ringUs>,
       CostConstants{40.5, 0.95, 0.063}, CostConstants{7.0, 0.12, 0.30}},
      {Algorithm::kRecursiveDoubling, "recursive_doubling",
       "log2(p) pairwise exchanges of the whole vector; latency-optimal for small messages",
       1, flat<allreduceRecursiveDoubling>, flatCost<recursiveDoublingUs>,
       CostConstants{58.0, 0.66, 0.063}, CostConstants{6.0, 0.12, 0.30}},
      {Algorithm::kRabenseifner, "rabenseifner",
       "recursive halving reduce-scatter + recursive doubling allgather; medium/large messages",
       2, flat<allreduceRabenseifner>, flatCost<rabenseifnerUs>,
       CostConstants{37.3, 0.69, 0.063}, CostConstants{7.0, 0.12, 0.30}},
      {Algorithm::kHierarchical, "hierarchical",
       "reduce inside each node over shared memory, leaders allreduce across nodes, "
       "broadcast inside the node",
       4, allreduceHierarchical, predictHierarchicalUs,
       CostConstants{33.8, 0.35, 0.063}, std::nullopt},  // across nodes: the rd and ring rows
      {Algorithm::kSwitch, "switch",
       "offload to the switch aggregation agent: each rank sends N bytes and receives N",
       5, nullptr, predictSwitchUs, std::nullopt, CostConstants{10.0, 0.20, 0.0}},
      {Algorithm::kPrevious, "previous",
       "the coll module that was selected before switchagg (Open MPI tuned, han, ...)",
       6, nullptr, flatCost<previousUs>,
       CostConstants{6.6, 0.66, 0.063}, CostConstants{6.0, 0.15, 0.35}},
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
