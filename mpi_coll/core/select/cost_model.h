// The allreduce cost model: one readable table of constants per algorithm and
// locality (NCCL-tuning style; its defaults are the algorithm registry rows'
// constants, a rules file overrides them), and the classic alpha-beta-gamma
// formula per algorithm (the rows' `predict`). Pure data + pure functions:
// the selector ranks candidates by predictUs(), switchagg-info prints them,
// tests check their shape.
//
// Units: alpha in microseconds per step (message latency incl. software),
// beta in ns per byte on the wire (1 ns/B == 1 GB/s), gamma in ns per byte
// reduced. n = bytes, p = ranks, p2 = largest power of two <= p.
//
//   recursive_doubling  log2(p2)·(α + nβ + nγ)              [+ fold, see below]
//   ring                2(p−1)α + 2(p−1)/p·nβ + (p−1)/p·nγ
//   rabenseifner        2·log2(p2)·α + 2(p2−1)/p2·nβ + (p2−1)/p2·nγ   [+ fold]
//   hierarchical        intra reduce (shm, ceil(log2 ppn) steps of α+nβ+nγ)
//                       + min(rd, ring) among the node leaders (net rows)
//                       + intra bcast (shm, ceil(log2 ppn) steps of α+nβ)
//   switch              ceil(ceil(n/slot)/W)·(α + T) + max(nβ, p·n/L, p·n/R)
//                       + p·nγ  (each member sends N and receives N; γ is a
//                       per-contribution reduce cost, 0 for a hardware
//                       switch). What the agent advertised at connect
//                       (CAPACITY_ACK): T its median chunk turnaround and R
//                       its aggregate reduction rate (it reduces p·N bytes;
//                       0 = unknown, the term drops), L its data link rate
//                       (its link carries p·N each way). The link is always
//                       charged: an agent that did not tell its rate is
//                       taken to sit behind a link as fast as a compute
//                       node's, L = 1/β, so the term is p·nβ (an agent on
//                       an ordinary host, the reducer-host deployment: the
//                       conservative assumption; an agent in the switch
//                       tells its rate, data.link_mbps). The stream is
//                       pipelined, so the slowest stage sets the pace.
//                       With node leaders (switch_members < comm_size) p
//                       is the members (nodes), plus the hierarchical
//                       row's intra reduce and bcast (I). With K stripes
//                       (agents) each agent carries and reduces 1/K of it:
//                       p·n/(K·L), p·n/(K·R), p·nγ/K, chunks of n/K. With
//                       a pipeline segment s (n >= 2s, S = ceil(n/s)
//                       segments) the stream (X) and I overlap:
//                       max(X, I) + min(X, I)/S.
//   previous            min(rd, ring, rabenseifner) with its own rows: a model
//                       of Open MPI tuned's decision on its own transport
//   non-power-of-two fold (rd, rabenseifner): + 2(α + nβ) + nγ
//
// Flat algorithms use the `shm` row when the communicator sits on one node
// and the `net` row otherwise (the slowest link sets the pace).
//
// The routed collectives (switch path or previous module, nothing else;
// docs/offload.md "Routed collectives"). n = SelectionInput::bytes is the
// whole vector (reduce, reduce-scatter, bcast) or one rank's block b
// (allgather). Switch rows, with the switch row's α, β, γ and the agent's
// T, L, R as for allreduce (T and R drop when unknown, an unknown L is
// 1/β; K stripes divide the agent's share; rounds = ⌈⌈V/K/slot⌉/W⌉ over the routed vector
// V = n, or p·b for allgather):
//   reduce          members send n, the root receives n:
//                   rounds·(α+T) + max(nβ, p·n/(K·L), p·n/(K·R)) + p·nγ/K
//   reduce_scatter  members send n (integers: n less their block), each
//                   receives its n/p: the same row (the float case)
//   allgather       members send b, receive the (p−1)·b they lack; the
//                   agent's link carries p·b in and p·(p−1)·b out:
//                   rounds·(α+T) + max((p−1)·bβ, p·(p−1)·b/(K·L))
//   bcast           the root sends n, the others receive n; the agent's link
//                   carries n in and (p−1)·n out:
//                   rounds·(α+T) + max(nβ, (p−1)·n/(K·L))
//   With node leaders (p = nodes < P ranks, q ranks per node) the node
//   steps on the hierarchical shm row, s = ⌈log2 q⌉: reduce s·(α+nβ+nγ)
//   and bcast s·(α+nβ), each plus one hop α+nβ between the root and its
//   leader; reduce_scatter s·(α+nβ+nγ) + (q−1)·(α+(n/P)β) (the node's
//   reduce, its blocks handed out); allgather (q−1)·(α+bβ) + s·(α+P·bβ)
//   (blocks in, the vector out). An allgather's vector is then P·b and a
//   member receives the (P−q)·b its node lacks.
// Previous-module rows (a model of tuned, the `previous` row):
//   reduce          binomial tree  ⌈log2 p⌉·(α + nβ + nγ)
//   reduce_scatter  ring           (p−1)α + (p−1)/p·nβ + (p−1)/p·nγ
//   allgather       ring           (p−1)α + (p−1)·bβ   (= (p−1)/p of p·b)
//   bcast           binomial tree  ⌈log2 p⌉·(α + nβ)
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "algorithm_registry.h"
#include "coll_kind.h"
#include "switchagg/agent/defaults.h"
#include "switchagg/common/dtype.h"
#include "switchagg/common/status.h"

namespace switchagg::coll {


// What the selector knows about one MPI_Allreduce call (or one routed
// call: see the routed rows above for what `bytes` is).
struct SelectionInput {
  size_t bytes = 0;               // message size (count * dtype size)
  int comm_size = 1;
  int ranks_per_node = 1;         // max ranks on one node in this communicator
  int nodes = 1;
  Dtype dtype = Dtype::kFloat32;
  Op op = Op::kSum;
  bool switch_available = false;  // lease present, agent joined, dtype/op advertised
  int switch_window = 0;          // slots of the lease (chunks in flight); 0 = model default
  size_t switch_slot_bytes = 0;   // payload bytes per slot; 0 = model default
  int switch_members = 0;         // members the agent sees (nodes with node leaders); 0 = comm_size
  int switch_stripes = 0;         // agents of the lease (K stripes); 0 = 1
  size_t switch_segment_bytes = 0;  // node leaders' pipeline segment; 0 = no overlap
  // The agent's own figures (CAPACITY_ACK); 0 = unknown.
  uint32_t switch_reduce_mbps = 0;    // MB/s of input, all its reduction threads
  uint32_t switch_link_mbps = 0;      // its data link, Mbit/s (0: a node's, 1/β of the switch row)
  uint32_t switch_turnaround_us = 0;  // median per chunk batch
  // MPI_THREAD_MULTIPLE (the blocking allreduce's dispatch sets it): the
  // previous module is no candidate of the model and nothing is tuned
  // online (decide(), docs/selection.md "Threads").
  bool threads = false;
};

enum class Locality { kShm, kNet };
const char* localityName(Locality l);                 // "shm", "net"
bool parseLocality(const std::string& name, Locality* out);

struct CostEntry {
  Algorithm algorithm = Algorithm::kRing;
  Locality locality = Locality::kShm;
  double alpha_us = 0;  // per step
  double beta_ns = 0;   // per byte on the wire
  double gamma_ns = 0;  // per byte reduced
};

class CostModel {
 public:
  // The registry rows' default constants (calibrated on the reference
  // machine: algorithm_registry.cc, docs/selection.md), in registry order.
  static CostModel defaults();

  const std::vector<CostEntry>& entries() const { return entries_; }
  const CostEntry* find(Algorithm a, Locality l) const;
  // Replaces the row with the same (algorithm, locality), or adds it.
  void set(const CostEntry& entry);

  // Modeled time of one allreduce in microseconds (the algorithm's row in
  // the registry names its formula); +infinity when the algorithm cannot
  // run the input (switch not available, no table row).
  double predictUs(Algorithm a, const SelectionInput& in) const;

  // The table in the rules-file `cost` line format, one row per line, so
  // `switchagg-info --select --dump-cost-model > f` gives an editable file.
  std::string toText() const;

  // Used when SelectionInput leaves the switch window at 0 (its slot size
  // then is the agent's default, agent::kDefaultSlotBytes in
  // switchagg/agent/defaults.h).
  static constexpr int kDefaultWindow = 8;

 private:
  std::vector<CostEntry> entries_;
};

// The formulas above, for the registry's `predict` column
// (CostModel::predictUs is the way to call them). A flat algorithm's is
// flatCost<formula>: the formula over one row's constants, n bytes, p
// ranks, on the algorithm's `shm` row within one node and its `net` row
// otherwise; 0 for one rank; +infinity without the row.
using FlatFormula = double (*)(const CostEntry& c, double n, int p);
double ringUs(const CostEntry& c, double n, int p);
double recursiveDoublingUs(const CostEntry& c, double n, int p);  // with the fold
double rabenseifnerUs(const CostEntry& c, double n, int p);       // with the fold
double previousUs(const CostEntry& c, double n, int p);  // min(rd, ring, rabenseifner)
double flatUs(const CostModel& m, Algorithm a, FlatFormula formula, const SelectionInput& in);
template <FlatFormula F>
double flatCost(const CostModel& m, Algorithm self, const SelectionInput& in) {
  return flatUs(m, self, F, in);
}
double predictHierarchicalUs(const CostModel& m, Algorithm self, const SelectionInput& in);
double predictSwitchUs(const CostModel& m, Algorithm self, const SelectionInput& in);

// The routed rows above: +infinity when the switch is not available (or a
// row is missing); 0 for a single rank.
double predictRoutedSwitchUs(const CostModel& m, CollKind op, const SelectionInput& in);
double predictRoutedPreviousUs(const CostModel& m, CollKind op, const SelectionInput& in);

}  // namespace switchagg::coll
