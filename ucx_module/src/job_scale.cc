// The job's scale for UCX: read from what the MPI launcher exports (the
// transport's callers know no more before their first communicator's
// exchange, which already needs a worker), and turned into ucp_init hints.
#include <algorithm>
#include <cctype>
#include <string>

#include "switchagg/ucx/transport.h"

namespace switchagg::ucx {
namespace {

// A positive count, digits only and at most 9 of them; 0 for anything else.
int count(const char* text) {
  if (text == nullptr || *text == '\0') return 0;
  const std::string s(text);
  if (s.size() > 9 ||
      !std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; }))
    return 0;
  return std::stoi(s);
}

// Slurm's SLURM_TASKS_PER_NODE: "2(x3),1" = 2 tasks on each of 3 nodes,
// then 1; the most on any node. 0 if a part does not parse.
int mostTasksPerNode(const char* text) {
  if (text == nullptr) return 0;
  const std::string s(text);
  int most = 0;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = std::min(s.find(',', start), s.size());
    const std::string part = s.substr(start, comma - start);
    const size_t paren = part.find('(');
    const int n = count(part.substr(0, paren).c_str());
    if (n == 0) return 0;
    if (paren != std::string::npos) {
      const std::string rest = part.substr(paren);
      if (rest.size() < 4 || rest.compare(0, 2, "(x") != 0 || rest.back() != ')' ||
          count(rest.substr(2, rest.size() - 3).c_str()) == 0)
        return 0;
    }
    most = std::max(most, n);
    start = comma + 1;
  }
  return most;
}

}  // namespace

JobScale jobScaleFromLauncher(const std::function<const char*(const char*)>& env) {
  struct Pair {
    const char* ranks;
    const char* per_node;
  };
  // Open MPI's mpirun, then MPICH's Hydra; each names both or neither.
  for (const Pair& p : {Pair{"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE"},
                        Pair{"PMI_SIZE", "MPI_LOCALNRANKS"}}) {
    if (env(p.ranks) == nullptr) continue;
    return JobScale{count(env(p.ranks)), count(env(p.per_node))};
  }
  // srun (Slurm's PMIx or PMI2 plugin exports no sizes of its own).
  if (env("SLURM_NTASKS") != nullptr)
    return JobScale{count(env("SLURM_NTASKS")), mostTasksPerNode(env("SLURM_TASKS_PER_NODE"))};
  return JobScale{};
}

UcxScaleHint ucxScaleHint(const JobScale& scale, int lanes) {
  UcxScaleHint hint;
  if (scale.ranks > 0)
    hint.num_eps = size_t(std::max(1, scale.ranks - 1)) * size_t(std::max(1, lanes));
  if (scale.ranks_per_node > 0) hint.num_ppn = size_t(scale.ranks_per_node);
  return hint;
}

}  // namespace switchagg::ucx
