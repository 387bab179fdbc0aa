// Client of the switch agent's control API (docs/control-api.md), used by
// switchagg-ctl, the Slurm SPANK plugin and tests.
//
// Promises: no exception escapes any function here; every failure is an
// ApiFailure (control_schema.h): the server's error, kUnreachable when the
// agent cannot be reached (the message names the address), or kConfig for a
// malformed address; its status() reads "quota_exceeded: uid 1000 holds ...".
// Every call is bounded by ControlClientOptions::timeout_ms. Links
// no UCX and no MPI (safe inside slurmd). On TCP a munge credential is
// attached when libmunge is available (and munged answers), so the agent
// knows who calls; on a Unix socket the kernel tells it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "switchagg/agent/control_schema.h"
#include "switchagg/agent/defaults.h"
#include "switchagg/common/config_table.h"
#include "switchagg/common/status.h"

namespace switchagg::agent {

// Where the agent's control API listens: "unix:/path", "http://host:port",
// "host:port" (also "[v6addr]:port"). A bare absolute path means unix:.
struct ControlAddress {
  bool is_unix = true;
  std::string path;  // unix socket path
  std::string host;  // TCP host (name or literal)
  int port = 0;
  std::string toString() const;  // canonical: "unix:/path" or "host:port"
};
Result<ControlAddress> parseControlAddress(const std::string& text);

// What a control client takes from the environment when its options leave
// it open: one table (SWITCHAGG_CONTROL, SWITCHAGG_MUNGE_SOCKET), listed by
// switchagg-info. A bad value fails every call with kConfig, naming the
// variable.
struct ControlEnvironment {
  std::string address = std::string("unix:") + kDefaultControlSocket;
  std::string munge_socket;  // "": libmunge's default
};
const ConfigTable<ControlEnvironment>& controlEnvironmentTable();

struct ControlClientOptions {
  std::string address;       // empty: SWITCHAGG_CONTROL, else unix:/run/switchagg/agent.sock
  int timeout_ms = 5000;     // connect + request + response, in total
  bool use_munge = true;     // attach a munge credential on TCP when possible
  std::string munge_socket;  // empty: SWITCHAGG_MUNGE_SOCKET, else libmunge's default
};

struct Capability {
  std::string dtype;  // "float32", ...
  std::vector<std::string> ops;
};

// One data-plane thread's share of the agent's work (/v1/status data_threads).
struct DataThreadStatus {
  std::string address;                      // its listener, host:port
  std::map<std::string, uint64_t> figures;  // leases, groups_active, bytes_in, busy_ns, ...
};

struct AgentStatus {
  std::string version;
  bool draining = false;
  std::string data_address;
  int slots_total = 0;
  int slots_in_use = 0;
  uint64_t slot_bytes = 0;
  int leases = 0;
  int groups = 0;
  std::vector<Capability> capabilities;
  std::map<std::string, uint64_t> counters;  // numeric counters from the data plane
  std::string lease_file;                    // state.lease_file; "" = persistence off
  uint64_t lease_file_save_failures = 0;
  std::vector<DataThreadStatus> threads;     // thread 0 first (data.listen's)
};

// Raw reply, for tools that print the agent's JSON as is (switchagg-ctl --json).
struct ControlReply {
  int http_status = 0;
  std::string body;
};
// The failure a non-2xx reply stands for: its {"error", "message"} body, or
// kInternal when there is none.
ApiFailure failureOf(const ControlReply& reply, const std::string& address);

class ControlClient {
 public:
  explicit ControlClient(ControlClientOptions options = {});
  // The given address ("" = default) with default options.
  explicit ControlClient(const std::string& address);

  const std::string& address() const { return address_; }

  ApiResult<AgentStatus> status();
  ApiResult<std::vector<LeaseView>> listLeases();
  // uid < 0: the caller's own uid; slots <= 0 / ttl_s <= 0: policy defaults.
  // Idempotent per job (same uid -> the same lease back, created=false).
  ApiResult<LeaseView> createLease(const std::string& job, int64_t uid, int slots, int64_t ttl_s);
  ApiResult<LeaseView> fetchToken(const std::string& job);  // owner or admin
  ApiResult<LeaseView> renewLease(const std::string& job, int64_t ttl_s);
  // Idempotent: true if a lease was deleted, false if there was none.
  ApiResult<bool> deleteLease(const std::string& job);
  // Returns the agent's draining state after the call.
  ApiResult<bool> drain(bool on);

  // One request; a non-2xx answer is still a reply here (not an error).
  ApiResult<ControlReply> request(const std::string& method, const std::string& path,
                                  const std::string& body = "");

 private:
  ApiResult<std::string> call(const std::string& method, const std::string& path,
                              const std::string& body, int* http_status = nullptr);

  ControlClientOptions options_;  // with the environment's values filled in
  std::string address_;
  std::string config_error_;  // a bad variable the options needed: every call fails with it
};

}  // namespace switchagg::agent
