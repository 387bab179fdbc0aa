// The agent's data plane: accepts UCX connections from clients, runs the
// group/slot state machine (aggregation_engine.h) on one UCX worker thread
// and reduces completed slots on a small fork-join thread pool.
//
// Interface with the control plane: AGENT_INTERFACES.md. The agent main
// creates a LeaseTable, calls DataPlane::start, and routes the table's
// revoke callback to revokeLease(). The wire protocol is wire.h; its
// semantics are docs/agent-protocol.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "switchagg/common/dtype.h"
#include "switchagg/common/status.h"

namespace switchagg::agent {

class LeaseTable;

struct DataPlaneConfig {
  std::string listen = "127.0.0.1:18515";  // UCX socket address ("host:port", port 0 = any)
  size_t slot_bytes = 256 * 1024;          // payload bytes per aggregation slot
  int threads = 0;                         // reduction threads; 0 = nproc
  int64_t member_timeout_ms = 10000;       // a group member silent this long -> group aborted
  // Added by H2b: total aggregation slots of the pool ([pool] slots). Live
  // groups never hold more than this many slots together; 0 = no cap beyond
  // the leases' own slot counts (which the control plane keeps <= the pool).
  size_t pool_slots = 0;
};

struct DataPlaneCounters {
  uint64_t groups_active = 0, groups_created = 0, groups_aborted = 0;
  uint64_t chunks_reduced = 0, bytes_reduced = 0, bytes_in = 0, bytes_out = 0;
  uint64_t clients_connected = 0;
  std::map<std::string, uint64_t> rejected;         // reason -> count (bad_token, malformed, ...)
  std::map<std::string, uint64_t> bytes_in_by_job;  // job -> bytes
  uint64_t slots_busy = 0;                          // slots holding partial chunks right now
  // Added by H2b:
  uint64_t slots_reserved = 0;                    // slots held by live groups (their windows)
  std::map<std::string, uint64_t> groups_by_job;  // job -> live groups
};

class DataPlane {
 public:
  // Creates the UCX context/worker/listener on the caller's thread (so a bad
  // listen address fails here), then runs the worker on its own thread.
  // `leases` must outlive the DataPlane.
  static Result<std::unique_ptr<DataPlane>> start(const DataPlaneConfig& config,
                                                  LeaseTable& leases);
  ~DataPlane();  // aborts live groups (members get ABORT "agent shutting down"), stops, closes
  DataPlane(const DataPlane&) = delete;
  DataPlane& operator=(const DataPlane&) = delete;

  std::string address() const;         // "host:port" actually listening (port resolved)
  DataPlaneCounters counters() const;  // thread-safe snapshot
  // Capabilities: dtype -> ops the agent reduces (advertised in /v1/status and to clients).
  static std::vector<std::pair<Dtype, std::vector<Op>>> capabilities();
  // Thread-safe: abort every group of the lease with this token (members get
  // ABORT with `reason`). Takes effect on the worker thread within ~50 ms.
  void revokeLease(const std::string& token, const std::string& reason);

  struct Impl;

 private:
  explicit DataPlane(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace switchagg::agent
