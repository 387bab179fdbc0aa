// switchagg-ctl's commands over the control client. Each returns the
// process exit code (see kExit* below, documented in docs/admin.md).
#pragma once

#include <string>

#include "switchagg/agent/control_client.h"

namespace switchagg::agent {

constexpr int kExitOk = 0;
constexpr int kExitRefused = 1;      // the agent answered with another error
constexpr int kExitUsage = 2;        // bad command line
constexpr int kExitUnreachable = 3;  // no agent at the address, or it timed out
constexpr int kExitDenied = 4;       // unauthenticated / policy_denied
constexpr int kExitNoResource = 5;   // quota_exceeded / draining

struct CtlOptions {
  bool json = false;
  std::string job;
  int slots = 0;         // 0: policy default
  int64_t ttl_s = 0;     // 0: policy default
  int64_t uid = -1;      // -1: the caller
  std::string mode = "auto";
  bool off = false;      // drain --off
  // Leases over the fabric map (fabric_map.h): any of these selects it.
  std::string nodes;     // --nodes hostlist
  std::string hostfile;  // --hostfile: one node per line (first word)
  std::string fabric;    // --fabric FILE
  int reducers = 0;      // --reducers K: of the nodes' reducer pool (0: the pool's default)
  bool fabricMode() const {
    return !nodes.empty() || !hostfile.empty() || !fabric.empty() || reducers > 0;
  }
};

// The map's path: --fabric, else $SWITCHAGG_FABRIC (jobEnvironmentTable()), else
// kDefaultFabricMap.
constexpr const char* kDefaultFabricMap = "/etc/switchagg/fabric.toml";

int cmdStatus(ControlClient& client, const CtlOptions& o);
int cmdLeases(ControlClient& client, const CtlOptions& o);
int cmdLeaseCreate(ControlClient& client, const CtlOptions& o);
int cmdLeaseToken(ControlClient& client, const CtlOptions& o);
int cmdLeaseRenew(ControlClient& client, const CtlOptions& o);
int cmdLeaseDelete(ControlClient& client, const CtlOptions& o);
int cmdDrain(ControlClient& client, const CtlOptions& o);
int cmdMetrics(ControlClient& client, const CtlOptions& o);
// lease create | token | renew | delete on the fabric map's agents.
int cmdFabricLease(const std::string& verb, const ControlClientOptions& base, const CtlOptions& o);

// Exit code for a failed call (prints "switchagg-ctl: <message>" to stderr).
int reportError(const ApiFailure& failure);

}  // namespace switchagg::agent
