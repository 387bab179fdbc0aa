// Engine: trees (docs/agent-protocol.md "Trees"). A leaf agent serves the
// members of a group that are on its nodes; once they all joined it joins
// the parent agent itself as member `tree_index` of `tree_size` (a child
// agent: kJoinFlagUplink), and JOIN_ACKs its members only when the parent's
// JOIN_ACK came (window and chunk: the smaller of both agents', capabilities:
// what both reduce). Each chunk its members complete is reduced here in rank
// order, as for any group, and goes up as one CONTRIB from the slot's result
// buffer; the parent reduces the leaves' chunks in leaf order and its RESULT
// fills the slot's result, which then goes to the members as usual. So a
// result's order is fixed by the layout: members in rank order within each
// leaf, leaves in index order.
//
// Routed chunks ("Routed calls through a tree") go up the same way as one
// CONTRIB_ROUTED per chunk to the members' up-range (the leaf's members'
// pieces, if forwarded: checkTreeRoute), and the parent's RESULT must carry
// exactly the payload this leaf is owed (expectedFlags).
//
// Both levels hold the group's window for its whole life (pinned): a call
// one agent refused busy while another forwarded its chunks could not be
// taken back. Anything the parent says against the group (ABORT, ERROR), its
// connection failing or its silence past twice the member timeout aborts
// the leaf's group (kParentFailed), so members fail in bounded time; a leaf
// that ends its group (every member left, or an abort of its own) leaves the
// parent's group, which aborts the other leaves if a call was running.
#include <algorithm>
#include <cstring>

#include "group.h"
#include "switchagg/common/log.h"

namespace switchagg::agent {

using wire::Message;
using wire::MsgType;
using wire::Reason;

namespace {

// The RESULT flags the parent owes a leaf for what went up: a routed
// chunk's payload comes only to a leaf in its up-range that did not forward
// the whole chunk itself (the parent's rule for any routed group).
uint16_t expectedFlags(const Group& g, const Slot& s) {
  if (s.mode == 0) return 0;
  const bool forward = s.mode == wire::kModeForward;
  const bool in_up = g.tree_index >= s.up_lo && g.tree_index <= s.up_hi;
  const bool payload = in_up && !(forward && s.up_len == s.count);
  return uint16_t((forward ? wire::kResultForward : 0) | (payload ? 0 : wire::kResultNoPayload));
}

}  // namespace

bool AggregationEngine::joinTree(Group& g, PeerId from, const Message& m) {
  const bool tree = (m.flags & wire::kJoinFlagTree) != 0;
  if (g.joined == 0) {
    g.tree = tree;
    g.parent_token = m.parent_token;
    g.tree_index = m.tree_index;
    g.tree_size = m.tree_size;
    if (tree && !config_.has_parent) {
      const std::string why =
          "this agent has no parent (its [fabric] map and name give none): no tree groups";
      reject(from, m, Reason::kParentFailed, why);
      abortGroup(g, Reason::kParentFailed, why);
      return false;
    }
    return true;
  }
  if (tree == g.tree && (!tree || (m.parent_token == g.parent_token &&
                                   m.tree_index == g.tree_index && m.tree_size == g.tree_size)))
    return true;
  const std::string why = "rank " + std::to_string(m.rank) +
                          " joined with another tree placement than the group's first member";
  reject(from, m, Reason::kSizeMismatch, why);
  abortGroup(g, Reason::kSizeMismatch, why);
  return false;
}

void AggregationEngine::joinParent(Group& g, int64_t now_ms) {
  g.formed_ms = now_ms;
  g.up_key = groupKey(g.parent_token, g.id);
  g.has_up_key = by_up_.emplace(g.up_key, &g).second;
  if (!g.has_up_key) {  // the other group owns the parent's
    g.up_gone = true;
    return abortGroup(g, Reason::kDuplicateJoin,
                      "another group here joined the parent under the same lease and id");
  }
  // A leaf that tells its members WAITING asks the parent for it too, and
  // relays it (case 11 of "Waiting members"): members whose chunk waits at
  // the parent for another leaf hear that it waits, not silence.
  g.up_keepalive = config_.keepalive_ms > 0;
  if (!sendParentJoin(g)) {
    g.up_gone = true;
    abortGroup(g, Reason::kParentFailed, "the parent agent cannot be reached");
  }
}

bool AggregationEngine::sendParentJoin(Group& g) {
  Message j = joinMessage(MsgType::kJoin, g.parent_token, g, g.tree_size);
  j.rank = g.tree_index;
  // Routed calls go up as the leaf's own CONTRIB_ROUTED (to the leaves of
  // the up-range): the parent serves the leaves as a flat routed group.
  j.flags = wire::kJoinFlagUplink | (g.routed_aware ? wire::kJoinFlagRouted : 0) |
            (g.up_keepalive ? wire::kJoinFlagKeepalive : 0);
  return out_.sendUp(wire::encode(j), nullptr, 0, nullptr);
}

// The parent's WAITING for a chunk this leaf sent up and still waits for
// goes to the leaf's members that asked for WAITING: `count` is how many
// leaves the parent lacks, and `rank` the leaf's member count plus the
// lowest missing leaf's index (so a member tells "leaf L at the parent"
// from a member of its own leaf; capped below the decoder's bound). A
// WAITING for anything else (a chunk answered since, not sent up) is stale
// and ignored: it carries no data and changes nothing.
void AggregationEngine::relayWaiting(Group& g, const Message& m) {
  const Slot* waits = nullptr;
  for (const Slot& s : g.slots)
    if (s.up_pending && s.expect_chunk == m.chunk) waits = &s;
  if (!waits) return;
  Message w = m;  // the parent's WAITING: its chunk and missing count
  w.token = g.token;
  w.group_id = g.id;
  w.rank = uint32_t(std::min<uint64_t>(uint64_t(g.size) + m.rank, wire::kMaxGroupSize - 1));
  {
    std::lock_guard<std::mutex> lock(counters_mu_);
    ++counters_.waiting_relayed;
  }
  for (const Member& mem : g.members)
    if (mem.understands_waiting && !mem.left && mem.peer) out_.sendControl(mem.peer, wire::encode(w));
}

void AggregationEngine::parentJoined(Group& g, const Message& ack) {
  g.up_joined = true;
  // One window for both levels: the leaf forwards chunk c + window only
  // after the parent's result of chunk c, into the parent's same slot.
  const uint32_t window = std::min(g.grant.window, ack.window);
  const size_t held_credit = credit(g);  // the pinned group's, taken at formation
  const uint32_t old_window = g.grant.window;
  g.grant.window = window;
  g.grant.slot_bytes = std::min<size_t>(g.grant.slot_bytes, ack.slot_bytes);
  if (window < old_window || credit(g) < held_credit) {
    slots_.releaseSlots(g.job, old_window - window, held_credit - credit(g));
    g.slots.resize(window);
    publishSlots();
  }
  for (size_t i = 0; i < g.caps.mask.size(); ++i) g.caps.mask[i] &= ack.caps.mask[i];
  SA_INFO("agent", "group %llx of job %s: the parent agent took leaf %u of %u (window %u x %zu)",
          static_cast<unsigned long long>(g.id), g.job.c_str(), g.tree_index, g.tree_size,
          g.grant.window, g.grant.slot_bytes);
  sendMembersJoinAck(g);
}

// A routed chunk at a leaf, once every member's message is in (reduced:
// each sent the whole chunk, the decoder sees to that with an up-range):
// forwarded, the members' pieces tile one contiguous part of the chunk in
// rank order (maybe none), which goes up as the leaf's piece. Members here
// that want the payload need it from the parent (this leaf in the up-range)
// or have it here (the leaf forwarded the whole chunk). Else the group
// aborts route_mismatch: nothing went up.
bool AggregationEngine::checkTreeRoute(Group& g, Slot& s) {
  const std::string chunk = "chunk " + std::to_string(s.expect_chunk) + ": ";
  std::string why;
  s.up_off = s.up_len = 0;
  for (uint32_t r = 0; r < g.size && why.empty(); ++r) {
    if (s.mode == wire::kModeForward && s.piece_len[r] != 0) {
      if (s.up_len != 0 && s.piece_off[r] != s.up_off + s.up_len)
        why = "rank " + std::to_string(r) + "'s piece starts at element " +
              std::to_string(s.piece_off[r]) + ", the pieces before it end at " +
              std::to_string(s.up_off + s.up_len);
      if (s.up_len == 0) s.up_off = s.piece_off[r];
      s.up_len += s.piece_len[r];
    }
  }
  const bool here = (s.route_flags & wire::kRouteNoDest) == 0;
  const bool in_up = g.tree_index >= s.up_lo && g.tree_index <= s.up_hi;
  if (why.empty() && here && !in_up && !(s.mode == wire::kModeForward && s.up_len == s.count))
    why = "members of leaf " + std::to_string(g.tree_index) + " want it, but the up-range is leaves " +
          std::to_string(s.up_lo) + ".." + std::to_string(s.up_hi);
  if (why.empty()) return true;
  count(Reason::kRouteMismatch);
  abortGroup(g, Reason::kRouteMismatch, chunk + why);
  return false;
}

void AggregationEngine::sendUpward(Group& g, uint32_t slot, int64_t now_ms) {
  Slot& s = g.slots[slot];
  Message c = chunkMessage(s.mode ? MsgType::kContribRouted : MsgType::kContrib, g.parent_token,
                           g.id, s, slot);
  c.rank = g.tree_index;
  const size_t esize = dtypeSize(s.dtype);
  size_t bytes = size_t(s.count) * esize;
  const uint8_t* data = g.buffers->result(slot);
  if (s.mode) {
    // The parent's destinations are this chunk's up-range; forwarded, the
    // leaf's piece is what its members sent (assembled in the result).
    c.mode = s.mode;
    c.dest_lo = s.up_lo;
    c.dest_hi = s.up_hi;
    if (s.mode == wire::kModeForward) {
      c.piece_offset = s.up_len ? s.up_off : 0;
      data += size_t(s.up_off) * esize;
      bytes = size_t(s.up_len) * esize;
    }
  }
  s.up_pending = true;
  s.up_ms = now_ms;
  {
    std::lock_guard<std::mutex> lock(counters_mu_);
    counters_.bytes_up += bytes;
  }
  if (!out_.sendUp(wire::encode(c), bytes ? data : nullptr, bytes, g.buffers)) {
    g.up_gone = true;
    abortGroup(g, Reason::kParentFailed,
               "chunk " + std::to_string(c.chunk) + " cannot go up: the parent agent is gone");
  }
}

void AggregationEngine::parentResult(Group& g, const Message& m) {
  std::string why;
  if (m.slot >= g.grant.window) {
    why = "slot " + std::to_string(m.slot) + " beyond the window";
  } else {
    const Slot& s = g.slots[m.slot];
    if (!s.up_pending || m.chunk != s.expect_chunk)
      why = "chunk " + std::to_string(m.chunk) + " in slot " + std::to_string(m.slot) +
            ", which waits for " + (s.up_pending ? std::to_string(s.expect_chunk) : "nothing");
    else if (m.count != s.count || m.dtype != s.dtype || m.op != s.op ||
             m.result_flags != expectedFlags(g, s) ||
             m.payload_bytes !=
                 ((m.result_flags & wire::kResultNoPayload) ? 0 : size_t(s.count) * dtypeSize(s.dtype)))
      why = "chunk " + std::to_string(m.chunk) + " differs from what went up";
  }
  if (!why.empty()) {
    g.up_gone = true;  // it does not follow the protocol: leave it alone
    count(Reason::kParentFailed);
    return abortGroup(g, Reason::kParentFailed, "the parent agent sent a wrong RESULT: " + why);
  }
  Slot& s = g.slots[m.slot];
  if (m.payload_bytes) std::memcpy(g.buffers->result(m.slot), m.payload, m.payload_bytes);
  s.up_pending = false;
  sendResults(g, m.slot);
}

void AggregationEngine::leaveParent(Group& g) {
  if (!g.has_up_key) return;
  by_up_.erase(g.up_key);
  if (g.up_gone) return;
  Message l;
  l.type = MsgType::kLeave;
  l.token = g.parent_token;
  l.group_id = g.id;
  l.rank = g.tree_index;
  (void)out_.sendUp(wire::encode(l), nullptr, 0, nullptr);
}

void AggregationEngine::onParentMessage(const void* header, size_t header_bytes,
                                        const void* body, size_t body_bytes, int64_t now_ms) {
  now_ms_ = now_ms;
  Message m;
  const Reason r = wire::decode(header, header_bytes, body, body_bytes, &m);
  if (r != Reason::kNone) {
    SA_WARN("agent", "undecodable message from the parent agent (%s): ignored",
            wire::reasonName(r));
    return;
  }
  auto it = by_up_.find(groupKey(m.token, m.group_id));
  if (it == by_up_.end()) return;  // a group that ended here already
  Group& g = *it->second;
  switch (m.type) {
    case MsgType::kJoinAck:
      if (!g.up_joined && m.size == g.tree_size && m.rank == g.tree_index) return parentJoined(g, m);
      break;
    case MsgType::kResult:
      if (g.up_joined) return parentResult(g, m);
      break;
    case MsgType::kWaiting:
      if (g.up_joined) return relayWaiting(g, m);
      break;
    case MsgType::kError:
      // A parent that predates WAITING refuses the flag as malformed (the
      // group is not made there): join again without it.
      if (!g.up_joined && g.up_keepalive && m.reason == Reason::kMalformed) {
        g.up_keepalive = false;
        if (sendParentJoin(g)) return;
      }
      [[fallthrough]];
    case MsgType::kAbort:
      g.up_gone = true;
      return abortGroup(g, Reason::kParentFailed,
                        std::string("the parent agent ") +
                            (m.type == MsgType::kAbort ? "aborted the group" : "refused the leaf") +
                            " (" + wire::reasonName(m.reason) + "): " + m.text);
    default:
      break;
  }
  g.up_gone = true;
  count(Reason::kParentFailed);
  abortGroup(g, Reason::kParentFailed,
             std::string("the parent agent sent an unexpected message (type ") +
                 std::to_string(int(m.type)) + ")");
}

void AggregationEngine::onParentFailed(const std::string& why) {
  std::vector<Group*> hit;
  for (auto& [key, g] : by_up_) hit.push_back(g);
  for (Group* g : hit) {
    g->up_gone = true;
    abortGroup(*g, Reason::kParentFailed, "the parent agent's connection failed: " + why);
  }
}

bool AggregationEngine::tickTree(
    Group& g, int64_t now_ms, std::vector<std::pair<Group*, std::pair<Reason, std::string>>>* dead) {
  // Twice the member timeout: the parent's own (it names the silent leaf
  // or member) comes first when it is alive.
  const int64_t limit = 2 * config_.member_timeout_ms;
  if (!g.up_joined) {
    if (now_ms - g.formed_ms <= limit) return false;
    dead->push_back({&g,
                     {Reason::kParentFailed, "the parent agent did not answer the JOIN within " +
                                                 std::to_string(limit) + " ms"}});
    return true;
  }
  for (const Slot& s : g.slots) {
    if (!s.up_pending || now_ms - s.up_ms <= limit) continue;
    dead->push_back({&g,
                     {Reason::kParentFailed, "the parent agent did not return chunk " +
                                                 std::to_string(s.expect_chunk) + " within " +
                                                 std::to_string(limit) + " ms"}});
    return true;
  }
  return false;
}

}  // namespace switchagg::agent
