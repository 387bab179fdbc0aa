// Engine: what it tells about itself - the (dtype, op) pairs it reduces,
// its capacity (CAPACITY_ACK: reduce rate, link rate, recent turnaround) and
// its counters (the control plane reads them from any thread).
#include <algorithm>
#include <chrono>
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

uint32_t AggregationEngine::measureReduceMbps(size_t slot_bytes, size_t threads) {
  // The reduction rate clients are told: the float32 sum kernel on one slot,
  // best of a few runs, times the reduction threads (the pool splits a
  // chunk's work across them).
  const size_t count = std::max<size_t>(1, slot_bytes / sizeof(float));
  std::vector<float> acc(count, 1.0f), in(count, 0.5f);
  double best_s = 0;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    (void)reduceInto(Dtype::kFloat32, Op::kSum, acc.data(), in.data(), count);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (rep == 0 || s < best_s) best_s = s;
  }
  const double mbps = best_s > 0 ? double(count * sizeof(float)) / best_s / 1e6 : 0;
  return uint32_t(std::min(4e9, mbps * double(threads)));
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
  c.inflight_held_max = held_max_.load(std::memory_order_relaxed);
  return c;
}

}  // namespace switchagg::agent
