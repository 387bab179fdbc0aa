// The PMPI library's parameters (libswitchagg_pmpi.so, mpi_coll/pmpi): the
// Open MPI component's MCA parameters under the same names, read from the
// environment instead (coll_switchagg_offload <- SWITCHAGG_OFFLOAD, ...).
// One table gives each its name, variable, help and parser; the defaults
// are PmpiParams' initializers, the same as the MCA parameters' defaults
// (docs/mca-params.md). switchagg-info lists them.
#pragma once

#include <string>

#include "switchagg/common/config_table.h"

namespace switchagg::coll {

struct PmpiParams {
  bool enable = true;              // false: every call goes to PMPI_*
  std::string algorithm = "auto";  // "auto" or an algorithm registry name
  std::string offload = "auto";    // auto | on | off
  std::string rules;               // selection rules file; empty: none
  int verbose = 0;
  int stall_timeout = 300;      // seconds; 0 = warn only
  std::string tune = "online";  // online | off
  std::string tune_file;        // empty: not saved
  std::string progress_thread = "auto";  // auto | off (MPICH family only)
  int thread_domains = 4;                // at MPI_THREAD_MULTIPLE
};

inline const ConfigTable<PmpiParams>& pmpiParamsTable() {
  using P = PmpiParams;
  static const ConfigTable<P> t({
      {"coll_switchagg_enable", "SWITCHAGG_ENABLE",
       "PMPI library: serve MPI calls with switchagg (false: every call goes to the MPI "
       "library's own PMPI_* function)",
       boolField(&P::enable)},
      {"coll_switchagg_allreduce_algorithm", "SWITCHAGG_ALLREDUCE_ALGORITHM",
       "PMPI library: allreduce algorithm, 'auto' or a registry name (switchagg-info --select "
       "lists them); as the MCA parameter",
       stringField(&P::algorithm)},
      {"coll_switchagg_offload", "SWITCHAGG_OFFLOAD",
       "PMPI library: switch offload, auto | on | off; as the MCA parameter",
       nameField(&P::offload, {"auto", "on", "off"})},
      {"coll_switchagg_rules", "SWITCHAGG_RULES",
       "PMPI library: path of a selection rules file (docs/selection.md); empty: none",
       stringField(&P::rules)},
      {"coll_switchagg_verbose", "SWITCHAGG_VERBOSE",
       "PMPI library: 0 errors and warnings; 1 one line per communicator (and one at "
       "MPI_Init naming the MPI library); 2 per call; 3 transport detail",
       intField(&P::verbose, 0, 100)},
      {"coll_switchagg_stall_timeout", "SWITCHAGG_STALL_TIMEOUT",
       "PMPI library: seconds a host-algorithm step may wait without progress before the "
       "call fails naming the peer (0: warn only)",
       intField(&P::stall_timeout, 0, 1 << 30)},
      {"coll_switchagg_tune", "SWITCHAGG_TUNE",
       "PMPI library: online tuning of auto's choice, online | off; as the MCA parameter",
       nameField(&P::tune, {"online", "off"})},
      {"coll_switchagg_tune_file", "SWITCHAGG_TUNE_FILE",
       "PMPI library: file where rank 0 writes the rules online tuning settled on, at "
       "MPI_Finalize; empty: not saved",
       stringField(&P::tune_file)},
      {"coll_switchagg_progress_thread", "SWITCHAGG_PROGRESS_THREAD",
       "PMPI library on the MPICH family: auto runs MPI_Iallreduce through the switch path on "
       "a progress thread of the layer's own when the job has a switch path (docs/pmpi.md); "
       "off hands every MPI_Iallreduce to the MPI library",
       nameField(&P::progress_thread, {"auto", "off"})},
      {"coll_switchagg_thread_domains", "SWITCHAGG_THREAD_DOMAINS",
       "PMPI library at MPI_THREAD_MULTIPLE: thread domains (a UCX worker, its agent "
       "connections and their lock each) communicators are spread over; 1 = one lock; as the "
       "MCA parameter",
       intField(&P::thread_domains, 1, 64)},
  });
  return t;
}

}  // namespace switchagg::coll
