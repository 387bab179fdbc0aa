// Engine: a reduced chunk's RESULT to its members, from the slot's result
// buffer (the sends hold the group's buffers until they complete), and the
// sends' completions (sends_pending: the result buffer is written again
// only once every send of the previous chunk is done). The test fault
// points (EngineConfig::test_partial_result) act here.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "group.h"

namespace switchagg::agent {

using wire::Message;
using wire::MsgType;

void AggregationEngine::sendResults(Group& g, uint32_t slot) {
  Slot& s = g.slots[slot];
  const size_t bytes = static_cast<size_t>(s.count) * dtypeSize(s.dtype);
  Message m = chunkMessage(MsgType::kResult, g.token, g.id, s, slot);
  if (s.mode == wire::kModeForward) m.result_flags = wire::kResultForward;
  const wire::Frame f = wire::encode(m);
  uint8_t* header = g.buffers->resultHeader(slot);
  std::memcpy(header, f.header.data(), f.header_bytes);
  // Routed: the members outside [dest_lo, dest_hi] get the header alone.
  const uint32_t lo = s.dest_lo, hi = s.dest_hi;
  const bool none = (s.route_flags & wire::kRouteNoDest) != 0;  // a tree leaf's: none here
  const bool forwarded = s.mode == wire::kModeForward;
  uint8_t* empty = g.buffers->emptyResultHeader(slot);
  if (s.mode != 0) {
    m.result_flags |= wire::kResultNoPayload;
    const wire::Frame e = wire::encode(m);
    std::memcpy(empty, e.header.data(), e.header_bytes);
  }
  // A member that forwarded the whole chunk has it already: header only
  // (the bcast root, an allgather block's owner), so its link carries only
  // what it lacks.
  auto gets = [&](uint32_t r) {
    return !none && r >= lo && r <= hi && !(forwarded && s.piece_len[r] == s.count);
  };
  uint32_t dests = 0;
  for (uint32_t r = 0; r < g.size; ++r) dests += gets(r) ? 1 : 0;
  // The slot collects its next chunk from now on; the result buffer stays
  // busy until every send completed (sends_pending), see reduceReady.
  s.expect_chunk += g.grant.window;
  held_now_ -= std::min(held_now_, s.arrived_bytes);
  g.held_bytes -= std::min(g.held_bytes, s.arrived_bytes);
  s.arrived_bytes = 0;
  s.arrived = 0;
  s.folded = 0;
  s.ready = false;
  std::fill(s.have.begin(), s.have.end(), 0);
  --g.busy;
  s.sends_pending = g.size;
  {
    std::lock_guard<std::mutex> lock(counters_mu_);
    if (counters_.slots_busy) --counters_.slots_busy;
    ++counters_.chunks_reduced;
    if (!forwarded) counters_.bytes_reduced += bytes * g.size;
    counters_.bytes_out += bytes * dests;
  }
  if (--g.call_left == 0) {
    if (g.pinned) endPinnedCall(g);
    else deactivate(g);  // its sends keep the buffers they read
  }
  const uint64_t serial = g.serial;
  uint32_t send_to = g.size;
  uint32_t skip = EngineConfig::kNoMissMember;  // miss:N:M: the member left out
  bool wedge = false;                           // wedge:N:MS, after the sends
  if (config_.test_partial_result && ++results_sent_ == config_.test_partial_result) {
    fault_fired_ = true;
    fault_serial_ = serial;
    fault_slot_ = slot;
    const auto n = static_cast<unsigned long long>(results_sent_);
    static std::atomic<bool> wedged{false};  // once per process: one thread of the agent
    if (config_.test_wedge_ms > 0) {
      wedge = !wedged.exchange(true);
      if (wedge)
        std::fprintf(stderr,
                     "switchagg-agent: test fault: data-plane thread wedged for %lld ms after "
                     "chunk result %llu\n",
                     static_cast<long long>(config_.test_wedge_ms), n);
    } else if (config_.test_revoke) {
      revoke_ = g.token;  // sent to every member; the lease goes before the next reduction
      std::fprintf(stderr,
                   "switchagg-agent: test fault: lease revoked after chunk result %llu, "
                   "%llu chunk(s) of its call left\n",
                   n, static_cast<unsigned long long>(g.call_left));
    } else if (config_.test_miss_member == EngineConfig::kNoMissMember) {
      send_to = 1;  // the test fault: member 0 only
      s.sends_pending = 1;
      std::fprintf(stderr, "switchagg-agent: test fault: chunk result %llu sent to member 0 only\n",
                   n);
    } else if (config_.test_miss_member < g.size && config_.test_late_ms > 0) {
      skip = config_.test_miss_member;  // that one's send held (late_), counted pending
      const bool full = gets(skip);
      late_ = LateResult{g.members[skip].peer, full ? header : empty, f.header_bytes,
                         full ? g.buffers->result(slot) : nullptr, full ? bytes : 0, g.buffers,
                         serial, slot, now_ms_ + config_.test_late_ms};
      std::fprintf(stderr,
                   "switchagg-agent: test fault: chunk result %llu to member %u held for %lld ms\n",
                   n, skip, static_cast<long long>(config_.test_late_ms));
    } else if (config_.test_miss_member < g.size) {
      skip = config_.test_miss_member;  // every member but that one
      s.sends_pending = g.size - 1;
      std::fprintf(stderr, "switchagg-agent: test fault: chunk result %llu not sent to member %u\n",
                   n, skip);
    } else {
      std::fprintf(stderr,
                   "switchagg-agent: test fault: chunk result %llu: no member %u in a group of %u, "
                   "sent to all\n",
                   n, config_.test_miss_member, g.size);
    }
  }
  for (uint32_t r = 0; r < send_to; ++r) {
    if (r == skip) continue;
    if (gets(r))
      out_.sendResult(g.members[r].peer, header, f.header_bytes, g.buffers->result(slot), bytes,
                      g.buffers, serial, slot);
    else
      out_.sendResult(g.members[r].peer, empty, f.header_bytes, nullptr, 0, g.buffers, serial,
                      slot);
  }
  if (wedge) std::this_thread::sleep_for(std::chrono::milliseconds(config_.test_wedge_ms));
}

void AggregationEngine::sendDone(uint64_t group_serial, uint32_t slot) {
  if (fault_fired_ && config_.test_partial_exit && group_serial == fault_serial_ &&
      slot == fault_slot_ && fault_exit_at_ms_ == 0)
    fault_exit_at_ms_ = now_ms_ + 100;
  auto it = by_serial_.find(group_serial);
  if (it == by_serial_.end()) return;  // group gone; its buffers die with the send
  Slot& s = it->second->slots[slot];
  if (s.sends_pending) --s.sends_pending;
}

}  // namespace switchagg::agent
