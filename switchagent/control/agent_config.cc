// The key table and its typed setters. TOML reading and rendering live in
// config_toml.cc.
#include "agent_config.h"

#include <cctype>

#include "switchagg/agent/control_client.h"
#include "switchagg/common/config.h"
#include "switchagg/common/log_config.h"

namespace switchagg::agent {

namespace {

// "host:port" for a listener (port 0 = any free port), or "" when allowEmpty.
template <bool AllowEmpty>
Status checkListen(const std::string& key, const std::string& text) {
  if (text.empty() && AllowEmpty) return Status::Ok();
  size_t colon = text.rfind(':');
  bool ok = colon != std::string::npos && colon > 0 && colon + 1 < text.size();
  if (ok) ok = parseInt(key, text.substr(colon + 1), 0, 65535).ok();
  if (!ok) {
    return invalidValue(key, text, AllowEmpty ? "expected host:port, or \"\" to disable"
                                          : "expected host:port");
  }
  return Status::Ok();
}

// An absolute path (not a socket: no 108-byte limit), or "" (disabled).
template <bool Directory>
Status checkPath(const std::string& key, const std::string& text) {
  if (text.empty()) return Status::Ok();
  if (text[0] != '/') return invalidValue(key, text, "expected an absolute path, or \"\" to disable");
  if (!Directory && text.back() == '/') return invalidValue(key, text, "expected a file, not a directory");
  for (char ch : text) {
    if (static_cast<unsigned char>(ch) < 0x20) {
      return invalidValue(key, text, "control characters are not allowed in a path");
    }
  }
  if (text.size() > 4000) return invalidValue(key, text, "longer than a path may be");
  return Status::Ok();
}

// User/group lists: names, numeric ids, or "*" (everyone).
Result<std::vector<std::string>> parseIdList(const std::string& key, const std::string& text) {
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
      if (!ok) return invalidValue(key, item, "expected user/group names, numeric ids or \"*\"");
      out.push_back(item);
    }
    start = comma + 1;
  }
  return out;
}

ConfigBinding<AgentConfig> listField(std::vector<std::string> AgentConfig::*field) {
  return customField<AgentConfig>(
      ConfigKind::kList,
      [field](const std::string& key, AgentConfig& c, const std::string& text) -> Status {
        Result<std::vector<std::string>> v = parseIdList(key, text);
        if (!v.ok()) return v.status();
        c.*field = std::move(*v);
        return Status::Ok();
      },
      [field](const AgentConfig& c) {
        std::string out;
        for (const std::string& s : c.*field) out += (out.empty() ? "" : ",") + s;
        return out;
      });
}

constexpr int64_t kDay = 24LL * 3600 * 1000;

}  // namespace

const ConfigTable<AgentConfig>& agentConfigTable() {
  using C = AgentConfig;
  using D = DataPlaneConfig;
  using E = EngineSettings;
  using L = LeaseLimits;
  const auto data = [](ConfigBinding<D> b) { return nestedField(&C::data, std::move(b)); };
  const auto engine = [data](ConfigBinding<E> b) {
    return data(nestedField(&D::engine, std::move(b)));
  };
  const auto limits = [](ConfigBinding<L> b) { return nestedField(&C::limits, std::move(b)); };
  constexpr DurationUnit kUnit = DurationUnit::kRequired;
  static const ConfigTable<AgentConfig> table({
      {"data.listen", nullptr, "UCX socket address of the data plane (host:port; port 0 = any)",
       data(stringField(&D::listen, checkListen<false>))},
      {"data.slot_bytes", nullptr, "payload bytes per aggregation slot (the chunk size)",
       engine(sizeField(&E::slot_bytes, 4096, (1ull << 26)))},
      {"data.slot_memory", nullptr, "bytes of slot buffers all groups together may hold; a window that does "
       "not fit is shrunk at the join",
       engine(sizeField(&E::memory_bytes, 1ull << 20, 1ull << 40))},
      {"data.threads", nullptr, "reduction threads; 0 = one per core",
       data(intField(&D::threads, 0, 256))},
      {"data.plane_threads", nullptr,
       "data-plane threads, each with its own UCX worker, listener and engine; a lease's groups "
       "run on one of them; 0 = one per core, at most 4; 1 = a single thread (the default: one "
       "job runs on one thread, and jobs get their thread's address rather than a fabric map's "
       "`data` address; raise it for agents serving many jobs)",
       data(intField(&D::plane_threads, 0, 64))},
      {"data.threads_per_job", nullptr,
       "data-plane threads each lease spreads over: its jobs get that many addresses (its home "
       "thread's and the next ones') and stripe every call over them, one stripe per thread, so "
       "one job can use several cores of a reducer host; 1 = the home thread only (the default); "
       "0 = every data-plane thread; never more than data.plane_threads; an agent with a parent "
       "(a tree's leaf) keeps 1",
       data(intField(&D::threads_per_job, 0, 64))},
      {"data.member_timeout", nullptr,
       "a group member silent this long has its group aborted; a client a send to it has made "
       "no progress for this long is dropped",
       engine(durationField(&E::member_timeout_ms, 100, kDay, kUnit))},
      {"data.keepalive", nullptr,
       "while a chunk waits for members, tell those that contributed to it this often that it still "
       "waits (WAITING), so a late member does not fail the others' calls; data.member_timeout stays "
       "the bound (0: never, as an agent that predates it)",
       engine(durationField(&E::keepalive_ms, 0, 60000, kUnit))},
      {"data.link_mbps", nullptr, "the data link's rate in Mbit/s, told to clients for their cost model; 0 = read it "
       "from sysfs (data.sysfs_root) for the interface holding data.listen, unknown if that fails",
       engine(intField(&E::link_mbps, 0, 100000000))},
      {"data.sysfs_root", nullptr, "the sysfs root the data link's rate is read under when data.link_mbps is 0 "
       "(class/net/IFACE/speed, or the rate of the RoCE port on that interface in class/infiniband); \"\" = "
       "not read (the rate is unknown)",
       data(stringField(&D::sysfs_root, checkPath<true>))},
      {"data.advertise_capacity", nullptr, "tell clients the measured reduction rate, link rate and turnaround (false: answer "
       "as an agent that predates it)",
       engine(boolField(&E::advertise_capacity))},
      {"data.join_flags", nullptr, "accept JOIN flags, so members that understand busy get per-call busy refusals (false: "
       "refuse them as an agent that predates them; clients then join without)",
       engine(boolField(&E::join_flags))},
      {"data.routed", nullptr, "serve routed calls (MPI_Reduce, reduce-scatter, allgather, bcast: CONTRIB_ROUTED; false: "
       "refuse them as an agent that predates them; clients then offload only allreduce and barrier)",
       engine(boolField(&E::routed))},
      {"data.routed_trees", nullptr, "serve routed calls through trees (leaf and spine; false: refuse them as an agent that "
       "predates them; clients then offload only allreduce and barrier on tree communicators)",
       engine(boolField(&E::routed_trees))},
      {"data.max_groups_per_lease", nullptr, "groups (communicators) one lease may hold at once, formed or waiting for members; "
       "more joins are refused (no_resource)",
       engine(intField(&E::max_groups_per_lease, 1, 4096))},
      {"data.fair_share", nullptr, "contribution bytes (a chunk's size x its members) one group's chunks may put into "
       "one reduction pass before every other group's turn: bounds the wait one job's load adds to another's "
       "call (0: a pass takes every ready chunk)",
       engine(sizeField(&E::fair_share_bytes, 0, 1ull << 40))},
      {"data.inflight_bytes", nullptr, "credits at the agent's port: contribution bytes (members x window x chunk "
       "per call) the calls in progress on one data listener may have in flight toward it together; windows are "
       "cut at join so one call fits, a call past it is refused busy (0: no bound). Default: room for 2 chunks "
       "of each of 64 members on a deep-buffered 400 Gbit/s port; set it to a few times what the agent's switch "
       "port can queue (measured: [tuning.md](tuning.md#credits-at-the-agents-port))",
       engine(sizeField(&E::inflight_bytes, 0, 1ull << 40))},
      {"pool.slots", nullptr, "aggregation slots of the switch (the pool leases draw from)",
       limits(intField(&L::pool_slots, 1, 1 << 20))},
      {"control.unix_socket", nullptr, "control API Unix socket (peer credentials); \"\" disables it",
       stringField(&C::unix_socket, checkSocketPath)},
      {"control.listen", nullptr, "control API TCP address (munge-authenticated); \"\" disables it",
       stringField(&C::control_listen, checkListen<true>)},
      {"control.open_readonly", nullptr, "let unauthenticated TCP callers GET /v1/status, /v1/leases and /metrics",
       boolField(&C::open_readonly)},
      {"control.munge_socket", nullptr, "munged socket; \"\" = libmunge's default",
       stringField(&C::munge_socket, checkSocketPath)},
      {"control.request_timeout", nullptr, "a control connection must deliver its whole request within this",
       durationField(&C::request_timeout_ms, 100, 60000, kUnit)},
      {"control.max_connections", nullptr, "concurrent TCP control connections (the Unix socket has its own budget); when full, "
       "the oldest one still sending its request is cut for a newcomer",
       intField(&C::max_connections, 1, 4096)},
      {"control.max_unix_connections", nullptr, "concurrent Unix-socket control connections, a budget TCP clients cannot take",
       intField(&C::max_unix_connections, 1, 4096)},
      {"control.max_connections_per_peer", nullptr, "concurrent control connections from one TCP address or one non-root uid",
       intField(&C::max_connections_per_peer, 1, 4096)},
      {"policy.max_slots_per_job", nullptr, "most slots one job's lease may hold",
       limits(intField(&L::max_slots_per_job, 1, 1 << 20))},
      {"policy.max_slots_per_user", nullptr, "most slots all leases of one user may hold",
       limits(intField(&L::max_slots_per_user, 1, 1 << 20))},
      {"policy.default_slots", nullptr, "slots of a lease whose request names none",
       intField(&C::default_slots, 1, 1 << 20)},
      {"policy.default_ttl", nullptr, "lease lifetime when the request names none",
       durationField(&C::default_ttl_ms, 1000, 366 * kDay, kUnit)},
      {"policy.max_ttl", nullptr, "longest lease lifetime a request (or renew) may ask",
       limits(durationField(&L::max_ttl_ms, 1000, 366 * kDay, kUnit))},
      {"policy.idle_reclaim", nullptr,
       "reclaim a lease no member has used for this long (0 = never; Slurm's epilog stays the normal path)",
       limits(durationField(&L::idle_reclaim_ms, 0, 366 * kDay, kUnit))},
      {"policy.allowed_users", nullptr, "users (names or uids, \"*\" = all) who may lease slots for themselves",
       listField(&C::allowed_users)},
      {"policy.allowed_groups", nullptr, "groups (names or gids) whose members may lease slots for themselves",
       listField(&C::allowed_groups)},
      {"policy.admin_users", nullptr, "users who may lease for any uid, delete any lease and drain (root always may)",
       listField(&C::admin_users)},
      {"agent.log_level", "SWITCHAGG_LOG_LEVEL",
       "error|warn|info|debug|trace (SWITCHAGG_LOG_LEVEL overrides)",
       logLevelField(&C::log_level)},
      {"agent.reaper_interval", nullptr, "how often expired leases are reaped",
       durationField(&C::reaper_interval_ms, 10, 60000, kUnit)},
      {"state.lease_file", nullptr, "keeps leases across agent restarts in this file (written 0600, atomically); \"\" = in "
       "memory only",
       stringField(&C::lease_file, checkPath<false>)},
      {"fabric.map", nullptr, "the fabric map (docs/admin.md \"Fabric map\"): with fabric.name, this agent's parent there "
       "makes it a leaf that forwards tree groups to it; \"\" = no map",
       stringField(&C::fabric_map, checkPath<false>)},
      {"fabric.name", nullptr, "this agent's name in the fabric map (fabric.map)",
       stringField(&C::fabric_name)},
  });
  return table;
}

const std::vector<AgentConfigKey>& agentConfigKeys() { return agentConfigTable().keys(); }

const AgentConfigKey* findConfigKey(const std::string& name) { return agentConfigTable().find(name); }

Status applyOverrides(const std::vector<std::string>& assignments, AgentConfig* config) {
  for (const std::string& a : assignments) {
    size_t eq = a.find('=');
    if (eq == std::string::npos) {
      return Status(Code::kInvalidArgument, "--set " + a + ": expected KEY=VALUE");
    }
    std::string key = a.substr(0, eq);
    const AgentConfigKey* k = findConfigKey(key);
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
  const LeaseLimits& l = c.limits;
  if (l.max_slots_per_job > l.pool_slots)
    return tooBig("policy.max_slots_per_job", l.max_slots_per_job, "pool.slots", l.pool_slots);
  if (c.default_slots > l.max_slots_per_job)
    return tooBig("policy.default_slots", c.default_slots, "policy.max_slots_per_job",
                  l.max_slots_per_job);
  if (l.max_slots_per_job > l.max_slots_per_user)
    return tooBig("policy.max_slots_per_job", l.max_slots_per_job, "policy.max_slots_per_user",
                  l.max_slots_per_user);
  if (c.default_ttl_ms > l.max_ttl_ms) {
    return Status(Code::kInvalidArgument, "policy.default_ttl: longer than policy.max_ttl");
  }
  if (c.unix_socket.empty() && c.control_listen.empty()) {
    return Status(Code::kInvalidArgument,
                  "control.unix_socket: both it and control.listen are disabled; the agent "
                  "would be unreachable");
  }
  return Status::Ok();
}

}  // namespace switchagg::agent
