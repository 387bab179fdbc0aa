// SlotPool: the agent's aggregation slots, modelled on a switch's register
// pool (SwitchML). A slot holds one in-flight chunk of one group: every
// member's contribution (so the reduction can run in rank order, which makes
// results independent of arrival order) plus the result being sent back.
//
// A group reserves its whole window at formation, from its lease's slots
// (shared by the lease's live groups) and from the pool (pool_slots slots,
// memory_bytes of buffers). It gives them back when it ends. Worker-thread
// only: not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace switchagg::agent {

// Buffers of one group: window x (members contributions + 1 result), each
// slot_bytes, 64-byte aligned, in one allocation. Shared with the sends that
// still read a result, so an aborted group's memory outlives its last send.
class SlotBuffers {
 public:
  static std::shared_ptr<SlotBuffers> allocate(uint32_t window, uint32_t members,
                                               size_t slot_bytes);  // nullptr if no memory
  ~SlotBuffers();
  SlotBuffers(const SlotBuffers&) = delete;
  SlotBuffers& operator=(const SlotBuffers&) = delete;

  uint8_t* contribution(uint32_t slot, uint32_t rank) const {
    return base_ + (static_cast<size_t>(slot) * (members_ + 1) + rank) * slot_bytes_;
  }
  uint8_t* result(uint32_t slot) const { return contribution(slot, members_); }
  size_t bytes() const { return static_cast<size_t>(window_) * (members_ + 1) * slot_bytes_; }
  // RESULT headers must outlive their sends too (one per slot).
  uint8_t* resultHeader(uint32_t slot) const { return headers_.get() + slot * kHeaderStride; }

  static constexpr size_t kHeaderStride = 64;

 private:
  SlotBuffers() = default;
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
  // pool_slots 0 = no pool-wide cap (leases alone bound usage).
  SlotPool(size_t pool_slots, size_t memory_bytes, size_t slot_bytes);

  // Grants min(want or lease_slots, free lease slots, free pool slots)
  // slots; if (members + 1) x slot_bytes x window does not fit the memory
  // budget, shrinks the window, then the chunk size (not below kMinSlotBytes).
  SlotGrant reserve(const std::string& lease, uint32_t lease_slots, uint32_t want,
                    uint32_t members);
  void release(const std::string& lease, const SlotGrant& grant, uint32_t members);

  size_t slotBytes() const { return slot_bytes_; }
  size_t reserved() const { return reserved_; }
  size_t memoryInUse() const { return memory_; }
  size_t reservedBy(const std::string& lease) const;

  static constexpr size_t kMinSlotBytes = 4096;

 private:
  const size_t pool_slots_, memory_bytes_, slot_bytes_;
  size_t reserved_ = 0, memory_ = 0;
  std::map<std::string, size_t> by_lease_;
};

}  // namespace switchagg::agent
