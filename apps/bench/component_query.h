// Asks the switchagg coll component, if Open MPI loaded it into this
// process, which path served the last MPI_Allreduce. The component exports
//   extern "C" const char* switchagg_coll_last_algorithm(void);
// (registry name: ring, recursive_doubling, ..., switch, previous). The bench
// does not link the component: it finds the symbol at run time, so the same
// binary measures Open MPI's tuned/han runs, where the answer is "n/a".
#pragma once

#include <string>

namespace switchagg::bench {

class ComponentQuery {
 public:
  // Looks the symbol up; call after MPI_Init (components are loaded then).
  ComponentQuery();
  bool loaded() const { return fn_ != nullptr; }
  // Name of the last path, or "n/a" when the component is not loaded.
  std::string lastAlgorithm() const;

 private:
  using Fn = const char* (*)();
  Fn fn_ = nullptr;
};

}  // namespace switchagg::bench
