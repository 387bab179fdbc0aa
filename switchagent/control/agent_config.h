// The agent's configuration: one typed table of keys (name, default, help,
// parser) from which the TOML loader, `--set KEY=VALUE`, `--help`,
// `--print-config` and the key table in docs/admin.md all come.
// Precedence: command line (--set) > environment (SWITCHAGG_LOG_LEVEL) >
// file > default. Any unknown key or bad value refuses the whole config with
// a message naming the key and the problem.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "admission.h"
#include "data_plane_view.h"
#include "switchagg/agent/defaults.h"
#include "switchagg/common/config_table.h"
#include "switchagg/common/log.h"
#include "switchagg/common/status.h"

namespace switchagg::agent {

struct AgentConfig {
  // [data]: bound straight into the data plane's config (and its engine
  // settings), which DataPlane::start takes by const&.
  DataPlaneConfig data;
  // [pool] slots and the [policy] bounds on leases: bound straight into the
  // limits the lease table admits by (LeaseTable takes them by const&; the
  // data plane reads the pool's size from there).
  LeaseLimits limits;
  // [fabric] this agent's place in the fabric map (trees: its parent)
  std::string fabric_map;
  std::string fabric_name;
  // [control]
  std::string unix_socket = kDefaultControlSocket;
  std::string control_listen = kDefaultControlListen;
  bool open_readonly = true;
  std::string munge_socket;  // empty: libmunge's default
  int64_t request_timeout_ms = 2000;
  int max_connections = 64;           // TCP
  int max_unix_connections = 64;
  int max_connections_per_peer = 8;
  // [policy] (the bounds are in `limits`)
  int default_slots = 4;
  int64_t default_ttl_ms = 24LL * 3600 * 1000;
  std::vector<std::string> allowed_users;   // names or numeric uids; "*" = everyone
  std::vector<std::string> allowed_groups;  // names or numeric gids
  std::vector<std::string> admin_users;     // may act for any uid (root always may)
  // [agent]
  LogLevel log_level = LogLevel::kInfo;
  int64_t reaper_interval_ms = 1000;
  // [state]
  std::string lease_file;  // empty: leases live in memory only
};

// The key table (switchagg/common/config_table.h): name, kind, help, parser
// and printer of every key; a key's default is AgentConfig's initializer.
using AgentConfigKey = ConfigKey<AgentConfig>;
const ConfigTable<AgentConfig>& agentConfigTable();
const std::vector<AgentConfigKey>& agentConfigKeys();
const AgentConfigKey* findConfigKey(const std::string& name);

// Applies a TOML document (file contents) over `config`. `origin` names the
// file in messages.
Status applyToml(const std::string& toml_text, const std::string& origin, AgentConfig* config);
// Applies "key=value" overrides (from --set).
Status applyOverrides(const std::vector<std::string>& assignments, AgentConfig* config);
// Cross-key checks (default <= max, at least one listener, ...).
Status validateConfig(const AgentConfig& config);
// Reads FILE (empty: defaults only), applies environment and overrides, validates.
Result<AgentConfig> loadAgentConfig(const std::string& path,
                                    const std::vector<std::string>& overrides);

std::string renderConfigToml(const AgentConfig& config);  // --print-config
std::string renderConfigHelp();                           // --help key list
std::string renderConfigMarkdown();                       // docs/admin.md table

}  // namespace switchagg::agent
