// The data plane's counters, listed once. Every scalar counter is one row of
// SWITCHAGG_DATA_PLANE_COUNTERS; the struct, the sum over data-plane threads
// (addThreadCounters), /v1/status's "counters" (control_api.cc) and the
// Prometheus families (metrics.cc) all expand that list, so a counter added
// to it appears in all four and cannot be forgotten in one
// (tests/agent/test_data_plane_counters.cc). A new counter: one row here,
// its line in docs/admin.md's metric table and docs/control-api.md.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace switchagg::agent {

// How a counter adds up over data-plane threads.
enum class CounterCombine {
  kSum,    // each thread counts its own share
  kMax,    // the largest thread's figure
  kWhole,  // one account shared by every thread: each reports the whole (the largest is taken)
};

// How Prometheus types it.
enum class CounterType { kCounter, kGauge };

// X(field, combine, metric name, metric type, help text). The field's name
// is its key in /v1/status's "counters". Where they are counted:
// bytes_staged engine_contrib.cc (the rest of bytes_in was reduced straight
// from the message), bytes_placed engine_placement.cc, peers_stalled
// daemon/data_thread.cc, slot_memory_* slot_pool.cc (slot_memory_bytes never
// above data.slot_memory). One line per row, however long: a table reads
// across (rows that wrap look alike, line by line, to the duplicate check).
// clang-format off
#define SWITCHAGG_DATA_PLANE_COUNTERS(X) \
  X(groups_active, kSum, "switchagg_groups", kGauge, "Live aggregation groups.") \
  X(groups_created, kSum, "switchagg_groups_created_total", kCounter, "Groups created.") \
  X(groups_aborted, kSum, "switchagg_groups_aborted_total", kCounter, "Groups aborted.") \
  X(chunks_reduced, kSum, "switchagg_chunks_reduced_total", kCounter, "Chunks reduced.") \
  X(bytes_reduced, kSum, "switchagg_bytes_reduced_total", kCounter, "Result bytes produced by reductions.") \
  X(bytes_in, kSum, "switchagg_bytes_in_total", kCounter, "Payload bytes received.") \
  X(contributions, kSum, "switchagg_contributions_total", kCounter, "Contributions taken (one per member per chunk).") \
  X(bytes_out, kSum, "switchagg_bytes_out_total", kCounter, "Payload bytes sent.") \
  X(bytes_up, kSum, "switchagg_bytes_up_total", kCounter, "Payload bytes a leaf sent up to its parent agent (trees).") \
  X(waiting_relayed, kSum, "switchagg_waiting_relayed_total", kCounter, "WAITING keepalives from the parent agent a leaf passed on to its members (trees).") \
  X(bytes_staged, kSum, "switchagg_bytes_staged_total", kCounter, "Payload bytes copied into a slot buffer to wait (out of rank order, or the slot's previous result still being sent); the rest were reduced as they arrived.") \
  X(bytes_placed, kSum, "switchagg_bytes_placed_total", kCounter, "Payload bytes received by rendezvous straight into their slot buffer (no copy).") \
  X(chunks_deferred, kSum, "switchagg_chunks_deferred_total", kCounter, "Ready chunks a reduction pass left for the next one (data.fair_share).") \
  X(largest_pass_bytes, kMax, "switchagg_largest_pass_bytes", kGauge, "Contribution bytes of the largest reduction pass so far (what a ready chunk may wait behind).") \
  X(clients_connected, kSum, "switchagg_clients_connected", kGauge, "Data-plane clients connected.") \
  X(slots_busy, kSum, "switchagg_slots_busy", kGauge, "Slots holding partial chunks right now.") \
  X(slots_reserved, kSum, "switchagg_slots_reserved", kGauge, "Slots held by calls in progress (their groups' windows).") \
  X(inflight_granted_bytes, kSum, "switchagg_inflight_granted_bytes", kGauge, "Contribution bytes granted to calls in progress (credits at the port, data.inflight_bytes).") \
  X(inflight_granted_max, kMax, "switchagg_inflight_granted_max_bytes", kGauge, "Most contribution bytes granted at once at one port.") \
  X(inflight_held_max, kMax, "switchagg_inflight_held_max_bytes", kGauge, "Most contribution bytes held at one port for unanswered chunks.") \
  X(slot_memory_bytes, kWhole, "switchagg_slot_memory_bytes", kGauge, "Slot buffer bytes alive (destroyed groups' too while a send reads them).") \
  X(slot_memory_mapped_bytes, kSum, "switchagg_slot_memory_mapped_bytes", kGauge, "Of the slot memory, bytes registered with the data plane's UCX context (ucp_mem_map).") \
  X(peers_stalled, kSum, "switchagg_peers_stalled_total", kCounter, "Clients dropped because a send to them made no progress for member_timeout.")
// clang-format on

#define SWITCHAGG_COUNTER_FIELD(field, combine, metric, type, help) uint64_t field = 0;
struct DataPlaneScalars {
  SWITCHAGG_DATA_PLANE_COUNTERS(SWITCHAGG_COUNTER_FIELD)
};
#undef SWITCHAGG_COUNTER_FIELD

// One data-plane thread's share (DataPlaneCounters::threads): what an admin
// needs to see a thread that carries more than its part.
struct DataThreadCounters {
  int index = 0;        // 0..data.plane_threads-1; thread k listens on data.listen's port - k
  std::string address;  // its listener ("host:port")
  // Leases whose home thread this is (the control plane counts them:
  // DataPlaneView::threadOf); thread 0 also serves any lease whose jobs
  // came to data.listen.
  uint64_t leases = 0;
  // The thread's own counters (the terms of DataPlaneCounters' sums); the
  // status JSON, the metrics and switchagg-ctl show some of them per thread.
  DataPlaneScalars counters;
  // CPU time the thread has used (user + system, from its thread clock):
  // receiving, reducing, sending, and its short spins after traffic; an
  // idle thread sleeps in the kernel and adds nothing. Its reduction pool's
  // helper threads are not counted.
  uint64_t busy_ns = 0;
  std::map<std::string, uint64_t> bytes_in_by_job;  // job -> bytes, on this thread
  std::map<std::string, uint64_t> groups_by_job;    // job -> live groups, on this thread
};

struct DataPlaneCounters : DataPlaneScalars {
  std::map<std::string, uint64_t> rejected;         // reason -> count (bad_token, malformed, ...)
  std::map<std::string, uint64_t> bytes_in_by_job;  // job -> bytes
  std::map<std::string, uint64_t> groups_by_job;    // job -> live groups
  std::vector<DataThreadCounters> threads;  // per data-plane thread (the above are their sums)
};
// A scalar counter belongs in the list above, not here by hand: the sum,
// the JSON and the metrics would miss it.
static_assert(sizeof(DataPlaneCounters) ==
                  sizeof(DataPlaneScalars) + 3 * sizeof(std::map<std::string, uint64_t>) +
                      sizeof(std::vector<DataThreadCounters>),
              "DataPlaneCounters has a member outside SWITCHAGG_DATA_PLANE_COUNTERS");

// One counter's row, for code that walks the list at run time.
struct CounterInfo {
  const char* field;
  uint64_t DataPlaneScalars::*member;
  CounterCombine combine;
  const char* metric;
  CounterType type;
  const char* help;
};

#define SWITCHAGG_COUNTER_INFO(field, combine, metric, type, help) \
  CounterInfo{#field, &DataPlaneScalars::field, CounterCombine::combine, metric,  \
              CounterType::type, help},
inline constexpr CounterInfo kDataPlaneCounters[] = {
    SWITCHAGG_DATA_PLANE_COUNTERS(SWITCHAGG_COUNTER_INFO)};
#undef SWITCHAGG_COUNTER_INFO

// Adds one data-plane thread's counters into `sum` (its share in `threads`
// is the caller's: only it knows the thread's address).
inline void addThreadCounters(DataPlaneCounters& sum, const DataPlaneCounters& one) {
  for (const CounterInfo& c : kDataPlaneCounters) {
    uint64_t& to = sum.*c.member;
    const uint64_t from = one.*c.member;
    to = c.combine == CounterCombine::kSum ? to + from : std::max(to, from);
  }
  for (const auto& [k, v] : one.rejected) sum.rejected[k] += v;
  for (const auto& [k, v] : one.bytes_in_by_job) sum.bytes_in_by_job[k] += v;
  for (const auto& [k, v] : one.groups_by_job) sum.groups_by_job[k] += v;
}

}  // namespace switchagg::agent
