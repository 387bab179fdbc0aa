#include "selector.h"

#include <strings.h>

#include <algorithm>
#include <cmath>

namespace switchagg::coll {
namespace {

bool isEligible(Algorithm a, const SelectionInput& in, const SelectionPolicy& policy) {
  if (a != Algorithm::kSwitch) return true;
  return in.switch_available && policy.offload != Offload::kOff;
}

void pushUnique(std::vector<Algorithm>* list, Algorithm a) {
  if (std::find(list->begin(), list->end(), a) == list->end()) list->push_back(a);
}

// Every eligible candidate, fastest first by the model; equal times keep
// the registry's tie order (e.g. p == 1).
std::vector<Algorithm> costRanking(const SelectionInput& in, const CostModel& model,
                                   const SelectionPolicy& policy) {
  std::vector<std::pair<double, Algorithm>> scored;
  for (const AlgorithmInfo* info : algorithmsInTieOrder()) {
    const Algorithm a = info->id;
    if (!isEligible(a, in, policy)) continue;
    const double t = model.predictUs(a, in);
    if (std::isfinite(t) || a == Algorithm::kPrevious) scored.emplace_back(t, a);
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<Algorithm> ranked;
  for (const auto& s : scored) ranked.push_back(s.second);
  return ranked;
}

}  // namespace

const char* offloadName(Offload o) {
  switch (o) {
    case Offload::kAuto: return "auto";
    case Offload::kOn: return "on";
    case Offload::kOff: return "off";
  }
  return "?";
}

std::string SelectionPolicy::forcedName() const {
  return forced ? algorithmInfo(*forced).name : "auto";
}

Result<SelectionPolicy> parsePolicy(const std::string& forced, const std::string& offload) {
  SelectionPolicy policy;
  if (strcasecmp(forced.c_str(), "auto") != 0) {
    Algorithm a;
    if (!parseAlgorithm(forced, &a))
      return Status(Code::kInvalidArgument, "allreduce_algorithm: unknown '" + forced +
                                                "' (expected auto|" + algorithmNameList() + ")");
    policy.forced = a;
  }
  for (Offload o : {Offload::kAuto, Offload::kOn, Offload::kOff})
    if (strcasecmp(offload.c_str(), offloadName(o)) == 0) {
      policy.offload = o;
      return policy;
    }
  return Status(Code::kInvalidArgument,
                "offload: unknown '" + offload + "' (expected auto|on|off)");
}

bool barrierUsesSwitch(const SelectionPolicy& policy) { return policy.offload == Offload::kOn; }

RoutedChoice chooseRouted(CollKind op, const SelectionInput& in, const CostModel& model,
                          const SelectionPolicy& policy, bool previous_differs) {
  if (policy.offload == Offload::kOff) return {false, "offload=off"};
  if (!in.switch_available) return {false, "no switch"};
  if (policy.offload == Offload::kOn) return {true, "offload=on"};
  if (previous_differs) return {true, "previous differs"};
  return {predictRoutedSwitchUs(model, op, in) < predictRoutedPreviousUs(model, op, in),
          "cost model", true};
}

Decision decide(const SelectionInput& in, const CostModel& model, const Rules& rules,
                const SelectionPolicy& policy) {
  Decision d;
  if (policy.forced && isEligible(*policy.forced, in, policy)) {
    d.ranked.push_back(*policy.forced);
    d.reason = "forced";
  }
  if (policy.offload == Offload::kOn && isEligible(Algorithm::kSwitch, in, policy)) {
    pushUnique(&d.ranked, Algorithm::kSwitch);
    if (d.reason.empty()) d.reason = "offload=on";
  }
  if (d.ranked.empty()) {
    const Rule* rule = rules.match(in);
    if (rule != nullptr && !rule->is_auto && isEligible(rule->algorithm, in, policy)) {
      d.ranked.push_back(rule->algorithm);
      d.reason = "rule " + rules.source + ":" + std::to_string(rule->line);
    }
  }
  d.candidates = costRanking(in, model, policy);
  // Threads: the previous module's own collectives, run by several threads
  // at once, are two orders of magnitude slower than switchagg's (measured
  // on Open MPI 4.1: docs/selection.md "Threads"): the model ranks
  // switchagg's own paths only, and online tuning times them (its
  // agreements then run over the communicator's own transport:
  // CommState::tuningAllgather). The previous module stays last, for a call
  // nothing else serves.
  if (in.threads) {
    auto previous = std::find(d.candidates.begin(), d.candidates.end(), Algorithm::kPrevious);
    if (previous != d.candidates.end() && d.candidates.size() > 1) d.candidates.erase(previous);
  }
  if (d.reason.empty()) {
    d.reason = in.threads ? "cost model, threads" : "cost model";
    d.tunable = true;
  }
  for (Algorithm a : d.candidates) pushUnique(&d.ranked, a);
  pushUnique(&d.ranked, Algorithm::kPrevious);
  // Nothing after previous: it never declines.
  d.ranked.erase(std::find(d.ranked.begin(), d.ranked.end(), Algorithm::kPrevious) + 1,
                 d.ranked.end());
  return d;
}

std::vector<Algorithm> rankCandidates(const SelectionInput& in, const CostModel& model,
                                      const Rules& rules, const SelectionPolicy& policy) {
  return decide(in, model, rules, policy).ranked;
}

std::vector<DecisionRow> decisionTable(SelectionInput base, size_t min_bytes, size_t max_bytes,
                                       const CostModel& model, const Rules& rules,
                                       const SelectionPolicy& policy) {
  std::vector<DecisionRow> rows;
  size_t bytes = std::max<size_t>(1, min_bytes);
  while (true) {
    base.bytes = bytes;
    const Decision d = decide(base, model, rules, policy);
    if (!rows.empty() && rows.back().algorithm == d.ranked.front() &&
        rows.back().reason == d.reason) {
      rows.back().hi_bytes = bytes;
    } else {
      rows.push_back(DecisionRow{bytes, bytes, d.ranked.front(), d.reason});
    }
    if (bytes >= max_bytes || bytes > (SIZE_MAX >> 1)) break;
    bytes = std::min(bytes * 2, max_bytes);
  }
  return rows;
}

Result<Selector> Selector::create(const SelectionPolicy& policy, const std::string& rules_path) {
  Rules rules;
  if (!rules_path.empty()) {
    Result<Rules> loaded = loadRulesFile(rules_path);
    if (!loaded.ok()) return loaded.status();
    rules = std::move(*loaded);
  }
  CostModel model = CostModel::defaults();
  rules.applyCostOverrides(&model);
  return fromParts(policy, std::move(rules), std::move(model));
}

namespace {

bool sameInput(const SelectionInput& a, const SelectionInput& b) {
  return a.bytes == b.bytes && a.comm_size == b.comm_size &&
         a.ranks_per_node == b.ranks_per_node && a.nodes == b.nodes && a.dtype == b.dtype &&
         a.op == b.op && a.switch_available == b.switch_available &&
         a.switch_window == b.switch_window && a.switch_slot_bytes == b.switch_slot_bytes &&
         a.switch_members == b.switch_members && a.switch_stripes == b.switch_stripes &&
         a.switch_segment_bytes == b.switch_segment_bytes &&
         a.switch_reduce_mbps == b.switch_reduce_mbps && a.switch_link_mbps == b.switch_link_mbps &&
         a.switch_turnaround_us == b.switch_turnaround_us && a.threads == b.threads;
}

}  // namespace

const Decision& DecisionCache::decide(const Selector& selector, const SelectionInput& in) {
  // Slot = log2 of the size, xor its next three bits: every power of two
  // gets its own slot, and sizes between them spread over the others.
  size_t log2 = 0;
  while ((in.bytes >> log2) > 1) ++log2;
  const size_t mantissa = log2 >= 3 ? (in.bytes >> (log2 - 3)) & 7 : 0;
  const size_t slot = (log2 ^ (mantissa << 3)) % kEntries;
  Entry& e = entries_[slot];
  if (!e.valid || !sameInput(e.in, in)) {
    e.decision = selector.decide(in);
    e.in = in;
    e.valid = true;
  }
  return e.decision;
}

Selector Selector::fromParts(SelectionPolicy policy, Rules rules, CostModel model) {
  Selector s;
  s.policy_ = std::move(policy);
  s.rules_ = std::move(rules);
  s.model_ = std::move(model);
  return s;
}

}  // namespace switchagg::coll
