// Engine: what it tells about itself - the (dtype, op) pairs it reduces,
// its capacity (CAPACITY_ACK: reduce rate, link rate, recent turnaround) and
// its counters (the control plane reads them from any thread).
#include <algorithm>
#include <vector>

#include "group.h"
#include "switchagg/common/reduce.h"

namespace switchagg::agent {

using wire::Message;
using wire::MsgType;
using wire::Reason;

wire::CapTable AggregationEngine::capTable() {
  wire::CapTable caps;
  for (int d = 1; d <= kNumDtypes; ++d)
    for (int o = 1; o <= kNumOps; ++o)
      if (reduceSupported(static_cast<Dtype>(d), static_cast<Op>(o)))
        caps.add(static_cast<Dtype>(d), static_cast<Op>(o));
  return caps;
}

void AggregationEngine::count(Reason reason) {
  std::lock_guard<std::mutex> lock(counters_mu_);
  ++counters_.rejected[wire::reasonName(reason)];
}

wire::Capacity AggregationEngine::capacity() const {
  wire::Capacity c;
  c.reduce_mbps = reduce_mbps_;
  c.link_mbps = config_.link_mbps;
  if (!turnaround_us_.empty()) {
    std::vector<uint32_t> v = turnaround_us_;
    std::nth_element(v.begin(), v.begin() + long(v.size() / 2), v.end());
    c.turnaround_us = std::max<uint32_t>(1, v[v.size() / 2]);
  }
  return c;
}

void AggregationEngine::handleCapacity(PeerId from, const Message& m) {
  if (!lookup_(m.token))
    return reject(from, m, Reason::kBadToken, "unknown or expired lease token");
  Message a;
  a.type = MsgType::kCapacityAck;
  a.token = m.token;
  a.capacity = capacity();
  out_.sendControl(from, wire::encode(a));
}

DataPlaneCounters AggregationEngine::counters() const {
  std::lock_guard<std::mutex> lock(counters_mu_);
  DataPlaneCounters c = counters_;
  c.bytes_in = contrib_counters_.bytes_in.load(std::memory_order_relaxed);
  c.bytes_staged = contrib_counters_.bytes_staged.load(std::memory_order_relaxed);
  c.bytes_placed = contrib_counters_.bytes_placed.load(std::memory_order_relaxed);
  c.contributions = contrib_counters_.contributions.load(std::memory_order_relaxed);
  for (const auto& [job, bytes] : job_bytes_in_)
    c.bytes_in_by_job[job] = bytes.load(std::memory_order_relaxed);
  c.slot_memory_bytes = slots_.memoryInUse();  // an atomic, read from any thread
  c.slot_memory_mapped_bytes = slots_.mappedBytes();
  return c;
}

}  // namespace switchagg::agent
