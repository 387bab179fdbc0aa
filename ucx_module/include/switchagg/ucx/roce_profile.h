// RoCEv2 profile: which GID, traffic class, SL, MTU, timeouts and path
// entropy UCX should use on this host, resolved from options plus discovery
// (sysfs, or libibverbs where devices exist), and the UCX settings that
// express it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "switchagg/common/status.h"

namespace switchagg::ucx {

struct RoceOptions {
  std::string sysfs_root = "/sys/class/infiniband";
  std::string device;          // "" = any; "mlx5_0" or "mlx5_0:1"
  std::string netdev;          // netdev carrying the job's traffic; "" = any
  int dscp = 26;               // lossless class (PFC) DSCP; TC = dscp << 2
  int sl = 3;                  // service level / priority for the class
  int path_mtu = 4096;         // 1024|2048|4096
  int rc_timeout_us = 0;       // 0 = keep UCX default; else RC_TIMEOUT
  int rc_retry_count = 7;
  bool adaptive_routing = true;
  int path_factor = 1;         // IB_ROCE_PATH_FACTOR (source-port entropy)
  int num_paths = 0;           // 0 = UCX default
};

// One GID table entry, from sysfs or ibv_query_gid_table.
struct GidEntry {
  std::string device;
  int port = 1;
  int index = 0;
  std::string gid;       // "0000:0000:0000:0000:0000:ffff:0a00:0001"
  std::string type;      // "RoCE v2", "IB/RoCE v1", ...
  std::string netdev;    // "eth0" (may be empty)
  bool port_active = true;
};

struct RoceProfile {
  bool rdma_present = false;   // any RDMA device found
  std::string device;
  int port = 0;
  int gid_index = -1;
  std::string gid;
  int roce_version = 0;        // 1, 2, or 0 when none
  std::string netdev;
  int traffic_class = 0;
  int sl = 0;
  int path_mtu = 0;
  int lanes = 1;
  std::string reason;          // one line: why this GID / why none
  // UCX config keys (without UCX_ prefix) this profile set, and those it left
  // alone because the user already set UCX_<key> in the environment.
  std::vector<std::pair<std::string, std::string>> applied;
  std::vector<std::pair<std::string, std::string>> left_to_user;
};

// Reads the GID table under `sysfs_root` (missing root = no devices, Ok).
Result<std::vector<GidEntry>> readSysfsGids(const std::string& sysfs_root);
// The one chooser: prefer RoCE v2 IPv4-mapped on `netdev` and an active port.
Result<RoceProfile> chooseProfile(const std::vector<GidEntry>& gids, const RoceOptions& options);
// readSysfsGids (or ibverbs) + chooseProfile + the UCX key/value list.
Result<RoceProfile> resolveProfile(const RoceOptions& options);

}  // namespace switchagg::ucx
