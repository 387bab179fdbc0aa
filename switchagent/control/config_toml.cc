// TOML in and out for the agent's key table (agent_config.cc).
#include <cstdio>
#include <fstream>
#include <sstream>

#include "toml_text.h"

#include "agent_config.h"
#include "switchagg/common/config.h"

namespace switchagg::agent {

namespace {

const char* kindName(ConfigKind k) {
  switch (k) {
    case ConfigKind::kString: return "a string";
    case ConfigKind::kInt: return "an integer";
    case ConfigKind::kSize: return "a size (integer bytes or a string like \"256K\")";
    case ConfigKind::kDuration: return "a duration string like \"90s\"";
    case ConfigKind::kBool: return "true or false";
    case ConfigKind::kList: return "an array of strings";
    case ConfigKind::kChoice: return "a string";
  }
  return "?";
}

// The node as the text the key's setter parses, or an error naming the key.
Result<std::string> nodeText(const std::string& key, ConfigKind kind, const toml::node& node) {
  auto wrongType = [&] {
    return Status(Code::kInvalidArgument, key + ": expected " + kindName(kind));
  };
  switch (kind) {
    case ConfigKind::kString:
    case ConfigKind::kChoice:
    case ConfigKind::kDuration:
      if (auto s = node.value<std::string>(); s && node.is_string()) return *s;
      return wrongType();
    case ConfigKind::kInt:
      if (node.is_integer()) return std::to_string(*node.value<int64_t>());
      return wrongType();
    case ConfigKind::kSize:
      if (node.is_integer()) return std::to_string(*node.value<int64_t>());
      if (node.is_string()) return *node.value<std::string>();
      return wrongType();
    case ConfigKind::kBool:
      if (node.is_boolean()) return std::string(*node.value<bool>() ? "true" : "false");
      return wrongType();
    case ConfigKind::kList: {
      const toml::array* arr = node.as_array();
      if (arr == nullptr) return wrongType();
      std::string joined;
      for (const toml::node& item : *arr) {
        std::string text;
        if (item.is_string()) text = *item.value<std::string>();
        else if (item.is_integer()) text = std::to_string(*item.value<int64_t>());
        else return wrongType();
        if (text.find(',') != std::string::npos || text.empty()) {
          return Status(Code::kInvalidArgument, key + ": invalid entry '" + text + "'");
        }
        joined += (joined.empty() ? "" : ",") + text;
      }
      return joined;
    }
  }
  return wrongType();
}

std::string knownKeysOf(const std::string& section) {
  std::string out;
  for (const AgentConfigKey& k : agentConfigKeys()) {
    std::string name = k.name;
    if (name.compare(0, section.size() + 1, section + ".") == 0) {
      out += (out.empty() ? "" : ", ") + name.substr(section.size() + 1);
    }
  }
  return out;
}

// A TOML basic string: quotes, backslashes and control characters escaped
// (a value with a '"' printed as-is made --print-config's output invalid
// TOML; found by fuzz_agent_config).
std::string tomlString(const std::string& v) {
  std::string out = "\"";
  for (unsigned char ch : v) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += static_cast<char>(ch);
    } else if (ch < 0x20 || ch == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04X", ch);
      out += buf;
    } else {
      out += static_cast<char>(ch);
    }
  }
  return out + "\"";
}

std::string tomlValue(const AgentConfigKey& k, const AgentConfig& c) {
  std::string v = k.get(c);
  switch (k.kind) {
    case ConfigKind::kInt:
    case ConfigKind::kBool:
      return v;
    case ConfigKind::kList: {
      std::string out = "[";
      size_t start = 0;
      while (!v.empty() && start <= v.size()) {
        size_t comma = v.find(',', start);
        if (comma == std::string::npos) comma = v.size();
        out += (out.size() > 1 ? ", " : "") + tomlString(v.substr(start, comma - start));
        start = comma + 1;
      }
      return out + "]";
    }
    default:
      return tomlString(v);
  }
}

}  // namespace

Status applyToml(const std::string& toml_text, const std::string& origin, AgentConfig* config) {
  Result<toml::table> parsed = parseTomlText(toml_text, origin);
  if (!parsed.ok()) return parsed.status();
  const toml::table& root = parsed.value();
  for (const auto& [section_key, section_node] : root) {
    std::string section(section_key.str());
    const toml::table* table = section_node.as_table();
    if (table == nullptr) {
      return Status(Code::kInvalidArgument,
                    section + ": unknown key (keys live in [data], [pool], [control], "
                              "[policy], [agent], [state] and [fabric])");
    }
    std::string known = knownKeysOf(section);
    if (known.empty()) {
      return Status(Code::kInvalidArgument,
                    "[" + section + "]: unknown section (sections: data, pool, control, "
                                    "policy, agent, state, fabric)");
    }
    for (const auto& [key, node] : *table) {
      std::string name = section + "." + std::string(key.str());
      const AgentConfigKey* k = findConfigKey(name);
      if (k == nullptr) {
        return Status(Code::kInvalidArgument,
                      name + ": unknown key (keys in [" + section + "]: " + known + ")");
      }
      Result<std::string> text = nodeText(name, k->kind, node);
      if (!text.ok()) return text.status();
      SWITCHAGG_RETURN_IF_ERROR(k->set(name, *config, *text));
    }
  }
  return Status::Ok();
}

Result<AgentConfig> loadAgentConfig(const std::string& path,
                                    const std::vector<std::string>& overrides) {
  AgentConfig config;
  if (!path.empty()) {
    std::ifstream in(path);
    if (!in) return Status(Code::kIoError, "cannot read config file " + path);
    std::stringstream text;
    text << in.rdbuf();
    Status st = applyToml(text.str(), path, &config);
    if (!st.ok()) return Status(st.code(), "config " + path + ": " + st.message());
  }
  SWITCHAGG_RETURN_IF_ERROR(agentConfigTable().applyEnvironment(config));
  SWITCHAGG_RETURN_IF_ERROR(applyOverrides(overrides, &config));
  Status st = validateConfig(config);
  if (!st.ok()) {
    return Status(st.code(), (path.empty() ? "config: " : "config " + path + ": ") + st.message());
  }
  return config;
}

std::string renderConfigToml(const AgentConfig& config) {
  std::string out;
  std::string section;
  for (const AgentConfigKey& k : agentConfigKeys()) {
    std::string name = k.name;
    std::string sec = name.substr(0, name.find('.'));
    if (sec != section) {
      out += (section.empty() ? "[" : "\n[") + sec + "]\n";
      section = sec;
    }
    out += "# " + std::string(k.help) + "\n";
    out += name.substr(sec.size() + 1) + " = " + tomlValue(k, config) + "\n";
  }
  return out;
}

std::string renderConfigHelp() {
  AgentConfig defaults;
  std::string out;
  for (const AgentConfigKey& k : agentConfigKeys()) {
    out += "  " + std::string(k.name) + " = " + tomlValue(k, defaults) + "\n      " + k.help + "\n";
  }
  return out;
}

std::string renderConfigMarkdown() {
  AgentConfig defaults;
  std::string out = "| key | default | meaning |\n| --- | --- | --- |\n";
  for (const AgentConfigKey& k : agentConfigKeys()) {
    std::string help = k.help;
    for (size_t p = help.find('|'); p != std::string::npos; p = help.find('|', p + 2)) {
      help.replace(p, 1, "\\|");
    }
    out += "| `" + std::string(k.name) + "` | `" + tomlValue(k, defaults) + "` | " + help + " |\n";
  }
  return out;
}

}  // namespace switchagg::agent
