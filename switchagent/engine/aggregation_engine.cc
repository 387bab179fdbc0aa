// Engine: message dispatch, group membership (HELLO, JOIN, LEAVE), aborts,
// timeouts and counters. Contributions and reduction: engine_contrib.cc.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "group.h"
#include "switchagg/common/log.h"
#include "switchagg/common/reduce.h"

namespace switchagg::agent {

using wire::Message;
using wire::MsgType;
using wire::Reason;

AggregationEngine::AggregationEngine(const EngineConfig& config, LeaseLookup lookup,
                                     EngineOutput& out, ReducePool& pool)
    : config_(config),
      lookup_(std::move(lookup)),
      out_(out),
      pool_(pool),
      slots_(config.pool_slots, config.memory_bytes, config.slot_bytes, config.memory_account) {
  slots_.setInflightBytes(config.inflight_bytes);
  reduce_mbps_ = measureReduceMbps(config.slot_bytes, size_t(pool.threads()));
}

AggregationEngine::~AggregationEngine() = default;

void AggregationEngine::reject(PeerId to, const Message& m, Reason reason, const std::string& why) {
  count(reason);
  SA_DEBUG("agent", "rejected %s from peer %llu: %s", wire::reasonName(reason),
           static_cast<unsigned long long>(to), why.c_str());
  if (to == 0) return;
  Message e;
  e.type = MsgType::kError;
  e.token = m.token;
  e.group_id = m.group_id;
  e.chunk = m.chunk;
  e.reason = reason;
  e.text = why;
  out_.sendControl(to, wire::encode(e));
}

Group* AggregationEngine::findGroup(const wire::Token& token, uint64_t group_id) {
  auto it = groups_.find(groupKey(token, group_id));
  return it == groups_.end() ? nullptr : it->second.get();
}

void AggregationEngine::onPeerConnected() {
  std::lock_guard<std::mutex> lock(counters_mu_);
  ++counters_.clients_connected;
}

void AggregationEngine::onMessage(PeerId from, const void* header, size_t header_bytes,
                                  const void* body, size_t body_bytes, int64_t now_ms,
                                  uint64_t placed) {
  now_ms_ = now_ms;
  // A body received into a slot buffer: the reservation ends here, its
  // buffers held until the message is handled (engine_placement.cc).
  const std::shared_ptr<SlotBuffers> keep = placed ? takePlacement(placed) : nullptr;
  Message m;
  const Reason r = wire::decode(header, header_bytes, body, body_bytes, &m);
  if (r != Reason::kNone) {
    reject(from, m, r, std::string("undecodable message: ") + wire::reasonName(r));
    return;
  }
  switch (m.type) {
    case MsgType::kHello:
      handleHello(from, m);
      return;
    case MsgType::kJoin:
      // As an agent that predates JOIN flags: its decoder refused them.
      if ((!config_.join_flags && m.flags != 0) ||
          (!config_.routed && (m.flags & (wire::kJoinFlagRouted | wire::kJoinFlagTreeRouted))) ||
          (!config_.routed_trees && (m.flags & wire::kJoinFlagTreeRouted)) ||
          // (keepalives are newer than routed trees: refused with them)
          (!config_.routed_trees && (m.flags & wire::kJoinFlagTree) &&
           (m.flags & wire::kJoinFlagKeepalive)) ||
          ((config_.keepalive_ms <= 0 || !config_.routed) && (m.flags & wire::kJoinFlagKeepalive)))
        return reject(from, m, Reason::kMalformed,
                      std::string("undecodable message: ") + wire::reasonName(Reason::kMalformed));
      handleJoin(from, m, now_ms);
      return;
    case MsgType::kContrib:
      handleContrib(from, m, now_ms);
      return;
    case MsgType::kContribRouted:
      // As an agent before routed calls: its decoder stopped at the type.
      if (!config_.routed)
        return reject(from, Message(), Reason::kBadType,
                      std::string("undecodable message: ") + wire::reasonName(Reason::kBadType));
      handleContrib(from, m, now_ms);
      return;
    case MsgType::kLeave:
      handleLeave(from, m);
      return;
    case MsgType::kCapacity:
      if (config_.advertise_capacity) return handleCapacity(from, m);
      // Answer exactly as an agent that predates CAPACITY does: its decoder
      // stopped at the unknown type, so its ERROR carries no token.
      return reject(from, Message(), Reason::kBadType,
                    std::string("undecodable message: ") + wire::reasonName(Reason::kBadType));
    default:
      reject(from, m, Reason::kBadType, "the agent does not accept this message type");
  }
}

void AggregationEngine::handleHello(PeerId from, const Message& m) {
  auto lease = lookup_(m.token);
  if (!lease) return reject(from, m, Reason::kBadToken, "unknown or expired lease token");
  Message a;
  a.type = MsgType::kHelloAck;
  a.token = m.token;
  a.window = std::min<uint32_t>(lease->slots, wire::kMaxWindow);
  a.slot_bytes = static_cast<uint32_t>(slots_.slotBytes());
  a.caps = capTable();
  out_.sendControl(from, wire::encode(a));
}

void AggregationEngine::handleJoin(PeerId from, const Message& m, int64_t now_ms) {
  auto lease = lookup_(m.token);
  if (!lease) return reject(from, m, Reason::kBadToken, "unknown or expired lease token");
  Group* g = findGroup(m.token, m.group_id);
  if (!g) {
    size_t& held = groups_per_lease_[m.token];
    if (held >= config_.max_groups_per_lease) {
      return reject(from, m, Reason::kNoResource,
                    "the lease holds " + std::to_string(held) +
                        " groups already (data.max_groups_per_lease)");
    }
    ++held;
    auto owned = std::make_unique<Group>();
    g = owned.get();
    g->serial = next_serial_++;
    g->key = groupKey(m.token, m.group_id);
    g->job = lease->job;
    g->token = m.token;
    g->id = m.group_id;
    g->size = m.size;
    g->members.resize(m.size);
    g->created_ms = now_ms;
    groups_.emplace(g->key, std::move(owned));
    by_serial_[g->serial] = g;
    std::lock_guard<std::mutex> lock(counters_mu_);
    ++counters_.groups_created;
    ++counters_.groups_active;
    ++counters_.groups_by_job[g->job];
    // A map node: stays put; inserted under the lock counters() reads it under.
    g->bytes_in_job = &job_bytes_in_.try_emplace(g->job, 0).first->second;
  }
  if (g->size != m.size) {
    const std::string why =
        "member says size " + std::to_string(m.size) + ", group has " + std::to_string(g->size);
    reject(from, m, Reason::kSizeMismatch, why);
    return abortGroup(*g, Reason::kSizeMismatch, why);
  }
  Member& mem = g->members[m.rank];
  if (g->formed || mem.joined) {
    const std::string why = "rank " + std::to_string(m.rank) + " joined group twice";
    reject(from, m, Reason::kDuplicateJoin, why);
    return abortGroup(*g, Reason::kDuplicateJoin, why);
  }
  if (!joinTree(*g, from, m)) return;
  mem.peer = from;
  mem.joined = true;
  mem.window_request = m.window;
  mem.understands_busy = (m.flags & wire::kJoinFlagBusy) != 0;
  // A tree member routes only with the up-range (kJoinFlagTreeRouted too).
  mem.understands_routed = (m.flags & wire::kJoinFlagRouted) != 0 &&
                           (!g->tree || (m.flags & wire::kJoinFlagTreeRouted) != 0);
  mem.uplink = (m.flags & wire::kJoinFlagUplink) != 0;
  mem.understands_waiting = (m.flags & wire::kJoinFlagKeepalive) != 0;
  if (++g->joined == g->size) formGroup(*g);
}

void AggregationEngine::formGroup(Group& g) {
  auto lease = lookup_(g.token);
  if (!lease) return abortGroup(g, Reason::kLeaseRevoked, "lease expired or deleted");
  uint32_t want = 0;
  g.busy_aware = true;
  g.routed_aware = true;
  g.pinned = g.tree;
  for (const Member& mem : g.members) {
    if (mem.window_request && (want == 0 || mem.window_request < want)) want = mem.window_request;
    g.busy_aware = g.busy_aware && mem.understands_busy;
    g.routed_aware = g.routed_aware && mem.understands_routed;
    g.pinned = g.pinned || mem.uplink;
  }
  // The window is fixed now but takes slots only while a call runs
  // (activate), so every group of the lease may have the lease's slots.
  const SlotGrant grant = slots_.plan(lease->slots, want, g.size);
  if (grant.window == 0) {
    count(Reason::kNoResource);
    return abortGroup(g, Reason::kNoResource,
                      std::string("no aggregation slots (limit: ") + grant.limit + ")" +
                          creditNote(g, grant));
  }
  g.grant = grant;
  g.caps = capTable();
  g.lease_slots = lease->slots;
  g.formed = true;
  g.slots.resize(grant.window);
  for (uint32_t s = 0; s < grant.window; ++s) {
    g.slots[s].expect_chunk = s;
    g.slots[s].have.assign(g.size, 0);
    g.slots[s].receiving.assign(g.size, 0);
    g.slots[s].piece_off.assign(g.size, 0);
    g.slots[s].piece_len.assign(g.size, 0);
  }
  // A pinned group holds its window from now on: a tree cannot refuse a
  // call busy at one agent once another forwarded its chunks.
  if (g.pinned) {
    if (const char* short_of = activate(g)) {
      count(Reason::kNoResource);
      return abortGroup(g, Reason::kNoResource,
                        std::string("no aggregation slots for a tree group (limit: ") + short_of +
                            ", " + std::to_string(grant.window) + " needed)");
    }
  }
  SA_INFO("agent", "group %llx of job %s formed: %u members, window %u x %zu bytes%s",
          static_cast<unsigned long long>(g.id), g.job.c_str(), g.size, grant.window,
          grant.slot_bytes, g.tree ? " (a leaf of a tree: joining the parent)" : "");
  if (g.tree) return joinParent(g, now_ms_);
  sendMembersJoinAck(g);
}

void AggregationEngine::sendMembersJoinAck(Group& g) {
  Message a = joinMessage(MsgType::kJoinAck, g.token, g, g.size);
  a.slot_bytes = static_cast<uint32_t>(g.grant.slot_bytes);
  a.caps = g.caps;
  for (uint32_t r = 0; r < g.size; ++r) {
    a.rank = r;
    out_.sendControl(g.members[r].peer, wire::encode(a));
  }
}

void AggregationEngine::handleLeave(PeerId from, const Message& m) {
  Group* g = findGroup(m.token, m.group_id);
  if (!g) {
    const bool known = lookup_(m.token).has_value();
    return reject(from, m, known ? Reason::kUnknownGroup : Reason::kBadToken,
                  known ? "no such group" : "unknown or expired lease token");
  }
  if (m.rank >= g->size || g->members[m.rank].peer != from) {
    const Reason r = m.rank >= g->size ? Reason::kRankOutOfRange : Reason::kWrongMember;
    count(r);
    return abortGroup(*g, r, "LEAVE for rank " + std::to_string(m.rank) + " rejected");
  }
  Member& mem = g->members[m.rank];
  if (mem.left) return;  // LEAVE is idempotent
  // busy counts slots holding contributions, reduced-but-unsent ones too.
  if (!g->formed || g->busy > 0)
    return abortGroup(*g, Reason::kMemberLeft,
                      "rank " + std::to_string(m.rank) + " left while the group was in use");
  mem.left = true;
  if (++g->left == g->size) destroyGroup(*g);
}

void AggregationEngine::abortGroup(Group& g, Reason reason, const std::string& why) {
  SA_INFO("agent", "group %llx of job %s aborted (%s): %s", static_cast<unsigned long long>(g.id),
          g.job.c_str(), wire::reasonName(reason), why.c_str());
  Message a;
  a.type = MsgType::kAbort;
  a.token = g.token;
  a.group_id = g.id;
  a.reason = reason;
  a.text = why;
  const wire::Frame frame = wire::encode(a);
  for (const Member& mem : g.members)
    if (mem.joined && !mem.left && mem.peer != 0) out_.sendControl(mem.peer, frame);
  {
    std::lock_guard<std::mutex> lock(counters_mu_);
    ++counters_.groups_aborted;
  }
  destroyGroup(g);
}

void AggregationEngine::destroyGroup(Group& g) {
  ready_.erase(std::remove_if(ready_.begin(), ready_.end(),
                              [&](const std::pair<Group*, uint32_t>& e) { return e.first == &g; }),
               ready_.end());
  if (g.active) slots_.releaseSlots(g.job, g.grant.window, credit(g));
  held_now_ -= std::min(held_now_, g.held_bytes);  // what it held of the port's credit
  dropBuffers(g);
  {
    std::lock_guard<std::mutex> lock(counters_mu_);
    counters_.slots_busy -= std::min<uint64_t>(counters_.slots_busy, g.busy);
    counters_.slots_reserved = slots_.reserved();
    counters_.inflight_granted_bytes = slots_.inflightGranted();
    --counters_.groups_active;
    auto it = counters_.groups_by_job.find(g.job);
    if (it != counters_.groups_by_job.end() && --it->second == 0) counters_.groups_by_job.erase(it);
  }
  auto held = groups_per_lease_.find(g.token);
  if (held != groups_per_lease_.end() && --held->second == 0) {
    groups_per_lease_.erase(held);
    slots_.forget(g.job);
  }
  if (g.tree) leaveParent(g);
  by_serial_.erase(g.serial);
  groups_.erase(g.key);  // frees g; buffers live on in pending sends
}

void AggregationEngine::onPeerFailed(PeerId peer, const std::string& why) {
  std::vector<std::pair<Group*, uint32_t>> hit;
  for (auto& [key, g] : groups_)
    for (uint32_t r = 0; r < g->size; ++r)
      if (g->members[r].peer == peer && g->members[r].joined && !g->members[r].left) {
        hit.emplace_back(g.get(), r);
        break;
      }
  for (auto& [g, r] : hit) {
    g->members[r].peer = 0;  // gone: not told
    abortGroup(*g, Reason::kMemberFailed,
               "rank " + std::to_string(r) + "'s connection failed: " + why);
  }
  std::lock_guard<std::mutex> lock(counters_mu_);
  if (counters_.clients_connected) --counters_.clients_connected;
}

void AggregationEngine::revokeLease(const LeaseToken& token, const std::string& why) {
  std::vector<Group*> hit;
  for (auto& [key, g] : groups_)
    if (g->token == token) hit.push_back(g.get());
  for (Group* g : hit) abortGroup(*g, Reason::kLeaseRevoked, "lease revoked: " + why);
}

void AggregationEngine::abortAll(Reason reason, const std::string& why) {
  std::vector<Group*> all;
  for (auto& [key, g] : groups_) all.push_back(g.get());
  for (Group* g : all) abortGroup(*g, reason, why);
}

// Names the ranks a slot still waits for (at most 8), for the ABORT text.
static std::string missingRanks(const Group& g, const Slot& s) {
  std::string out;
  int listed = 0;
  for (uint32_t r = 0; r < g.size && listed < 8; ++r)
    if (!s.have[r]) out += (listed++ ? "," : "") + std::to_string(r);
  return out;
}

void AggregationEngine::tick(int64_t now_ms) {
  now_ms_ = now_ms;
  if (fault_exit_at_ms_ && now_ms >= fault_exit_at_ms_) {
    std::fprintf(stderr, "switchagg-agent: test fault: exiting after a partial result\n");
    std::fflush(stderr);
    std::_Exit(75);
  }
  if (late_ && now_ms >= late_->due_ms) {
    LateResult l = std::move(*late_);
    late_.reset();
    std::fprintf(stderr, "switchagg-agent: test fault: held chunk result sent late\n");
    out_.sendResult(l.to, l.header, l.header_bytes, l.payload, l.bytes, std::move(l.buffers),
                    l.serial, l.slot);
  }
  std::vector<std::pair<Group*, std::pair<Reason, std::string>>> dead;
  const bool check_leases = now_ms >= next_lease_check_ms_;
  if (check_leases) next_lease_check_ms_ = now_ms + config_.lease_check_ms;
  // Each lease looked up once per check; the scratch is kept across ticks
  // (a map built per check allocated on the data-plane thread every 250 ms).
  lease_checked_.clear();
  auto leaseAlive = [this](const LeaseToken& token) {
    for (const auto& [t, alive] : lease_checked_)
      if (t == token) return alive;
    lease_checked_.emplace_back(token, lookup_(token).has_value());
    return lease_checked_.back().second;
  };
  for (auto& [key, gp] : groups_) {
    Group& g = *gp;
    if (check_leases) {
      if (!leaseAlive(g.token)) {
        dead.push_back({&g, {Reason::kLeaseRevoked, "lease expired or deleted"}});
        continue;
      }
    }
    if (!g.formed) {
      if (now_ms - g.created_ms > config_.member_timeout_ms)
        dead.push_back(
            {&g,
             {Reason::kJoinTimeout, std::to_string(g.joined) + " of " + std::to_string(g.size) +
                                        " members joined within " +
                                        std::to_string(config_.member_timeout_ms) + " ms"}});
      continue;
    }
    if (g.tree && tickTree(g, now_ms, &dead)) continue;
    bool timed_out = false;
    for (const Slot& s : g.slots) {
      if (s.arrived == 0 || s.ready || now_ms - s.first_ms <= config_.member_timeout_ms) continue;
      dead.push_back(
          {&g,
           {Reason::kMemberTimeout, "chunk " + std::to_string(s.expect_chunk) + " waited " +
                                        std::to_string(config_.member_timeout_ms) +
                                        " ms for rank(s) " + missingRanks(g, s)}});
      timed_out = true;
      break;
    }
    if (!timed_out && config_.keepalive_ms > 0) tellWaiting(g, now_ms);
  }
  for (auto& [g, what] : dead) abortGroup(*g, what.first, what.second);
}

// Liveness for the members that wait (docs/agent-protocol.md "Waiting
// members"): once per keepalive interval, the group's oldest chunk that has
// waited that long for other members is named to each member that
// contributed to it. Only while the chunk is within member_timeout (past
// it, tick() aborts the group instead), so a member's extended bound never
// outlives the agent's own.
void AggregationEngine::tellWaiting(Group& g, int64_t now_ms) {
  if (now_ms - g.waiting_told_ms < config_.keepalive_ms) return;
  const Slot* oldest = nullptr;
  for (const Slot& s : g.slots)
    if (s.arrived > 0 && !s.ready && now_ms - s.first_ms >= config_.keepalive_ms &&
        (!oldest || s.expect_chunk < oldest->expect_chunk))
      oldest = &s;
  if (!oldest) return;
  g.waiting_told_ms = now_ms;
  Message w;
  w.type = MsgType::kWaiting;
  w.token = g.token;
  w.group_id = g.id;
  w.chunk = oldest->expect_chunk;
  w.count = g.size - oldest->arrived;
  for (uint32_t r = 0; r < g.size; ++r)
    if (!oldest->have[r]) {
      w.rank = r;
      break;
    }
  for (uint32_t r = 0; r < g.size; ++r) {
    const Member& mem = g.members[r];
    if (oldest->have[r] && mem.understands_waiting && !mem.left && mem.peer)
      out_.sendControl(mem.peer, wire::encode(w));
  }
}

}  // namespace switchagg::agent
