// The agent's data plane: accepts UCX connections from clients and runs the
// group/slot state machine (aggregation_engine.h) on data.plane_threads
// threads, each with its own UCX worker, listener, engine and fork-join
// reduction pool (data_thread.h); a lease's groups live on one of them.
//
// Interface with the control plane: DataPlaneView (engine/data_plane_view.h:
// the settings, counters and address it reads). The agent main
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

#include "data_plane_view.h"
#include "switchagg/agent/lease_token.h"
#include "switchagg/common/dtype.h"
#include "switchagg/common/status.h"

namespace switchagg::agent {

class LeaseTable;

class DataPlane final : public DataPlaneView {
 public:
  // Creates the UCX context and every thread's worker/listener on the
  // caller's thread (so a bad listen address fails here), then runs each
  // thread.
  // `parent_address`: a tree's parent agent's data address from the fabric
  // map ("" = this agent is a root: tree JOINs are refused). The engine's
  // pool cap is the lease table's (LeaseLimits::pool_slots). `config` and
  // `leases` must outlive the DataPlane.
  static Result<std::unique_ptr<DataPlane>> start(const DataPlaneConfig& config,
                                                  std::string parent_address, LeaseTable& leases);
  ~DataPlane();  // aborts live groups (members get ABORT "agent shutting down"), stops, closes
  DataPlane(const DataPlane&) = delete;
  DataPlane& operator=(const DataPlane&) = delete;

  std::string address() const override;  // thread 0's "host:port" (data.listen, port resolved)
  // The address of the home thread of the lease with this token, then those
  // of the data.threads_per_job - 1 threads after it (comma-separated; thread
  // 0's alone for a malformed token).
  std::string addressFor(const std::string& token_hex) const override;
  int threadOf(const std::string& token_hex) const override;  // that home thread's index
  int threads() const;                          // data-plane threads running
  DataPlaneCounters counters() const override;  // thread-safe snapshot
  // Capabilities: dtype -> ops the agent reduces (advertised in /v1/status and to clients).
  static std::vector<std::pair<Dtype, std::vector<Op>>> supported();
  std::vector<std::pair<Dtype, std::vector<Op>>> capabilities() const override {
    return supported();
  }
  // Thread-safe: abort every group of the lease with this token (members get
  // ABORT with `reason`). Takes effect on every data thread within ~50 ms.
  void revokeLease(const LeaseToken& token, const std::string& reason);

  struct Impl;

 private:
  explicit DataPlane(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace switchagg::agent
