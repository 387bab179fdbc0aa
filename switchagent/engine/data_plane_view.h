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
  // Where the link's rate is read when engine.link_mbps is 0 ("" = not read).
  std::string sysfs_root = "/sys";
  EngineSettings engine;
};

// One data-plane thread's share (DataPlaneCounters::threads).
struct DataThreadCounters {
  std::string address;  // its listener
  uint64_t groups_created = 0, bytes_in = 0, clients_connected = 0;
};

struct DataPlaneCounters {
  uint64_t groups_active = 0, groups_created = 0, groups_aborted = 0;
  uint64_t chunks_reduced = 0, bytes_reduced = 0, bytes_in = 0, bytes_out = 0;
  uint64_t bytes_up = 0;  // a leaf's reduced chunks sent to its parent (trees)
  // Contribution bytes copied into their buffer to wait (out of rank order,
  // or the slot's previous result still being sent); the rest of bytes_in
  // was reduced straight from the message (engine_contrib.cc).
  uint64_t bytes_staged = 0;
  // Contribution bytes received by rendezvous straight into their slot
  // buffer (engine_placement.cc): no copy at all.
  uint64_t bytes_placed = 0;
  uint64_t chunks_deferred = 0;  // ready chunks a pass left for the next (fair share)
  uint64_t largest_pass_bytes = 0;  // contribution bytes of the largest reduction pass
  uint64_t clients_connected = 0;
  std::map<std::string, uint64_t> rejected;         // reason -> count (bad_token, malformed, ...)
  std::map<std::string, uint64_t> bytes_in_by_job;  // job -> bytes
  uint64_t slots_busy = 0;                          // slots holding partial chunks right now
  uint64_t slots_reserved = 0;                    // slots held by calls in progress (their windows)
  // Credits at the port (data.inflight_bytes): contribution bytes granted
  // to the calls in progress (members x window x chunk) now, the most ever
  // granted at once, and the most contribution bytes ever received and
  // held for chunks whose result was not sent yet (what really converged).
  // Per data-plane thread (one listener each): the sums take the maximum.
  uint64_t inflight_granted_bytes = 0, inflight_granted_max = 0, inflight_held_max = 0;
  // Slot buffer bytes alive: every group's, and a destroyed group's while a
  // send still reads it; never above data.slot_memory.
  uint64_t slot_memory_bytes = 0;
  // Of it, registered with the data plane's UCX context (ucp_mem_map).
  uint64_t slot_memory_mapped_bytes = 0;
  // Clients dropped because a send to them made no progress for
  // member_timeout (a stopped or stuck process; its buffers are let go).
  uint64_t peers_stalled = 0;
  std::map<std::string, uint64_t> groups_by_job;  // job -> live groups
  std::vector<DataThreadCounters> threads;  // per data-plane thread (the above are their sums)
};

// What the control plane needs from the data plane: DataPlane (daemon/)
// implements it, tests use a fake. Methods are thread-safe.
class DataPlaneView {
 public:
  virtual ~DataPlaneView() = default;
  virtual std::string address() const = 0;
  // The data address a lease's jobs are given: its home data-plane thread's.
  virtual std::string addressFor(const std::string& /*token_hex*/) const { return address(); }
  virtual DataPlaneCounters counters() const = 0;
  virtual std::vector<std::pair<Dtype, std::vector<Op>>> capabilities() const = 0;
};

}  // namespace switchagg::agent
