// The switch path's collective join (first or rejoin): connections, the
// agreed group id, tree placement, the join per agent, the agreed outcome.
#include "switch_path_internal.h"

#include <algorithm>
#include <cinttypes>
#include <cstring>

#include "process_runtime.h"
#include "switchagg/common/log.h"

namespace switchagg::coll::switch_detail {

namespace {

constexpr int64_t kJoinTimeoutMs = 5000;

// What a stripe's failure names: the agent's name in the fabric map (a rail
// pool's "rail2") and its address, in the lease's order.
std::vector<std::string> stripeLabels(const SwitchLease& lease) {
  std::vector<std::string> out;
  for (size_t k = 0; k < lease.agents.size(); ++k)
    out.push_back(k < lease.names.size() ? lease.names[k] + " at " + lease.agents[k]
                                         : lease.agents[k]);
  return out;
}

// The stripe weights: each agent's link rate, in the lease's order. Stripes
// whose addresses share a host share its link (an agent's data-plane
// threads spreading the lease, data.threads_per_job, or two agents on one
// host): each is charged its share, so the stripes of a host add up to its
// link, not one link per stripe.
std::vector<uint32_t> linkRates(const SwitchLease& lease,
                                const std::vector<std::shared_ptr<agent::AggClient>>& clients) {
  std::vector<uint32_t> rates;
  for (const std::shared_ptr<agent::AggClient>& c : clients)
    rates.push_back(c->agent().capacity.link_mbps);
  if (clients.size() != lease.agents.size()) return rates;  // a tree's leaf, a rail leader: one
  auto host = [](const std::string& a) { return a.substr(0, a.rfind(':')); };
  for (size_t k = 0; k < rates.size(); ++k) {
    const auto same = std::count_if(lease.agents.begin(), lease.agents.end(),
                                    [&](const std::string& a) { return host(a) == host(lease.agents[k]); });
    if (rates[k] != 0) rates[k] = std::max<uint32_t>(1, rates[k] / uint32_t(same));  // 0: unknown
  }
  return rates;
}

// The figures the cost model takes for the lease's agents: a striped call
// ends with its slowest stripe, so the smallest reduction rate and the
// longest turnaround any of them told (0 = unknown stays unknown only if
// no agent told). The link: stripes cut in proportion to the agents' rates
// (every agent told one, at most kMaxWeightedStripes) end together, as K
// links of (sum of the rates)/K each would; equal stripes wait for the
// slowest link.
agent::wire::Capacity slowestAgent(const SwitchLease& lease,
                                   const std::vector<std::shared_ptr<agent::AggClient>>& clients) {
  agent::wire::Capacity slow;
  auto lowest = [](uint32_t have, uint32_t v) { return v == 0 ? have : have == 0 ? v : std::min(have, v); };
  const std::vector<uint32_t> rates = linkRates(lease, clients);
  uint64_t link_sum = 0;
  for (size_t k = 0; k < clients.size(); ++k) {
    const agent::wire::Capacity& c = clients[k]->agent().capacity;
    slow.reduce_mbps = lowest(slow.reduce_mbps, c.reduce_mbps);
    slow.link_mbps = lowest(slow.link_mbps, rates[k]);
    slow.turnaround_us = std::max(slow.turnaround_us, c.turnaround_us);
    link_sum += rates[k];
  }
  if (agent::stripesWeighted(rates)) slow.link_mbps = uint32_t(link_sum / clients.size());
  return slow;
}

// Where a member sits in a tree (TreeLayout): the communicator's leaves
// are the leaf agents its ranks' nodes have, in the lease's (the map's)
// order. *size / *rank become the members at this member's leaf and its
// place there (participants in order: ranks, or nodes with leaders). One
// leaf: a plain group there (leaves = 1).
TreeLayout treePlace(const std::vector<JoinHello>& all, const NodeLeaders* leaders, int* size,
                     int* rank) {
  const size_t n = size_t(*size);
  std::vector<uint16_t> leaf_id(n);  // per participant: the lease's leaf + 1
  for (size_t p = 0; p < n; ++p) leaf_id[p] = all[size_t(leaders ? leaders->leaderOf(int(p)) : int(p))].leaf;
  std::vector<uint16_t> ids = leaf_id;
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  TreeLayout t;
  t.leaves = uint32_t(ids.size());
  t.leaf_of.resize(n);
  for (size_t p = 0; p < n; ++p)
    t.leaf_of[p] = uint32_t(std::find(ids.begin(), ids.end(), leaf_id[p]) - ids.begin());
  t.leaf = t.leaf_of[size_t(*rank)];
  if (t.leaves < 2) return t;
  t.pos.resize(n);
  t.first.assign(size_t(t.leaves) + 1, 0);
  for (uint32_t l = 0; l < t.leaves; ++l) {
    t.first[l] = t.placed.size();
    for (size_t p = 0; p < n; ++p)
      if (t.leaf_of[p] == l) {
        t.pos[p] = int(t.placed.size());
        t.placed.push_back(int(p));
      }
  }
  t.first[t.leaves] = n;
  *size = int(t.first[t.leaf + 1] - t.first[t.leaf]);
  *rank = int(size_t(t.pos[size_t(*rank)]) - t.first[t.leaf]);
  return t;
}

}  // namespace

namespace {

// A member's connections: one per agent of the lease (one stripe each), or
// for a tree lease one, to the leaf agent of this rank's node, or for a
// rail leader one, to its rail's agent (`only`, else -1). An error: some
// agent could not be reached (named); connected means to all of them.
Status connectAgents(const SwitchLease& lease, int domain, int only,
                     std::vector<std::shared_ptr<agent::AggClient>>* clients) {
  if (lease.tree && lease.leaf < 0) return Status(Code::kUnsupported, lease.tree_error);
  for (size_t k = 0; k < lease.agents.size(); ++k) {
    if (lease.tree && k != size_t(lease.leaf)) continue;
    if (only >= 0 && k != size_t(only)) continue;
    Result<std::shared_ptr<agent::AggClient>> c = switchClient(lease, k, domain);
    if (!c.ok()) return Status(c.status().code(), lease.agents[k] + ": " + c.status().message());
    clients->push_back(std::move(c.value()));
  }
  return Status::Ok();
}

// The one line (and the require error) of a join that did not happen on
// every rank: `why` is this rank's reason, `what` the line's prefix.
void reportUnavailable(CommGroup& comm, const SwitchLease& lease, bool first, const char* what,
                       const std::string& why) {
  if (first && lease.require) reportRequireFailure(lease, why);
  if (comm.rank() == 0)
    SWITCHAGG_LOG(first ? LogLevel::kInfo : LogLevel::kDebug, "coll",
                  "comm %s: switch path unavailable: %s%s", comm.name().c_str(), what,
                  why.c_str());
}

// The join at each connected agent, in the lease's order (the same on every
// rank). Every rank computes the same request (the lease's slots come from
// the agent's HELLO_ACK, the override from the job-wide environment). Half
// the lease: windows are taken per call, so this lets two communicators
// reduce at once (say the two halves of a split) before calls are refused
// busy; the whole lease gained nothing clear for one communicator (8 vs 4
// of 8 slots, 2 clients on loopback: 1 MiB 263-365 vs 298-385 MB/s, 8 MiB
// 345-419 vs 264-377 MB/s, inside run-to-run spread). An agent that
// predates per-call slots reserves at join: half keeps WORLD and one more
// communicator there, as before. The same id at every agent (ids are per
// lease, and each agent has its own lease). A tree group holds its window
// at the leaf and the spine for its whole life (no per-call busy): a
// quarter of the lease, so a few communicators of the job can each have
// one.
Status joinAgents(const SwitchLease& lease,
                  const std::vector<std::shared_ptr<agent::AggClient>>& clients, uint64_t group_id,
                  int size, int rank, const TreeLayout& tree, int only,
                  std::vector<std::unique_ptr<agent::AggGroup>>* groups) {
  const uint32_t share = tree.leaves > 1 ? 4 : 2;
  for (size_t k = 0; k < clients.size(); ++k) {
    const size_t agent_k = lease.tree ? size_t(lease.leaf) : only >= 0 ? size_t(only) : k;
    const uint32_t window = lease.window_request
                                ? lease.window_request
                                : std::max<uint32_t>(1, clients[k]->agent().max_window / share);
    agent::TreeJoin tj;
    if (tree.leaves > 1) {
      tj.parent_token_hex = lease.tokens[size_t(lease.root)];
      tj.leaf_index = tree.leaf;
      tj.leaves = tree.leaves;
    }
    Result<std::unique_ptr<agent::AggGroup>> group = clients[k]->join(
        group_id, size, rank, kJoinTimeoutMs, window, tree.leaves > 1 ? &tj : nullptr);
    if (!group.ok())
      return Status(group.status().code(),
                    lease.agents[agent_k] + ": " + group.status().message());
    groups->push_back(std::move(group.value()));
  }
  return Status::Ok();
}

// Rank 0's line, at the first join, when routed calls stay off.
void logNotRouted(CommGroup& comm, bool first, const TreeLayout& tree, bool routed) {
  if (!first || comm.rank() != 0 || routed) return;
  SA_INFO("coll",
          "comm %s: %s: MPI_Reduce, MPI_Reduce_scatter(_block), MPI_Allgather and MPI_Bcast "
          "stay with the previous module",
          comm.name().c_str(),
          tree.leaves > 1 ? "a leaf agent does not route calls through a tree (it predates them)"
                          : "the agent does not route calls (it predates them)");
}

// Rank 0's lines about a group every rank joined.
void logJoined(CommGroup& comm, const SwitchLease& lease, const NodeLeaders* leaders,
               const TreeLayout& tree, uint64_t group_id, const Joined& joined) {
  if (comm.rank() != 0) return;
  const size_t stripes = lease.tree ? 1 : lease.agents.size();
  // A tree member talks to its leaf only (rank 0's leaf, in the log).
  const std::string where =
      lease.tree && lease.leaf >= 0 ? lease.agents[size_t(lease.leaf)] : lease.agent;
  const agent::GroupInfo& info = joined.info;
  if (tree.leaves > 1)
    SA_INFO("coll", "comm %s: a tree over %u leaf agents and the spine %s", comm.name().c_str(),
            tree.leaves, lease.agents[size_t(lease.root)].c_str());
  if (leaders && leaders->rails() > 1)
    SA_INFO("coll",
            "comm %s: joined switch group %016" PRIx64 " at %s (%zu stripe(s), window %u x %zu "
            "bytes; %d rail leaders on each of %d nodes for %d ranks)",
            comm.name().c_str(), group_id, lease.agent.c_str(), stripes, info.window,
            info.slot_bytes, leaders->rails(), leaders->nodes(), comm.size());
  else if (leaders)
    SA_INFO("coll",
            "comm %s: joined switch group %016" PRIx64 " at %s (%zu stripe(s), window %u x %zu "
            "bytes; %d node leaders for %d ranks)",
            comm.name().c_str(), group_id, where.c_str(), stripes, info.window,
            info.slot_bytes, leaders->nodes(), comm.size());
  else
    SA_INFO("coll",
            "comm %s: joined switch group %016" PRIx64 " at %s (%zu stripe(s), window %u x %zu bytes)",
            comm.name().c_str(), group_id, where.c_str(), stripes, info.window,
            info.slot_bytes);
  const agent::wire::Capacity& agreed = joined.capacity;
  if (agreed.reduce_mbps > 0)
    SA_INFO("coll",
            "comm %s: the agent advertises %u MB/s reduction, link %u Mbit/s (0 = unknown), "
            "%u us turnaround",
            comm.name().c_str(), agreed.reduce_mbps, agreed.link_mbps, agreed.turnaround_us);
}

}  // namespace

Joined joinGroup(CommGroup& comm, const SwitchLease& lease, bool first, NodeLeaders* leaders) {
  // A non-leader opens no connection and agrees to whatever the others saw;
  // a rail leader connects to its rail's agent only.
  const bool member = !leaders || leaders->member();
  const int only = leaders && leaders->rails() > 1 ? leaders->rail() : -1;
  std::vector<std::shared_ptr<agent::AggClient>> clients;
  const Status connect_failure = member ? connectAgents(lease, comm.domain(), only, &clients)
                                 : lease.tree && lease.leaf < 0
                                     ? Status(Code::kUnsupported, lease.tree_error)
                                     : Status::Ok();
  JoinHello mine{};
  mine.connected = connect_failure.ok() ? 1 : 0;
  mine.nonce = comm.rank() == 0 ? randomNonce() : 0;
  mine.leaf = lease.tree && lease.leaf >= 0 ? uint16_t(lease.leaf + 1) : 0;
  if (member && connect_failure.ok()) {
    mine.capacity = slowestAgent(lease, clients);
    const std::vector<uint32_t> rates = linkRates(lease, clients);
    for (size_t k = 0; k < rates.size() && k < agent::kMaxWeightedStripes; ++k)
      mine.stripe_mbps[k] = rates[k];
  }
  std::vector<JoinHello> all(size_t(comm.size()));
  if (!comm.allgather(&mine, all.data(), sizeof mine).ok()) return {};
  for (const JoinHello& h : all) {
    if (h.connected) continue;
    reportUnavailable(comm, lease, first, "",
                      mine.connected ? "a rank cannot reach the agent"
                                     : connect_failure.toString());
    return {};
  }
  const uint64_t group_id = (all[0].nonce & ~uint64_t(0xFFFF)) | (comm.contextId() & 0xFFFF);
  // With node leaders the agent sees one member per node, by node index.
  int size = leaders ? leaders->nodes() : comm.size();
  int rank = leaders ? leaders->node() : comm.rank();
  TreeLayout tree = lease.tree ? treePlace(all, leaders, &size, &rank) : TreeLayout{};
  std::vector<std::unique_ptr<agent::AggGroup>> groups;
  const Status join_failure =
      joinAgents(lease, clients, group_id, size, rank, tree, only, &groups);
  std::unique_ptr<agent::StripedGroup> striped;
  if (member) {
    striped = std::make_unique<agent::StripedGroup>(std::move(clients), std::move(groups));
    if (!lease.tree && only < 0 && striped->stripes() <= agent::kMaxWeightedStripes)
      striped->setWeights(
          std::vector<uint32_t>(all[0].stripe_mbps, all[0].stripe_mbps + striped->stripes()));
    if (!lease.tree && only < 0) striped->setLabels(stripeLabels(lease));
  }
  // Bit 0: joined; bit 1: the member's agents all route (a non-leader has
  // no agent and does not veto). Routed collectives need every rank's bit 1;
  // rail leaders route nothing (every rank alike: the lease and layout are).
  const bool routes = !member || (join_failure.ok() && only < 0 && striped->routedSupported());
  uint8_t ok = join_failure.ok() ? uint8_t(1 | (routes ? 2 : 0)) : 0;
  std::vector<uint8_t> oks(size_t(comm.size()));
  const bool all_joined =
      comm.allgather(&ok, oks.data(), 1).ok() &&
      std::all_of(oks.begin(), oks.end(), [](uint8_t f) { return (f & 1) != 0; });
  if (!all_joined) {
    reportUnavailable(comm, lease, first, "join failed: ",
                      ok ? "another rank could not join" : join_failure.toString());
    return {};  // joined groups are left by their destructors
  }
  const bool all_route =
      std::all_of(oks.begin(), oks.end(), [](uint8_t f) { return (f & 2) != 0; });
  Joined joined{true, all_route, std::move(striped), all[0].capacity, {}, std::move(tree)};
  logNotRouted(comm, first, joined.tree, all_route);
  // The slowest stripe's geometry: the model's window and chunk.
  const agent::GroupInfo slowest = joined.group ? joined.group->slowestInfo() : agent::GroupInfo{};
  if (!leaders) joined.info = slowest;
  else if (!leaders->shareInfo(joined.group ? &slowest : nullptr, &joined.info).ok())
    return {};
  logJoined(comm, lease, leaders, joined.tree, group_id, joined);
  return joined;
}


}  // namespace switchagg::coll::switch_detail
