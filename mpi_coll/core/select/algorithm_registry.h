// The algorithm registry: every allreduce path the component knows, with the
// name used by MCA parameters, rules files, logs and --help. Selection, the
// cost model and the glue all speak in these ids; names are user-visible and
// stable.
#pragma once

#include <string>
#include <vector>

namespace switchagg::coll {

enum class Algorithm {
  kRing,
  kRecursiveDoubling,
  kRabenseifner,
  kHierarchical,
  kSwitch,
  kPrevious,  // the coll module that was active before us (Open MPI tuned, ...)
};

struct AlgorithmInfo {
  Algorithm id;
  const char* name;         // ring, recursive_doubling, rabenseifner, hierarchical, switch, previous
  const char* description;  // one line for --help and ompi_info
};

// All algorithms, in enum order.
const std::vector<AlgorithmInfo>& algorithmRegistry();
// "ring", ...; "unknown" for a value outside the enum.
const char* algorithmName(Algorithm a);
// Exact, case-insensitive name match. "auto" is not an algorithm: callers
// handle it before asking.
bool parseAlgorithm(const std::string& name, Algorithm* out);
// "ring|recursive_doubling|...|previous" for help texts and error messages.
std::string algorithmNameList(const char* separator = "|");
// The host algorithms the component runs itself (not switch, not previous).
bool isHostAlgorithm(Algorithm a);

}  // namespace switchagg::coll
