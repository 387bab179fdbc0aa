// Unit tests of selection: registry, cost-model shape (crossovers move the
// right way), policy precedence, rules parsing and overrides.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>

#include "selector.h"

namespace switchagg::coll {
namespace {

// The policy the component would parse from its two parameters.
SelectionPolicy policyOf(const char* forced, const char* offload) {
  Result<SelectionPolicy> p = parsePolicy(forced, offload);
  EXPECT_TRUE(p.ok()) << forced << " " << offload;
  return p.ok() ? *p : SelectionPolicy{};
}

SelectionInput shape(size_t bytes, int np, int ppn = 0, bool sw = false) {
  SelectionInput in;
  in.bytes = bytes;
  in.comm_size = np;
  in.ranks_per_node = ppn > 0 ? ppn : np;
  in.nodes = (np + in.ranks_per_node - 1) / in.ranks_per_node;
  in.switch_available = sw;
  return in;
}

// A cost model with these rows set.
CostModel modelOf(std::initializer_list<CostEntry> rows) {
  CostModel m;
  for (const CostEntry& e : rows) m.set(e);
  return m;
}

// The switch path's row (alpha 10 us, beta 0.5 ns, gamma 0.25 ns) and the
// node phases' (hierarchical over shm: 3 us, 1.0 ns, 0.5 ns).
CostModel switchAndNodeModel() {
  return modelOf({{Algorithm::kSwitch, Locality::kNet, 10.0, 0.5, 0.25},
                  {Algorithm::kHierarchical, Locality::kShm, 3.0, 1.0, 0.5}});
}

Rules parseOk(const std::string& text) {
  Result<Rules> r = parseRules(text, "test.rules");
  EXPECT_TRUE(r.ok()) << r.status().toString();
  return r.ok() ? *r : Rules{};
}

std::string parseError(const std::string& text) {
  Result<Rules> r = parseRules(text, "test.rules");
  EXPECT_FALSE(r.ok());
  return r.status().message();
}

Algorithm first(const SelectionInput& in, const SelectionPolicy& policy = {},
                const Rules& rules = {}, const CostModel& model = CostModel::defaults()) {
  return rankCandidates(in, model, rules, policy).front();
}

// Smallest power-of-two size at which `b` is modeled no slower than `a`.
size_t crossover(const CostModel& m, Algorithm a, Algorithm b, SelectionInput in) {
  for (size_t n = 8; n <= (size_t(1) << 34); n *= 2) {
    in.bytes = n;
    if (m.predictUs(b, in) <= m.predictUs(a, in)) return n;
  }
  return 0;
}

// MPI_Barrier goes to the switch only with offload=on (docs/offload.md
// "Barrier": agent round trip + agreement never beats the previous barrier).
TEST(Barrier, UsesTheSwitchOnlyWithOffloadOn) {
  for (const char* offload : {"on", "ON"})
    EXPECT_TRUE(barrierUsesSwitch(policyOf("auto", offload))) << offload;
  for (const char* offload : {"auto", "off"})
    EXPECT_FALSE(barrierUsesSwitch(policyOf("auto", offload))) << offload;
}

// The routed collectives (docs/offload.md "Routed collectives"): offload
// off never, on whenever the switch can serve, auto by the routed rows.
constexpr CollKind kRoutedOps[] = {SWITCHAGG_COLL_REDUCE, SWITCHAGG_COLL_REDUCE_SCATTER,
                                   SWITCHAGG_COLL_REDUCE_SCATTER_BLOCK, SWITCHAGG_COLL_ALLGATHER,
                                   SWITCHAGG_COLL_BCAST};

TEST(Routed, OffloadOffNeverOnWheneverAvailable) {
  const CostModel m = CostModel::defaults();
  const SelectionPolicy off = policyOf("auto", "off"), on = policyOf("auto", "ON");
  for (CollKind op : kRoutedOps) {
    for (size_t bytes : {size_t(8), size_t(1) << 26}) {
      EXPECT_FALSE(chooseRouted(op, shape(bytes, 8, 1, true), m, off).use_switch);
      EXPECT_TRUE(chooseRouted(op, shape(bytes, 8, 1, true), m, on).use_switch);
      EXPECT_FALSE(chooseRouted(op, shape(bytes, 8, 1, false), m, on).use_switch);
      EXPECT_FALSE(chooseRouted(op, shape(bytes, 8, 1, false), m, {}).use_switch);
    }
    EXPECT_STREQ(chooseRouted(op, shape(8, 8, 1, true), m, off).reason, "offload=off");
  }
}

// auto follows the rows at every size, and with a slow-to-start but
// fast-streaming switch each op flips once: previous for small calls, the
// switch for large ones, at the size where the rows cross.
TEST(Routed, AutoFlipsWhereTheRowsCross) {
  CostModel m = CostModel::defaults();
  m.set({Algorithm::kSwitch, Locality::kNet, 100.0, 0.05, 0});
  for (CollKind op : kRoutedOps) {
    int flips = 0;
    bool last = false;
    for (size_t bytes = 8; bytes <= (size_t(1) << 26); bytes *= 2) {
      SelectionInput in = shape(bytes, 8, 1, true);
      in.switch_link_mbps = 1000000;  // an agent in the switch: 1 Tbit/s
      const bool faster = predictRoutedSwitchUs(m, op, in) < predictRoutedPreviousUs(m, op, in);
      const RoutedChoice c = chooseRouted(op, in, m, {});
      EXPECT_EQ(c.use_switch, faster) << collKindName(op) << " " << bytes;
      EXPECT_STREQ(c.reason, "cost model");
      if (bytes == 8) EXPECT_FALSE(c.use_switch) << collKindName(op);
      else if (c.use_switch != last) ++flips;
      last = c.use_switch;
    }
    EXPECT_TRUE(last) << collKindName(op) << " should use the switch at 64 MiB";
    EXPECT_EQ(flips, 1) << collKindName(op);
  }
  // Where only the switch computes it right, auto takes it at any size.
  EXPECT_TRUE(chooseRouted(SWITCHAGG_COLL_REDUCE, shape(8, 8, 1, true), m, {}, true).use_switch);
}

TEST(Routed, RowsMatchHandComputation) {
  const CostModel m = CostModel::defaults();  // switch 10 us, 0.2 ns/B; previous net 6 us, 0.15, 0.35
  SelectionInput in = shape(1 << 20, 8, 1, true);  // 1 MiB = 4 slots: one window round
  const double n = 1 << 20;
  // The agent did not tell its link: a node's (0.2 ns/B) carries 8 vectors
  // in for a reduce, 7 out for a bcast.
  EXPECT_NEAR(predictRoutedSwitchUs(m, SWITCHAGG_COLL_REDUCE, in), 10 + 8 * n * 0.2e-3, 1e-6);
  EXPECT_NEAR(predictRoutedSwitchUs(m, SWITCHAGG_COLL_BCAST, in), 10 + 7 * n * 0.2e-3, 1e-6);
  // allgather: 1 MiB blocks, an 8 MiB vector (32 slots, 4 rounds); each
  // member receives the 7 MiB it lacks, the agent's link carries 8 x 7 MiB out.
  EXPECT_NEAR(predictRoutedSwitchUs(m, SWITCHAGG_COLL_ALLGATHER, in), 4 * 10 + 56 * n * 0.2e-3,
              1e-6);
  EXPECT_NEAR(predictRoutedPreviousUs(m, SWITCHAGG_COLL_REDUCE, in), 3 * (6 + n * 0.5e-3), 1e-6);
  EXPECT_NEAR(predictRoutedPreviousUs(m, SWITCHAGG_COLL_BCAST, in), 3 * (6 + n * 0.15e-3), 1e-6);
  EXPECT_NEAR(predictRoutedPreviousUs(m, SWITCHAGG_COLL_REDUCE_SCATTER, in),
              7 * 6 + 7.0 / 8 * n * 0.5e-3, 1e-6);
  EXPECT_NEAR(predictRoutedPreviousUs(m, SWITCHAGG_COLL_ALLGATHER, in), 7 * (6 + n * 0.15e-3),
              1e-6);
  // The agent's link carries p·(p−1)·b out for allgather, (p−1)·n for bcast
  // (8 Gbit/s = 1 B/ns).
  in.switch_link_mbps = 8000;
  EXPECT_NEAR(predictRoutedSwitchUs(m, SWITCHAGG_COLL_ALLGATHER, in), 4 * 10 + 56 * n * 1e-3, 1e-6);
  EXPECT_NEAR(predictRoutedSwitchUs(m, SWITCHAGG_COLL_BCAST, in), 10 + 7 * n * 1e-3, 1e-6);
  // An agent in the switch (1 Tbit/s): the member's link sets the pace.
  in.switch_link_mbps = 1000000;
  EXPECT_NEAR(predictRoutedSwitchUs(m, SWITCHAGG_COLL_REDUCE, in), 10 + n * 0.2e-3, 1e-6);
  EXPECT_NEAR(predictRoutedSwitchUs(m, SWITCHAGG_COLL_BCAST, in), 10 + n * 0.2e-3, 1e-6);
  // One rank: nothing to move.
  EXPECT_EQ(predictRoutedSwitchUs(m, SWITCHAGG_COLL_REDUCE, shape(1 << 20, 1, 1, true)), 0);
  EXPECT_TRUE(std::isinf(predictRoutedSwitchUs(m, SWITCHAGG_COLL_REDUCE, shape(8, 8, 1, false))));
}

// Node leaders (cost_model.h): p = 4 nodes of P = 8 ranks, q = 2 a node;
// the agent's part as for 4 members over the whole vector (its link, untold,
// a node's 0.2 ns/B), plus the node steps on the hierarchical shm row (s = 1).
TEST(Routed, LeadersAddTheNodeSteps) {
  const CostModel m = CostModel::defaults();
  const CostEntry* intra = m.find(Algorithm::kHierarchical, Locality::kShm);
  ASSERT_NE(intra, nullptr);
  SelectionInput in = shape(1 << 20, 8, 2, true);
  in.switch_members = 4;
  const double n = 1 << 20;
  auto hop = [&](double bytes) { return intra->alpha_us + bytes * intra->beta_ns * 1e-3; };
  const double reduce_us = hop(n) + n * intra->gamma_ns * 1e-3;
  // reduce-scatter: the node's reduce, then one block (n/8) to the other rank.
  EXPECT_NEAR(predictRoutedSwitchUs(m, SWITCHAGG_COLL_REDUCE_SCATTER_BLOCK, in),
              10 + 4 * n * 0.2e-3 + reduce_us + hop(n / 8), 1e-6);
  // allgather of 1 MiB blocks: the vector is P·b = 8 MiB (4 rounds), a node
  // receives the 6 MiB it lacks (the agent sends 4 x 6 MiB); one block in,
  // the 8 MiB vector out.
  EXPECT_NEAR(predictRoutedSwitchUs(m, SWITCHAGG_COLL_ALLGATHER, in),
              4 * 10 + 24 * n * 0.2e-3 + hop(n) + hop(8 * n), 1e-6);
  EXPECT_NEAR(predictRoutedSwitchUs(m, SWITCHAGG_COLL_REDUCE, in),
              10 + 4 * n * 0.2e-3 + hop(n) + reduce_us, 1e-6);
}

TEST(Registry, NamesRoundTrip) {
  ASSERT_EQ(algorithmRegistry().size(), 6u);
  for (const AlgorithmInfo& info : algorithmRegistry()) {
    Algorithm a;
    ASSERT_TRUE(parseAlgorithm(info.name, &a)) << info.name;
    EXPECT_EQ(a, info.id);
    EXPECT_STREQ(algorithmName(a), info.name);
    EXPECT_GT(std::string(info.description).size(), 10u);
  }
  Algorithm a;
  EXPECT_TRUE(parseAlgorithm("Recursive_Doubling", &a));
  EXPECT_FALSE(parseAlgorithm("auto", &a));
  EXPECT_FALSE(parseAlgorithm("tree", &a));
  EXPECT_EQ(algorithmNameList(), "ring|recursive_doubling|rabenseifner|hierarchical|switch|previous");
}

// Rows index counters and tuner samples by enum value; each carries its
// behaviour: a cost formula, a tie order, a host schedule unless it is the
// switch or the previous module.
TEST(Registry, RowsAreInEnumOrderAndCarryTheirBehaviour) {
  ASSERT_EQ(algorithmRegistry().size(), kNumAlgorithms);
  std::set<int> tie_orders;
  for (size_t i = 0; i < kNumAlgorithms; ++i) {
    const AlgorithmInfo& info = algorithmRegistry()[i];
    EXPECT_EQ(static_cast<size_t>(info.id), i) << info.name;
    EXPECT_EQ(&algorithmInfo(info.id), &info);
    EXPECT_NE(info.predict, nullptr) << info.name;
    const bool host = info.id != Algorithm::kSwitch && info.id != Algorithm::kPrevious;
    EXPECT_EQ(info.run != nullptr, host) << info.name;
    EXPECT_TRUE(tie_orders.insert(info.tie_order).second) << info.name;
  }
  EXPECT_EQ(algorithmsInTieOrder().front()->id, Algorithm::kRecursiveDoubling);
  EXPECT_EQ(algorithmsInTieOrder().back()->id, Algorithm::kPrevious);
}

// The default cost table is the registry rows' constants, nothing else: a
// row's shm/net constants are its table rows, and a locality without them
// has no row (its prediction there is +infinity).
TEST(Registry, RowsCarryTheDefaultCostConstants) {
  const CostModel m = CostModel::defaults();
  size_t rows = 0;
  for (const AlgorithmInfo& info : algorithmRegistry()) {
    for (const auto& [locality, constants] : {std::pair{Locality::kShm, info.shm},
                                              std::pair{Locality::kNet, info.net}}) {
      const CostEntry* e = m.find(info.id, locality);
      ASSERT_EQ(e != nullptr, constants.has_value()) << info.name << " " << localityName(locality);
      if (e == nullptr) continue;
      ++rows;
      EXPECT_EQ(e->alpha_us, constants->alpha_us) << info.name;
      EXPECT_EQ(e->beta_ns, constants->beta_ns) << info.name;
      EXPECT_EQ(e->gamma_ns, constants->gamma_ns) << info.name;
    }
  }
  EXPECT_EQ(m.entries().size(), rows);
  EXPECT_EQ(m.find(Algorithm::kSwitch, Locality::kShm), nullptr);
  // Without its row on this locality, an algorithm is never predicted to run.
  CostModel no_ring;
  for (const CostEntry& e : m.entries()) {
    if (e.algorithm != Algorithm::kRing) no_ring.set(e);
  }
  EXPECT_TRUE(std::isinf(no_ring.predictUs(Algorithm::kRing, shape(1 << 20, 4))));
  EXPECT_FALSE(std::isinf(m.predictUs(Algorithm::kRing, shape(1 << 20, 4))));
}

TEST(CostModel, TheAgentsAdvertisedCapacityShapesTheSwitchRow) {
  const CostModel m = CostModel::defaults();
  SelectionInput in = shape(size_t(8) << 20, 8, 1, /*sw=*/true);
  const double n = double(8 << 20);
  const double unknown = m.predictUs(Algorithm::kSwitch, in);
  // A fast agent on a fast link: the member link (the row's beta) sets the
  // pace, where an agent that did not tell is charged 8 vectors on a node's link.
  in.switch_reduce_mbps = 1000000;
  in.switch_link_mbps = 1000000;
  const double fast = m.predictUs(Algorithm::kSwitch, in);
  EXPECT_NEAR(unknown - fast, 7 * n * 0.2e-3, 1e-6);
  // A 400 Mbit/s agent link carries 8 members' vectors: 8 x 8 MiB x 8 bit / 400 Mbit/s.
  in.switch_link_mbps = 400;
  const double link_bound = m.predictUs(Algorithm::kSwitch, in);
  EXPECT_NEAR(link_bound, 8.0 * n * 8 / 400 + (fast - n * 0.2e-3), 1e-6);
  // A slow reducer (10 MB/s for all its threads) is slower still: 8 x 8 MiB / 10 MB/s.
  in.switch_reduce_mbps = 10;
  EXPECT_GT(m.predictUs(Algorithm::kSwitch, in), link_bound);
  // Turnaround is paid once per window of chunks.
  SelectionInput small = shape(4096, 8, 1, true);
  const double base = m.predictUs(Algorithm::kSwitch, small);
  small.switch_turnaround_us = 500;
  EXPECT_NEAR(m.predictUs(Algorithm::kSwitch, small), base + 500, 1e-6);
}

TEST(CostModel, SwitchWithNodeLeadersCountsNodesAndTheLocalPhases) {
  const CostModel m = switchAndNodeModel();
  SelectionInput in = shape(4000, 8, 4, /*sw=*/true);  // 2 nodes x 4 ranks
  // Every rank a member: 1 round * 10 + the agent's link (untold: a node's
  // 0.5 ns/B) carrying 8 x 4000 B + 8 * 4000 * 0.25 ns.
  EXPECT_NEAR(m.predictUs(Algorithm::kSwitch, in), 10 + 16 + 8, 1e-9);
  // Node leaders: the agent takes and reduces 2 contributions, plus 2 intra
  // steps of reduce (3 + 4 + 2) and of broadcast (3 + 4).
  in.switch_members = 2;
  EXPECT_NEAR(m.predictUs(Algorithm::kSwitch, in), 10 + 4 + 2 + 2 * 9 + 2 * 7, 1e-9);
  // The agent's link carries one vector per node: 2 x 4000 B x 8 bit / 1 Mbit/s.
  in.switch_link_mbps = 1;
  EXPECT_NEAR(m.predictUs(Algorithm::kSwitch, in), 10 + 64000 + 2 + 32, 1e-6);
}

TEST(CostModel, SwitchStripesSplitTheAgentsLoadAndSegmentsOverlapTheNodePhases) {
  const CostModel m = switchAndNodeModel();
  SelectionInput in = shape(4000, 8, 4, /*sw=*/true);  // 2 nodes x 4 ranks, leaders
  in.switch_members = 2;
  in.switch_link_mbps = 1;
  // Two agents: each link carries half (32000 us), each reduces half (1 us).
  in.switch_stripes = 2;
  EXPECT_NEAR(m.predictUs(Algorithm::kSwitch, in), 10 + 32000 + 1 + 32, 1e-6);
  // Segments of 1000 B: the stream (32000 + 10 + 1) hides the node phases
  // (32) but one segment's (8).
  in.switch_segment_bytes = 1000;
  EXPECT_NEAR(m.predictUs(Algorithm::kSwitch, in), 32011 + 32.0 / 4, 1e-6);
  // Fewer than two segments' bytes: no pipeline.
  in.switch_segment_bytes = 2001;
  EXPECT_NEAR(m.predictUs(Algorithm::kSwitch, in), 10 + 32000 + 1 + 32, 1e-6);
}

TEST(CostModel, FormulasMatchHandComputation) {
  const CostModel m = modelOf({{Algorithm::kRing, Locality::kShm, 2.0, 1.0, 0.5},
                               {Algorithm::kRecursiveDoubling, Locality::kShm, 2.0, 1.0, 0.5},
                               {Algorithm::kRabenseifner, Locality::kShm, 2.0, 1.0, 0.5}});
  const SelectionInput in = shape(4000, 4);
  // ring: 2*3*2 + 2*3/4*4000*1ns + 3/4*4000*0.5ns = 12 + 6 + 1.5
  EXPECT_NEAR(m.predictUs(Algorithm::kRing, in), 19.5, 1e-9);
  // rd: 2 steps * (2 + 4 + 2) = 16
  EXPECT_NEAR(m.predictUs(Algorithm::kRecursiveDoubling, in), 16.0, 1e-9);
  // rabenseifner: 2*2*2 + 6 + 1.5
  EXPECT_NEAR(m.predictUs(Algorithm::kRabenseifner, in), 15.5, 1e-9);
  // no row for hierarchical/switch/previous in this model: unusable
  EXPECT_TRUE(std::isinf(m.predictUs(Algorithm::kHierarchical, in)));
}

TEST(CostModel, NonPowerOfTwoPaysTheFold) {
  const CostModel m = CostModel::defaults();
  for (Algorithm a : {Algorithm::kRecursiveDoubling, Algorithm::kRabenseifner}) {
    // 5 ranks cost more than 4 and more than half-way to 8 for the latency term.
    EXPECT_GT(m.predictUs(a, shape(1024, 5)), m.predictUs(a, shape(1024, 4))) << algorithmName(a);
  }
  // The ring has no fold: 5 ranks cost about what 4 ranks cost per byte.
  const double r4 = m.predictUs(Algorithm::kRing, shape(1 << 24, 4));
  const double r5 = m.predictUs(Algorithm::kRing, shape(1 << 24, 5));
  EXPECT_LT(r5 / r4, 1.1);
}

// A textbook table (same link for every algorithm, no `previous` row): the
// formulas' shape, independent of the machine the defaults were fitted on.
CostModel textbookModel() {
  CostModel m;
  for (Algorithm a : {Algorithm::kRecursiveDoubling, Algorithm::kRing, Algorithm::kRabenseifner}) {
    m.set({a, Locality::kShm, 2.0, 0.2, 0.3});
    m.set({a, Locality::kNet, 5.0, 0.1, 0.3});
  }
  m.set({Algorithm::kHierarchical, Locality::kShm, 1.0, 0.1, 0.3});
  return m;
}

TEST(CostModel, LatencyAlgorithmsWinSmallBandwidthAlgorithmsWinLarge) {
  const CostModel m = textbookModel();
  EXPECT_EQ(first(shape(8, 8), {}, {}, m), Algorithm::kRecursiveDoubling);
  const Algorithm big = first(shape(64 << 20, 8), {}, {}, m);
  EXPECT_TRUE(big == Algorithm::kRing || big == Algorithm::kRabenseifner ||
              big == Algorithm::kPrevious) << algorithmName(big);
  EXPECT_NE(big, Algorithm::kRecursiveDoubling);
}

TEST(CostModel, CrossoverMovesWithCommSize) {
  // Ring's latency term grows linearly with p, recursive doubling's with
  // log p: the size where ring starts to win must not shrink as p grows.
  const CostModel m = textbookModel();
  size_t prev = 0;
  for (int p : {4, 8, 16, 64, 256}) {
    const size_t x = crossover(m, Algorithm::kRecursiveDoubling, Algorithm::kRing, shape(0, p));
    ASSERT_GT(x, 0u) << "ring never wins at p=" << p;
    EXPECT_GE(x, prev) << "p=" << p;
    prev = x;
  }
  EXPECT_GT(prev, crossover(m, Algorithm::kRecursiveDoubling, Algorithm::kRing, shape(0, 4)));
}

TEST(CostModel, SwitchCostGrowsWithBytesAndShrinksWithWindow) {
  const CostModel m = CostModel::defaults();
  SelectionInput in = shape(16 << 20, 4, 4, true);
  EXPECT_TRUE(std::isinf(m.predictUs(Algorithm::kSwitch, shape(1024, 4))));  // not available
  in.switch_window = 1;
  const double w1 = m.predictUs(Algorithm::kSwitch, in);
  in.switch_window = 16;
  const double w16 = m.predictUs(Algorithm::kSwitch, in);
  EXPECT_LT(w16, w1);
  in.bytes *= 2;
  EXPECT_GT(m.predictUs(Algorithm::kSwitch, in), w16);
}

TEST(CostModel, SwitchBeatsRingAtScaleForLargeMessages) {
  // Each rank sends N on the switch path, 2(p-1)/p N on a ring; at many nodes
  // and large N the switch must win with the default table when the agent
  // sits in the switch: its link as fast as all 256 ports (8000/β Mbit/s each).
  SelectionInput in = shape(64 << 20, 256, 1, true);
  const CostModel m = CostModel::defaults();
  in.switch_link_mbps = 256 * 40000;
  EXPECT_LT(m.predictUs(Algorithm::kSwitch, in), m.predictUs(Algorithm::kRing, in));
  // One reducer host whose link nobody told (a node's): 256 vectors through
  // one node's link lose to the ring.
  in.switch_link_mbps = 0;
  EXPECT_GT(m.predictUs(Algorithm::kSwitch, in), m.predictUs(Algorithm::kRing, in));
}

// An agent that does not tell its link (0) is charged one as fast as a
// compute node's, L = 1/β of the switch row (8000/β Mbit/s): p members over
// K stripes cost at least p·N·8/(K·L) at the agent (reducer hosts,
// docs/selection.md). A link it told is charged as told.
TEST(CostModel, AnAgentThatDoesNotTellItsLinkIsChargedANodesLink) {
  const CostModel m = CostModel::defaults();
  const double beta = m.find(Algorithm::kSwitch, Locality::kNet)->beta_ns;
  const double assumed_mbps = 8000 / beta;
  for (size_t bytes : {size_t(1) << 20, size_t(8) << 20, size_t(64) << 20}) {
    for (int p : {2, 4, 8, 64}) {
      for (int k : {1, 2, 4}) {
        SelectionInput in = shape(bytes, p, 1, true);
        in.switch_stripes = k;
        const double n = double(bytes);
        const double agent_us = p * n * 8 / (k * assumed_mbps);
        const std::string at = std::to_string(bytes) + " B, p " + std::to_string(p) + ", K " +
                               std::to_string(k);
        const double unknown = m.predictUs(Algorithm::kSwitch, in);
        EXPECT_GE(unknown, agent_us * (1 - 1e-12)) << at;
        EXPECT_GE(predictRoutedSwitchUs(m, SWITCHAGG_COLL_REDUCE, in), agent_us * (1 - 1e-12))
            << at;
        // Told: a slow link costs what it says, a fast one leaves the
        // member's link (nβ) instead of the assumed p·nβ/K.
        for (uint32_t told : {400u, 1000000u}) {
          in.switch_link_mbps = told;
          const double stream = std::max(n * beta * 1e-3, p * n * 8 / (k * double(told)));
          EXPECT_NEAR(m.predictUs(Algorithm::kSwitch, in) - unknown,
                      stream - std::max(n * beta * 1e-3, agent_us), unknown * 1e-9)
              << at << ", told " << told;
        }
      }
    }
  }
}

TEST(CostModel, HierarchicalWinsWithManyRanksPerNode) {
  const CostModel m = CostModel::defaults();
  const SelectionInput in = shape(8, 256, 32);  // 8 nodes x 32 ranks
  EXPECT_LT(m.predictUs(Algorithm::kHierarchical, in), m.predictUs(Algorithm::kRing, in));
}

TEST(CostModel, TextDumpParsesBackToTheSameTable) {
  CostModel m = CostModel::defaults();
  m.set({Algorithm::kRing, Locality::kNet, 1.25, 0.5, 0.125});
  Result<Rules> r = parseRules(m.toText(), "dump", CostModel());
  ASSERT_TRUE(r.ok()) << r.status().toString();
  CostModel back;
  r->applyCostOverrides(&back);
  ASSERT_EQ(back.entries().size(), m.entries().size());
  const CostEntry* e = back.find(Algorithm::kRing, Locality::kNet);
  ASSERT_NE(e, nullptr);
  EXPECT_DOUBLE_EQ(e->alpha_us, 1.25);
  EXPECT_DOUBLE_EQ(e->gamma_ns, 0.125);
}

TEST(Policy, ForcedAlgorithmIsHonoured) {
  for (const AlgorithmInfo& info : algorithmRegistry()) {
    if (info.id == Algorithm::kSwitch) continue;
    const SelectionPolicy p = policyOf(info.name, "auto");
    const Decision d = decide(shape(1 << 20, 4), CostModel::defaults(), {}, p);
    EXPECT_EQ(d.ranked.front(), info.id) << info.name;
    EXPECT_EQ(d.reason, "forced");
    EXPECT_EQ(d.ranked.back(), Algorithm::kPrevious);
  }
}

TEST(Policy, ForcedSwitchFallsToHostAlgorithmsWhenUnavailable) {
  const SelectionPolicy p = policyOf("switch", "auto");
  EXPECT_EQ(first(shape(64, 4, 4, true), p), Algorithm::kSwitch);
  const std::vector<Algorithm> r = rankCandidates(shape(64, 4), CostModel::defaults(), {}, p);
  EXPECT_EQ(std::count(r.begin(), r.end(), Algorithm::kSwitch), 0);
  EXPECT_EQ(r.back(), Algorithm::kPrevious);
}

TEST(Policy, OffloadOffNeverPicksSwitch) {
  const Rules rules = parseOk("allreduce algorithm=switch\n");
  CostModel cheap = CostModel::defaults();
  cheap.set({Algorithm::kSwitch, Locality::kNet, 0, 0, 0});  // switch would be free
  for (const char* forced : {"auto", "switch"}) {
    const SelectionPolicy p = policyOf(forced, "off");
    for (size_t n : {size_t(8), size_t(1) << 20, size_t(64) << 20}) {
      const std::vector<Algorithm> r = rankCandidates(shape(n, 4, 1, true), cheap, rules, p);
      EXPECT_EQ(std::count(r.begin(), r.end(), Algorithm::kSwitch), 0) << forced << " " << n;
    }
  }
}

TEST(Policy, OffloadOnPicksSwitchWheneverAvailable) {
  const SelectionPolicy p = policyOf("auto", "on");
  const Rules rules = parseOk("allreduce algorithm=ring\n");
  CostModel dear = CostModel::defaults();
  dear.set({Algorithm::kSwitch, Locality::kNet, 1e6, 1e3, 1e3});  // switch modeled terrible
  for (size_t n : {size_t(8), size_t(4096), size_t(64) << 20}) {
    for (int np : {2, 3, 4, 64}) {
      EXPECT_EQ(first(shape(n, np, 1, true), p, rules, dear), Algorithm::kSwitch);
      EXPECT_NE(first(shape(n, np, 1, false), p, rules, dear), Algorithm::kSwitch);
    }
  }
}

TEST(Policy, AutoOffloadUsesTheModel) {
  CostModel m = CostModel::defaults();
  m.set({Algorithm::kSwitch, Locality::kNet, 0.01, 0.001, 0});
  EXPECT_EQ(first(shape(1 << 20, 4, 1, true), {}, {}, m), Algorithm::kSwitch);
  m.set({Algorithm::kSwitch, Locality::kNet, 1e6, 1e3, 0});
  const std::vector<Algorithm> r = rankCandidates(shape(1 << 20, 4, 1, true), m, {}, {});
  EXPECT_NE(r.front(), Algorithm::kSwitch);
}

TEST(Policy, PreviousIsAlwaysLastAndNothingFollowsIt) {
  CostModel m = CostModel::defaults();
  m.set({Algorithm::kPrevious, Locality::kShm, 0, 0, 0});
  const std::vector<Algorithm> r = rankCandidates(shape(1 << 20, 4), m, {}, {});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r.front(), Algorithm::kPrevious);
  const std::vector<Algorithm> all = rankCandidates(shape(8, 4), CostModel::defaults(), {}, {});
  EXPECT_EQ(all.back(), Algorithm::kPrevious);
}

// MPI_THREAD_MULTIPLE: where the model hands a call to the previous module
// (here always: it is modeled free), switchagg's own algorithms serve it,
// the previous module last; nothing is tuned online; the switch still
// competes; a forced previous and a rule naming it stand.
TEST(Policy, ThreadsRankOwnPathsBeforePreviousAndTuneThem) {
  CostModel m = CostModel::defaults();
  m.set({Algorithm::kPrevious, Locality::kShm, 0, 0, 0});
  SelectionInput in = shape(8, 4);
  const Decision single = decide(in, m, {}, {});
  ASSERT_EQ(single.ranked.front(), Algorithm::kPrevious);
  EXPECT_TRUE(single.tunable);
  in.threads = true;
  const Decision d = decide(in, m, {}, {});
  ASSERT_GT(d.ranked.size(), 1u);
  EXPECT_NE(algorithmInfo(d.ranked.front()).run, nullptr) << algorithmName(d.ranked.front());
  EXPECT_EQ(d.ranked.back(), Algorithm::kPrevious);
  EXPECT_EQ(std::count(d.candidates.begin(), d.candidates.end(), Algorithm::kPrevious), 0);
  EXPECT_TRUE(d.tunable);  // timed over switchagg's own paths (docs/selection.md "Threads")
  EXPECT_EQ(d.reason, "cost model, threads");

  m.set({Algorithm::kSwitch, Locality::kNet, 0.01, 0.001, 0});
  SelectionInput sw = shape(1 << 20, 4, 1, true);
  sw.threads = true;
  EXPECT_EQ(first(sw, {}, {}, m), Algorithm::kSwitch);

  EXPECT_EQ(first(in, policyOf("previous", "auto"), {}, m), Algorithm::kPrevious);
  EXPECT_EQ(first(in, {}, parseOk("allreduce algorithm=previous\n"), m), Algorithm::kPrevious);
}

TEST(Policy, BadPolicyValuesAreNamed) {
  Result<SelectionPolicy> bad = parsePolicy("bogus", "auto");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("bogus"), std::string::npos);
  bad = parsePolicy("ring", "maybe");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("maybe"), std::string::npos);
  // Either case, parsed once into values.
  Result<SelectionPolicy> ok = parsePolicy("RING", "ON");
  ASSERT_TRUE(ok.ok());
  EXPECT_TRUE(ok->forces(Algorithm::kRing));
  EXPECT_TRUE(ok->forcesHost());
  EXPECT_EQ(ok->offload, Offload::kOn);
  EXPECT_EQ(ok->forcedName(), "ring");
  EXPECT_TRUE(parsePolicy("Previous", "auto")->forces(Algorithm::kPrevious));
  EXPECT_FALSE(parsePolicy("switch", "auto")->forcesHost());
  EXPECT_EQ(parsePolicy("AUTO", "Off")->forcedName(), "auto");
}

TEST(Rules, FirstMatchingRuleWinsOverTheModel) {
  const Rules rules = parseOk(
      "# site rules\n"
      "allreduce bytes=0-4K np=2-64 ppn=* algorithm=ring   # small: ring anyway\n"
      "allreduce bytes=4K-* dtype=float64 algorithm=recursive_doubling\n"
      "allreduce bytes=1M-* algorithm=auto\n"
      "allreduce algorithm=rabenseifner\n");
  ASSERT_EQ(rules.rules.size(), 4u);
  const Decision d = decide(shape(8, 4), CostModel::defaults(), rules, {});
  EXPECT_EQ(d.ranked.front(), Algorithm::kRing);
  EXPECT_EQ(d.reason, "rule test.rules:2");
  EXPECT_EQ(first(shape(8, 128), {}, rules), Algorithm::kRabenseifner);  // np out of range
  SelectionInput dbl = shape(1 << 22, 4);
  dbl.dtype = Dtype::kFloat64;
  EXPECT_EQ(first(dbl, {}, rules), Algorithm::kRecursiveDoubling);
  EXPECT_EQ(decide(shape(1 << 22, 4), CostModel::defaults(), rules, {}).reason, "cost model");
  const SelectionPolicy forced = policyOf("hierarchical", "auto");
  EXPECT_EQ(first(shape(8, 4), forced, rules), Algorithm::kHierarchical);
}

TEST(Rules, RangesAndSizes) {
  const Rules rules = parseOk("allreduce bytes=64KiB-1M np=4 nodes=2-* algorithm=ring\n");
  const Rule& r = rules.rules.at(0);
  EXPECT_EQ(r.bytes.lo, 65536u);
  EXPECT_EQ(r.bytes.hi, 1u << 20);
  EXPECT_TRUE(r.np.contains(4));
  EXPECT_FALSE(r.np.contains(5));
  EXPECT_FALSE(r.matches(shape(1 << 16, 4)));  // one node
  EXPECT_TRUE(r.matches(shape(1 << 16, 4, 2)));
}

// A site may pin the 16-bit floats (issue 46), by their dtype names.
TEST(Rules, HalfFloatDtypesAreRuleKeys) {
  const Rules rules = parseOk("allreduce dtype=float16 algorithm=ring\n"
                              "allreduce dtype=bfloat16 algorithm=recursive_doubling\n");
  SelectionInput half = shape(1 << 20, 4);
  half.dtype = Dtype::kFloat16;
  EXPECT_EQ(first(half, {}, rules), Algorithm::kRing);
  half.dtype = Dtype::kBfloat16;
  EXPECT_EQ(first(half, {}, rules), Algorithm::kRecursiveDoubling);
  EXPECT_FALSE(rules.rules.at(0).matches(shape(1 << 20, 4)));  // float32
}

// A rule that pins a host algorithm for multi-node jobs must not take the
// switch away from them when the rule says switch=no.
TEST(Rules, SwitchConditionLetsTheSwitchCompete) {
  const Rules rules = parseOk(
      "allreduce bytes=2K-* nodes=2-* switch=no algorithm=hierarchical\n"
      "allreduce switch=yes bytes=0-1K algorithm=ring\n");
  const SelectionInput no_lease = shape(1 << 20, 64, 8, false);
  const SelectionInput lease = shape(1 << 20, 64, 8, true);
  EXPECT_TRUE(rules.rules.at(0).matches(no_lease));
  EXPECT_FALSE(rules.rules.at(0).matches(lease));
  EXPECT_EQ(first(no_lease, {}, rules), Algorithm::kHierarchical);
  CostModel cheap_switch = CostModel::defaults();
  cheap_switch.set({Algorithm::kSwitch, Locality::kNet, 0.01, 0.001, 0});
  EXPECT_EQ(first(lease, {}, rules, cheap_switch), Algorithm::kSwitch);  // the model decides
  EXPECT_TRUE(rules.rules.at(1).matches(shape(512, 64, 8, true)));
  EXPECT_FALSE(rules.rules.at(1).matches(shape(512, 64, 8, false)));
  EXPECT_NE(parseError("allreduce switch=maybe algorithm=ring\n").find("switch: 'maybe'"),
            std::string::npos);
}

TEST(Rules, CostOverridesChangeTheDecision) {
  const SelectionInput in = shape(8, 4);
  ASSERT_NE(first(in), Algorithm::kRing);
  Result<Selector> s = Selector::create({}, "");
  ASSERT_TRUE(s.ok());
  const Rules rules = parseOk(
      "cost ring shm alpha_us=0.001 beta_ns=0.001\n"
      "cost ring shm gamma_ns=0.001   # partial lines keep earlier values\n");
  CostModel m = CostModel::defaults();
  rules.applyCostOverrides(&m);
  EXPECT_DOUBLE_EQ(m.find(Algorithm::kRing, Locality::kShm)->alpha_us, 0.001);
  EXPECT_DOUBLE_EQ(m.find(Algorithm::kRing, Locality::kShm)->gamma_ns, 0.001);
  EXPECT_EQ(first(in, {}, rules, m), Algorithm::kRing);
}

TEST(Rules, BadLinesAreErrorsNamingTheLine) {
  struct Case { const char* text; const char* mentions; };
  const Case cases[] = {
      {"\n\nallreduce bytes=4K algorithm=ringg\n", "test.rules:3"},
      {"allreduce bytes=4K algorithm=ringg\n", "ringg"},
      {"allreduce bytes=4K\n", "no algorithm"},
      {"allreduce color=red algorithm=ring\n", "'color'"},
      {"allreduce bytes=8K-4K algorithm=ring\n", "ends before"},
      {"allreduce bytes=4 parsecs algorithm=ring\n", "parsecs"},
      {"allreduce np=two algorithm=ring\n", "two"},
      {"allreduce dtype=float8 algorithm=ring\n", "float8"},  // float16 is a dtype now
      {"allreduce op=avg algorithm=ring\n", "avg"},
      {"reduce bytes=4K algorithm=ring\n", "'reduce'"},
      {"# ok\ncost ring fabric alpha_us=1\n", "test.rules:2"},
      {"cost ring shm alpha_us=-1\n", "alpha_us"},
      {"cost ring shm delta_ns=1\n", "delta_ns"},
      {"cost tree shm alpha_us=1\n", "tree"},
      {"cost ring shm\n", "expected: cost"},
  };
  for (const Case& c : cases) {
    const std::string msg = parseError(c.text);
    EXPECT_NE(msg.find(c.mentions), std::string::npos) << c.text << " -> " << msg;
    EXPECT_NE(msg.find("test.rules:"), std::string::npos) << msg;
  }
}

TEST(Rules, FilesLoadAndMissingFilesAreErrors) {
  const std::string path = ::testing::TempDir() + "/sel_test.rules";
  {
    std::ofstream f(path);
    f << "allreduce bytes=0-1K algorithm=ring\ncost ring shm alpha_us=9\n";
  }
  Result<Selector> s = Selector::create({}, path);
  ASSERT_TRUE(s.ok()) << s.status().toString();
  EXPECT_EQ(s->rank(shape(8, 4)).front(), Algorithm::kRing);
  EXPECT_DOUBLE_EQ(s->model().find(Algorithm::kRing, Locality::kShm)->alpha_us, 9);
  std::remove(path.c_str());
  Result<Selector> missing = Selector::create({}, path);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find(path), std::string::npos);
  EXPECT_NE(missing.status().message().find("No such file"), std::string::npos);
  // A directory opens but cannot be read: an error, not an empty rule set.
  Result<Selector> directory = Selector::create({}, ::testing::TempDir());
  ASSERT_FALSE(directory.ok());
  EXPECT_NE(directory.status().message().find("Is a directory"), std::string::npos)
      << directory.status().message();
  EXPECT_FALSE(parsePolicy("bogus", "auto").ok());
}

TEST(DecisionTable, MergesAdjacentSizes) {
  const Rules rules = parseOk("allreduce bytes=0-1K algorithm=ring\n");
  const std::vector<DecisionRow> rows =
      decisionTable(shape(0, 4), 8, 64 << 20, CostModel::defaults(), rules, {});
  ASSERT_GE(rows.size(), 2u);
  EXPECT_EQ(rows.front().lo_bytes, 8u);
  EXPECT_EQ(rows.front().hi_bytes, 1024u);
  EXPECT_EQ(rows.front().algorithm, Algorithm::kRing);
  EXPECT_EQ(rows.back().hi_bytes, size_t(64) << 20);
  for (size_t i = 1; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].lo_bytes, rows[i - 1].hi_bytes * 2);
  }
}

}  // namespace
}  // namespace switchagg::coll

namespace switchagg::coll {
namespace {

TEST(ShippedConfig, ExampleRulesFileParsesAndDecides) {
  const std::string path = std::string(SWITCHAGG_SOURCE_DIR) + "/config/selection.rules";
  Result<Selector> s = Selector::create({}, path);
  ASSERT_TRUE(s.ok()) << s.status().toString();
  EXPECT_FALSE(s->rules().rules.empty());
  EXPECT_FALSE(s->rules().cost_overrides.empty());
  EXPECT_EQ(s->rank(shape(8, 64, 8)).front(), Algorithm::kRecursiveDoubling);
  EXPECT_EQ(s->rank(shape(1 << 20, 64, 8)).front(), Algorithm::kHierarchical);
  // With a lease the hierarchical rule (switch=no) steps aside for the model.
  EXPECT_NE(s->decide(shape(1 << 20, 64, 8, true)).reason.rfind("rule", 0), 0u);
  EXPECT_EQ(s->decide(shape(1 << 20, 4)).reason, "cost model");  // algorithm=auto line
}

}  // namespace
}  // namespace switchagg::coll

namespace switchagg::coll {
namespace {

TEST(DecisionCache, AgreesWithDecideAcrossSizesShapesAndCollisions) {
  const Rules rules = parseOk("allreduce bytes=3000-5000 algorithm=ring\n");
  const Selector s = Selector::fromParts({}, rules, CostModel::defaults());
  DecisionCache cache;
  for (int pass = 0; pass < 2; ++pass) {  // second pass: served from the cache
    for (int np : {2, 4, 64}) {
      for (size_t n = 1; n <= (size_t(1) << 26); n = n * 2 + (n % 3)) {
        for (size_t bytes : {n, n + 1, 4096 + n % 7}) {
          for (bool threads : {false, true}) {  // the same size either way: another decision
            SelectionInput in = shape(bytes, np);
            in.threads = threads;
            const Decision& cached = cache.decide(s, in);
            const Decision fresh = s.decide(in);
            ASSERT_EQ(cached.ranked, fresh.ranked) << bytes << " np=" << np << " threads=" << threads;
            ASSERT_EQ(cached.reason, fresh.reason);
            ASSERT_EQ(cached.tunable, fresh.tunable);
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace switchagg::coll
