// Asks the switchagg coll component, if Open MPI loaded it into this
// process, which path served the last MPI_Allreduce on a communicator
// (switchagg_coll_last_algorithm, see switchagg/coll/diagnostics.h). The
// bench does not link the component: it finds the symbol at run time, so the
// same binary measures Open MPI's tuned/han runs, where the answer is "n/a".
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>

#include "switchagg/coll/diagnostics.h"

namespace switchagg::bench {

class ComponentQuery {
 public:
  // Looks the symbol up; call after MPI_Init (components are loaded then).
  ComponentQuery();
  bool loaded() const { return fn_ != nullptr; }
  // Name of the last path on `comm`; "n/a" when the component is not
  // loaded, "not-serving" when it is loaded but does not serve `comm`.
  std::string lastAlgorithm(MPI_Comm comm) const;
  // Payload bytes this rank has sent on `comm` through switchagg's own paths
  // (host algorithms + switch); -1 when the component cannot say.
  int64_t bytesSent(MPI_Comm comm) const;
  // One of the component's counters on `comm` ("bcast:switch", ...); -1
  // when the component cannot say.
  int64_t counter(MPI_Comm comm, const char* name) const;

 private:
  switchagg_coll_last_algorithm_fn fn_ = nullptr;
  switchagg_coll_comm_counter_fn counter_ = nullptr;
};

}  // namespace switchagg::bench
