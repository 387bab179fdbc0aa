#include "metrics.h"

#include <set>

#include "switchagg/common/version.h"

namespace switchagg::agent {

namespace {

// Label values are job ids and reason words; escape what the format requires.
std::string label(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

class Writer {
 public:
  void family(const char* name, const char* type, const char* help) {
    out_ += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  }
  void sample(const char* name, uint64_t value, const std::string& labels = "") {
    out_ += name;
    if (!labels.empty()) out_ += "{" + labels + "}";
    out_ += " " + std::to_string(value) + "\n";
  }
  void metric(const char* name, const char* type, const char* help, uint64_t value) {
    family(name, type, help);
    sample(name, value);
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

}  // namespace

std::string renderMetrics(const MetricsInput& in) {
  Writer w;
  const DataPlaneCounters& d = in.data;
  uint64_t total = in.config != nullptr ? static_cast<uint64_t>(in.config->limits.pool_slots) : 0;
  w.family("switchagg_build_info", "gauge", "The agent's version (label version); always 1.");
  w.sample("switchagg_build_info", 1, "version=\"" SWITCHAGG_VERSION "\"");
  w.metric("switchagg_slots_total", "gauge", "Aggregation slots in the pool.", total);
  w.metric("switchagg_slots_in_use", "gauge", "Slots reserved by leases.",
           static_cast<uint64_t>(in.slots_in_use));
  w.metric("switchagg_slots_busy", "gauge", "Slots holding partial chunks right now.",
           d.slots_busy);
  w.metric("switchagg_slots_reserved", "gauge",
           "Slots held by calls in progress (their groups' windows).", d.slots_reserved);
  w.metric("switchagg_inflight_granted_bytes", "gauge",
           "Contribution bytes granted to calls in progress.", d.inflight_granted_bytes);
  w.metric("switchagg_inflight_held_max_bytes", "gauge",
           "Most contribution bytes held at one port for unanswered chunks.", d.inflight_held_max);
  w.metric("switchagg_slot_memory_bytes", "gauge",
           "Slot buffer bytes alive (destroyed groups' too while a send reads them).",
           d.slot_memory_bytes);
  w.metric("switchagg_slot_memory_mapped_bytes", "gauge",
           "Of the slot memory, bytes registered with the data plane's UCX context (ucp_mem_map).",
           d.slot_memory_mapped_bytes);
  w.metric("switchagg_peers_stalled_total", "counter",
           "Clients dropped because a send to them made no progress for member_timeout.",
           d.peers_stalled);
  w.metric("switchagg_leases", "gauge", "Leases held.", in.leases.size());
  w.metric("switchagg_draining", "gauge", "1 while the agent refuses new leases.",
           in.draining ? 1 : 0);
  w.metric("switchagg_groups", "gauge", "Live aggregation groups.", d.groups_active);
  w.metric("switchagg_groups_created_total", "counter", "Groups created.", d.groups_created);
  w.metric("switchagg_groups_aborted_total", "counter", "Groups aborted.", d.groups_aborted);
  w.metric("switchagg_chunks_reduced_total", "counter", "Chunks reduced.", d.chunks_reduced);
  w.metric("switchagg_bytes_reduced_total", "counter", "Result bytes produced by reductions.",
           d.bytes_reduced);
  w.metric("switchagg_bytes_in_total", "counter", "Payload bytes received.", d.bytes_in);
  w.metric("switchagg_bytes_out_total", "counter", "Payload bytes sent.", d.bytes_out);
  w.metric("switchagg_bytes_up_total", "counter",
           "Payload bytes a leaf sent up to its parent agent (trees).", d.bytes_up);
  w.metric("switchagg_bytes_staged_total", "counter",
           "Payload bytes copied into a slot buffer to wait (out of rank order, or the slot's "
           "previous result still being sent); the rest were reduced as they arrived.",
           d.bytes_staged);
  w.metric("switchagg_bytes_placed_total", "counter",
           "Payload bytes received by rendezvous straight into their slot buffer (no copy).",
           d.bytes_placed);
  w.metric("switchagg_chunks_deferred_total", "counter",
           "Ready chunks a reduction pass left for the next one (data.fair_share).",
           d.chunks_deferred);
  w.metric("switchagg_largest_pass_bytes", "gauge",
           "Contribution bytes of the largest reduction pass so far (what a ready chunk may wait "
           "behind).",
           d.largest_pass_bytes);
  w.metric("switchagg_lease_file_save_failures_total", "counter",
           "Lease file (state.lease_file) saves that failed; leases stayed in memory.",
           in.lease_file_save_failures);
  w.metric("switchagg_clients_connected", "gauge", "Data-plane clients connected.",
           d.clients_connected);

  w.family("switchagg_rejected_total", "counter", "Data-plane messages rejected, by reason.");
  for (const auto& [reason, n] : d.rejected) w.sample("switchagg_rejected_total", n,
                                                      "reason=\"" + label(reason) + "\"");
  w.family("switchagg_control_refused_total", "counter",
           "Control requests refused, by API error code.");
  for (const auto& [code, n] : in.control_refused) {
    w.sample("switchagg_control_refused_total", n, "error=\"" + label(code) + "\"");
  }

  w.family("switchagg_control_shed_total", "counter",
           "Control connections cut or refused to keep the per-listener and per-peer budgets, "
           "or timed out before sending a whole request.");
  for (const auto& [key, n] : in.control_shed) {
    w.sample("switchagg_control_shed_total", n,
             "listener=\"" + label(key.first) + "\",reason=\"" + label(key.second) + "\"");
  }

  w.family("switchagg_job_slots", "gauge", "Slots leased per job.");
  for (const Lease& l : in.leases) {
    w.sample("switchagg_job_slots", static_cast<uint64_t>(l.slots),
             "job=\"" + label(l.job) + "\",uid=\"" + std::to_string(l.uid) + "\"");
  }
  w.family("switchagg_job_groups", "gauge", "Live groups per job.");
  for (const auto& [job, n] : d.groups_by_job) {
    w.sample("switchagg_job_groups", n, "job=\"" + label(job) + "\"");
  }
  w.family("switchagg_job_bytes_in_total", "counter", "Payload bytes received per job.");
  for (const auto& [job, n] : d.bytes_in_by_job) {
    w.sample("switchagg_job_bytes_in_total", n, "job=\"" + label(job) + "\"");
  }
  return w.take();
}

}  // namespace switchagg::agent
