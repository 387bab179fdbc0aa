#include "info_report.h"

#include <ucp/api/ucp.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "switchagg/agent/control_client.h"
#include "switchagg/agent/job_environment.h"
#include "switchagg/agent/malloc_tuning.h"
#include "switchagg/coll/pmpi_params.h"
#include "switchagg/coll/process_settings.h"
#include "switchagg/coll/switch_settings.h"
#include "switchagg/common/config.h"
#include "switchagg/common/log_config.h"
#include "switchagg/common/reduce.h"
#include "switchagg/common/test_hooks.h"
#include "switchagg/ucx/ucp_config.h"

namespace switchagg::info {
namespace {

using ucx::RoceProfile;

struct ConfigDeleter {
  void operator()(ucp_config_t* c) const { ucp_config_release(c); }
};

// Applies the profile to a fresh UCX configuration exactly as Context does
// and reads every applied key back from UCX, so what we print is what UCX
// holds, not what we meant to set.
Status applyAndReadBack(InfoReport* report) {
  ucp_config_t* raw = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &raw);
  if (st != UCS_OK)
    return Status(Code::kInternal, std::string("ucp_config_read: ") + ucs_status_string(st));
  std::unique_ptr<ucp_config_t, ConfigDeleter> config(raw);
  SWITCHAGG_RETURN_IF_ERROR(ucx::applyProfile(config.get(), report->profile));
  for (const auto& kv : report->profile.applied) {
    auto value = ucx::readUcpConfigValue(config.get(), kv.first);
    if (!value.ok()) return value.status();
    report->applied.emplace_back(kv.first, *value);
  }
  // The cache above is only what we asked for; this is what UCX's transport
  // configs will hold (a key UCX ignores would show up as "default" here).
  std::vector<std::string> keys;
  for (const auto& kv : report->profile.ucx_settings) keys.push_back(kv.first);
  auto effective = ucx::effectiveTransportConfig(config.get(), keys);
  if (!effective.ok()) return effective.status();
  for (const ucx::UcxEffectiveValue& e : *effective)
    report->effective.push_back({e.table, e.name, e.value, e.source});
  return Status::Ok();
}

// The override a command-line flag gives for an option's variable, if any.
std::optional<std::string> cliValue(const InfoArgs& args, const std::string& env) {
  if (env == "SWITCHAGG_ROCE_SYSFS_ROOT") return args.sysfs_root;
  if (env == "SWITCHAGG_ROCE_DEVICE") return args.device;
  if (env == "SWITCHAGG_ROCE_NETDEV") return args.netdev;
  return std::nullopt;
}

// A table's rows, once its variables parse: a bad value is an error that
// names the variable, as the process that reads it would report it.
template <typename T>
Status addTable(const ConfigTable<T>& table, std::vector<ConfigDoc>* docs) {
  T values;
  SWITCHAGG_RETURN_IF_ERROR(table.applyEnvironment(values));
  for (const ConfigDoc& d : table.docs()) docs->push_back(d);
  return Status::Ok();
}

// Every SWITCHAGG_* variable a process of ours reads (the transport's were
// checked by buildReport already).
Result<std::vector<OptionRow>> optionRows(const InfoArgs& args) {
  std::vector<OptionRow> rows;
  std::vector<ConfigDoc> docs = ucx::transportOptionTable();
  SWITCHAGG_RETURN_IF_ERROR(addTable(agent::jobEnvironmentTable(), &docs));
  SWITCHAGG_RETURN_IF_ERROR(addTable(coll::switchSettingsTable(), &docs));
  SWITCHAGG_RETURN_IF_ERROR(addTable(coll::processSettingsTable(), &docs));
  // The PMPI library's (libswitchagg_pmpi.so): the MCA parameters' names.
  SWITCHAGG_RETURN_IF_ERROR(addTable(coll::pmpiParamsTable(), &docs));
  SWITCHAGG_RETURN_IF_ERROR(addTable(agent::controlEnvironmentTable(), &docs));
  SWITCHAGG_RETURN_IF_ERROR(addTable(agent::mallocTuningTable(), &docs));
  SWITCHAGG_RETURN_IF_ERROR(addTable(logSettingsTable(), &docs));
  // Listed so that a stray one in a job's environment shows (tests only).
  SWITCHAGG_RETURN_IF_ERROR(addTable(testHooksTable(), &docs));
  for (const ConfigDoc& d : docs) {
    OptionRow r{d.name, d.env, d.default_value, d.default_value, "default", d.help};
    if (auto cli = cliValue(args, d.env)) {
      r.value = *cli;
      r.source = "command line";
    } else if (const char* v = envOrNull(d.env)) {
      r.value = v;
      r.source = "environment";
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

std::vector<std::pair<std::string, std::vector<std::string>>> reductionRows() {
  std::vector<std::pair<std::string, std::vector<std::string>>> rows;
  for (int d = 1; d <= kNumDtypes; ++d) {
    std::vector<std::string> ops;
    for (int o = 1; o <= kNumOps; ++o)
      if (reduceSupported(static_cast<Dtype>(d), static_cast<Op>(o)))
        ops.push_back(opName(static_cast<Op>(o)));
    if (!ops.empty()) rows.emplace_back(dtypeName(static_cast<Dtype>(d)), std::move(ops));
  }
  return rows;
}

std::string versionText(int v) {
  return v == 0 ? "none" : "RoCE v" + std::to_string(v);
}

}  // namespace

Result<InfoReport> buildReport(const InfoArgs& args) {
  auto options = ucx::TransportOptions::fromEnvironment();
  if (!options.ok()) return options.status();
  ucx::RoceOptions& roce = options->roce;
  if (args.sysfs_root) roce.sysfs_root = *args.sysfs_root;
  if (args.device) roce.device = *args.device;
  if (args.netdev) roce.netdev = *args.netdev;
  auto profile = ucx::resolveProfile(roce);
  if (!profile.ok()) return profile.status();
  InfoReport report;
  report.ucx_version = ucp_get_version_string();
  report.profile = std::move(*profile);
  // Same rule as Context::lanes(): explicit lanes, else the profile's auto.
  report.lanes = options->lanes > 0 ? options->lanes : std::max(1, report.profile.lanes);
  SWITCHAGG_RETURN_IF_ERROR(applyAndReadBack(&report));
  auto options_rows = optionRows(args);
  if (!options_rows.ok()) return options_rows.status();
  report.options = std::move(*options_rows);
  report.reductions = reductionRows();
  return report;
}

std::string renderText(const InfoReport& r) {
  const RoceProfile& p = r.profile;
  std::ostringstream out;
  out << "switchagg-info (UCX " << r.ucx_version << ")\n\n";
  out << "RDMA devices (" << (p.source == "none" ? "none found" : p.source) << "):\n";
  if (p.devices.empty()) out << "  (none)\n";
  for (const std::string& d : p.devices) out << "  " << d << "\n";
  out << "\nRoCE profile:\n";
  auto row = [&out](const char* k, const std::string& v) {
    out << "  " << k << std::string(15 - std::min<size_t>(14, std::string(k).size()), ' ') << v
        << "\n";
  };
  const bool chosen = p.gid_index >= 0;
  row("rdma_present", p.rdma_present ? "yes" : "no");
  row("device", chosen ? p.device + ":" + std::to_string(p.port) : "-");
  std::string rails;
  for (const ucx::RoceRail& rail : p.rails)
    rails += (rails.empty() ? "" : " ") + rail.device + ":" + std::to_string(rail.port);
  row("rails", rails.empty() ? "-" : rails);
  row("gid_index", chosen ? std::to_string(p.gid_index) : "-");
  row("gid", chosen ? p.gid + " (" + ucx::gidToAddress(p.gid) + ")" : "-");
  row("roce_version", versionText(p.roce_version));
  row("netdev", p.netdev.empty() ? "-" : p.netdev);
  row("traffic_class", chosen ? std::to_string(p.traffic_class) + " (DSCP " +
                                    std::to_string(p.traffic_class >> 2) + ", ECN bits " +
                                    std::to_string(p.traffic_class & 3) + ")"
                              : "-");
  row("sl", chosen ? std::to_string(p.sl) : "-");
  row("path_mtu", chosen ? (p.path_mtu ? std::to_string(p.path_mtu) : "UCX default") : "-");
  row("lanes", std::to_string(r.lanes));
  row("reason", p.reason);
  auto pairs = [&out](const char* title, const char* prefix, const auto& kvs) {
    out << "\n" << title << ":\n";
    if (kvs.empty()) out << "  (none)\n";
    for (const auto& [k, v] : kvs) out << "  " << prefix << k << "=" << v << "\n";
  };
  pairs("UCX settings applied (ucp_config_modify keys, read back from UCX)", "", r.applied);
  pairs("Left to the user (set in the environment, which wins)", "UCX_", p.left_to_user);
  out << "\nEffective in UCX's transport configs (what rc/dc/ud will use):\n";
  if (r.effective.empty()) out << "  (none)\n";
  for (const EffectiveRow& e : r.effective) {
    const std::string kv = e.name + "=" + e.value;
    out << "  " << kv << std::string(kv.size() < 38 ? 38 - kv.size() : 1, ' ') << e.source << "\n";
  }
  out << "\nReductions (dtype: ops; float16/bfloat16 summed in fp64, rounded once):\n";
  for (const auto& [dtype, ops] : r.reductions) {
    out << "  " << dtype << ":";
    for (const std::string& o : ops) out << " " << o;
    out << "\n";
  }
  out << "\nOptions (command line > environment > default):\n";
  for (const OptionRow& o : r.options) {
    out << "  " << o.env << "=" << o.value;
    if (o.source != "default") out << "  [" << o.source << "; default " << o.default_value << "]";
    out << "\n      " << o.help << "\n";
  }
  return out.str();
}

// Every rail with its own GID choice, primary first.
nlohmann::ordered_json railsJson(const RoceProfile& p) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const ucx::RoceRail& r : p.rails)
    out.push_back({{"device", r.device},
                   {"port", r.port},
                   {"gid_index", r.gid_index},
                   {"gid", r.gid},
                   {"gid_address", ucx::gidToAddress(r.gid)},
                   {"roce_version", r.roce_version},
                   {"netdev", r.netdev},
                   {"traffic_class", r.traffic_class},
                   {"path_mtu", r.path_mtu}});
  return out;
}

nlohmann::ordered_json leftOutJson(const RoceProfile& p) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& l : p.rails_left_out)
    out.push_back({{"rail", l.rail}, {"why", l.why}, {"by_choice", l.by_choice}});
  return out;
}

std::string renderJson(const InfoReport& r) {
  const RoceProfile& p = r.profile;
  using Json = nlohmann::ordered_json;
  auto pairs = [](const std::vector<std::pair<std::string, std::string>>& kvs) {
    Json o = Json::object();
    for (const auto& [k, v] : kvs) o[k] = v;
    return o;
  };
  // The profile as it was resolved, in the order the text shows it.
  Json j = {{"ucx_version", r.ucx_version},
            {"rdma_present", p.rdma_present},
            {"source", p.source},
            {"devices", p.devices},
            {"device", p.device},
            {"port", p.port},
            {"gid_index", p.gid_index},
            {"gid", p.gid},
            {"gid_address", p.gid.empty() ? "" : ucx::gidToAddress(p.gid)},
            {"roce_version", p.roce_version},
            {"netdev", p.netdev},
            {"traffic_class", p.traffic_class},
            {"sl", p.sl},
            {"path_mtu", p.path_mtu},
            {"lanes", r.lanes},
            {"reason", p.reason},
            {"rails", railsJson(p)},
            {"rails_left_out", leftOutJson(p)},
            {"ucx_settings", pairs(p.ucx_settings)},
            {"applied", pairs(r.applied)},
            {"left_to_user", pairs(p.left_to_user)}};
  Json effective = Json::object();
  for (const EffectiveRow& e : r.effective)
    effective[e.name] = {{"value", e.value}, {"source", e.source}, {"table", e.table}};
  j["effective"] = effective;
  Json options = Json::array();
  for (const OptionRow& o : r.options) {
    options.push_back({{"name", o.name},
                       {"env", o.env},
                       {"value", o.value},
                       {"default", o.default_value},
                       {"source", o.source},
                       {"help", o.help}});
  }
  j["options"] = options;
  Json reductions = Json::object();
  for (const auto& [dtype, ops] : r.reductions) reductions[dtype] = ops;
  j["reductions"] = reductions;
  return j.dump(2) + "\n";
}

}  // namespace switchagg::info
