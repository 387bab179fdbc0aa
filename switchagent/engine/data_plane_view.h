// The data plane as the rest of the agent sees it: its configuration, its
// counters (kept by the aggregation engine) and the view the control plane
// reads (address, counters, capabilities). No UCX here: the engine, the
// control plane and their tests include it without the transport.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "data_plane_counters.h"
#include "switchagg/agent/defaults.h"
#include "switchagg/common/dtype.h"

namespace switchagg::agent {

// The aggregation engine's settings from the agent's configuration
// ([data]): the agent's config table binds them here
// (AgentConfig::data.engine) and they are handed on whole: the data plane's
// config carries them, the engine's config extends them. The pool's size
// ([pool] slots) is the lease limits' (LeaseLimits::pool_slots, which the
// data plane hands the engine as EngineConfig::pool_slots).
struct EngineSettings {
  size_t slot_bytes = kDefaultSlotBytes;  // payload bytes per aggregation slot
  size_t memory_bytes = kDefaultSlotMemoryBytes;  // slot buffers of all groups together
  int64_t member_timeout_ms = kDefaultMemberTimeoutMs;  // a group member silent this long -> group aborted
  // While a chunk waits for members, those that contributed to it (and
  // asked, kJoinFlagKeepalive) get a WAITING this often, so a member late
  // for I/O does not fail the others' calls (docs/agent-protocol.md
  // "Waiting members"); member_timeout stays the bound. 0: off, as an agent
  // that predates it (a JOIN with kJoinFlagKeepalive is malformed).
  int64_t keepalive_ms = kDefaultKeepaliveMs;
  // How often live groups re-check their lease (not in the config file:
  // tests shorten it).
  int64_t lease_check_ms = 250;
  // The data link's rate, advertised (0 = unknown). The data plane fills it
  // from sysfs when the config leaves it 0 (daemon/link_rate.h).
  uint32_t link_mbps = 0;
  bool advertise_capacity = true;  // false: answer CAPACITY as a v1.0 agent (bad_type)
  bool join_flags = true;          // false: refuse flagged JOINs (malformed) as an agent before them
  // false: act as an agent before routed calls (a JOIN with kJoinFlagRouted
  // is malformed, CONTRIB_ROUTED an unknown type).
  bool routed = true;
  // false: act as an agent before routed calls through trees (a JOIN with
  // kJoinFlagTreeRouted is malformed; members then join the tree without
  // routed calls).
  bool routed_trees = true;
  // Groups one lease may hold at once, formed or waiting for members: a
  // token holder joining group after group cannot fill the agent's memory.
  size_t max_groups_per_lease = kDefaultMaxGroupsPerLease;
  // Fair share: each reduction pass takes a group's ready chunks, in order,
  // until they hold this many contribution bytes (chunk bytes x members;
  // always at least one chunk); the rest wait for the next pass, after
  // every other group's share. 0: a pass takes every ready chunk.
  size_t fair_share_bytes = kDefaultFairShareBytes;
  // Credits at the port: contribution bytes (members x window x chunk) the
  // calls in progress may have in flight toward this engine's listener,
  // together; a group's window is cut at formation so one call fits, and a
  // call that would pass it is refused busy (docs/agent-protocol.md
  // "Credits at the agent's port"). 0: no bound.
  size_t inflight_bytes = kDefaultInflightBytes;
};

// [data] as the agent's config table binds it (AgentConfig::data): the
// data plane takes it by const& (DataPlane::start).
struct DataPlaneConfig {
  std::string listen = kDefaultDataListen; // UCX socket address ("host:port", port 0 = any)
  int threads = 0;                         // reduction threads; 0 = nproc
  // Data-plane threads, each with its own UCX worker, listener and engine
  // (daemon/data_thread.h); 0 = one per core, at most 4. 1 = one thread
  // (the default: see docs/admin.md for when to raise it).
  int plane_threads = 1;
  // Data-plane threads each lease spreads over (daemon/data_thread.h,
  // leaseServedBy): its jobs get that many addresses and stripe every call
  // over them, one stripe per thread. 1 = its home thread only; 0 = all.
  int threads_per_job = 1;
  // Where the link's rate is read when engine.link_mbps is 0 ("" = not read).
  std::string sysfs_root = "/sys";
  EngineSettings engine;
};

// What the control plane needs from the data plane: DataPlane (daemon/)
// implements it, tests use a fake. Methods are thread-safe.
class DataPlaneView {
 public:
  virtual ~DataPlaneView() = default;
  virtual std::string address() const = 0;
  // The data address a lease's jobs are given: its home data-plane thread's,
  // or the comma-separated addresses of the threads it spreads over.
  virtual std::string addressFor(const std::string& /*token_hex*/) const { return address(); }
  // The index of that data-plane thread (DataThreadCounters::index).
  virtual int threadOf(const std::string& /*token_hex*/) const { return 0; }
  virtual DataPlaneCounters counters() const = 0;
  virtual std::vector<std::pair<Dtype, std::vector<Op>>> capabilities() const = 0;
};

}  // namespace switchagg::agent
