// The fuzz targets' canonical text of parsed selection rules (rules.h), for
// round trips: every rule, measured line and cost row with every key, in
// the order parsed, numbers exact.
#pragma once

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <string>

#include "rules.h"

namespace switchagg::fuzz {

inline std::string rangeText(const coll::Range& r) {
  char buf[64];
  if (r.hi == UINT64_MAX)
    snprintf(buf, sizeof buf, "%" PRIu64 "-*", r.lo);
  else
    snprintf(buf, sizeof buf, "%" PRIu64 "-%" PRIu64, r.lo, r.hi);
  return buf;
}

inline std::string shapeText(const coll::Rule& r) {
  std::string s = " bytes=" + rangeText(r.bytes) + " np=" + rangeText(r.np) +
                  " ppn=" + rangeText(r.ppn) + " nodes=" + rangeText(r.nodes);
  s += std::string(" dtype=") + (r.any_dtype ? "*" : dtypeName(r.dtype));
  s += std::string(" op=") + (r.any_op ? "*" : opName(r.op));
  s += r.when_switch == coll::Rule::SwitchCond::kAny         ? " switch=*"
       : r.when_switch == coll::Rule::SwitchCond::kAvailable ? " switch=yes"
                                                             : " switch=no";
  return s;
}

inline std::string number(double v) {
  char buf[64];
  snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

inline std::string rulesText(const coll::Rules& rules) {
  std::string out;
  for (const coll::Rule& r : rules.rules)
    out += "allreduce" + shapeText(r) + " algorithm=" +
           (r.is_auto ? std::string("auto") : coll::algorithmName(r.algorithm)) + "\n";
  for (const coll::Measured& m : rules.measured) {
    out += "measured" + shapeText(m.shape);
    for (size_t a = 0; a < m.us.size(); ++a)
      if (!std::isnan(m.us[a]))
        out += std::string(" us:") + coll::algorithmName(coll::Algorithm(a)) + "=" + number(m.us[a]);
    out += "\n";
  }
  for (const coll::CostEntry& e : rules.cost_overrides)
    out += std::string("cost ") + coll::algorithmName(e.algorithm) + " " +
           coll::localityName(e.locality) + " alpha_us=" + number(e.alpha_us) +
           " beta_ns=" + number(e.beta_ns) + " gamma_ns=" + number(e.gamma_ns) + "\n";
  return out;
}

}  // namespace switchagg::fuzz
