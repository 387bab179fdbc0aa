// Selection: ranks the allreduce candidates for one call. A pure function of
// the call (SelectionInput), the cost model, the site rules and the policy
// (MCA parameters), so it is unit-tested without MPI.
//
// Precedence, highest first:
//   1. offload=off removes `switch` everywhere (even if forced or ruled).
//   2. A forced algorithm (coll_switchagg_allreduce_algorithm != auto) goes first.
//   3. offload=on puts `switch` first whenever it can serve (after a forced one).
//   4. The first matching rule's algorithm goes first (algorithm=auto: skip).
//   5. The cost model ranks the remaining candidates, fastest first.
// `switch` is only a candidate when SelectionInput::switch_available. The
// list always ends with kPrevious and nothing follows it: the previous coll
// module never declines, so candidates the model ranks below it are dropped.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "algorithm_registry.h"
#include "cost_model.h"
#include "rules.h"

namespace switchagg::coll {

// coll_switchagg_offload.
enum class Offload : uint8_t { kAuto, kOn, kOff };
const char* offloadName(Offload o);  // "auto", "on", "off"

// The user's choices, parsed once (parsePolicy) and compared as values.
struct SelectionPolicy {
  // coll_switchagg_allreduce_algorithm: empty = auto, else the algorithm
  // every call tries first.
  std::optional<Algorithm> forced;
  Offload offload = Offload::kAuto;

  bool forces(Algorithm a) const { return forced && *forced == a; }
  // A forced algorithm other than the switch: the switch is never asked.
  bool forcesHost() const { return forced && *forced != Algorithm::kSwitch; }
  std::string forcedName() const;  // "auto" or the algorithm's name
};

// The two parameters' values (either case) as a policy; an unknown value
// is an error that names it and the values allowed.
Result<SelectionPolicy> parsePolicy(const std::string& forced, const std::string& offload);

// MPI_Barrier's choice (docs/offload.md "Barrier"): the switch path (when
// the communicator has one) only with offload `on`. `auto` keeps the
// previous module: a switch barrier is one agent round trip, which here
// (software agent, TCP) measured 1.15x tuned's on the emulated cluster
// (benchmarks/results/oneshot_fabric.md); there is no cost-model row for
// barriers yet to let `auto` pick it where the hop is cheaper.
bool barrierUsesSwitch(const SelectionPolicy& policy);

// A routed collective's choice (docs/offload.md "Routed collectives"): the
// switch path or the previous module, per call. offload `off`: previous;
// `on`: the switch whenever it can serve (in.switch_available); `auto`: the
// switch when it can serve and predictRoutedSwitchUs < predictRoutedPreviousUs,
// or when `previous_differs` (the previous module would not follow C
// semantics for the dtype/op: only the switch path computes it right).
// Rules files and forced allreduce algorithms do not apply (a forced host
// algorithm leaves the communicator without a switch path).
struct RoutedChoice {
  bool use_switch = false;
  const char* reason = "";  // "offload=off", "offload=on", "cost model", "previous differs", "no switch"
  // The model's guess (offload=auto): online tuning may measure and
  // overrule it (routed.cc).
  bool tunable = false;
};
RoutedChoice chooseRouted(CollKind op, const SelectionInput& in, const CostModel& model,
                          const SelectionPolicy& policy, bool previous_differs = false);

// Ranked candidates, best first; the caller tries each (a candidate may
// decline at run time), and kPrevious is always last.
std::vector<Algorithm> rankCandidates(const SelectionInput& in, const CostModel& model,
                                      const Rules& rules, const SelectionPolicy& policy);

// The same ranking plus why the first one was chosen, for verbose output:
// "forced", "offload=on", "rule <file>:<line>", "cost model".
struct Decision {
  std::vector<Algorithm> ranked;
  std::string reason;
  // Only the cost model chose (no forced algorithm, offload=on or rule):
  // online tuning may measure and overrule it, over `candidates` = every
  // eligible algorithm in the model's order (previous included, nothing cut;
  // with SelectionInput::threads previous is cut).
  bool tunable = false;
  std::vector<Algorithm> candidates;
};
Decision decide(const SelectionInput& in, const CostModel& model, const Rules& rules,
                const SelectionPolicy& policy);

// One row of a decision table: for every power-of-two size in [lo, hi] the
// first choice is `algorithm` for the same reason.
struct DecisionRow {
  size_t lo_bytes = 0;
  size_t hi_bytes = 0;
  Algorithm algorithm = Algorithm::kPrevious;
  std::string reason;
};
// Sweeps powers of two from min_bytes to max_bytes (base gives the shape).
std::vector<DecisionRow> decisionTable(SelectionInput base, size_t min_bytes, size_t max_bytes,
                                       const CostModel& model, const Rules& rules,
                                       const SelectionPolicy& policy);

// Bundles what a communicator needs: policy, rules (from a file) and the cost
// model with the rules' overrides applied. Cheap to copy.
class Selector {
 public:
  Selector() = default;
  // rules_path may be empty (no rules). Errors: bad policy, unreadable or
  // malformed rules file (message names file and line).
  static Result<Selector> create(const SelectionPolicy& policy, const std::string& rules_path);
  static Selector fromParts(SelectionPolicy policy, Rules rules, CostModel model);

  std::vector<Algorithm> rank(const SelectionInput& in) const {
    return rankCandidates(in, model_, rules_, policy_);
  }
  Decision decide(const SelectionInput& in) const {
    return coll::decide(in, model_, rules_, policy_);
  }
  const CostModel& model() const { return model_; }
  const Rules& rules() const { return rules_; }
  const SelectionPolicy& policy() const { return policy_; }

 private:
  SelectionPolicy policy_;
  Rules rules_;
  CostModel model_ = CostModel::defaults();
};

// Remembers recent decisions of one Selector for one communicator, so a
// program repeating the same allreduce pays the ranking once (decide() costs
// a few hundred ns, comparable to a small allreduce on shared memory).
// Not thread-safe: keep one per communicator (MPI forbids concurrent
// collectives on one communicator). The Selector must outlive the cache.
class DecisionCache {
 public:
  const Decision& decide(const Selector& selector, const SelectionInput& in);

 private:
  struct Entry {
    bool valid = false;
    SelectionInput in;
    Decision decision;
  };
  static constexpr size_t kEntries = 64;  // direct-mapped by message size
  Entry entries_[kEntries];
};

}  // namespace switchagg::coll
