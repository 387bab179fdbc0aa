// SlotPool: the agent's aggregation slots, modelled on a switch's register
// pool (SwitchML). A slot holds one in-flight chunk of one group: every
// member's contribution (so the reduction can run in rank order, which makes
// results independent of arrival order) plus the result being sent back.
//
// A group's window W (and chunk size) is fixed when it forms (plan), but it
// holds slots only while a call of it is in progress: the call's first
// contribution takes W slots from its lease's slots and from the pool
// (acquire), the call's last result gives them back (releaseSlots). So a
// job's slots serve whichever of its communicators is reducing. Slot memory
// is accounted separately (addMemory/subMemory): the engine keeps an idle
// group's buffers while the budget allows, so a call costs no allocation.
// Worker-thread only: not thread-safe.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

namespace switchagg::agent {

// Bytes of slot buffers alive, shared by the pool and every buffer: a
// buffer counts from its allocation until its last holder lets it go, which
// may be a send still reading an aborted group's result.
using MemoryAccount = std::shared_ptr<std::atomic<size_t>>;

// Registers a buffer with the data plane's transport (ucp_mem_map) so an
// RDMA transport can place received data in it; the handle unregisters it
// when the last copy goes. nullptr: not registered (the buffer works
// unregistered: the transport stages through its own memory).
using MemoryMapper = std::function<std::shared_ptr<void>(void* data, size_t bytes)>;

// Buffers of one group: window x (members contributions + 1 result), each
// slot_bytes, 64-byte aligned, in one allocation. Shared with the sends that
// still read a result, so an aborted group's memory outlives its last send,
// and stays in `account` until then (the budget is what is really held).
class SlotBuffers {
 public:
  static std::shared_ptr<SlotBuffers> allocate(
      uint32_t window, uint32_t members, size_t slot_bytes,
      MemoryAccount account = nullptr,  // nullptr if no memory
      const MemoryMapper* mapper = nullptr, MemoryAccount mapped = nullptr);
  bool mapped() const { return mapping_ != nullptr; }
  ~SlotBuffers();
  SlotBuffers(const SlotBuffers&) = delete;
  SlotBuffers& operator=(const SlotBuffers&) = delete;

  uint8_t* contribution(uint32_t slot, uint32_t rank) const {
    return base_ + (static_cast<size_t>(slot) * (members_ + 1) + rank) * slot_bytes_;
  }
  uint8_t* result(uint32_t slot) const { return contribution(slot, members_); }
  size_t bytes() const { return bytesFor(window_, members_, slot_bytes_); }
  // What allocate() takes for this geometry (before it is asked).
  static size_t bytesFor(uint32_t window, uint32_t members, size_t slot_bytes) {
    return static_cast<size_t>(window) * (static_cast<size_t>(members) + 1) * slot_bytes;
  }
  // RESULT headers must outlive their sends too: per slot the one with the
  // payload and (routed chunks) the header-only one for other members.
  uint8_t* resultHeader(uint32_t slot) const { return headers_.get() + slot * kHeaderStride; }
  uint8_t* emptyResultHeader(uint32_t slot) const { return resultHeader(slot) + kHeaderStride / 2; }

  static constexpr size_t kHeaderStride = 128;

 private:
  SlotBuffers() = default;
  MemoryAccount account_;
  MemoryAccount mapped_;          // the pool's mapped bytes, while mapping_ holds
  std::shared_ptr<void> mapping_;  // the registration; let go before the memory
  uint8_t* base_ = nullptr;
  std::unique_ptr<uint8_t[]> headers_;
  uint32_t window_ = 0, members_ = 0;
  size_t slot_bytes_ = 0;
};

struct SlotGrant {
  uint32_t window = 0;     // 0: nothing granted
  size_t slot_bytes = 0;   // payload bytes per chunk for this group
  const char* limit = "";  // what capped the grant ("lease", "pool", "memory")
};

class SlotPool {
 public:
  // pool_slots 0 = no pool-wide cap (leases alone bound usage). `memory`:
  // an account shared with other pools (several data-plane threads under
  // one data.slot_memory); nullptr = this pool's own.
  SlotPool(size_t pool_slots, size_t memory_bytes, size_t slot_bytes,
           MemoryAccount memory = nullptr);

  // A new group's window and chunk: min(want or lease_slots, lease_slots,
  // pool_slots, kMaxWindow); if (members + 1) x slot_bytes x window does not
  // fit the whole memory budget, shrinks the window, then the chunk size
  // (not below kMinSlotBytes). If members x slot_bytes x window does not fit
  // the port's credit (setInflightBytes), the window shrinks while 2 or
  // more still fit at the full chunk, else the chunk shrinks at a window of
  // 2 (a chunk arrives while the previous one's result leaves: kCreditWindow),
  // and only below kMinSlotBytes does the window go to 1. Takes nothing.
  // window 0: it can never run.
  SlotGrant plan(uint32_t lease_slots, uint32_t want, uint32_t members) const;
  // Takes `window` slots and `credit` bytes of the port's credit for one
  // call: nullptr on success, else what is short ("lease", "pool" or
  // "inflight"); never waits.
  const char* acquire(const std::string& lease, uint32_t lease_slots, uint32_t window,
                      size_t credit = 0);
  void releaseSlots(const std::string& lease, uint32_t window, size_t credit = 0);
  // Credits at the port (data.inflight_bytes): 0 = no bound.
  void setInflightBytes(size_t bytes) { inflight_bytes_ = bytes; }
  size_t inflightGranted() const { return granted_; }
  size_t inflightGrantedMax() const { return granted_max_; }
  // What one call of a group with this geometry is granted.
  static size_t creditFor(uint32_t window, uint32_t members, size_t slot_bytes) {
    return static_cast<size_t>(window) * members * slot_bytes;
  }
  void forget(const std::string& lease);  // its last group ended

  // Slot buffer memory: every buffer alive (of active and idle groups, and
  // of destroyed ones still held by a send), counted by the buffers.
  bool memoryFits(size_t bytes) const { return memoryInUse() + bytes <= memory_bytes_; }
  const MemoryAccount& memoryAccount() const { return memory_; }
  // Buffers allocated from now on are mapped with `mapper` (data plane).
  void setMapper(MemoryMapper mapper) { mapper_ = std::move(mapper); }
  const MemoryMapper* mapper() const { return mapper_ ? &mapper_ : nullptr; }
  const MemoryAccount& mappedAccount() const { return mapped_; }
  size_t mappedBytes() const { return mapped_->load(std::memory_order_relaxed); }

  size_t slotBytes() const { return slot_bytes_; }
  size_t reserved() const { return reserved_; }  // slots of calls in progress
  size_t memoryInUse() const { return memory_->load(std::memory_order_relaxed); }
  size_t reservedBy(const std::string& lease) const;

  static constexpr size_t kMinSlotBytes = 4096;
  // The window a credit cut keeps while the chunk can shrink instead: at 1,
  // every chunk waits for the previous one's result (measured 1.31-1.44x the
  // unbounded time at a 1 MiB bound, benchmarks/results/incast_credits.md).
  static constexpr size_t kCreditWindow = 2;

 private:
  const size_t pool_slots_, memory_bytes_, slot_bytes_;
  size_t reserved_ = 0;
  size_t inflight_bytes_ = 0, granted_ = 0, granted_max_ = 0;
  MemoryAccount memory_ = std::make_shared<std::atomic<size_t>>(0);
  MemoryAccount mapped_ = std::make_shared<std::atomic<size_t>>(0);
  MemoryMapper mapper_;
  std::map<std::string, size_t> by_lease_;
};

}  // namespace switchagg::agent
