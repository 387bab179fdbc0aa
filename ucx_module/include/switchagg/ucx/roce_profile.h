// RoCEv2 profile: which GID, traffic class, SL, MTU, timeouts and path
// entropy UCX should use on this host, resolved from options plus discovery
// (sysfs, or libibverbs where devices exist), and the UCX settings that
// express it. docs/tuning.md explains every knob and its default.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "switchagg/common/config_table.h"
#include "switchagg/common/status.h"

namespace switchagg::ucx {

inline constexpr const char* kDefaultSysfsRoot = "/sys/class/infiniband";
// Lanes (endpoints per peer) that "auto" means once a RoCE GID is in use.
// One: several QPs per peer only add ECMP entropy (different UDP source
// ports), which one lane gets from IB_NUM_PATHS / IB_ROCE_PATH_FACTOR; on
// the emulated cluster 4 lanes were no faster (0.94-1.06x the time of one
// from 128 KiB, 1.29-1.57x at 64 KiB: benchmarks/results/lanes_fabric.md).
// Sites whose fabric gains from more (a measurement) set SWITCHAGG_UCX_LANES.
inline constexpr int kRoceAutoLanes = 1;

struct RoceOptions {
  std::string sysfs_root = kDefaultSysfsRoot;  // the default also enables ibverbs
  std::string device;                          // "" = any; "mlx5_0" or "mlx5_0:1"
  std::string netdev;                          // netdev carrying the job's traffic; "" = any
  int dscp = 26;                               // lossless class (PFC) DSCP; TC = dscp << 2 | ecn
  bool ecn = false;              // set ECT(0) in the TC (106 for DSCP 26): DCQCN fabrics
  int sl = 3;                    // service level / priority for the class
  int path_mtu = 0;              // 0 = the port's MTU; else at most this (1024|2048|4096)
  int rc_timeout_us = 4000000;   // RC_TIMEOUT (survives port flaps); 0 = UCX default
  int rc_retry_count = 7;        // RC_RETRY_COUNT (hardware maximum)
  bool adaptive_routing = true;  // IB_AR_ENABLE try (true) / no (false)
  int path_factor = 1;           // IB_ROCE_PATH_FACTOR (source-port entropy)
  int num_paths = 0;             // IB_NUM_PATHS; 0 = UCX default
  int max_rails = 0;             // RoCE ports given to UCX, best first; 0 = every rail
};

// Reads SWITCHAGG_ROCE_{SYSFS_ROOT,DEVICE,NETDEV,DSCP,ECN,SL,MTU,RC_TIMEOUT,
// RETRY,AR,PATH_FACTOR,NUM_PATHS,RAILS} over the defaults. A bad value gives
// InvalidArgument naming the variable.
Result<RoceOptions> roceOptionsFromEnvironment();

// {name, env var, default, help} for each RoceOptions field (for --help and
// docs).
const std::vector<ConfigDoc>& roceOptionTable();

// One GID table entry, from sysfs or ibv_query_gid_table.
struct GidEntry {
  std::string device;
  int port = 1;
  int index = 0;
  std::string gid;     // "0000:0000:0000:0000:0000:ffff:0a00:0001"
  std::string type;    // "RoCE v2", "IB/RoCE v1", ...
  std::string netdev;  // "eth0" (may be empty)
  bool port_active = true;
  int port_mtu = 0;  // largest RoCE path MTU the netdev allows (active_mtu); 0 = unknown
  std::string link_layer = "Ethernet";  // "InfiniBand" ports are not RoCE
};

enum class GidKind { kInvalid, kZero, kIpv4Mapped, kLinkLocal, kIpv6Global };
// Classifies GID text (8 groups of 4 hex digits, or any inet_pton IPv6 form).
GidKind classifyGid(const std::string& gid);
// "10.0.0.1" for an IPv4-mapped GID, else the compressed IPv6 form.
std::string gidToAddress(const std::string& gid);

// One RoCE port UCX is given (a rail: on a training node, one NIC per
// accelerator or per switch plane), with the GID chosen on it.
struct RoceRail {
  std::string device;
  int port = 0;
  int gid_index = -1;
  std::string gid;
  int roce_version = 0;
  std::string netdev;
  int traffic_class = 0;
  int path_mtu = 0;  // the port's RoCE MTU (capped by the option); 0 = unknown
};

// The profile of this host. The single-valued fields (device ... path_mtu)
// describe the primary rail, rails[0]: the one the old single-rail profile
// chose, which switchagg-info and logs show first.
struct RoceProfile {
  bool rdma_present = false;  // any RDMA device found
  std::string device;
  int port = 0;
  int gid_index = -1;
  std::string gid;
  int roce_version = 0;  // 1, 2, or 0 when none
  std::string netdev;
  int traffic_class = 0;
  int sl = 0;
  int path_mtu = 0;
  int lanes = 1;                     // what lanes=auto means here (kRoceAutoLanes with RoCE)
  std::string reason;                // one line: why this GID / why none
  std::string source;                // "sysfs:<root>", "ibverbs" or "none"
  std::vector<std::string> devices;  // "mlx5_0:1 ACTIVE Ethernet (4 GIDs)" per port seen
  // Every rail UCX is given (NET_DEVICES), best first; empty without a GID.
  std::vector<RoceRail> rails;
  // Usable ports that are not rails, and why. by_choice: the options left
  // them out (netdev, max_rails); otherwise (a GID index the other rails
  // cannot share, a worse kind of GID) it is logged as a warning.
  struct RailLeftOut {
    std::string rail;  // "mlx5_3:1"
    std::string why;
    bool by_choice = false;
  };
  std::vector<RailLeftOut> rails_left_out;
  // What the profile wants UCX to use (keys without the UCX_ prefix), in
  // order; applyProfile() splits it into applied / left_to_user.
  std::vector<std::pair<std::string, std::string>> ucx_settings;
  // UCX config keys (without UCX_ prefix) this profile set, and the
  // variables (without UCX_) the user set that it left alone, with the
  // user's values. Environment wins per transport field: with only
  // UCX_RC_MLX5_SL set, IB_SL becomes UD_SL + DC_SL in `applied` (keys that
  // miss rc_mlx5), so ud and dc still get the profile's SL.
  std::vector<std::pair<std::string, std::string>> applied;
  std::vector<std::pair<std::string, std::string>> left_to_user;
};

// Reads the GID table under `sysfs_root` (missing root = no devices, Ok).
Result<std::vector<GidEntry>> readSysfsGids(const std::string& sysfs_root);
// The same table from libibverbs (ibv_get_device_list + ibv_query_gid_table).
// No devices or no libibverbs in the build = empty table, Ok.
Result<std::vector<GidEntry>> readIbverbsGids();
// The one chooser: prefer RoCE v2 IPv4-mapped on `netdev` and an active port,
// then RoCE v2 global IPv6, then link-local, RoCE v1 last; the best GID of
// each active RoCE port, and every port whose best is as good as the best
// port's becomes a rail (UCX 1.13 takes one GID index for all of them: see
// docs/tuning.md, "Rails"). Fills ucx_settings; an empty table gives
// rdma_present=false and no settings.
Result<RoceProfile> chooseProfile(const std::vector<GidEntry>& gids, const RoceOptions& options);
// The RoCE path MTU a netdev MTU allows (the kernel's iboe_get_mtu: headers
// take 96 bytes): 9000 -> 4096, 1500 -> 1024; 0 if below 256.
int roceMtuForNetdevMtu(int netdev_mtu);
// readSysfsGids (or ibverbs) + chooseProfile + the UCX key/value list.
Result<RoceProfile> resolveProfile(const RoceOptions& options);
// Logs profile.reason once per process: warn when no RDMA device (so a
// silent fall-back to TCP is visible), info otherwise.
void logProfileOnce(const RoceProfile& profile);

}  // namespace switchagg::ucx
