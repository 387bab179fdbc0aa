// Engine: rendezvous contributions received straight into their slot
// (docs/agent-protocol.md "Received into the slot"). Before the receive
// starts, placeContrib asks the checks the message will meet once it is
// delivered (engine_checks.cc) without acting on them; if they pass, the
// member's contribution buffer of the chunk's slot is reserved
// (Slot::receiving) and its buffers held, so the body lands where the fold
// or the wait would have copied it. A reserved buffer is read by nobody:
// folds and passes read only members that arrived, and a second message
// for it is a duplicate (engine_checks.cc). The reservation ends when the
// message is delivered (onMessage, placed) or the receive fails
// (releasePlacement); the group may be gone by then: the buffers were
// held, and a delivered message meets the group state of that moment.
#include <string>

#include "group.h"

namespace switchagg::agent {

using wire::Message;
using wire::MsgType;
using wire::Reason;

AggregationEngine::Placement AggregationEngine::placeContrib(PeerId from, const void* header,
                                                             size_t header_bytes,
                                                             size_t body_bytes) {
  const auto* h = static_cast<const uint8_t*>(header);
  if (!h || header_bytes < wire::kCommonHeaderBytes || body_bytes == 0) return {};
  const uint8_t type = h[5];  // magic (4), version (1), type
  if (type != uint8_t(MsgType::kContrib) && type != uint8_t(MsgType::kContribRouted)) return {};
  if (type == uint8_t(MsgType::kContribRouted) && !config_.routed) return {};
  // A chunk header's checks read only the body's size: `header` stands in
  // for the body not received yet.
  Message m;
  if (wire::decode(header, header_bytes, header, body_bytes, &m) != Reason::kNone) return {};
  Group* g = findGroup(m.token, m.group_id);
  if (!g) return {};
  std::string why;
  if (contribProblem(*g, from, m, why) != Reason::kNone) return {};
  // Only chunks of the call that holds its slots now (admitCall's).
  if (!(g->pinned ? g->in_call : g->active) || !g->buffers) return {};
  for (const RefusedCall& rc : g->refused)
    if (m.chunk >= rc.begin && m.chunk < rc.end) return {};
  if (slotProblem(*g, m, why) != Reason::kNone) return {};
  Slot& s = g->slots[m.slot];
  s.receiving[m.rank] = 1;
  uint32_t i;
  if (!reserved_free_.empty()) {
    i = reserved_free_.back();
    reserved_free_.pop_back();
  } else {
    i = static_cast<uint32_t>(reserved_.size());
    reserved_.emplace_back();
  }
  Reserved& r = reserved_[i];
  r.serial = g->serial;
  r.chunk = m.chunk;
  r.slot = m.slot;
  r.rank = m.rank;
  r.buffers = g->buffers;
  return {g->buffers->contribution(m.slot, m.rank), uint64_t(i) + 1};
}

std::shared_ptr<SlotBuffers> AggregationEngine::takePlacement(uint64_t cookie) {
  if (cookie == 0 || cookie > reserved_.size() || !reserved_[cookie - 1].buffers) return nullptr;
  Reserved& r = reserved_[cookie - 1];
  std::shared_ptr<SlotBuffers> held = std::move(r.buffers);
  auto it = by_serial_.find(r.serial);
  if (it != by_serial_.end()) {
    Slot& s = it->second->slots[r.slot];
    if (s.expect_chunk == r.chunk) s.receiving[r.rank] = 0;
  }
  reserved_free_.push_back(static_cast<uint32_t>(cookie - 1));
  return held;
}

void AggregationEngine::releasePlacement(uint64_t cookie) {
  // The receive ended without a message (the member died, its connection
  // closed): whatever landed is never read; the buffers go (and leave the
  // memory budget) unless the group still holds them.
  (void)takePlacement(cookie);
}

}  // namespace switchagg::agent
