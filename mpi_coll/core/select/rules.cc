#include "rules.h"

#include <strings.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sstream>

#include "switchagg/common/config.h"

namespace switchagg::coll {
namespace {

// One line being parsed: carries the position for error messages.
struct LineContext {
  const std::string& source;
  int line;
  Status error(const std::string& what) const {
    return Status(Code::kInvalidArgument, source + ":" + std::to_string(line) + ": " + what);
  }
};

std::vector<std::string> splitWords(const std::string& line) {
  std::vector<std::string> words;
  std::istringstream in(line);
  std::string w;
  while (in >> w) words.push_back(w);
  return words;
}

// One end of a range: a size for bytes, a plain count otherwise.
Result<uint64_t> parseBound(const std::string& key, const std::string& text, bool is_size) {
  if (is_size) return parseSize(key, text);
  Result<int64_t> v = parseInt(key, text, 0, INT32_MAX);
  if (!v.ok()) return v.status();
  return uint64_t(*v);
}

Result<Range> parseRange(const std::string& key, const std::string& text, bool is_size) {
  Range r;
  if (text == "*") return r;
  const size_t dash = text.find('-');
  Result<uint64_t> lo = parseBound(key, text.substr(0, dash), is_size);
  if (!lo.ok()) return lo.status();
  r.lo = *lo;
  if (dash == std::string::npos) {
    r.hi = r.lo;
    return r;
  }
  const std::string hi_text = text.substr(dash + 1);
  if (hi_text != "*") {
    Result<uint64_t> hi = parseBound(key, hi_text, is_size);
    if (!hi.ok()) return hi.status();
    r.hi = *hi;
  }
  if (r.hi < r.lo) {
    return Status(Code::kInvalidArgument, key + ": range '" + text + "' ends before it starts");
  }
  return r;
}

Status parseRuleKey(const std::string& key, const std::string& value, Rule* rule,
                    bool* has_algorithm) {
  Range* range = key == "bytes" ? &rule->bytes
                 : key == "np"  ? &rule->np
                 : key == "ppn" ? &rule->ppn
                 : key == "nodes" ? &rule->nodes
                                  : nullptr;
  if (range != nullptr) {
    Result<Range> r = parseRange(key, value, key == "bytes");
    if (!r.ok()) return r.status();
    *range = *r;
  } else if (key == "dtype") {
    rule->any_dtype = value == "*";
    if (!rule->any_dtype && !parseDtype(value.c_str(), &rule->dtype)) {
      return Status(Code::kInvalidArgument, "dtype: unknown datatype '" + value + "'");
    }
  } else if (key == "op") {
    rule->any_op = value == "*";
    if (!rule->any_op && !parseOp(value.c_str(), &rule->op)) {
      return Status(Code::kInvalidArgument, "op: unknown operation '" + value + "'");
    }
  } else if (key == "switch") {
    if (value == "*") rule->when_switch = Rule::SwitchCond::kAny;
    else if (strcasecmp(value.c_str(), "yes") == 0) rule->when_switch = Rule::SwitchCond::kAvailable;
    else if (strcasecmp(value.c_str(), "no") == 0) rule->when_switch = Rule::SwitchCond::kUnavailable;
    else return Status(Code::kInvalidArgument, "switch: '" + value + "' (expected yes, no or *)");
  } else if (key == "algorithm") {
    *has_algorithm = true;
    rule->is_auto = strcasecmp(value.c_str(), "auto") == 0;
    if (!rule->is_auto && !parseAlgorithm(value, &rule->algorithm)) {
      return Status(Code::kInvalidArgument, "algorithm: unknown '" + value + "' (expected auto|" +
                                                algorithmNameList() + ")");
    }
  } else {
    return Status(Code::kInvalidArgument,
                  "unknown key '" + key +
                      "' (expected bytes, np, ppn, nodes, dtype, op, switch, algorithm)");
  }
  return Status::Ok();
}

Status parseRuleLine(const LineContext& ctx, const std::vector<std::string>& words, Rules* out) {
  Rule rule;
  rule.line = ctx.line;
  bool has_algorithm = false;
  for (size_t i = 1; i < words.size(); ++i) {
    const size_t eq = words[i].find('=');
    if (eq == std::string::npos || eq == 0) {
      return ctx.error("expected key=value, got '" + words[i] + "'");
    }
    Status st = parseRuleKey(words[i].substr(0, eq), words[i].substr(eq + 1), &rule,
                             &has_algorithm);
    if (!st.ok()) return ctx.error(st.message());
  }
  if (!has_algorithm) return ctx.error("rule has no algorithm=...");
  out->rules.push_back(rule);
  return Status::Ok();
}

Result<double> parseCost(const std::string& key, const std::string& text) {
  char* end = nullptr;
  const double v = strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(v >= 0) || v > kMaxRulesNumber) {
    return Status(Code::kInvalidArgument, key + ": expected a number >= 0, got '" + text + "'");
  }
  return v;
}

// measured <shape keys> us:<algorithm>=<microseconds> ...
Status parseMeasuredLine(const LineContext& ctx, const std::vector<std::string>& words,
                         Rules* out) {
  Measured m;
  m.shape.line = ctx.line;
  m.us.fill(std::numeric_limits<double>::quiet_NaN());
  bool has_algorithm = false, has_time = false;
  for (size_t i = 1; i < words.size(); ++i) {
    const size_t eq = words[i].find('=');
    if (eq == std::string::npos || eq == 0) {
      return ctx.error("expected key=value, got '" + words[i] + "'");
    }
    const std::string key = words[i].substr(0, eq), value = words[i].substr(eq + 1);
    if (key.rfind("us:", 0) == 0) {
      Algorithm a;
      if (!parseAlgorithm(key.substr(3), &a))
        return ctx.error("unknown algorithm in '" + key + "' (expected us:<" +
                         algorithmNameList() + ">)");
      Result<double> v = parseCost(key, value);
      if (!v.ok()) return ctx.error(v.status().message());
      m.us[static_cast<size_t>(a)] = *v;
      has_time = true;
      continue;
    }
    Status st = parseRuleKey(key, value, &m.shape, &has_algorithm);
    if (!st.ok()) return ctx.error(st.message());
    if (has_algorithm) return ctx.error("a measured line has no algorithm= (it records times)");
  }
  if (!has_time) return ctx.error("measured line has no us:<algorithm>=<microseconds>");
  out->measured.push_back(m);
  return Status::Ok();
}

Status parseCostLine(const LineContext& ctx, const std::vector<std::string>& words,
                     const CostModel& base, Rules* out) {
  if (words.size() < 4) {
    return ctx.error("expected: cost <algorithm> <shm|net> alpha_us=.. beta_ns=.. gamma_ns=..");
  }
  CostEntry entry;
  if (!parseAlgorithm(words[1], &entry.algorithm)) {
    return ctx.error("unknown algorithm '" + words[1] + "' (expected " + algorithmNameList() + ")");
  }
  if (!parseLocality(words[2], &entry.locality)) {
    return ctx.error("unknown locality '" + words[2] + "' (expected shm or net)");
  }
  if (const CostEntry* prev = base.find(entry.algorithm, entry.locality)) entry = *prev;
  for (const CostEntry& e : out->cost_overrides) {  // earlier lines of this file count too
    if (e.algorithm == entry.algorithm && e.locality == entry.locality) entry = e;
  }
  for (size_t i = 3; i < words.size(); ++i) {
    const size_t eq = words[i].find('=');
    const std::string key = words[i].substr(0, eq);
    double* field = key == "alpha_us" ? &entry.alpha_us
                    : key == "beta_ns" ? &entry.beta_ns
                    : key == "gamma_ns" ? &entry.gamma_ns
                                        : nullptr;
    if (eq == std::string::npos || field == nullptr) {
      return ctx.error("unknown cost field '" + words[i] + "' (expected alpha_us=, beta_ns=, gamma_ns=)");
    }
    Result<double> v = parseCost(key, words[i].substr(eq + 1));
    if (!v.ok()) return ctx.error(v.status().message());
    *field = *v;
  }
  out->cost_overrides.push_back(entry);
  return Status::Ok();
}

}  // namespace

bool Rule::matches(const SelectionInput& in) const {
  return bytes.contains(in.bytes) && np.contains(uint64_t(in.comm_size)) &&
         ppn.contains(uint64_t(in.ranks_per_node)) && nodes.contains(uint64_t(in.nodes)) &&
         (any_dtype || dtype == in.dtype) && (any_op || op == in.op) &&
         (when_switch == SwitchCond::kAny ||
          (when_switch == SwitchCond::kAvailable) == in.switch_available);
}

const Measured* Rules::measuredFor(const SelectionInput& in) const {
  for (const Measured& m : measured) {
    if (m.shape.matches(in)) return &m;
  }
  return nullptr;
}

const Rule* Rules::match(const SelectionInput& in) const {
  for (const Rule& r : rules) {
    if (r.matches(in)) return &r;
  }
  return nullptr;
}

void Rules::applyCostOverrides(CostModel* model) const {
  for (const CostEntry& e : cost_overrides) model->set(e);
}

Result<Rules> parseRules(const std::string& text, const std::string& source,
                         const CostModel& base) {
  Rules out;
  out.source = source;
  std::istringstream in(text);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const size_t hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    const std::vector<std::string> words = splitWords(line);
    if (words.empty()) continue;
    const LineContext ctx{source, number};
    Status st;
    if (words[0] == "allreduce") {
      st = parseRuleLine(ctx, words, &out);
    } else if (words[0] == "cost") {
      st = parseCostLine(ctx, words, base, &out);
    } else if (words[0] == "measured") {
      st = parseMeasuredLine(ctx, words, &out);
    } else {
      st = ctx.error("unknown line type '" + words[0] +
                     "' (expected allreduce, cost or measured)");
    }
    if (!st.ok()) return st;
  }
  return out;
}

Result<Rules> loadRulesFile(const std::string& path, const CostModel& base) {
  auto cannot = [&](int err) {
    return Status(Code::kIoError, "cannot read rules file '" + path + "': " + std::strerror(err));
  };
  // Opening a directory succeeds; its first read fails (EISDIR). A stream
  // would end there as if the file were empty: no rules, silently.
  std::FILE* file = std::fopen(path.c_str(), "r");
  if (file == nullptr) return cannot(errno);
  std::string text;
  char chunk[4096];
  size_t n = 0;
  while ((n = std::fread(chunk, 1, sizeof chunk, file)) > 0) text.append(chunk, n);
  const int err = std::ferror(file) ? errno : 0;
  std::fclose(file);
  if (err != 0) return cannot(err);
  return parseRules(text, path, base);
}

}  // namespace switchagg::coll
