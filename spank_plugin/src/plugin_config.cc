#include "plugin_config.h"

#include <strings.h>

#include <functional>
#include <set>

#include "switchagg/agent/control_client.h"
#include "switchagg/common/config.h"

namespace switchagg::spank {
namespace {

using Setter = std::function<Status(PluginConfig&, const std::string& key, const std::string& value)>;

struct KeyRule {
  ConfigKey key;
  Setter set;
};

Status setSlots(int* out, const std::string& key, const std::string& value, int64_t lo) {
  Result<int64_t> v = parseInt(key, value, lo, 4096);
  if (!v.ok()) return v.status();
  *out = static_cast<int>(*v);
  return Status::Ok();
}

const std::vector<KeyRule>& rules() {
  static const std::vector<KeyRule> table = {
      {{"control", "unix:/run/switchagg/agent.sock",
        "the agent's control address: unix:/path, host:port or http://host:port"},
       [](PluginConfig& c, const std::string& k, const std::string& v) {
         Result<agent::ControlAddress> a = agent::parseControlAddress(v);
         if (!a.ok()) return Status(Code::kInvalidArgument, k + ": " + a.status().message());
         c.control = a->toString();
         return Status::Ok();
       }},
      {{"mode", "off", "mode of jobs that do not pass --switch-agg: off, auto or require"},
       [](PluginConfig& c, const std::string& k, const std::string& v) {
         Result<Mode> m = parseMode(k, v);
         if (!m.ok()) return m.status();
         c.default_mode = *m;
         return Status::Ok();
       }},
      {{"default_slots", "0", "slots of jobs that do not pass --switch-agg-slots; 0 = agent policy"},
       [](PluginConfig& c, const std::string& k, const std::string& v) {
         return setSlots(&c.default_slots, k, v, 0);
       }},
      {{"max_slots", "64", "largest --switch-agg-slots accepted at submission (1-4096)"},
       [](PluginConfig& c, const std::string& k, const std::string& v) {
         return setSlots(&c.max_slots, k, v, 1);
       }},
      {{"ttl", "0", "lease lifetime (e.g. 12h) if the epilog never deletes it; 0 = agent policy"},
       [](PluginConfig& c, const std::string& k, const std::string& v) {
         Result<int64_t> ms = parseDurationMs(k, v);
         if (!ms.ok()) return ms.status();
         if (*ms != 0 && *ms < 1000) return Status(Code::kInvalidArgument, k + ": at least 1s (or 0)");
         c.ttl_s = (*ms + 999) / 1000;
         return Status::Ok();
       }},
      {{"timeout", "5s", "bound on one request to the agent (100ms-60s)"},
       [](PluginConfig& c, const std::string& k, const std::string& v) {
         Result<int64_t> ms = parseDurationMs(k, v);
         if (!ms.ok()) return ms.status();
         if (*ms < 100 || *ms > 60000) {
           return Status(Code::kInvalidArgument, k + ": invalid value '" + v + "' (100ms to 60s)");
         }
         c.timeout_ms = static_cast<int>(*ms);
         return Status::Ok();
       }},
      {{"fail_job_on_error", "false",
        "true: auto jobs also fail when the agent is unreachable or errs (refusals still warn)"},
       [](PluginConfig& c, const std::string& k, const std::string& v) {
         Result<bool> b = parseBool(k, v);
         if (!b.ok()) return b.status();
         c.fail_job_on_error = *b;
         return Status::Ok();
       }},
      {{"state_dir", "/run/switchagg-spank",
        "node-local directory where the prolog leaves why a lease failed, for the job's tasks"},
       [](PluginConfig& c, const std::string& k, const std::string& v) {
         if (v.empty() || v[0] != '/') {
           return Status(Code::kInvalidArgument, k + ": invalid value '" + v + "' (an absolute path)");
         }
         c.state_dir = v;
         return Status::Ok();
       }},
  };
  return table;
}

std::string validKeys() {
  std::string out;
  for (const KeyRule& r : rules()) out += (out.empty() ? "" : ", ") + std::string(r.key.name);
  return out;
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
  return Status(Code::kInvalidArgument,
                what + ": invalid value '" + text + "' (valid: off, auto, require)");
}

const std::vector<ConfigKey> kConfigKeys = [] {
  std::vector<ConfigKey> keys;
  for (const KeyRule& r : rules()) keys.push_back(r.key);
  return keys;
}();

Result<PluginConfig> parsePluginArgs(const std::vector<std::string>& args) {
  PluginConfig config;
  std::set<std::string> seen;
  for (const std::string& arg : args) {
    size_t eq = arg.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status(Code::kInvalidArgument,
                    "argument '" + arg + "' is not key=value (valid keys: " + validKeys() + ")");
    }
    std::string key = arg.substr(0, eq);
    std::string value = arg.substr(eq + 1);
    const KeyRule* rule = nullptr;
    for (const KeyRule& r : rules()) {
      if (key == r.key.name) rule = &r;
    }
    if (rule == nullptr) {
      return Status(Code::kInvalidArgument,
                    "unknown key '" + key + "' (valid keys: " + validKeys() + ")");
    }
    if (!seen.insert(key).second) {
      return Status(Code::kInvalidArgument, "key '" + key + "' given twice");
    }
    SWITCHAGG_RETURN_IF_ERROR(rule->set(config, key, value));
  }
  if (config.default_slots > config.max_slots) {
    return Status(Code::kInvalidArgument, "default_slots (" + std::to_string(config.default_slots) +
                                              ") exceeds max_slots (" +
                                              std::to_string(config.max_slots) + ")");
  }
  return config;
}

}  // namespace switchagg::spank
