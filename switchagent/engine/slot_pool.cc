#include "slot_pool.h"

#include "switchagg/agent/wire.h"

#include <algorithm>
#include <cstdlib>
#include <new>

namespace switchagg::agent {

std::shared_ptr<SlotBuffers> SlotBuffers::allocate(uint32_t window, uint32_t members,
                                                   size_t slot_bytes, MemoryAccount account,
                                                   const MemoryMapper* mapper,
                                                   MemoryAccount mapped) {
  std::shared_ptr<SlotBuffers> b(new (std::nothrow) SlotBuffers());
  if (!b || window == 0 || members == 0 || slot_bytes % 64 != 0) return nullptr;
  b->window_ = window;
  b->members_ = members;
  b->slot_bytes_ = slot_bytes;
  // aligned_alloc needs a multiple of the alignment: slot_bytes is one.
  b->base_ = static_cast<uint8_t*>(std::aligned_alloc(64, b->bytes()));
  b->headers_.reset(new (std::nothrow) uint8_t[window * kHeaderStride]);
  if (!b->base_ || !b->headers_) return nullptr;
  if (account) account->fetch_add(b->bytes(), std::memory_order_relaxed);
  b->account_ = std::move(account);
  // Mapped once, for the buffers' life (an idle group keeps them).
  if (mapper && *mapper) b->mapping_ = (*mapper)(b->base_, b->bytes());
  if (b->mapping_ && mapped) {
    mapped->fetch_add(b->bytes(), std::memory_order_relaxed);
    b->mapped_ = std::move(mapped);
  }
  return b;
}

SlotBuffers::~SlotBuffers() {
  mapping_.reset();  // unregistered before the memory goes
  if (mapped_) mapped_->fetch_sub(bytes(), std::memory_order_relaxed);
  if (account_) account_->fetch_sub(bytes(), std::memory_order_relaxed);
  std::free(base_);
}

SlotPool::SlotPool(size_t pool_slots, size_t memory_bytes, size_t slot_bytes,
                   MemoryAccount memory)
    : pool_slots_(pool_slots),
      memory_bytes_(memory_bytes),
      slot_bytes_(std::max<size_t>(kMinSlotBytes, slot_bytes / 64 * 64)) {
  if (memory) memory_ = std::move(memory);
}

size_t SlotPool::reservedBy(const std::string& lease) const {
  auto it = by_lease_.find(lease);
  return it == by_lease_.end() ? 0 : it->second;
}

SlotGrant SlotPool::plan(uint32_t lease_slots, uint32_t want, uint32_t members) const {
  SlotGrant g;
  size_t window = want == 0 ? lease_slots : std::min<size_t>(want, lease_slots);
  window = std::min<size_t>(window, wire::kMaxWindow);
  g.limit = "lease";
  if (pool_slots_ != 0 && pool_slots_ < window) {
    window = pool_slots_;
    g.limit = "pool";
  }
  if (window == 0) return g;
  const size_t per_chunk = static_cast<size_t>(members) + 1;
  size_t bytes = slot_bytes_;
  if (window * per_chunk * bytes > memory_bytes_) {
    g.limit = "memory";
    window = std::max<size_t>(1, memory_bytes_ / (per_chunk * bytes));
    if (window * per_chunk * bytes > memory_bytes_) bytes = memory_bytes_ / per_chunk / 64 * 64;
    if (bytes < kMinSlotBytes) return SlotGrant{0, 0, "memory"};
  }
  // The port's credit: one call's members x window x chunk must fit it.
  // Whole chunks while a window of 2 fits; then smaller chunks at 2 (the
  // arrival of one overlaps the result of the other); a window of 1 last.
  if (inflight_bytes_ != 0 && creditFor(uint32_t(window), members, bytes) > inflight_bytes_) {
    g.limit = "inflight";
    const size_t chunk = bytes;
    const size_t whole = inflight_bytes_ / (size_t{members} * chunk);
    if (whole >= kCreditWindow) {
      window = std::min(window, whole);
    } else {
      window = std::min(window, kCreditWindow);
      bytes = std::min(bytes, inflight_bytes_ / (size_t{members} * window) / 64 * 64);
      if (bytes < kMinSlotBytes && window > 1) {
        window = 1;
        bytes = std::min(chunk, inflight_bytes_ / members / 64 * 64);
      }
    }
    if (bytes < kMinSlotBytes) return SlotGrant{0, 0, "inflight"};
  }
  g.window = static_cast<uint32_t>(window);
  g.slot_bytes = bytes;
  return g;
}

const char* SlotPool::acquire(const std::string& lease, uint32_t lease_slots, uint32_t window,
                              size_t credit) {
  if (reservedBy(lease) + window > lease_slots) return "lease";
  if (pool_slots_ != 0 && reserved_ + window > pool_slots_) return "pool";
  if (inflight_bytes_ != 0 && granted_ + credit > inflight_bytes_) return "inflight";
  granted_ += credit;
  granted_max_ = std::max(granted_max_, granted_);
  reserved_ += window;
  by_lease_[lease] += window;
  return nullptr;
}

void SlotPool::releaseSlots(const std::string& lease, uint32_t window, size_t credit) {
  reserved_ -= std::min<size_t>(reserved_, window);
  granted_ -= std::min(granted_, credit);
  auto it = by_lease_.find(lease);
  if (it == by_lease_.end()) return;
  // A zero entry stays (no map node freed and allocated again per call)
  // until the lease's last group ends (forget).
  it->second -= std::min<size_t>(it->second, window);
}

void SlotPool::forget(const std::string& lease) {
  auto it = by_lease_.find(lease);
  if (it != by_lease_.end() && it->second == 0) by_lease_.erase(it);
}

}  // namespace switchagg::agent
