// The RoCEv2 profile chooser: one ranking over GidEntry tables from either
// sysfs or libibverbs, and the UCX 1.13 keys that express the choice.
#include "switchagg/ucx/roce_profile.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <tuple>

#include "switchagg/common/config.h"
#include "switchagg/common/log.h"

namespace switchagg::ucx {
namespace {

// Lower is better. Routable RoCE v2 first (IPv4-mapped is what IP fabrics
// route and what rdma-cm resolves), then global IPv6; link-local and RoCE v1
// only reach the local L2 segment, so they come last.
int gidRank(int version, GidKind kind) {
  const int base = version == 2 ? 0 : 3;
  switch (kind) {
    case GidKind::kIpv4Mapped:
      return base;
    case GidKind::kIpv6Global:
      return base + 1;
    case GidKind::kLinkLocal:
      return base + 2;
    default:
      return 100;
  }
}

int roceVersion(const std::string& type) {
  if (type == "RoCE v2") return 2;
  if (type == "IB/RoCE v1" || type == "RoCE v1") return 1;
  return 0;
}

struct DeviceFilter {
  std::string device;
  int port = 0;  // 0 = any port
};

Result<DeviceFilter> parseDeviceFilter(const std::string& text) {
  DeviceFilter f;
  const size_t colon = text.find(':');
  f.device = text.substr(0, colon);
  if (colon != std::string::npos) {
    auto port = parseInt("SWITCHAGG_ROCE_DEVICE", text.substr(colon + 1), 1, 255);
    if (!port.ok()) return port.status();
    f.port = static_cast<int>(*port);
  }
  return f;
}

// Why entries were passed over, for the one-line reason.
struct SkipCounts {
  std::map<std::string, int> counts;
  void add(const char* why) { counts[why]++; }
  std::string text() const {
    std::string out;
    for (const auto& [why, n] : counts) {
      out += (out.empty() ? "" : ", ") + std::to_string(n) + " " + why;
    }
    return out.empty() ? "" : "skipped " + out;
  }
};

const char* skipReason(const GidEntry& e, const DeviceFilter& filter) {
  if (!filter.device.empty() &&
      (e.device != filter.device || (filter.port != 0 && e.port != filter.port)))
    return "outside the device filter";
  if (e.index < 0) return "port(s) without GIDs";
  if (e.link_layer == "InfiniBand") return "on InfiniBand ports";
  if (!e.port_active) return "on down ports";
  if (e.gid.empty()) return "unreadable/empty";
  const GidKind kind = classifyGid(e.gid);
  if (kind == GidKind::kZero) return "all-zero";  // unpopulated slot
  if (e.type.empty()) return "unreadable/empty";
  if (kind == GidKind::kInvalid) return "malformed";
  if (roceVersion(e.type) == 0) return "of unknown type";
  return nullptr;
}

Status validateOptions(const RoceOptions& o) {
  auto bad = [](const std::string& what) { return Status(Code::kInvalidArgument, what); };
  if (o.dscp < 0 || o.dscp > 63) return bad("RoCE dscp must be 0..63");
  if (o.sl < 0 || o.sl > 7) return bad("RoCE sl (Ethernet priority) must be 0..7");
  if (o.path_mtu != 0 && o.path_mtu != 512 && o.path_mtu != 1024 && o.path_mtu != 2048 &&
      o.path_mtu != 4096)
    return bad("RoCE path_mtu must be 0 (the port's), 512, 1024, 2048 or 4096");
  if (o.rc_timeout_us < 0) return bad("RoCE rc_timeout_us must be >= 0");
  if (o.rc_retry_count < 0 || o.rc_retry_count > 7) return bad("RoCE rc_retry_count must be 0..7");
  if (o.path_factor < 1) return bad("RoCE path_factor must be >= 1");
  if (o.num_paths < 0) return bad("RoCE num_paths must be >= 0");
  return Status::Ok();
}

std::string versionName(int v) {
  return v == 2 ? "RoCE v2" : "RoCE v1";
}

// Port summaries for switchagg-info: "mlx5_0:1 ACTIVE Ethernet (4 GIDs)".
std::vector<std::string> describePorts(const std::vector<GidEntry>& gids) {
  std::vector<std::string> out;
  std::map<std::pair<std::string, int>, std::tuple<bool, std::string, int>> ports;
  for (const GidEntry& e : gids) {
    auto& p = ports[{e.device, e.port}];
    p = {e.port_active, e.link_layer, std::get<2>(p) + (e.index >= 0 ? 1 : 0)};
  }
  for (const auto& [key, p] : ports) {
    out.push_back(key.first + ":" + std::to_string(key.second) + " " +
                  (std::get<0>(p) ? "ACTIVE " : "DOWN ") + std::get<1>(p) + " (" +
                  std::to_string(std::get<2>(p)) + " GIDs)");
  }
  return out;
}

// UCX uses a configured path MTU as is; one above what the netdev MTU
// allows would fail or be dropped, so cap it at the port's when known.
// 0 = leave it to UCX (which then takes the port's active MTU).
int choosePathMtu(int requested, int port_mtu, std::string* note) {
  if (port_mtu <= 0) return requested;
  if (requested > port_mtu) *note = ", path MTU capped at " + std::to_string(port_mtu);
  return requested == 0 || requested > port_mtu ? port_mtu : requested;
}

// "mlx5_0:1 GID 3 (RoCE v2, IPv4 10.0.0.1 on eth0)".
std::string describeChoice(const RoceProfile& p) {
  const GidKind kind = classifyGid(p.gid);
  const char* family = kind == GidKind::kIpv4Mapped  ? "IPv4 "
                       : kind == GidKind::kLinkLocal ? "link-local IPv6 "
                                                     : "IPv6 ";
  std::string text = p.device + ":" + std::to_string(p.port) + " GID " +
                     std::to_string(p.gid_index) + " (" + versionName(p.roce_version) + ", " +
                     family + gidToAddress(p.gid) + (p.netdev.empty() ? "" : " on " + p.netdev) +
                     ")";
  if (kind == GidKind::kLinkLocal || p.roce_version == 1) text += ", not routable beyond L2";
  return text;
}

void addSettings(const RoceOptions& o, RoceProfile* p) {
  auto& s = p->ucx_settings;
  // NET_DEVICES pins UCX to the device/port whose GID index we chose:
  // IB_GID_INDEX is one global value, wrong for any other device.
  s.emplace_back("NET_DEVICES", p->device + ":" + std::to_string(p->port));
  // UCX 1.13 hands cached keys to the IB memory domain without its "IB_"
  // table prefix, so the GID index must go in as GID_INDEX (the variable is
  // still UCX_IB_GID_INDEX); "IB_GID_INDEX" would be silently unused.
  s.emplace_back("GID_INDEX", std::to_string(p->gid_index));
  s.emplace_back("IB_TRAFFIC_CLASS", std::to_string(p->traffic_class));
  s.emplace_back("IB_SL", std::to_string(p->sl));
  if (p->path_mtu > 0) s.emplace_back("IB_PATH_MTU", std::to_string(p->path_mtu));
  if (o.rc_timeout_us > 0) s.emplace_back("RC_TIMEOUT", std::to_string(o.rc_timeout_us) + "us");
  s.emplace_back("RC_RETRY_COUNT", std::to_string(o.rc_retry_count));
  // With an explicit SL, "try" uses AR exactly when the fabric enabled it
  // on that SL and never fails; "yes" would fail where it is off.
  s.emplace_back("IB_AR_ENABLE", o.adaptive_routing ? "try" : "no");
  s.emplace_back("IB_ROCE_PATH_FACTOR", std::to_string(o.path_factor));
  if (o.num_paths > 0) s.emplace_back("IB_NUM_PATHS", std::to_string(o.num_paths));
}

}  // namespace

Result<RoceProfile> chooseProfile(const std::vector<GidEntry>& gids, const RoceOptions& options) {
  SWITCHAGG_RETURN_IF_ERROR(validateOptions(options));
  auto filter = parseDeviceFilter(options.device);
  if (!filter.ok()) return filter.status();
  RoceProfile p;
  p.rdma_present = !gids.empty();
  p.devices = describePorts(gids);
  if (gids.empty()) {
    p.reason = "no RDMA device found: UCX uses shared memory and TCP, no RoCE keys applied";
    return p;
  }
  SkipCounts skipped;
  const GidEntry* best = nullptr;
  std::tuple<int, int, std::string, int, int> best_key;
  for (const GidEntry& e : gids) {
    if (const char* why = skipReason(e, *filter)) {
      skipped.add(why);
      continue;
    }
    const bool on_netdev = options.netdev.empty() || e.netdev == options.netdev;
    // Ties go to the lowest device name, port and index, whatever order the
    // source listed them in.
    std::tuple<int, int, std::string, int, int> key{
        on_netdev ? 0 : 1, gidRank(roceVersion(e.type), classifyGid(e.gid)), e.device, e.port,
        e.index};
    if (!best || key < best_key) {
      best = &e;
      best_key = key;
    }
  }
  if (!best) {
    p.reason = "RDMA device present but no usable RoCE GID" +
               (options.device.empty() ? "" : " for device '" + options.device + "'") + " (" +
               skipped.text() + "): no RoCE keys applied";
    return p;
  }
  p.device = best->device;
  p.port = best->port;
  p.gid_index = best->index;
  p.gid = best->gid;
  p.roce_version = roceVersion(best->type);
  p.netdev = best->netdev;
  p.traffic_class = (options.dscp << 2) | (options.ecn ? 2 : 0);
  p.sl = options.sl;
  std::string mtu_note;
  p.path_mtu = choosePathMtu(options.path_mtu, best->port_mtu, &mtu_note);
  p.lanes = kRoceAutoLanes;
  p.reason = describeChoice(p) + mtu_note;
  if (std::get<0>(best_key) != 0) p.reason += ", none on requested netdev " + options.netdev;
  const std::string skip_text = skipped.text();
  if (!skip_text.empty()) p.reason += "; " + skip_text;
  addSettings(options, &p);
  return p;
}

Result<RoceProfile> resolveProfile(const RoceOptions& options) {
  std::vector<GidEntry> gids;
  std::string source = "sysfs:" + options.sysfs_root;
  // ibverbs only for the real root: tests point sysfs_root at shipped trees.
  if (options.sysfs_root == kDefaultSysfsRoot) {
    auto verbs = readIbverbsGids();
    if (verbs.ok() && !verbs->empty()) {
      gids = std::move(*verbs);
      source = "ibverbs";
    }
  }
  if (gids.empty()) {
    auto sysfs = readSysfsGids(options.sysfs_root);
    if (!sysfs.ok()) return sysfs.status();
    gids = std::move(*sysfs);
  }
  auto profile = chooseProfile(gids, options);
  if (!profile.ok()) return profile;
  profile->source = gids.empty() ? "none" : source;
  return profile;
}

void logProfileOnce(const RoceProfile& profile) {
  static std::once_flag once;
  std::call_once(once, [&profile] {
    // A host without RDMA devices is a normal shared-memory/TCP host: say so
    // at info level (once per process, not once per rank at warn level on
    // every job). Devices present but no usable GID is a misconfiguration.
    if (profile.rdma_present && profile.gid_index < 0) {
      SA_WARN("ucx", "RoCE: %s", profile.reason.c_str());
    } else {
      SA_INFO("ucx", "RoCE: %s", profile.reason.c_str());
    }
  });
}

}  // namespace switchagg::ucx
