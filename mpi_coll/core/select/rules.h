// Site selection rules: a small line format that pins an algorithm for a
// range of message sizes / communicator shapes, and overrides rows of the
// cost model. Documented in docs/selection.md; example config/selection.rules.
//
//   # comment
//   allreduce bytes=0-4K np=2-64 ppn=* algorithm=recursive_doubling
//   allreduce bytes=1M-* nodes=2-* algorithm=hierarchical
//   cost ring shm alpha_us=4.5 beta_ns=0.2
//
// Ranges: `A-B` (inclusive), `A-*`, `A` (exactly), `*`. bytes take sizes
// (4K, 1MiB, ...). Rule keys: bytes, np, ppn, nodes, dtype, op (all optional,
// default *) and algorithm (required; a registry name or `auto`, which stops
// later rules from matching and leaves the choice to the cost model).
// The first matching rule wins. Errors name the source and line.
//
//   measured bytes=4096-8191 np=4 ppn=4 nodes=1 switch=yes us:ring=41.2 us:switch=160
//
// records what online tuning measured for that shape (agreed microseconds
// per candidate; coll_switchagg_tune_file writes these beside the rules it
// derives). Selection ignores them; switchagg-info --select shows them.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "cost_model.h"

namespace switchagg::coll {

// The largest number a rules file holds: a cost constant, a measured time in
// microseconds (a `measured` time beyond it is not written, see tuner.h).
inline constexpr double kMaxRulesNumber = 1e9;

struct Range {
  uint64_t lo = 0;
  uint64_t hi = UINT64_MAX;  // inclusive
  bool contains(uint64_t v) const { return v >= lo && v <= hi; }
};

struct Rule {
  int line = 0;  // 1-based line in its source, for messages
  Range bytes, np, ppn, nodes;
  bool any_dtype = true;
  Dtype dtype = Dtype::kFloat32;
  bool any_op = true;
  Op op = Op::kSum;
  // switch=yes|no: only when the switch can (yes) / cannot (no) serve the
  // call, so a rule that pins a host algorithm need not outrank the switch.
  enum class SwitchCond { kAny, kAvailable, kUnavailable } when_switch = SwitchCond::kAny;
  bool is_auto = false;  // algorithm=auto: leave the choice to the cost model
  Algorithm algorithm = Algorithm::kPrevious;
  bool matches(const SelectionInput& in) const;
};

// A `measured` line: the shape it applies to (a Rule without an algorithm)
// and the agreed time per algorithm (NaN: not measured).
struct Measured {
  Rule shape;
  std::array<double, 6> us;
};

struct Rules {
  std::string source;  // file name or "<string>", for messages
  std::vector<Rule> rules;
  std::vector<Measured> measured;
  // The first measured line whose shape matches, or nullptr.
  const Measured* measuredFor(const SelectionInput& in) const;
  std::vector<CostEntry> cost_overrides;  // complete rows (defaults filled in)
  // First rule that matches, or nullptr.
  const Rule* match(const SelectionInput& in) const;
  // Applies the cost overrides to `model`.
  void applyCostOverrides(CostModel* model) const;
  bool empty() const { return rules.empty() && cost_overrides.empty(); }
};

// Parses rules text. `base` supplies the values a partial `cost` line keeps.
Result<Rules> parseRules(const std::string& text, const std::string& source,
                         const CostModel& base = CostModel::defaults());
// Reads and parses a file; a missing or unreadable file is an error.
Result<Rules> loadRulesFile(const std::string& path,
                            const CostModel& base = CostModel::defaults());

}  // namespace switchagg::coll
