#include "cost_model.h"

#include <strings.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace switchagg::coll {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

int floorPow2(int p) {
  int p2 = 1;
  while (p2 * 2 <= p) p2 *= 2;
  return p2;
}

int ceilLog2(int p) {
  int steps = 0;
  while ((1 << steps) < p) ++steps;
  return steps;
}

double us(double ns) { return ns * 1e-3; }

// Extra exchange when p is not a power of two: the ranks beyond p2 fold their
// vector into a partner first and get the result back at the end.
double foldUs(const CostEntry& c, double n, int p) {
  if (p == floorPow2(p)) return 0;
  return 2 * (c.alpha_us + us(n * c.beta_ns)) + us(n * c.gamma_ns);
}

double flatUs(const CostModel& m, Algorithm a, FlatFormula formula, Locality l, size_t bytes,
              int p) {
  if (p <= 1) return 0;
  const CostEntry* c = m.find(a, l);
  return c == nullptr ? kInf : formula(*c, double(bytes), p);
}

}  // namespace

double recursiveDoublingUs(const CostEntry& c, double n, int p) {
  const int p2 = floorPow2(p);
  return ceilLog2(p2) * (c.alpha_us + us(n * (c.beta_ns + c.gamma_ns))) + foldUs(c, n, p);
}

double ringUs(const CostEntry& c, double n, int p) {
  const double f = double(p - 1) / p;
  return 2 * (p - 1) * c.alpha_us + us(2 * f * n * c.beta_ns) + us(f * n * c.gamma_ns);
}

double rabenseifnerUs(const CostEntry& c, double n, int p) {
  const int p2 = floorPow2(p);
  const double f = double(p2 - 1) / p2;
  return 2 * ceilLog2(p2) * c.alpha_us + us(2 * f * n * c.beta_ns) + us(f * n * c.gamma_ns) +
         foldUs(c, n, p);
}

double previousUs(const CostEntry& c, double n, int p) {
  return std::min({recursiveDoublingUs(c, n, p), ringUs(c, n, p), rabenseifnerUs(c, n, p)});
}

// Flat algorithms use the `shm` row on one node, the `net` row otherwise.
double flatUs(const CostModel& m, Algorithm a, FlatFormula formula, const SelectionInput& in) {
  const Locality l = in.nodes > 1 ? Locality::kNet : Locality::kShm;
  return flatUs(m, a, formula, l, in.bytes, in.comm_size);
}

const char* localityName(Locality l) { return l == Locality::kShm ? "shm" : "net"; }

bool parseLocality(const std::string& name, Locality* out) {
  if (strcasecmp(name.c_str(), "shm") == 0) {
    *out = Locality::kShm;
  } else if (strcasecmp(name.c_str(), "net") == 0) {
    *out = Locality::kNet;
  } else {
    return false;
  }
  return true;
}

CostModel CostModel::defaults() {
  CostModel m;
  for (const AlgorithmInfo& a : algorithmRegistry()) {
    for (const auto& [locality, constants] : {std::pair{Locality::kShm, a.shm},
                                              std::pair{Locality::kNet, a.net}}) {
      if (constants) {
        m.entries_.push_back(
            {a.id, locality, constants->alpha_us, constants->beta_ns, constants->gamma_ns});
      }
    }
  }
  return m;
}

const CostEntry* CostModel::find(Algorithm a, Locality l) const {
  for (const CostEntry& e : entries_) {
    if (e.algorithm == a && e.locality == l) return &e;
  }
  return nullptr;
}

void CostModel::set(const CostEntry& entry) {
  for (CostEntry& e : entries_) {
    if (e.algorithm == entry.algorithm && e.locality == entry.locality) {
      e = entry;
      return;
    }
  }
  entries_.push_back(entry);
}

namespace {
// The intra-node binomial reduce and broadcast (hierarchical, node leaders).
double nodePhasesUs(const CostModel& m, const SelectionInput& in) {
  const CostEntry* intra = m.find(Algorithm::kHierarchical, Locality::kShm);
  if (intra == nullptr) return kInf;
  const double n = double(in.bytes);
  const int steps = ceilLog2(std::max(1, in.ranks_per_node));
  const double reduce = steps * (intra->alpha_us + us(n * (intra->beta_ns + intra->gamma_ns)));
  const double bcast = steps * (intra->alpha_us + us(n * intra->beta_ns));
  return reduce + bcast;
}
}  // namespace

double predictHierarchicalUs(const CostModel& m, Algorithm /*self*/, const SelectionInput& in) {
  if (in.comm_size <= 1) return 0;
  const double local = nodePhasesUs(m, in);
  double leaders = 0;
  if (in.nodes > 1) {
    // The leaders run recursive doubling or a ring, whichever is faster.
    leaders = std::min(flatUs(m, Algorithm::kRecursiveDoubling, recursiveDoublingUs,
                              Locality::kNet, in.bytes, in.nodes),
                       flatUs(m, Algorithm::kRing, ringUs, Locality::kNet, in.bytes, in.nodes));
  }
  return local + leaders;
}

namespace {
// Microseconds per byte on the agent's data link: its advertised rate L
// (Mbit/s = bit/µs), or, when it did not tell (0), a link as fast as a
// compute node's, the switch row's β: the agent on an ordinary host
// (reducer hosts, docs/selection.md), the conservative assumption.
double agentLinkUsPerByte(const CostEntry& c, const SelectionInput& in) {
  return in.switch_link_mbps > 0 ? 8.0 / in.switch_link_mbps : us(c.beta_ns);
}

// Rounds of the switch window for a stripe of `stripe_bytes` (one agent
// call): ceil(ceil(stripe / slot) / W), at least one.
size_t windowRounds(const SelectionInput& in, size_t stripe_bytes) {
  const size_t slot =
      in.switch_slot_bytes > 0 ? in.switch_slot_bytes : agent::kDefaultSlotBytes;
  const size_t window = size_t(in.switch_window > 0 ? in.switch_window : CostModel::kDefaultWindow);
  const size_t chunks = std::max<size_t>(1, (stripe_bytes + slot - 1) / slot);
  return (chunks + window - 1) / window;
}
}  // namespace

double predictSwitchUs(const CostModel& m, Algorithm /*self*/, const SelectionInput& in) {
  if (!in.switch_available) return kInf;
  const CostEntry* c = m.find(Algorithm::kSwitch, Locality::kNet);
  if (c == nullptr) return kInf;
  const int members = in.switch_members > 0 ? in.switch_members : in.comm_size;
  const double k = double(std::max(1, in.switch_stripes));
  const bool leaders = members < in.comm_size;
  const size_t seg = in.switch_segment_bytes;
  const size_t segments =
      leaders && seg > 0 && in.bytes >= 2 * seg ? (in.bytes + seg - 1) / seg : 1;
  // Rounds of the window per stripe (one agent call, segments or not).
  const size_t rounds = windowRounds(in, (in.bytes + size_t(k) - 1) / size_t(k));
  const double n = double(in.bytes), pn = double(members) * n;
  double stream_us = std::max(us(n * c->beta_ns), pn * agentLinkUsPerByte(*c, in) / k);
  if (in.switch_reduce_mbps > 0) stream_us = std::max(stream_us, pn / (k * in.switch_reduce_mbps));
  stream_us += double(rounds) * (c->alpha_us + in.switch_turnaround_us) + us(pn * c->gamma_ns / k);
  const double local = leaders ? nodePhasesUs(m, in) : 0;
  return std::max(stream_us, local) + std::min(stream_us, local) / double(segments);
}

const char* collKindName(CollKind kind) {
  switch (kind) {
    case SWITCHAGG_COLL_REDUCE: return "reduce";
    case SWITCHAGG_COLL_REDUCE_SCATTER: return "reduce_scatter";
    case SWITCHAGG_COLL_REDUCE_SCATTER_BLOCK: return "reduce_scatter_block";
    case SWITCHAGG_COLL_ALLGATHER: return "allgather";
    case SWITCHAGG_COLL_BCAST: return "bcast";
    case SWITCHAGG_COLL_ALLREDUCE: return "allreduce";
    case SWITCHAGG_COLL_BARRIER: return "barrier";
  }
  return "?";
}

double predictRoutedSwitchUs(const CostModel& m, CollKind op, const SelectionInput& in) {
  if (in.comm_size <= 1) return 0;
  if (!in.switch_available) return kInf;
  const CostEntry* c = m.find(Algorithm::kSwitch, Locality::kNet);
  if (c == nullptr) return kInf;
  const double p = double(in.switch_members > 0 ? in.switch_members : in.comm_size);
  const size_t k = size_t(std::max(1, in.switch_stripes));
  const double n = double(in.bytes);
  const bool gather = op == SWITCHAGG_COLL_ALLGATHER;
  // Node leaders: p = nodes < ranks, q ranks a node.
  const double ranks = double(in.comm_size);
  const bool leaders = p < ranks;
  const double q = leaders ? double(std::max(1, in.ranks_per_node)) : 1;
  const size_t vector = gather ? size_t(in.comm_size) * in.bytes : in.bytes;  // the routed vector
  const double rounds = double(windowRounds(in, (vector + k - 1) / k));
  double member = 0, agent_link = 0, reduced = 0;  // bytes: a member's link, the agent's, reduced
  switch (op) {
    case SWITCHAGG_COLL_REDUCE:
    case SWITCHAGG_COLL_REDUCE_SCATTER:
    case SWITCHAGG_COLL_REDUCE_SCATTER_BLOCK:
      member = n;
      agent_link = p * n;
      reduced = p * n;
      break;
    case SWITCHAGG_COLL_ALLGATHER:  // an owner gets only its blocks' headers back
      member = (ranks - q) * n;
      agent_link = p * (ranks - q) * n;
      break;
    case SWITCHAGG_COLL_BCAST:  // the root gets headers only
      member = n;
      agent_link = (p - 1) * n;
      break;
    case SWITCHAGG_COLL_ALLREDUCE:  // not routed
    case SWITCHAGG_COLL_BARRIER:
      return kInf;
  }
  double stream_us =
      std::max(us(member * c->beta_ns), agent_link * agentLinkUsPerByte(*c, in) / double(k));
  if (reduced > 0 && in.switch_reduce_mbps > 0)
    stream_us = std::max(stream_us, reduced / (double(k) * in.switch_reduce_mbps));
  double node_us = 0;
  if (leaders) {
    // Node leaders, on the shm row: reduce and bcast the node's binomial
    // reduce or broadcast and one hop between the root and its leader;
    // reduce_scatter the node's reduce and the leader's q−1 blocks out;
    // allgather q−1 blocks in and the whole vector's broadcast.
    const CostEntry* intra = m.find(Algorithm::kHierarchical, Locality::kShm);
    if (intra == nullptr) return kInf;
    const int steps = ceilLog2(std::max(1, in.ranks_per_node));
    auto hop = [&](double bytes) { return intra->alpha_us + us(bytes * intra->beta_ns); };
    const double reduce_us = steps * (hop(n) + us(n * intra->gamma_ns));
    switch (op) {
      case SWITCHAGG_COLL_REDUCE: node_us = hop(n) + reduce_us; break;
      case SWITCHAGG_COLL_BCAST: node_us = hop(n) + steps * hop(n); break;
      case SWITCHAGG_COLL_REDUCE_SCATTER:
      case SWITCHAGG_COLL_REDUCE_SCATTER_BLOCK:
        node_us = reduce_us + (q - 1) * hop(n / ranks);
        break;
      case SWITCHAGG_COLL_ALLGATHER: node_us = (q - 1) * hop(n) + steps * hop(ranks * n); break;
      case SWITCHAGG_COLL_ALLREDUCE:  // not routed
      case SWITCHAGG_COLL_BARRIER: return kInf;
    }
  }
  return stream_us + rounds * (c->alpha_us + in.switch_turnaround_us) +
         us(reduced * c->gamma_ns / double(k)) + node_us;
}

double predictRoutedPreviousUs(const CostModel& m, CollKind op, const SelectionInput& in) {
  const int p = in.comm_size;
  if (p <= 1) return 0;
  const CostEntry* c =
      m.find(Algorithm::kPrevious, in.nodes > 1 ? Locality::kNet : Locality::kShm);
  if (c == nullptr) return kInf;
  const double n = double(in.bytes), f = double(p - 1) / p;
  switch (op) {
    case SWITCHAGG_COLL_REDUCE:
      return ceilLog2(p) * (c->alpha_us + us(n * (c->beta_ns + c->gamma_ns)));
    case SWITCHAGG_COLL_REDUCE_SCATTER:
    case SWITCHAGG_COLL_REDUCE_SCATTER_BLOCK:
      return (p - 1) * c->alpha_us + us(f * n * (c->beta_ns + c->gamma_ns));
    case SWITCHAGG_COLL_ALLGATHER: return (p - 1) * (c->alpha_us + us(n * c->beta_ns));
    case SWITCHAGG_COLL_BCAST: return ceilLog2(p) * (c->alpha_us + us(n * c->beta_ns));
    case SWITCHAGG_COLL_ALLREDUCE:  // not routed
    case SWITCHAGG_COLL_BARRIER:
      break;
  }
  return kInf;
}

double CostModel::predictUs(Algorithm a, const SelectionInput& in) const {
  const auto i = static_cast<size_t>(a);
  return i < kNumAlgorithms ? algorithmRegistry()[i].predict(*this, a, in) : kInf;
}

std::string CostModel::toText() const {
  std::string text =
      "# cost <algorithm> <locality> alpha_us=<per step> beta_ns=<per byte sent> "
      "gamma_ns=<per byte reduced>\n";
  char line[160];
  for (const CostEntry& e : entries_) {
    snprintf(line, sizeof line, "cost %-18s %s alpha_us=%g beta_ns=%g gamma_ns=%g\n",
             algorithmName(e.algorithm), localityName(e.locality), e.alpha_us, e.beta_ns,
             e.gamma_ns);
    text += line;
  }
  return text;
}

}  // namespace switchagg::coll
