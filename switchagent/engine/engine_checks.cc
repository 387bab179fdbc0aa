// Engine: the checks a contribution passes before its group takes it
// (state of the group, then of its slot); pure, so placeContrib can ask them
// before a receive into the slot starts (engine_placement.cc).
#include <string>

#include "group.h"

namespace switchagg::agent {

using wire::Reason;
using wire::MsgType;
using wire::Message;

// Group-state checks for a CONTRIB: kNone, or what is wrong (and why).
Reason AggregationEngine::contribProblem(const Group& g, PeerId from, const Message& m,
                                         std::string& why) const {
  Reason r = Reason::kNone;
  if (m.rank >= g.size) {
    r = Reason::kRankOutOfRange;
    why = "rank " + std::to_string(m.rank) + " >= size " + std::to_string(g.size);
  } else if (g.members[m.rank].peer != from || !g.members[m.rank].joined) {
    r = Reason::kWrongMember;
    why = "rank " + std::to_string(m.rank) + " sent from a connection that did not join as it";
  } else if (!g.formed) {
    r = Reason::kNotJoined;
    why = "contribution before every member joined";
  } else if (g.left > 0) {
    r = Reason::kMemberLeft;
    why = "contribution after a member left the group";
  } else if (m.slot >= g.grant.window || m.chunk % g.grant.window != m.slot) {
    r = Reason::kSlotOutOfRange;
    why = "chunk " + std::to_string(m.chunk) + " in slot " + std::to_string(m.slot) + " (window " +
          std::to_string(g.grant.window) + ")";
  } else if (m.payload_bytes > g.grant.slot_bytes ||
             size_t(m.count) * dtypeSize(m.dtype) > g.grant.slot_bytes) {
    r = Reason::kOversize;
    why = std::to_string(size_t(m.count) * dtypeSize(m.dtype)) + "-byte chunk, slots hold " +
          std::to_string(g.grant.slot_bytes);
  } else if (m.type == MsgType::kContribRouted && !g.routed_aware) {
    r = Reason::kRouteMismatch;
    why = "routed contribution in a group whose members did not all join for routed calls";
  } else if (m.type == MsgType::kContribRouted &&
             ((m.route_flags & wire::kRouteUp) != 0) != g.tree) {
    r = Reason::kRouteMismatch;
    why = g.tree ? "routed contribution without an up-range in a tree group"
                 : "routed contribution with an up-range in a group that is no tree's leaf";
  } else if (m.type == MsgType::kContribRouted && g.tree && m.up_hi >= g.tree_size) {
    r = Reason::kRouteMismatch;
    why = "up-range " + std::to_string(m.up_lo) + ".." + std::to_string(m.up_hi) +
          " beyond the group's " + std::to_string(g.tree_size) + " leaves";
  } else if (m.type == MsgType::kContribRouted && m.dest_hi >= g.size) {
    r = Reason::kRouteMismatch;
    why = "destinations " + std::to_string(m.dest_lo) + ".." + std::to_string(m.dest_hi) +
          " beyond the group's " + std::to_string(g.size) + " members";
  }
  return r;
}

// The slot's checks, once the call holds its slots (admitCall).
Reason AggregationEngine::slotProblem(const Group& g, const Message& m, std::string& why) const {
  Reason r = Reason::kNone;
  if (m.chunk >= g.call_end) {
    r = Reason::kChunkOutOfWindow;
    why = "chunk " + std::to_string(m.chunk) + " beyond the call in progress (ends before " +
          std::to_string(g.call_end) + ")";
  } else {
    const Slot& s = g.slots[m.slot];
    // A receive straight into the member's buffer in flight (placeContrib)
    // was this member's chunk first on the wire: this one is its twin.
    if (s.have[m.rank] || s.receiving[m.rank] || m.chunk < s.expect_chunk) {
      r = Reason::kDuplicateContribution;
      why = "rank " + std::to_string(m.rank) + " sent chunk " + std::to_string(m.chunk) + " twice";
    } else if (m.chunk != s.expect_chunk) {
      r = Reason::kChunkOutOfWindow;
      why = "chunk " + std::to_string(m.chunk) + " while slot " + std::to_string(m.slot) +
            " collects chunk " + std::to_string(s.expect_chunk);
    } else if (s.arrived > 0 && (s.count != m.count || s.call_elems != m.call_elems)) {
      r = Reason::kCountMismatch;
      why = "rank " + std::to_string(m.rank) + " sent " + std::to_string(m.count) + " of " +
            std::to_string(m.call_elems) + " elements, others " + std::to_string(s.count) + " of " +
            std::to_string(s.call_elems);
    } else if (s.arrived > 0 &&
               (s.mode != modeOf(m) ||
                (s.mode != 0 && (s.dest_lo != m.dest_lo || s.dest_hi != m.dest_hi ||
                                 s.route_flags != m.route_flags || s.up_lo != m.up_lo ||
                                 s.up_hi != m.up_hi)))) {
      r = Reason::kRouteMismatch;
      auto route = [](uint8_t mode, uint32_t lo, uint32_t hi, uint8_t flags, uint32_t ulo,
                      uint32_t uhi) {
        std::string t = "mode " + std::to_string(mode) + ", to " +
                        ((flags & wire::kRouteNoDest) ? std::string("none")
                                                      : std::to_string(lo) + ".." + std::to_string(hi));
        if (flags & wire::kRouteUp) t += ", up to leaves " + std::to_string(ulo) + ".." + std::to_string(uhi);
        return t;
      };
      why = "rank " + std::to_string(m.rank) + " routes chunk " + std::to_string(m.chunk) + " (" +
            route(modeOf(m), m.dest_lo, m.dest_hi, m.route_flags, m.up_lo, m.up_hi) +
            "), others (" + route(s.mode, s.dest_lo, s.dest_hi, s.route_flags, s.up_lo, s.up_hi) +
            ")";
    } else if (s.arrived > 0 && (s.dtype != m.dtype || s.op != m.op)) {
      r = Reason::kOpMismatch;
      why = std::string("rank ") + std::to_string(m.rank) + " sent " + dtypeName(m.dtype) + "/" +
            opName(m.op) + ", others " + dtypeName(s.dtype) + "/" + opName(s.op);
    }
  }
  return r;
}

// On a problem: counts it, aborts the group and returns false.
bool AggregationEngine::checkContrib(Group& g, PeerId from, const Message& m) {
  std::string why;
  const Reason r = contribProblem(g, from, m, why);
  if (r == Reason::kNone) return true;
  count(r);
  abortGroup(g, r, why);
  return false;
}

bool AggregationEngine::checkSlot(Group& g, const Message& m) {
  std::string why;
  const Reason r = slotProblem(g, m, why);
  if (r == Reason::kNone) return true;
  count(r);
  abortGroup(g, r, why);
  return false;
}

}  // namespace switchagg::agent
