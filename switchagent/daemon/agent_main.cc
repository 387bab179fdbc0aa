// switchagg-agent --config FILE: the switch agent daemon. Runs in the
// foreground, logs to stderr, prints one "ready" line on stdout once every
// listener is up (tests and scripts wait for it), stops on SIGINT/SIGTERM.
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "agent_config.h"
#include "control_api.h"
#include "control_server.h"
#include "lease_store.h"
#include "lease_table.h"
#include "switchagg/agent/fabric_map.h"
#include "switchagg/common/log.h"
#include "switchagg/common/version.h"
#if defined(SWITCHAGG_HAVE_DATA_PLANE)
#include "data_plane.h"
#endif

using namespace switchagg;
using namespace switchagg::agent;

namespace {

constexpr const char* kPart = "agent";

// [fabric] map + name: this agent's parent's data address ("" = a root).
// The map must name this agent; a parent needs a data address there.
Result<std::string> parentDataAddress(const std::string& path, const std::string& name) {
  if (path.empty() || name.empty())
    return Status(Code::kInvalidArgument,
                  "fabric.map and fabric.name go together (one is set, the other is not)");
  Result<FabricMap> map = FabricMap::load(path);
  if (!map.ok()) return Status(Code::kInvalidArgument, "fabric.map: " + map.status().message());
  const FabricAgent* self = map->find(name);
  if (!self)
    return Status(Code::kInvalidArgument,
                  "fabric.name: '" + name + "' is not an agent of the fabric map " + path);
  if (self->parent.empty()) return std::string();
  const FabricAgent* parent = map->find(self->parent);
  if (!parent || parent->data.empty())
    return Status(Code::kInvalidArgument, "fabric map " + path + ": agent '" + self->parent +
                                              "' (the parent of '" + name +
                                              "') needs a data address for its leaves to dial");
  return parent->data;
}

void usage(FILE* out) {
  std::fprintf(out,
               "usage: switchagg-agent [--config FILE] [--set KEY=VALUE]... [--check]\n"
               "                       [--print-config] [--version] [--help]\n"
               "  --config FILE    site policy (TOML; example: etc/switchagg/agent.toml)\n"
               "  --set KEY=VALUE  override one key (wins over the file and environment)\n"
               "  --data-threads N data-plane threads (same as --set data.plane_threads=N)\n"
               "  --check          validate the configuration and exit\n"
               "  --print-config   print the effective configuration as TOML and exit\n"
               "  --print-config-markdown  print the key table for docs/admin.md\n"
               "  --version        print the version and exit\n"
               "exit codes: 0 ok, 1 runtime failure (e.g. address in use), 2 bad usage or config\n"
               "\nconfiguration keys (default shown):\n%s",
               renderConfigHelp().c_str());
}

struct Args {
  std::string config_path;
  std::vector<std::string> overrides;
  bool check = false, print = false, print_markdown = false;
};

// Returns 0 to continue, or an exit code (+1) when done/bad.
int parseArgs(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const char* name) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "switchagg-agent: %s needs a value\n", name);
        return nullptr;
      }
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      usage(stdout);
      return 1;
    } else if (arg == "--version") {
      std::printf("switchagg-agent %s\n", SWITCHAGG_VERSION);
      return 1;
    } else if (arg == "--config" || arg == "-c") {
      const char* v = value("--config");
      if (v == nullptr) return 3;
      a->config_path = v;
    } else if (arg.rfind("--config=", 0) == 0) {
      a->config_path = arg.substr(9);
    } else if (arg == "--set") {
      const char* v = value("--set");
      if (v == nullptr) return 3;
      a->overrides.push_back(v);
    } else if (arg == "--data-threads") {
      const char* v = value("--data-threads");
      if (v == nullptr) return 3;
      a->overrides.push_back(std::string("data.plane_threads=") + v);
    } else if (arg == "--check") {
      a->check = true;
    } else if (arg == "--print-config") {
      a->print = true;
    } else if (arg == "--print-config-markdown") {
      a->print_markdown = true;
    } else {
      std::fprintf(stderr, "switchagg-agent: unknown argument '%s' (see --help)\n", arg.c_str());
      return 3;
    }
  }
  return 0;
}


int run(const AgentConfig& config) {
  LeaseTable leases(config.limits);
  // Before any listener opens: a restarted agent serves its old leases at once.
  // An unreadable file (not a corrupt one) stops the start: serving on an
  // empty table would overwrite the leases it holds. Restart=on-failure
  // retries, and the message says what to fix.
  if (!config.lease_file.empty()) {
    Status st = leases.attachStore(std::make_unique<LeaseStore>(config.lease_file));
    if (!st.ok()) {
      std::fprintf(stderr,
                   "switchagg-agent: state.lease_file: %s; the file is left as it is and the "
                   "agent does not start (fix the file or its permissions, then start again)\n",
                   st.message().c_str());
      return 1;
    }
  }
  const DataPlaneView* view = nullptr;  // the data plane, when built in
#if defined(SWITCHAGG_HAVE_DATA_PLANE)
  std::string parent_address;  // "" = a root (or no fabric map)
  if (!config.fabric_map.empty() || !config.fabric_name.empty()) {
    Result<std::string> parent = parentDataAddress(config.fabric_map, config.fabric_name);
    if (!parent.ok()) {
      std::fprintf(stderr, "switchagg-agent: %s\n", parent.status().message().c_str());
      return 1;
    }
    parent_address = *parent;
  }
  Result<std::unique_ptr<DataPlane>> dp = DataPlane::start(config.data, parent_address, leases);
  if (!dp.ok()) {
    std::fprintf(stderr, "switchagg-agent: data plane on %s: %s\n", config.data.listen.c_str(),
                 dp.status().toString().c_str());
    return 1;
  }
  DataPlane* data_plane = dp->get();
  leases.setRevokeCallback([data_plane](const Lease& lease, const std::string& reason) {
    data_plane->revokeLease(lease.token, reason);
  });
  view = data_plane;
#else
  SA_WARN(kPart, "built without the data plane: leases only, no aggregation");
#endif
  leases.startReaper(config.reaper_interval_ms);

  ControlApi api(config, leases, view);
  ControlServerOptions so;
  so.unix_socket = config.unix_socket;
  so.tcp_listen = config.control_listen;
  so.munge_socket = config.munge_socket;
  so.request_timeout_ms = config.request_timeout_ms;
  so.budget.max_tcp = config.max_connections;
  so.budget.max_unix = config.max_unix_connections;
  so.budget.max_per_peer = config.max_connections_per_peer;
  Result<std::unique_ptr<ControlServer>> server = ControlServer::start(so, api);
  if (!server.ok()) {
    std::fprintf(stderr, "switchagg-agent: %s\n", server.status().message().c_str());
    return 1;
  }
  std::string data_address = view ? view->address() : config.data.listen;
  std::printf("switchagg-agent ready control=%s tcp=%s data=%s\n",
              (*server)->unixAddress().c_str(), (*server)->tcpAddress().c_str(),
              data_address.c_str());
  std::fflush(stdout);
  SA_INFO(kPart, "ready: control %s %s, data %s, %zu slots of %zu bytes",
          (*server)->unixAddress().c_str(), (*server)->tcpAddress().c_str(), data_address.c_str(),
          static_cast<size_t>(config.limits.pool_slots), config.data.engine.slot_bytes);

  sigset_t wait_set;
  sigemptyset(&wait_set);
  sigaddset(&wait_set, SIGINT);
  sigaddset(&wait_set, SIGTERM);
  int sig = 0;
  sigwait(&wait_set, &sig);
  SA_INFO(kPart, "signal %d: shutting down", sig);

  (*server)->stop();
  leases.stopReaper();
  if (leases.store() != nullptr) {
    // Live groups end with this process, but the leases stay in the file
    // for the next start: jobs rejoin with the same token.
    leases.abortGroups("agent restarting");
    SA_INFO(kPart, "%zu leases kept in %s", leases.list().size(),
            leases.store()->path().c_str());
  } else {
    leases.revokeAll("agent shutting down");
  }
#if defined(SWITCHAGG_HAVE_DATA_PLANE)
  view = nullptr;  // the control server is stopped: nothing reads it any more
  dp->reset();
#endif
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Block the stop signals before any thread exists, so every thread
  // inherits the mask and only sigwait() in run() sees them.
  sigset_t stop_set;
  sigemptyset(&stop_set);
  sigaddset(&stop_set, SIGINT);
  sigaddset(&stop_set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_set, nullptr);
  signal(SIGPIPE, SIG_IGN);
  // An agent restarted after a crash (Restart=on-failure) must bind its data
  // port again at once, while the dead process's connections sit in
  // TIME_WAIT; without SO_REUSEADDR UCX's listener fails "Address already in
  // use" for up to a minute. An explicit setting in the environment wins.
  setenv("UCX_TCP_CM_REUSEADDR", "y", 0);

  Args args;
  int rc = parseArgs(argc, argv, &args);
  if (rc != 0) return rc - 1;
  if (args.print_markdown) {
    std::fputs(renderConfigMarkdown().c_str(), stdout);
    return 0;
  }
  Result<AgentConfig> config = loadAgentConfig(args.config_path, args.overrides);
  if (!config.ok()) {
    std::fprintf(stderr, "switchagg-agent: %s\n", config.status().message().c_str());
    return 2;
  }
  if (args.print) {
    std::fputs(renderConfigToml(*config).c_str(), stdout);
    return 0;
  }
  if (args.check) {
    std::printf("switchagg-agent: configuration OK\n");
    return 0;
  }
  setLogLevel(config->log_level);
  return run(*config);
}
