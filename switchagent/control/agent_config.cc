// The key table and its typed setters. TOML reading and rendering live in
// config_toml.cc.
#include "agent_config.h"

#include <cctype>
#include <type_traits>

#include "switchagg/agent/control_client.h"
#include "switchagg/common/config.h"

namespace switchagg::agent {

namespace {

Status badValue(const std::string& key, const std::string& text, const std::string& want) {
  return Status(Code::kInvalidArgument, key + ": invalid value '" + text + "' (" + want + ")");
}

template <auto F, int64_t Lo, int64_t Hi>
Status setInt(const std::string& key, AgentConfig& c, const std::string& text) {
  Result<int64_t> v = parseInt(key, text, Lo, Hi);
  if (!v.ok()) return v.status();
  c.*F = static_cast<std::remove_reference_t<decltype(c.*F)>>(*v);
  return Status::Ok();
}
template <auto F>
std::string getInt(const AgentConfig& c) {
  return std::to_string(c.*F);
}

template <auto F, uint64_t Lo, uint64_t Hi>
Status setSize(const std::string& key, AgentConfig& c, const std::string& text) {
  Result<uint64_t> v = parseSize(key, text);
  if (!v.ok()) return v.status();
  if (*v < Lo || *v > Hi) {
    return badValue(key, text, "expected " + std::to_string(Lo) + " to " + std::to_string(Hi) +
                                   " bytes");
  }
  c.*F = *v;
  return Status::Ok();
}
template <auto F>
std::string getSize(const AgentConfig& c) {
  uint64_t v = c.*F;
  if (v != 0 && v % (1ull << 30) == 0) return std::to_string(v >> 30) + "G";
  if (v != 0 && v % (1ull << 20) == 0) return std::to_string(v >> 20) + "M";
  if (v != 0 && v % (1ull << 10) == 0) return std::to_string(v >> 10) + "K";
  return std::to_string(v);
}

// Durations need a unit: a bare "3600" would silently mean milliseconds.
template <auto F, int64_t LoMs, int64_t HiMs>
Status setDuration(const std::string& key, AgentConfig& c, const std::string& text) {
  if (text.empty() || !std::isalpha(static_cast<unsigned char>(text.back()))) {
    return badValue(key, text, "give a unit: ms, s, m or h, e.g. \"90s\"");
  }
  Result<int64_t> v = parseDurationMs(key, text);
  if (!v.ok()) return v.status();
  if (*v < LoMs || *v > HiMs) {
    return badValue(key, text, "expected " + std::to_string(LoMs) + " ms to " +
                                   std::to_string(HiMs / 1000) + " s");
  }
  c.*F = *v;
  return Status::Ok();
}
template <auto F>
std::string getDuration(const AgentConfig& c) {
  int64_t v = c.*F;
  if (v != 0 && v % 3600000 == 0) return std::to_string(v / 3600000) + "h";
  if (v != 0 && v % 60000 == 0) return std::to_string(v / 60000) + "m";
  if (v != 0 && v % 1000 == 0) return std::to_string(v / 1000) + "s";
  return std::to_string(v) + "ms";
}

template <auto F>
Status setBool(const std::string& key, AgentConfig& c, const std::string& text) {
  Result<bool> v = parseBool(key, text);
  if (!v.ok()) return v.status();
  c.*F = *v;
  return Status::Ok();
}
template <auto F>
std::string getBool(const AgentConfig& c) {
  return c.*F ? "true" : "false";
}

template <auto F>
std::string getString(const AgentConfig& c) {
  return c.*F;
}

// "host:port" for a listener (port 0 = any free port), or "" when allowEmpty.
template <auto F, bool AllowEmpty>
Status setListen(const std::string& key, AgentConfig& c, const std::string& text) {
  if (text.empty() && AllowEmpty) {
    c.*F = text;
    return Status::Ok();
  }
  size_t colon = text.rfind(':');
  bool ok = colon != std::string::npos && colon > 0 && colon + 1 < text.size();
  if (ok) ok = parseInt(key, text.substr(colon + 1), 0, 65535).ok();
  if (!ok) {
    return badValue(key, text, AllowEmpty ? "expected host:port, or \"\" to disable"
                                          : "expected host:port");
  }
  c.*F = text;
  return Status::Ok();
}

template <auto F>
Status setPath(const std::string& key, AgentConfig& c, const std::string& text) {
  if (!text.empty() && text[0] != '/') {
    return badValue(key, text, "expected an absolute path, or \"\" to disable");
  }
  if (text.size() > 100) return badValue(key, text, "longer than a Unix socket path may be");
  c.*F = text;
  return Status::Ok();
}

// A file the agent writes (not a socket: no 108-byte limit).
template <auto F>
Status setFilePath(const std::string& key, AgentConfig& c, const std::string& text) {
  if (text.empty()) {
    c.*F = text;
    return Status::Ok();
  }
  if (text[0] != '/') return badValue(key, text, "expected an absolute path, or \"\" to disable");
  if (text.back() == '/') return badValue(key, text, "expected a file, not a directory");
  for (char ch : text) {
    if (static_cast<unsigned char>(ch) < 0x20) {
      return badValue(key, text, "control characters are not allowed in a path");
    }
  }
  if (text.size() > 4000) return badValue(key, text, "longer than a path may be");
  c.*F = text;
  return Status::Ok();
}

Status setLogLevel(const std::string& key, AgentConfig& c, const std::string& text) {
  Result<std::string> v = parseChoice(key, text, {"error", "warn", "info", "debug", "trace"});
  if (!v.ok()) return v.status();
  c.log_level = *v;
  return Status::Ok();
}

// User/group lists: names, numeric ids, or "*" (everyone).
template <auto F>
Status setList(const std::string& key, AgentConfig& c, const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    std::string item = text.substr(start, comma - start);
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    while (!item.empty() && item.back() == ' ') item.pop_back();
    if (!item.empty()) {
      bool ok = item == "*" || item.size() <= 64;
      for (char ch : item) {
        ok = ok && (item == "*" || std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' ||
                    ch == '_' || ch == '-');
      }
      if (!ok) return badValue(key, item, "expected user/group names, numeric ids or \"*\"");
      out.push_back(item);
    }
    start = comma + 1;
  }
  c.*F = std::move(out);
  return Status::Ok();
}
template <auto F>
std::string getList(const AgentConfig& c) {
  std::string out;
  for (const std::string& s : c.*F) out += (out.empty() ? "" : ",") + s;
  return out;
}

constexpr int64_t kDay = 24LL * 3600 * 1000;

}  // namespace

const std::vector<ConfigKey>& agentConfigKeys() {
  using C = AgentConfig;
  using K = ConfigKind;
  static const std::vector<ConfigKey> keys = {
      {"data.listen", K::kString, "UCX socket address of the data plane (host:port; port 0 = any)",
       setListen<&C::data_listen, false>, getString<&C::data_listen>},
      {"data.slot_bytes", K::kSize, "payload bytes per aggregation slot (the chunk size)",
       setSize<&C::slot_bytes, 4096, (1ull << 26)>, getSize<&C::slot_bytes>},
      {"data.threads", K::kInt, "reduction threads; 0 = one per core",
       setInt<&C::data_threads, 0, 256>, getInt<&C::data_threads>},
      {"data.member_timeout", K::kDuration,
       "a group member silent this long has its group aborted",
       setDuration<&C::member_timeout_ms, 100, kDay>, getDuration<&C::member_timeout_ms>},
      {"data.link_mbps", K::kInt,
       "the data link's rate in Mbit/s, told to clients for their cost model (0 = unknown)",
       setInt<&C::link_mbps, 0, 100000000>, getInt<&C::link_mbps>},
      {"data.advertise_capacity", K::kBool,
       "tell clients the measured reduction rate, link rate and turnaround (false: answer "
       "as an agent that predates it)",
       setBool<&C::advertise_capacity>, getBool<&C::advertise_capacity>},
      {"data.max_groups_per_lease", K::kInt,
       "groups (communicators) one lease may hold at once, formed or waiting for members; "
       "more joins are refused (no_resource)",
       setInt<&C::max_groups_per_lease, 1, 4096>, getInt<&C::max_groups_per_lease>},
      {"pool.slots", K::kInt, "aggregation slots of the switch (the pool leases draw from)",
       setInt<&C::pool_slots, 1, 1 << 20>, getInt<&C::pool_slots>},
      {"control.unix_socket", K::kString,
       "control API Unix socket (peer credentials); \"\" disables it",
       setPath<&C::unix_socket>, getString<&C::unix_socket>},
      {"control.listen", K::kString,
       "control API TCP address (munge-authenticated); \"\" disables it",
       setListen<&C::control_listen, true>, getString<&C::control_listen>},
      {"control.open_readonly", K::kBool,
       "let unauthenticated TCP callers GET /v1/status, /v1/leases and /metrics",
       setBool<&C::open_readonly>, getBool<&C::open_readonly>},
      {"control.munge_socket", K::kString, "munged socket; \"\" = libmunge's default",
       setPath<&C::munge_socket>, getString<&C::munge_socket>},
      {"control.request_timeout", K::kDuration,
       "a control connection must deliver its whole request within this",
       setDuration<&C::request_timeout_ms, 100, 60000>, getDuration<&C::request_timeout_ms>},
      {"control.max_connections", K::kInt,
       "concurrent TCP control connections (the Unix socket has its own budget); when full, "
       "the oldest one still sending its request is cut for a newcomer",
       setInt<&C::max_connections, 1, 4096>, getInt<&C::max_connections>},
      {"control.max_unix_connections", K::kInt,
       "concurrent Unix-socket control connections, a budget TCP clients cannot take",
       setInt<&C::max_unix_connections, 1, 4096>, getInt<&C::max_unix_connections>},
      {"control.max_connections_per_peer", K::kInt,
       "concurrent control connections from one TCP address or one non-root uid",
       setInt<&C::max_connections_per_peer, 1, 4096>, getInt<&C::max_connections_per_peer>},
      {"policy.max_slots_per_job", K::kInt, "most slots one job's lease may hold",
       setInt<&C::max_slots_per_job, 1, 1 << 20>, getInt<&C::max_slots_per_job>},
      {"policy.max_slots_per_user", K::kInt, "most slots all leases of one user may hold",
       setInt<&C::max_slots_per_user, 1, 1 << 20>, getInt<&C::max_slots_per_user>},
      {"policy.default_slots", K::kInt, "slots of a lease whose request names none",
       setInt<&C::default_slots, 1, 1 << 20>, getInt<&C::default_slots>},
      {"policy.default_ttl", K::kDuration, "lease lifetime when the request names none",
       setDuration<&C::default_ttl_ms, 1000, 366 * kDay>, getDuration<&C::default_ttl_ms>},
      {"policy.max_ttl", K::kDuration, "longest lease lifetime a request (or renew) may ask",
       setDuration<&C::max_ttl_ms, 1000, 366 * kDay>, getDuration<&C::max_ttl_ms>},
      {"policy.allowed_users", K::kList,
       "users (names or uids, \"*\" = all) who may lease slots for themselves",
       setList<&C::allowed_users>, getList<&C::allowed_users>},
      {"policy.allowed_groups", K::kList,
       "groups (names or gids) whose members may lease slots for themselves",
       setList<&C::allowed_groups>, getList<&C::allowed_groups>},
      {"policy.admin_users", K::kList,
       "users who may lease for any uid, delete any lease and drain (root always may)",
       setList<&C::admin_users>, getList<&C::admin_users>},
      {"agent.log_level", K::kString,
       "error|warn|info|debug|trace (SWITCHAGG_LOG_LEVEL overrides)", setLogLevel,
       getString<&C::log_level>},
      {"agent.reaper_interval", K::kDuration, "how often expired leases are reaped",
       setDuration<&C::reaper_interval_ms, 10, 60000>, getDuration<&C::reaper_interval_ms>},
      {"state.lease_file", K::kString,
       "keeps leases across agent restarts in this file (written 0600, atomically); \"\" = in "
       "memory only",
       setFilePath<&C::lease_file>, getString<&C::lease_file>},
  };
  return keys;
}

const ConfigKey* findConfigKey(const std::string& name) {
  for (const ConfigKey& k : agentConfigKeys()) {
    if (name == k.name) return &k;
  }
  return nullptr;
}

Status applyOverrides(const std::vector<std::string>& assignments, AgentConfig* config) {
  for (const std::string& a : assignments) {
    size_t eq = a.find('=');
    if (eq == std::string::npos) {
      return Status(Code::kInvalidArgument, "--set " + a + ": expected KEY=VALUE");
    }
    std::string key = a.substr(0, eq);
    const ConfigKey* k = findConfigKey(key);
    if (k == nullptr) return Status(Code::kInvalidArgument, key + ": unknown key (see --help)");
    SWITCHAGG_RETURN_IF_ERROR(k->set(key, *config, a.substr(eq + 1)));
  }
  return Status::Ok();
}

Status validateConfig(const AgentConfig& c) {
  auto tooBig = [](const char* a, int64_t av, const char* b, int64_t bv) {
    return Status(Code::kInvalidArgument, std::string(a) + ": " + std::to_string(av) +
                                              " exceeds " + b + " (" + std::to_string(bv) + ")");
  };
  if (c.max_slots_per_job > c.pool_slots)
    return tooBig("policy.max_slots_per_job", c.max_slots_per_job, "pool.slots", c.pool_slots);
  if (c.default_slots > c.max_slots_per_job)
    return tooBig("policy.default_slots", c.default_slots, "policy.max_slots_per_job",
                  c.max_slots_per_job);
  if (c.max_slots_per_job > c.max_slots_per_user)
    return tooBig("policy.max_slots_per_job", c.max_slots_per_job, "policy.max_slots_per_user",
                  c.max_slots_per_user);
  if (c.default_ttl_ms > c.max_ttl_ms) {
    return Status(Code::kInvalidArgument, "policy.default_ttl: longer than policy.max_ttl");
  }
  if (c.unix_socket.empty() && c.control_listen.empty()) {
    return Status(Code::kInvalidArgument,
                  "control.unix_socket: both it and control.listen are disabled; the agent "
                  "would be unreachable");
  }
  return Status::Ok();
}

LeaseLimits leaseLimitsOf(const AgentConfig& config) {
  LeaseLimits l;
  l.pool_slots = config.pool_slots;
  l.max_slots_per_job = config.max_slots_per_job;
  l.max_slots_per_user = config.max_slots_per_user;
  l.max_ttl_ms = config.max_ttl_ms;
  return l;
}

}  // namespace switchagg::agent
