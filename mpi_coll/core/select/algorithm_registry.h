// The algorithm registry: every allreduce path the component knows, one row
// each, with the name used by MCA parameters, rules files, logs and --help
// and the behaviour the rest of the component iterates: the host schedule
// dispatch runs, the cost formula the selector ranks by, the tie order.
// Counters, tuner samples, the MCA enum and the test sweeps are all sized
// and listed from this table; names are user-visible and stable.
//
// Adding a host algorithm: its file core/algorithms/allreduce_<name>.cc
// (declared in host_algorithms.h, listed in core/algorithms/CMakeLists.txt),
// an enum value below and its row in algorithm_registry.cc, which carries
// its cost formula (flatCost<formula> over cost_model.h's building blocks)
// and its default cost constants (docs/design.md, "Add a host algorithm").
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "host_algorithms.h"
#include "switchagg/common/status.h"

namespace switchagg::coll {

// Values index the registry, counters and tuner samples: keep the rows in
// this order (a unit test checks).
enum class Algorithm {
  kRing,
  kRecursiveDoubling,
  kRabenseifner,
  kHierarchical,
  kSwitch,
  kPrevious,  // the coll module that was active before us (Open MPI tuned, ...)
};
inline constexpr size_t kNumAlgorithms = static_cast<size_t>(Algorithm::kPrevious) + 1;

class CostModel;
struct SelectionInput;

// Runs a host algorithm; `layout` is the communicator's node layout (only
// node-aware algorithms read it).
using HostRunFn = Status (*)(HostComm& comm, const AllreduceArgs& args, const NodeLayout& layout);
// Modeled time of one allreduce in microseconds with the model's constants
// (`self`: the row's algorithm, whose rows the formula reads); +infinity
// when the algorithm cannot run the input.
using PredictFn = double (*)(const CostModel& model, Algorithm self, const SelectionInput& in);

// An algorithm's default constants on one locality: its row of the cost
// table (cost_model.h), which a rules file's `cost` line overrides.
struct CostConstants {
  double alpha_us;  // per step
  double beta_ns;   // per byte on the wire
  double gamma_ns;  // per byte reduced
};

struct AlgorithmInfo {
  Algorithm id;
  const char* name;         // ring, recursive_doubling, rabenseifner, hierarchical, switch, previous
  const char* description;  // one line for --help and ompi_info
  int tie_order;            // equal modeled times rank the lower tie_order first
  HostRunFn run;            // nullptr: not a host algorithm (switch, previous)
  PredictFn predict;        // its cost formula (cost_model.h)
  // Its default rows of the cost table, within one node (shared memory) and
  // across nodes; a missing one makes predict say +infinity there.
  std::optional<CostConstants> shm;
  std::optional<CostConstants> net;
};

// All algorithms, in enum order.
const std::vector<AlgorithmInfo>& algorithmRegistry();
// The row of `a` (which must be an enum value).
const AlgorithmInfo& algorithmInfo(Algorithm a);
// All algorithms in tie order.
const std::vector<const AlgorithmInfo*>& algorithmsInTieOrder();
// "ring", ...; "unknown" for a value outside the enum.
const char* algorithmName(Algorithm a);
// Exact, case-insensitive name match. "auto" is not an algorithm: callers
// handle it before asking.
bool parseAlgorithm(const std::string& name, Algorithm* out);
// "ring|recursive_doubling|...|previous" for help texts and error messages.
std::string algorithmNameList(const char* separator = "|");

}  // namespace switchagg::coll
