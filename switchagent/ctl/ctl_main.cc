// switchagg-ctl: the agent's admin CLI. Options may come before or after the
// command words; exit codes are in ctl_commands.h.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "ctl_commands.h"
#include "switchagg/common/config.h"
#include "switchagg/common/version.h"

using namespace switchagg;
using namespace switchagg::agent;

namespace {

const char kUsage[] =
    "usage: switchagg-ctl [--agent ADDR] [--json] [--timeout D] COMMAND\n"
    "commands:\n"
    "  status                                 agent state and counters\n"
    "  leases                                 list leases (no tokens)\n"
    "  lease create --job ID [--slots N] [--ttl D] [--uid U] [--mode auto|require]\n"
    "                                         create (or fetch) a job's lease; prints\n"
    "                                         `export SWITCHAGG_...` lines for mpirun\n"
    "  lease token --job ID [--mode M]        print the export lines of an existing lease\n"
    "  lease renew --job ID [--ttl D]         extend a lease\n"
    "  lease delete --job ID                  delete a lease (idempotent)\n"
    "  lease create|token|renew|delete ... --nodes HOSTLIST | --hostfile FILE [--fabric FILE]\n"
    "                                         the same on every agent the nodes need\n"
    "                                         (fabric map): create all or nothing; the\n"
    "                                         job gets one address and token per agent;\n"
    "                                         renew tries every agent, names any that\n"
    "                                         failed; renew/delete without nodes: every\n"
    "                                         agent of the map; --reducers K: K agents\n"
    "                                         of the nodes' reducer pool (create, token)\n"
    "  drain [--off]                          stop (or resume) accepting new leases\n"
    "  metrics                                Prometheus metrics text\n"
    "options:\n"
    "  --agent ADDR   unix:/path, http://host:port or host:port\n"
    "                 (default: $SWITCHAGG_CONTROL, else unix:/run/switchagg/agent.sock)\n"
    "  --json         print the agent's JSON answer\n"
    "  --timeout D    bound on the whole request (default 5s)\n"
    "  --version      print the version and exit\n"
    "  --ttl D        90s, 30m, 12h; a bare number is seconds\n"
    "  --fabric FILE  fabric map (default: $SWITCHAGG_FABRIC, else /etc/switchagg/fabric.toml)\n"
    "exit codes: 0 ok, 1 refused by the agent, 2 usage, 3 agent unreachable,\n"
    "            4 unauthenticated/denied by policy, 5 quota exceeded or draining\n";

int usageError(const std::string& message) {
  std::fprintf(stderr, "switchagg-ctl: %s\n%s", message.c_str(), kUsage);
  return kExitUsage;
}

struct Parsed {
  std::vector<std::string> words;
  CtlOptions ctl;
  ControlClientOptions client;
};

Status parseSeconds(const std::string& key, const std::string& text, int64_t* out) {
  bool bare = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
  Result<int64_t> ms = parseDurationMs(key, bare ? text + "s" : text);
  if (!ms.ok()) return ms.status();
  *out = (*ms + 999) / 1000;
  return Status::Ok();
}

// Returns an empty string on success, else the usage problem.
std::string parseArgs(int argc, char** argv, Parsed* p) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    std::string v;
    size_t eq = a.find('=');
    bool has_inline = a.rfind("--", 0) == 0 && eq != std::string::npos;
    if (has_inline) {
      v = a.substr(eq + 1);
      a = a.substr(0, eq);
    }
    auto need = [&]() -> bool {
      if (has_inline) return true;
      if (i + 1 >= argc) return false;
      v = argv[++i];
      return true;
    };
    if (a == "--json") p->ctl.json = true;
    else if (a == "--off") p->ctl.off = true;
    else if (a == "-h" || a == "--help") p->words.insert(p->words.begin(), "help");
    else if (a == "--version") p->words.insert(p->words.begin(), "version");
    else if (a == "--agent" || a == "--job" || a == "--slots" || a == "--ttl" || a == "--uid" ||
             a == "--mode" || a == "--timeout" || a == "--nodes" || a == "--hostfile" ||
             a == "--fabric" || a == "--reducers") {
      if (!need()) return a + " needs a value";
      Status st;
      if (a == "--agent") p->client.address = v;
      else if (a == "--job") p->ctl.job = v;
      else if (a == "--nodes")
        p->ctl.nodes = v;
      else if (a == "--hostfile")
        p->ctl.hostfile = v;
      else if (a == "--fabric")
        p->ctl.fabric = v;
      else if (a == "--mode") {
        Result<std::string> m = parseChoice("--mode", v, {"auto", "require", "off"});
        st = m.ok() ? Status::Ok() : m.status();
        if (m.ok()) p->ctl.mode = *m;
      } else if (a == "--slots") {
        Result<int64_t> n = parseInt("--slots", v, 1, 1 << 20);
        st = n.ok() ? Status::Ok() : n.status();
        if (n.ok()) p->ctl.slots = static_cast<int>(*n);
      } else if (a == "--reducers") {
        Result<int64_t> n = parseInt("--reducers", v, 1, 1 << 16);
        st = n.ok() ? Status::Ok() : n.status();
        if (n.ok()) p->ctl.reducers = static_cast<int>(*n);
      } else if (a == "--uid") {
        Result<int64_t> n = parseInt("--uid", v, 0, 0xfffffffeLL);
        st = n.ok() ? Status::Ok() : n.status();
        if (n.ok()) p->ctl.uid = *n;
      } else if (a == "--ttl") {
        st = parseSeconds("--ttl", v, &p->ctl.ttl_s);
      } else {
        int64_t s = 0;
        st = parseSeconds("--timeout", v, &s);
        p->client.timeout_ms = static_cast<int>(s * 1000);
      }
      if (!st.ok()) return st.message();
    } else if (a.rfind("-", 0) == 0) {
      return "unknown option " + a;
    } else {
      p->words.push_back(a);
    }
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  Parsed p;
  std::string problem = parseArgs(argc, argv, &p);
  if (!problem.empty()) return usageError(problem);
  const std::vector<std::string>& w = p.words;
  if (w.empty()) return usageError("no command");
  if (w[0] == "help") {
    std::fputs(kUsage, stdout);
    return kExitOk;
  }
  if (w[0] == "version") {
    std::printf("switchagg-ctl %s\n", SWITCHAGG_VERSION);
    return kExitOk;
  }
  ControlClient client(p.client);
  std::string cmd = w[0] + (w.size() > 1 ? " " + w[1] : "");
  bool needs_job = w[0] == "lease";
  if (needs_job && p.ctl.job.empty()) return usageError(cmd + " needs --job ID");
  if (w.size() == 1 && w[0] == "status") return cmdStatus(client, p.ctl);
  if (w.size() == 1 && w[0] == "leases") return cmdLeases(client, p.ctl);
  if (w.size() == 1 && w[0] == "drain") return cmdDrain(client, p.ctl);
  if (w.size() == 1 && w[0] == "metrics") return cmdMetrics(client, p.ctl);
  if (w.size() == 2 && p.ctl.fabricMode() &&
      (cmd == "lease create" || cmd == "lease token" || cmd == "lease renew" ||
       cmd == "lease delete"))
    return cmdFabricLease(w[1], p.client, p.ctl);
  if (w.size() == 2 && p.ctl.fabricMode()) return usageError(cmd + " does not take a fabric map");
  if (w.size() == 2 && cmd == "lease create") return cmdLeaseCreate(client, p.ctl);
  if (w.size() == 2 && cmd == "lease token") return cmdLeaseToken(client, p.ctl);
  if (w.size() == 2 && cmd == "lease renew") return cmdLeaseRenew(client, p.ctl);
  if (w.size() == 2 && cmd == "lease delete") return cmdLeaseDelete(client, p.ctl);
  return usageError("unknown command '" + cmd + "'");
}
