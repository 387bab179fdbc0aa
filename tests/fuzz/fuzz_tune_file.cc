// libFuzzer target: the tune file (coll_switchagg_tune_file), what online
// tuning writes (tuner.h: formatTuneRules) and what the rules parser then
// reads back (the file ships as site rules). The input is what the tuner
// learnt: a communicator shape, then buckets of 12 bytes each (log2 of the
// size, switch / settled flags, the choice, and times for the candidates).
// Properties checked beyond "no crash / no sanitizer report":
//  * the written text parses as rules (an agreed time the parser would
//    refuse is never written);
//  * every settled bucket gives one rule for exactly its size range, shape
//    and switch condition choosing what was learnt, and one measured line
//    whose times are the agreed ones to the written precision (those the
//    parser holds: a bucket with none has no measured line); an unsettled
//    bucket gives nothing.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <vector>

#include "fuzz_check.h"
#include "rules.h"
#include "tuner.h"

using switchagg::fuzz::check;
using namespace switchagg;
using namespace switchagg::coll;

namespace {

// A time from two bytes: mostly realistic microseconds, sometimes extreme.
double timeOf(uint8_t a, uint8_t b) {
  switch (a >> 5) {
    case 0: return std::nan("");
    case 1: return 0;
    case 2: return double(b) * 1e7;  // up to 2.5e9 us: a call of 40 minutes
    case 3: return std::ldexp(1.0, b % 80);
    default: return double((a & 31) << 8 | b) / 10;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 6 || size > 6 + 12 * 64) return 0;
  SelectionInput shape;
  shape.comm_size = 1 + (data[0] | data[1] << 8);
  shape.ranks_per_node = 1 + data[2] % shape.comm_size;
  shape.nodes = (shape.comm_size + shape.ranks_per_node - 1) / shape.ranks_per_node;
  if (data[3] & 1) shape.comm_size = INT32_MAX;
  std::vector<Tuner::Learnt> learnt;
  for (size_t at = 6; at + 12 <= size; at += 12) {
    const uint8_t* b = data + at;
    Tuner::Learnt l;
    l.log2_bytes = b[0] % 64;
    l.switch_ok = b[1] & 1;
    l.settled = b[1] & 2;
    l.choice = Algorithm(b[2] % kNumAlgorithms);
    for (size_t a = 0; a < Tuner::kAlgorithms; ++a) l.agreed_us[a] = timeOf(b[3 + a], b[9 + a % 3]);
    learnt.push_back(l);
  }
  const std::string text = formatTuneRules(learnt, shape);
  auto rules = parseRules(text, "tune.rules");
  if (!rules.ok()) fprintf(stderr, "%s\n%s", rules.status().message().c_str(), text.c_str());
  check(rules.ok());
  size_t r = 0, m = 0;
  auto readable = [](double us) { return us >= 0 && us <= kMaxRulesNumber; };
  for (const Tuner::Learnt& l : learnt) {
    if (!l.settled) continue;
    check(r < rules->rules.size());
    const Rule& rule = rules->rules[r++];
    check(!rule.is_auto && rule.algorithm == l.choice);
    std::vector<const Rule*> shapes = {&rule};
    const bool timed = std::any_of(l.agreed_us.begin(), l.agreed_us.end(), readable);
    if (timed) {
      check(m < rules->measured.size());
      const Measured& measured = rules->measured[m++];
      shapes.push_back(&measured.shape);
      for (size_t a = 0; a < Tuner::kAlgorithms; ++a) {
        const double want = l.agreed_us[a], got = measured.us[a];
        check(readable(want) ? std::fabs(got - want) <= 0.05 + 1e-9 * want : std::isnan(got));
      }
    }
    const uint64_t lo = uint64_t(1) << l.log2_bytes;
    for (const Rule* x : shapes) {
      check(x->bytes.lo == lo && x->bytes.hi == (l.log2_bytes == 63 ? UINT64_MAX : 2 * lo - 1));
      check(x->np.lo == uint64_t(shape.comm_size) && x->np.hi == x->np.lo);
      check(x->ppn.lo == uint64_t(shape.ranks_per_node) && x->nodes.lo == uint64_t(shape.nodes));
      check(x->when_switch ==
            (l.switch_ok ? Rule::SwitchCond::kAvailable : Rule::SwitchCond::kUnavailable));
    }
  }
  check(r == rules->rules.size() && m == rules->measured.size());
  return 0;
}
