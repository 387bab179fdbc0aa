#include "plugin_config.h"

#include <strings.h>

#include <set>

#include "switchagg/agent/control_client.h"
#include "switchagg/common/config_table.h"

namespace switchagg::spank {
namespace {

using P = PluginConfig;

ConfigBinding<P> controlAddress() {
  return customField<P>(
      ConfigKind::kString,
      [](const std::string& k, P& c, const std::string& v) -> Status {
        Result<agent::ControlAddress> a = agent::parseControlAddress(v);
        if (!a.ok()) return Status(Code::kInvalidArgument, k + ": " + a.status().message());
        c.control = a->toString();
        return Status::Ok();
      },
      [](const P& c) {
        return c.control.empty() ? "unix:" + std::string(agent::kDefaultControlSocket) : c.control;
      });
}

ConfigBinding<P> mode() {
  return customField<P>(
      ConfigKind::kChoice,
      [](const std::string& k, P& c, const std::string& v) -> Status {
        Result<Mode> m = parseMode(k, v);
        if (!m.ok()) return m.status();
        c.default_mode = *m;
        return Status::Ok();
      },
      [](const P& c) { return std::string(modeName(c.default_mode)); });
}

// Whole seconds, rounded up; 0 = the agent's policy; otherwise at least 1s.
ConfigBinding<P> ttl() {
  ConfigBinding<P> b = durationField(&P::ttl_s, 0, INT64_MAX, DurationUnit::kOptional, 1000);
  auto parse = b.set;
  b.set = [parse](const std::string& k, P& c, const std::string& v) -> Status {
    Result<int64_t> ms = parseDurationMs(k, v);
    if (ms.ok() && *ms != 0 && *ms < 1000) {
      return Status(Code::kInvalidArgument, k + ": at least 1s (or 0)");
    }
    return parse(k, c, v);
  };
  return b;
}

Status absolutePath(const std::string& k, const std::string& v) {
  if (v.empty() || v[0] != '/') {
    return invalidValue(k, v, "an absolute path");
  }
  return Status::Ok();
}

const ConfigTable<P>& table() {
  static const ConfigTable<P> t({
      {"control", nullptr, "the agent's control address: unix:/path, host:port or http://host:port",
       controlAddress()},
      {"mode", nullptr, "mode of jobs that do not pass --switch-agg: off, auto or require", mode()},
      {"default_slots", nullptr,
       "slots of jobs that do not pass --switch-agg-slots; 0 = agent policy",
       intField(&P::default_slots, 0, 4096)},
      {"max_slots", nullptr, "largest --switch-agg-slots accepted at submission (1-4096)",
       intField(&P::max_slots, 1, 4096)},
      {"ttl", nullptr, "lease lifetime (e.g. 12h) if the epilog never deletes it; 0 = agent policy",
       ttl()},
      {"timeout", nullptr, "bound on one request to the agent (100ms-60s)",
       durationField(&P::timeout_ms, 100, 60000)},
      {"fail_job_on_error", nullptr,
       "true: auto jobs also fail when the agent is unreachable or errs (refusals still warn)",
       boolField(&P::fail_job_on_error)},
      {"state_dir", nullptr,
       "node-local directory where the prolog leaves why a lease failed, for the job's tasks",
       stringField(&P::state_dir, absolutePath)},
      {"fabric", nullptr,
       "fabric map (e.g. /etc/switchagg/fabric.toml): a job's lease goes to every agent its "
       "nodes need, all or nothing, instead of `control`; empty = off",
       stringField(&P::fabric,
                   [](const std::string& k, const std::string& v) {
                     return v.empty() ? Status::Ok() : absolutePath(k, v);
                   })},
  });
  return t;
}

}  // namespace

const char* modeName(Mode mode) {
  switch (mode) {
    case Mode::kOff: return "off";
    case Mode::kAuto: return "auto";
    case Mode::kRequire: return "require";
  }
  return "off";
}

Result<Mode> parseMode(const std::string& what, const std::string& text) {
  for (Mode m : {Mode::kOff, Mode::kAuto, Mode::kRequire}) {
    if (strcasecmp(text.c_str(), modeName(m)) == 0) return m;
  }
  return invalidValue(what, text, "valid: off, auto, require");
}

const std::vector<ConfigDoc>& pluginConfigKeys() {
  static const std::vector<ConfigDoc> docs = table().docs();
  return docs;
}

Result<PluginConfig> parsePluginArgs(const std::vector<std::string>& args) {
  PluginConfig config;
  std::set<std::string> seen;
  for (const std::string& arg : args) {
    size_t eq = arg.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status(Code::kInvalidArgument,
                    "argument '" + arg + "' is not key=value (valid keys: " + table().names() +
                        ")");
    }
    std::string key = arg.substr(0, eq);
    std::string value = arg.substr(eq + 1);
    const ConfigKey<P>* rule = table().find(key);
    if (rule == nullptr) {
      return Status(Code::kInvalidArgument,
                    "unknown key '" + key + "' (valid keys: " + table().names() + ")");
    }
    if (!seen.insert(key).second) {
      return Status(Code::kInvalidArgument, "key '" + key + "' given twice");
    }
    SWITCHAGG_RETURN_IF_ERROR(rule->set(key, config, value));
  }
  if (config.default_slots > config.max_slots) {
    return Status(Code::kInvalidArgument, "default_slots (" + std::to_string(config.default_slots) +
                                              ") exceeds max_slots (" +
                                              std::to_string(config.max_slots) + ")");
  }
  return config;
}

}  // namespace switchagg::spank
