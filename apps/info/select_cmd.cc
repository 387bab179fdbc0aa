#include "commands.h"

#include <strings.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "selector.h"
#include "switchagg/coll/switch_settings.h"
#include "switchagg/common/config.h"

namespace switchagg::info {
namespace {

using coll::Algorithm;

struct SelectArgs {
  coll::SelectionInput in;
  std::string forced = "auto", offload = "auto";  // as given, parsed into policy
  coll::SelectionPolicy policy;
  std::string rules_path;
  size_t min_bytes = 8;
  size_t max_bytes = size_t(64) << 20;
  bool dump_cost_model = false;
  bool help = false;
};

std::string humanBytes(size_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  while (b >= 1024 && b % 1024 == 0 && u < 3) {
    b /= 1024;
    ++u;
  }
  return std::to_string(b) + " " + units[u];
}

std::string humanUs(double us) {
  char buf[32];
  if (std::isinf(us)) return "-";
  if (us >= 1e4) {
    snprintf(buf, sizeof buf, "%.1f ms", us / 1e3);
  } else {
    snprintf(buf, sizeof buf, "%.1f us", us);
  }
  return buf;
}

Status setInt(const std::string& key, const std::string& v, int lo, int* out) {
  Result<int64_t> r = parseInt(key, v, lo, 1 << 24);
  if (!r.ok()) return r.status();
  *out = int(*r);
  return Status::Ok();
}

Status setU32(const std::string& key, const std::string& v, uint32_t* out) {
  Result<int64_t> r = parseInt(key, v, 0, INT32_MAX);
  if (!r.ok()) return r.status();
  *out = uint32_t(*r);
  return Status::Ok();
}

Status setSize(const std::string& key, const std::string& v, size_t* out) {
  Result<uint64_t> r = parseSize(key, v);
  if (!r.ok()) return r.status();
  *out = size_t(*r);
  return Status::Ok();
}

// One option with its value; returns false for unknown keys.
Status applyOption(const std::string& key, const std::string& v, SelectArgs* a, bool* known) {
  *known = true;
  if (key == "--np") return setInt(key, v, 1, &a->in.comm_size);
  if (key == "--ppn") return setInt(key, v, 1, &a->in.ranks_per_node);
  if (key == "--window") return setInt(key, v, 1, &a->in.switch_window);
  if (key == "--slot-bytes") return setSize(key, v, &a->in.switch_slot_bytes);
  if (key == "--stripes") return setInt(key, v, 1, &a->in.switch_stripes);
  if (key == "--segment") return setSize(key, v, &a->in.switch_segment_bytes);
  // What an agent would advertise (CAPACITY_ACK); 0 = unknown (a link: a node's).
  if (key == "--agent-reduce-mbps") return setU32(key, v, &a->in.switch_reduce_mbps);
  if (key == "--agent-link-mbps") return setU32(key, v, &a->in.switch_link_mbps);
  if (key == "--agent-turnaround-us") return setU32(key, v, &a->in.switch_turnaround_us);
  if (key == "--min") return setSize(key, v, &a->min_bytes);
  if (key == "--max") return setSize(key, v, &a->max_bytes);
  if (key == "--rules") a->rules_path = v;
  else if (key == "--offload") a->offload = v;
  else if (key == "--algorithm") a->forced = v;
  else if (key == "--dtype") {
    if (!parseDtype(v.c_str(), &a->in.dtype)) {
      return Status(Code::kInvalidArgument, "--dtype: unknown '" + v + "'");
    }
  } else {
    *known = false;
  }
  return Status::Ok();
}

Result<SelectArgs> parseArgs(int argc, char** argv) {
  SelectArgs a;
  a.in.comm_size = 4;
  a.in.ranks_per_node = 0;  // default: all on one node
  a.in.switch_segment_bytes = size_t(coll::SwitchSettings{}.segment_bytes);
  for (int i = 1; i < argc; ++i) {
    const std::string key = argv[i];
    if (key == "--select") continue;
    if (key == "--switch") { a.in.switch_available = true; continue; }
    if (key == "--dump-cost-model") { a.dump_cost_model = true; continue; }
    if (key == "--help" || key == "-h") { a.help = true; continue; }
    if (i + 1 >= argc) return Status(Code::kInvalidArgument, key + ": unknown or missing value");
    bool known = false;
    SWITCHAGG_RETURN_IF_ERROR(applyOption(key, argv[i + 1], &a, &known));
    if (!known) return Status(Code::kInvalidArgument, "unknown option '" + key + "' for --select");
    ++i;
  }
  if (a.in.ranks_per_node == 0 || a.in.ranks_per_node > a.in.comm_size) {
    a.in.ranks_per_node = a.in.comm_size;
  }
  a.in.nodes = (a.in.comm_size + a.in.ranks_per_node - 1) / a.in.ranks_per_node;
  // The switch path's default: one agent member per node (node leaders).
  if (a.in.ranks_per_node > 1) a.in.switch_members = a.in.nodes;
  if (a.min_bytes > a.max_bytes) return Status(Code::kInvalidArgument, "--min is larger than --max");
  Result<coll::SelectionPolicy> policy = coll::parsePolicy(a.forced, a.offload);
  if (!policy.ok()) return policy.status();
  a.policy = *policy;
  return a;
}

void printDecisionTable(const SelectArgs& a, const coll::Selector& s) {
  printf("%-24s %-20s %-22s %s\n", "message size (2^k)", "algorithm", "modeled time", "why");
  for (const coll::DecisionRow& row :
       coll::decisionTable(a.in, a.min_bytes, a.max_bytes, s.model(), s.rules(), s.policy())) {
    coll::SelectionInput lo = a.in, hi = a.in;
    lo.bytes = row.lo_bytes;
    hi.bytes = row.hi_bytes;
    const std::string range = humanBytes(row.lo_bytes) + " .. " + humanBytes(row.hi_bytes);
    const std::string t = humanUs(s.model().predictUs(row.algorithm, lo)) + " .. " +
                          humanUs(s.model().predictUs(row.algorithm, hi));
    printf("%-24s %-20s %-22s %s\n", range.c_str(), coll::algorithmName(row.algorithm), t.c_str(),
           row.reason.c_str());
  }
}

void printModeledTimes(const SelectArgs& a, const coll::Selector& s) {
  printf("\nmodeled time per candidate (us; '-' = cannot run here)\n%10s", "bytes");
  for (const coll::AlgorithmInfo& info : coll::algorithmRegistry()) printf(" %18s", info.name);
  printf("\n");
  coll::SelectionInput in = a.in;
  for (size_t b = std::max<size_t>(1, a.min_bytes); b <= a.max_bytes; b *= 2) {
    in.bytes = b;
    printf("%10zu", b);
    for (const coll::AlgorithmInfo& info : coll::algorithmRegistry()) {
      const double t = s.model().predictUs(info.id, in);
      if (std::isinf(t)) {
        printf(" %18s", "-");
      } else {
        printf(" %18.1f", t);
      }
    }
    printf("\n");
    if (b > (SIZE_MAX >> 1)) break;
  }
}

// The rules file's `measured` lines (coll_switchagg_tune_file): what online
// tuning measured against what the model predicts, per size it covers.
void printMeasuredTimes(const SelectArgs& a, const coll::Selector& s) {
  if (s.rules().measured.empty()) return;
  printf("\nmeasured vs modeled (us, from %s; '-' = not measured: pruned after one call\n"
         "more than 2x slower than the fastest, or not a candidate)\n%10s %-20s %-20s",
         a.rules_path.c_str(), "bytes", "measured fastest", "modeled fastest");
  for (const coll::AlgorithmInfo& info : coll::algorithmRegistry())
    printf(" %24s", info.name);
  printf("\n");
  coll::SelectionInput in = a.in;
  bool any = false;
  for (size_t b = std::max<size_t>(1, a.min_bytes); b <= a.max_bytes; b *= 2) {
    in.bytes = b;
    const coll::Measured* m = s.rules().measuredFor(in);
    if (m != nullptr) {
      any = true;
      Algorithm fastest = Algorithm::kPrevious;
      double best = INFINITY;
      for (size_t i = 0; i < m->us.size(); ++i)
        if (!std::isnan(m->us[i]) && m->us[i] < best) best = m->us[i], fastest = Algorithm(i);
      const Algorithm modeled = coll::rankCandidates(in, s.model(), coll::Rules{}, a.policy).front();
      printf("%10zu %-20s %-20s", b, coll::algorithmName(fastest), coll::algorithmName(modeled));
      for (const coll::AlgorithmInfo& info : coll::algorithmRegistry()) {
        const double t = m->us[size_t(info.id)], model = s.model().predictUs(info.id, in);
        char cell[64];
        if (std::isnan(t)) snprintf(cell, sizeof cell, "- / %.0f", model);
        else snprintf(cell, sizeof cell, "%.1f / %.0f", t, model);
        printf(" %24s", cell);
      }
      printf("\n");
    }
    if (b > (SIZE_MAX >> 1)) break;
  }
  if (!any) printf("(no measured line matches np=%d ppn=%d nodes=%d switch=%s)\n", a.in.comm_size,
                   a.in.ranks_per_node, a.in.nodes, a.in.switch_available ? "yes" : "no");
  else printf("(each cell: measured / modeled)\n");
}

// The routed collectives (docs/offload.md "Routed collectives"): one line
// per op, its size ranges (powers of two, the model's n: the vector, or one
// rank's block for allgather) and who serves them, like the barrier line.
// With several ranks per node (node leaders, the component's default) the
// switch path routes every op on several nodes (node steps around the
// leaders' call) and none on one node.
void printRoutedChoices(const SelectArgs& a, const coll::Selector& s) {
  coll::SelectionInput in = a.in;
  const bool leaders = in.switch_members > 0 && in.switch_members < in.comm_size &&
                       in.switch_available && a.policy.offload != coll::Offload::kOff;
  for (size_t i = 0; i < coll::kNumRoutedKinds; ++i) {
    const auto op = static_cast<coll::CollKind>(i);
    if (leaders && in.nodes == 1) {
      printf("%s: previous module (node leaders: not routed on one node; "
             "SWITCHAGG_SWITCH_LEADERS=off routes it)\n",
             coll::collKindName(op));
      continue;
    }
    std::string line;
    size_t lo = 0;
    bool run_switch = false;
    std::string run_reason;
    auto flush = [&](size_t hi) {
      if (!line.empty()) line += ", ";
      line += std::string(run_switch ? "switch" : "previous module") + " for " + humanBytes(lo) +
              " .. " + humanBytes(hi) + " (" + run_reason + ")";
    };
    size_t prev_b = 0;
    for (size_t b = std::max<size_t>(1, a.min_bytes);; b = std::min(b * 2, a.max_bytes)) {
      in.bytes = b;
      const coll::RoutedChoice c = coll::chooseRouted(op, in, s.model(), a.policy);
      if (lo == 0) {
        lo = b, run_switch = c.use_switch, run_reason = c.reason;
      } else if (c.use_switch != run_switch || run_reason != c.reason) {
        flush(prev_b);
        lo = b, run_switch = c.use_switch, run_reason = c.reason;
      }
      prev_b = b;
      if (b >= a.max_bytes || b > (SIZE_MAX >> 1)) break;
    }
    flush(prev_b);
    printf("%s: %s\n", coll::collKindName(op), line.c_str());
  }
  printf("\n");
}

}  // namespace

bool wantsSelectCommand(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--select") == 0) return true;
  }
  return false;
}

std::string selectUsage() {
  return "switchagg-info --select [--np N] [--ppn M] [--rules FILE] [--offload auto|on|off]\n"
         "               [--algorithm NAME] [--switch [--window W] [--slot-bytes S]\n"
         "               [--stripes K] [--segment SIZE]\n"
         "               [--agent-reduce-mbps R] [--agent-link-mbps L] [--agent-turnaround-us T]]\n"
         "               [--dtype T] [--min SIZE] [--max SIZE] [--dump-cost-model]\n"
         "  Prints the allreduce decision table (size ranges -> algorithm, why, modeled time)\n"
         "  for a communicator of N ranks, M per node (default: all on one node). --switch\n"
         "  models a lease being available, the --agent-* options what its agent advertises\n"
         "  (its reduction rate in MB/s, link in Mbit/s, chunk turnaround in us); with\n"
         "  M > 1 the switch is modelled with node leaders (one agent member per node),\n"
         "  their phases overlapped with the stream in segments of SIZE (default the\n"
         "  component's SWITCHAGG_SWITCH_SEGMENT; 0: not overlapped); --stripes: agents of\n"
         "  the lease, each carrying 1/K of the vector.\n"
         "  --dump-cost-model prints the cost table (with the rules file's overrides) in\n"
         "  rules-file format, ready to edit. A rules file written by\n"
         "  coll_switchagg_tune_file adds a table of measured vs modeled times.\n";
}

int runSelectCommand(int argc, char** argv) {
  Result<SelectArgs> a = parseArgs(argc, argv);
  if (!a.ok()) {
    fprintf(stderr, "switchagg-info: %s\n", a.status().message().c_str());
    return 2;
  }
  if (a->help) {
    fputs(selectUsage().c_str(), stdout);
    return 0;
  }
  Result<coll::Selector> s = coll::Selector::create(a->policy, a->rules_path);
  if (!s.ok()) {
    fprintf(stderr, "switchagg-info: %s\n", s.status().message().c_str());
    return 2;
  }
  if (a->dump_cost_model) {
    fputs(s->model().toText().c_str(), stdout);
    return 0;
  }
  printf("allreduce selection: np=%d ppn=%d nodes=%d dtype=%s algorithm=%s offload=%s rules=%s\n",
         a->in.comm_size, a->in.ranks_per_node, a->in.nodes, dtypeName(a->in.dtype),
         a->policy.forcedName().c_str(), coll::offloadName(a->policy.offload),
         a->rules_path.empty() ? "(none)" : a->rules_path.c_str());
  printf("switch: %s\n", a->in.switch_available ? "available (modeled)"
                                                : "not available (--switch models a lease)");
  // MPI_Barrier: no size to tabulate, one choice (docs/offload.md "Barrier").
  if (!coll::barrierUsesSwitch(a->policy))
    printf("barrier: previous module (offload=%s; the switch only with offload=on)\n\n",
           coll::offloadName(a->policy.offload));
  else if (a->in.switch_available)
    printf("barrier: switch (one agent round trip)\n\n");
  else
    printf("barrier: previous module (no switch)\n\n");
  printRoutedChoices(*a, *s);
  printDecisionTable(*a, *s);
  printModeledTimes(*a, *s);
  printMeasuredTimes(*a, *s);
  return 0;
}

}  // namespace switchagg::info
