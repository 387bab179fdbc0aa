// The agent's defaults that more than one part needs (the agent's config
// table, the data plane's and engine's own config structs, the control
// client, the SPANK plugin). Written once here.
#pragma once

#include <cstddef>
#include <cstdint>

namespace switchagg::agent {

inline constexpr const char* kDefaultControlSocket = "/run/switchagg/agent.sock";
inline constexpr const char* kDefaultControlListen = "127.0.0.1:18516";
inline constexpr const char* kDefaultDataListen = "127.0.0.1:18515";
inline constexpr size_t kDefaultSlotBytes = 256 * 1024;  // payload bytes per aggregation slot
inline constexpr int64_t kDefaultMemberTimeoutMs = 10000;
// WAITING to members of a chunk that waits (a quarter of a client's
// default 2 s call bound: three may be lost before that bound passes).
inline constexpr int64_t kDefaultKeepaliveMs = 500;
inline constexpr int kDefaultMaxGroupsPerLease = 64;
inline constexpr size_t kDefaultSlotMemoryBytes = size_t{1} << 30;  // all groups' slot buffers
// Contribution bytes (a chunk's bytes x its members) one group's chunks may
// put into one reduction pass: the fair share (docs/agent-protocol.md).
inline constexpr size_t kDefaultFairShareBytes = size_t{4} << 20;
// Credit at the agent's port: contribution bytes the calls in progress on
// one data-plane listener may have granted at once (members x window x
// chunk per call): what may converge on the port. 32 MiB = a 400 Gbit/s
// port's bytes in 670 us (the bandwidth-delay product of a round trip plus
// a window's reduction), and still 2 chunks of 256 KiB in flight for each
// of 64 members (docs/agent-protocol.md "Credits at the agent's port").
inline constexpr size_t kDefaultInflightBytes = size_t{32} << 20;
// Lease policy (the config table's [policy] and admission's limits).
inline constexpr int kDefaultPoolSlots = 64;
inline constexpr int kDefaultMaxSlotsPerJob = 16;
inline constexpr int kDefaultMaxSlotsPerUser = 32;
inline constexpr int64_t kDefaultMaxTtlMs = 7LL * 24 * 3600 * 1000;  // 7 days
// A lease no live group used for this long is reclaimed (policy.idle_reclaim;
// 0 = never): an mpirun job that died without `switchagg-ctl lease delete`.
inline constexpr int64_t kDefaultIdleReclaimMs = 30LL * 60 * 1000;  // 30 min

}  // namespace switchagg::agent
