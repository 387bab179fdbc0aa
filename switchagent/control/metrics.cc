#include "metrics.h"

#include <cstdio>
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
    sampleText(name, std::to_string(value), labels);
  }
  void sampleText(const char* name, const std::string& value, const std::string& labels) {
    out_ += name;
    if (!labels.empty()) out_ += "{" + labels + "}";
    out_ += " " + value + "\n";
  }
  void metric(const char* name, const char* type, const char* help, uint64_t value) {
    family(name, type, help);
    sample(name, value);
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

// One family per data-plane thread's figure, a sample per thread labelled
// thread="k",address="host:port": an admin compares the threads' shares.
void threadFamilies(Writer& w, const std::vector<DataThreadCounters>& threads) {
  const auto labels = [](const DataThreadCounters& t) {
    return "thread=\"" + std::to_string(t.index) + "\",address=\"" + label(t.address) + "\"";
  };
  struct Family {
    const char* name;
    const char* type;
    const char* help;
    uint64_t DataPlaneScalars::*field;
  };
  w.family("switchagg_thread_leases", "gauge", "Leases whose home is this data-plane thread.");
  for (const DataThreadCounters& t : threads)
    w.sample("switchagg_thread_leases", t.leases, labels(t));
  static const Family kFamilies[] = {
      {"switchagg_thread_groups", "gauge", "Live aggregation groups on this data-plane thread.",
       &DataPlaneScalars::groups_active},
      {"switchagg_thread_groups_created_total", "counter",
       "Groups created on this data-plane thread.", &DataPlaneScalars::groups_created},
      {"switchagg_thread_bytes_in_total", "counter",
       "Payload bytes this data-plane thread received.", &DataPlaneScalars::bytes_in},
      {"switchagg_thread_bytes_out_total", "counter", "Payload bytes this data-plane thread sent.",
       &DataPlaneScalars::bytes_out},
      {"switchagg_thread_contributions_total", "counter",
       "Contributions (one per member per chunk) this data-plane thread took.",
       &DataPlaneScalars::contributions},
      {"switchagg_thread_clients_connected", "gauge",
       "Data-plane clients connected to this thread's listener.",
       &DataPlaneScalars::clients_connected},
  };
  for (const Family& f : kFamilies) {
    w.family(f.name, f.type, f.help);
    for (const DataThreadCounters& t : threads) w.sample(f.name, t.counters.*f.field, labels(t));
  }
  w.family("switchagg_thread_busy_seconds_total", "counter",
           "CPU time this data-plane thread used (user + system; an idle thread sleeps).");
  for (const DataThreadCounters& t : threads) {
    char text[32];
    std::snprintf(text, sizeof text, "%.6f", static_cast<double>(t.busy_ns) / 1e9);
    w.sampleText("switchagg_thread_busy_seconds_total", text, labels(t));
  }
}

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
  w.metric("switchagg_leases", "gauge", "Leases held.", in.leases.size());
  w.metric("switchagg_draining", "gauge", "1 while the agent refuses new leases.",
           in.draining ? 1 : 0);
  w.metric("switchagg_lease_file_save_failures_total", "counter",
           "Lease file (state.lease_file) saves that failed; leases stayed in memory.",
           in.lease_file_save_failures);
  // The data plane's counters, one family per row of the list.
  for (const CounterInfo& k : kDataPlaneCounters) {
    w.metric(k.metric, k.type == CounterType::kCounter ? "counter" : "gauge", k.help, d.*k.member);
  }

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
  threadFamilies(w, d.threads);
  return w.take();
}

}  // namespace switchagg::agent
