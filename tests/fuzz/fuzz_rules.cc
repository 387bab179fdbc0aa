// libFuzzer target: the selection rules file (mpi_coll/core/select/rules.h:
// parseRules, what coll_switchagg_rules / SWITCHAGG_RULES and switchagg-info
// --select read). Properties checked beyond "no crash / no sanitizer
// report":
//  * an error names the source and a line of the text ("fuzz.rules:N: ...");
//  * rules that parse hold what the format promises (ranges that do not end
//    before they start, a measured line with a time, costs >= 0), and their
//    canonical text (rules_text.h) parses to the same text again;
//  * match() and measuredFor() give the first rule / line that matches.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <string>

#include "fuzz_check.h"
#include "rules.h"
#include "rules_text.h"

using namespace switchagg::coll;

namespace switchagg::fuzz {

const size_t kMaxTextBytes = 16384;

namespace {

bool sane(const Range& r) { return r.lo <= r.hi; }

bool sane(const Rule& r, int lines) {
  return r.line >= 1 && r.line <= lines && sane(r.bytes) && sane(r.np) && sane(r.ppn) &&
         sane(r.nodes);
}

bool cost(double v) { return v >= 0 && v <= 1e9; }

}  // namespace

void fuzzText(const std::string& text) {
  const int lines = int(std::count(text.begin(), text.end(), '\n')) + 1;
  auto rules = parseRules(text, "fuzz.rules");
  if (!rules.ok()) {
    const std::string& msg = rules.status().message();
    check(msg.rfind("fuzz.rules:", 0) == 0);
    const int line = std::atoi(msg.c_str() + 11);
    check(line >= 1 && line <= lines);
    return;
  }
  for (const Rule& r : rules->rules) check(sane(r, lines));
  for (const Measured& m : rules->measured) {
    check(sane(m.shape, lines));
    check(std::any_of(m.us.begin(), m.us.end(), [](double v) { return !std::isnan(v); }));
    for (double v : m.us) check(std::isnan(v) || cost(v));
  }
  for (const CostEntry& e : rules->cost_overrides)
    check(cost(e.alpha_us) && cost(e.beta_ns) && cost(e.gamma_ns));

  const std::string canonical = rulesText(*rules);
  auto again = parseRules(canonical, "canonical.rules");
  check(again.ok());
  check(rulesText(*again) == canonical);
  check(again->rules.size() == rules->rules.size() &&
        again->measured.size() == rules->measured.size());

  // Each rule's own lower corner selects it or an earlier rule.
  for (size_t i = 0; i < rules->rules.size(); ++i) {
    const Rule& r = rules->rules[i];
    SelectionInput in;
    in.bytes = size_t(r.bytes.lo);
    in.comm_size = int(std::min<uint64_t>(r.np.lo, INT32_MAX));
    in.ranks_per_node = int(std::min<uint64_t>(r.ppn.lo, INT32_MAX));
    in.nodes = int(std::min<uint64_t>(r.nodes.lo, INT32_MAX));
    if (!r.any_dtype) in.dtype = r.dtype;
    if (!r.any_op) in.op = r.op;
    in.switch_available = r.when_switch == Rule::SwitchCond::kAvailable;
    if (!r.matches(in)) continue;  // a bound beyond the input's types
    const Rule* first = rules->match(in);
    check(first != nullptr && first <= &r && first->matches(in));
    for (const Rule* p = rules->rules.data(); p < first; ++p) check(!p->matches(in));
    const Measured* m = rules->measuredFor(in);
    check(m == nullptr || m->shape.matches(in));
  }
}

}  // namespace switchagg::fuzz
