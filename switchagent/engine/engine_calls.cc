// Engine: per-call slot use. A formed group holds no slots while idle; the
// first contribution of a call activates it (the window's slots from the
// lease and the pool, and slot buffers within the memory budget) until the
// call's last result is sent. If they are not free right then the call is
// refused - never waited for: waiting while holding could deadlock two
// communicators that share a rank - and each member contributing to it is
// told ERROR(busy) once; its chunks are dropped and the group lives on.
// Semantics: docs/agent-protocol.md ("Per-call slots").
#include <algorithm>

#include "group.h"
#include "switchagg/common/log.h"

namespace switchagg::agent {

using wire::Message;
using wire::Reason;

void AggregationEngine::publishSlots() {
  std::lock_guard<std::mutex> lock(counters_mu_);
  counters_.slots_reserved = slots_.reserved();
  counters_.inflight_granted_bytes = slots_.inflightGranted();
  counters_.inflight_granted_max = slots_.inflightGrantedMax();
}

std::string AggregationEngine::creditNote(const Group& g, const SlotGrant& grant) const {
  if (std::string(grant.limit) != "inflight") return "";
  return ": data.inflight_bytes " + std::to_string(config_.inflight_bytes) + " cannot hold one " +
         std::to_string(SlotPool::kMinSlotBytes) + "-byte chunk of each of " +
         std::to_string(g.size) + " members";
}

size_t AggregationEngine::credit(const Group& g) {
  return SlotPool::creditFor(g.grant.window, g.size, g.grant.slot_bytes);
}

void AggregationEngine::dropBuffers(Group& g) {
  // A send still reading a result keeps its memory alive, and counted
  // against the budget until it lets go (SlotBuffers' account).
  g.buffers.reset();
}

bool AggregationEngine::allocateBuffers(Group& g) {
  const size_t need = SlotBuffers::bytesFor(g.grant.window, g.size, g.grant.slot_bytes);
  while (!slots_.memoryFits(need)) {
    Group* lru = nullptr;
    for (auto& [key, other] : groups_)
      if (!other->active && other->buffers && (!lru || other->last_use < lru->last_use))
        lru = other.get();
    if (!lru) return false;
    dropBuffers(*lru);
  }
  g.buffers =
      SlotBuffers::allocate(g.grant.window, g.size, g.grant.slot_bytes, slots_.memoryAccount(),
                            slots_.mapper(), slots_.mappedAccount());
  return g.buffers != nullptr;
}

const char* AggregationEngine::activate(Group& g) {
  if (const char* short_of = slots_.acquire(g.job, g.lease_slots, g.grant.window, credit(g)))
    return short_of;
  // An idle group keeps its buffers while the budget allows: a call then
  // costs no allocation and no page faults.
  if (!g.buffers && !allocateBuffers(g)) {
    slots_.releaseSlots(g.job, g.grant.window, credit(g));
    return "memory";
  }
  g.active = true;
  publishSlots();
  return nullptr;
}

void AggregationEngine::endPinnedCall(Group& g) {
  g.in_call = false;
  g.next_call = g.call_end;
  g.last_use = ++use_clock_;
}

void AggregationEngine::deactivate(Group& g) {
  g.in_call = false;
  g.active = false;
  g.next_call = g.call_end;
  g.last_use = ++use_clock_;
  slots_.releaseSlots(g.job, g.grant.window, credit(g));
  publishSlots();
}

AggregationEngine::ChunkFate AggregationEngine::admitCall(Group& g, PeerId from,
                                                        const Message& m) {
  Member& mem = g.members[m.rank];
  mem.next_chunk = std::max(mem.next_chunk, m.chunk + 1);
  for (RefusedCall& rc : g.refused) {
    if (m.chunk < rc.begin || m.chunk >= rc.end) continue;
    if (!rc.told[m.rank]) {
      rc.told[m.rank] = 1;
      reject(from, m, Reason::kBusy,
             "chunks " + std::to_string(rc.begin) + ".." + std::to_string(rc.end - 1) +
                 " refused: no free aggregation slots when the call began");
    }
    return ChunkFate::kDropped;
  }
  // checkSlot catches chunks outside the call.
  if (g.pinned ? g.in_call : g.active) return ChunkFate::kProceed;
  if (m.chunk != g.next_call) {
    const Reason r = m.chunk < g.next_call ? Reason::kDuplicateContribution
                                           : Reason::kChunkOutOfWindow;
    count(r);
    abortGroup(g, r,
               "rank " + std::to_string(m.rank) + " sent chunk " + std::to_string(m.chunk) +
                   " while the group's next call starts at chunk " + std::to_string(g.next_call));
    return ChunkFate::kAborted;
  }
  // The call's first chunk (every member sends its call's chunks in order):
  // a full chunk unless it is the whole call, so it tells the call's range.
  const uint64_t n = m.count >= m.call_elems ? 1 : (m.call_elems + m.count - 1) / m.count;
  const char* short_of = g.pinned ? nullptr : activate(g);
  if (!short_of) {
    g.in_call = true;
    g.call_end = m.chunk + n;
    g.call_left = n;
    // Slot s collects the call's chunks that are s mod window.
    const uint32_t w = g.grant.window;
    for (uint32_t s = 0; s < w; ++s)
      g.slots[s].expect_chunk = m.chunk + (s + w - uint32_t(m.chunk % w)) % w;
    return ChunkFate::kProceed;
  }
  g.next_call = m.chunk + n;
  const bool credit_short = std::string(short_of) == "inflight";
  const std::string why =
      credit_short ? "no free credit at the agent's port for a call (limit: inflight, " +
                         std::to_string(credit(g)) + " bytes needed, " +
                         std::to_string(slots_.inflightGranted()) + " granted to calls in progress)"
                   : std::string("no free aggregation slots for a call (limit: ") + short_of +
                         ", " + std::to_string(g.grant.window) + " needed)";
  if (!g.busy_aware) {  // an older client would take ERROR(busy) for a broken agent
    count(Reason::kNoResource);
    abortGroup(g, Reason::kNoResource, why);
    return ChunkFate::kAborted;
  }
  // Forget refused calls every member has moved past (a member's chunks
  // arrive in order, so none of theirs is still on the way).
  uint64_t floor = UINT64_MAX;
  for (const Member& mm : g.members) floor = std::min(floor, mm.next_chunk);
  g.refused.erase(std::remove_if(g.refused.begin(), g.refused.end(),
                                 [&](const RefusedCall& rc) { return rc.end <= floor; }),
                  g.refused.end());
  RefusedCall rc;
  rc.begin = m.chunk;
  rc.end = m.chunk + n;
  rc.told.assign(g.size, 0);
  rc.told[m.rank] = 1;
  g.refused.push_back(std::move(rc));
  SA_DEBUG("agent", "group %llx of job %s: call at chunk %llu refused (busy): %s",
           static_cast<unsigned long long>(g.id), g.job.c_str(),
           static_cast<unsigned long long>(m.chunk), why.c_str());
  reject(from, m, Reason::kBusy, why);
  return ChunkFate::kDropped;
}

}  // namespace switchagg::agent
