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
  if (o.max_rails < 0) return bad("RoCE max_rails must be >= 0 (0 = every rail)");
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

// "IPv4 " / "link-local IPv6 " / "IPv6 " for a GID.
const char* familyOf(const std::string& gid) {
  const GidKind kind = classifyGid(gid);
  return kind == GidKind::kIpv4Mapped  ? "IPv4 "
         : kind == GidKind::kLinkLocal ? "link-local IPv6 "
                                       : "IPv6 ";
}

// "mlx5_0:1 GID 3 (RoCE v2, IPv4 10.0.0.1 on eth0)".
std::string describeChoice(const RoceProfile& p) {
  std::string text = p.device + ":" + std::to_string(p.port) + " GID " +
                     std::to_string(p.gid_index) + " (" + versionName(p.roce_version) + ", " +
                     familyOf(p.gid) + gidToAddress(p.gid) +
                     (p.netdev.empty() ? "" : " on " + p.netdev) + ")";
  if (classifyGid(p.gid) == GidKind::kLinkLocal || p.roce_version == 1)
    text += ", not routable beyond L2";
  return text;
}

std::string railName(const std::string& device, int port) {
  return device + ":" + std::to_string(port);
}

// How good a GID is for the job: (not on the requested netdev, kind rank);
// lower is better.
using Quality = std::pair<int, int>;

Quality qualityOf(const GidEntry& e, const RoceOptions& o) {
  const bool on_netdev = o.netdev.empty() || e.netdev == o.netdev;
  return {on_netdev ? 0 : 1, gidRank(roceVersion(e.type), classifyGid(e.gid))};
}

// The usable GIDs of one active RoCE port.
struct PortGids {
  std::string device;
  int port = 0;
  Quality best{1000, 1000};
  std::map<int, const GidEntry*> best_entries;  // index -> entry, all of quality `best`

  std::string name() const { return railName(device, port); }
  int bestIndex() const { return best_entries.begin()->first; }
  void add(const GidEntry& e, Quality q) {
    if (q < best) {
      best = q;
      best_entries.clear();
    }
    if (q == best) best_entries[e.index] = &e;
  }
};

// "RoCE v2 IPv4" for a port's best GIDs.
std::string kindText(const PortGids& p) {
  const GidEntry& e = *p.best_entries.begin()->second;
  std::string family = familyOf(e.gid);
  family.pop_back();
  return versionName(roceVersion(e.type)) + " " + family;
}

// UCX 1.13 has one GID index for every device (UCX_IB_GID_INDEX): the index
// most candidate ports have among their best GIDs; ties go to the first
// port's own best, then to the lowest index.
int agreedGidIndex(const std::vector<const PortGids*>& ports) {
  std::map<int, int> count;
  for (const PortGids* p : ports)
    for (const auto& [index, entry] : p->best_entries) ++count[index];
  int chosen = ports.front()->bestIndex();
  int most = count[chosen];
  for (const auto& [index, n] : count) {
    if (n > most) {
      chosen = index;
      most = n;
    }
  }
  return chosen;
}

// The rails among `ports` (best first): those as good as the best port, at
// most options.max_rails of them, and of those the ones that have an equally
// good GID at the agreed index. Every other port goes to rails_left_out.
std::vector<const PortGids*> chooseRails(const std::vector<const PortGids*>& ports,
                                         const RoceOptions& o, int* gid_index, RoceProfile* p) {
  const PortGids& first = *ports.front();
  std::vector<const PortGids*> candidates;
  for (const PortGids* port : ports) {
    if (port->best.first != first.best.first) {
      p->rails_left_out.push_back({port->name(), "no GID on netdev " + o.netdev, true});
    } else if (port->best != first.best) {
      p->rails_left_out.push_back(
          {port->name(),
           "its best GIDs are " + kindText(*port) + ", " + first.name() + "'s " + kindText(first),
           false});
    } else if (o.max_rails > 0 && int(candidates.size()) >= o.max_rails) {
      p->rails_left_out.push_back(
          {port->name(), "SWITCHAGG_ROCE_RAILS=" + std::to_string(o.max_rails), true});
    } else {
      candidates.push_back(port);
    }
  }
  *gid_index = agreedGidIndex(candidates);
  std::vector<const PortGids*> rails;
  for (const PortGids* port : candidates) {
    if (port->best_entries.count(*gid_index)) {
      rails.push_back(port);
      continue;
    }
    p->rails_left_out.push_back({port->name(),
                                 "GID index mismatch: its " + kindText(*port) +
                                     " GIDs are at index " + std::to_string(port->bestIndex()) +
                                     ", the other rails' at " + std::to_string(*gid_index) +
                                     " (UCX 1.13 takes one GID index for every device)",
                                 false});
  }
  return rails;
}

// UCX has one IB_PATH_MTU for every device: the rails' common value, or,
// where they differ, the smallest when the user capped it and nothing (each
// device its own active MTU) otherwise.
int commonPathMtu(const std::vector<RoceRail>& rails, int requested) {
  int lowest = rails.front().path_mtu;
  bool same = true;
  for (const RoceRail& r : rails) {
    same = same && r.path_mtu == lowest;
    lowest = std::min(lowest, r.path_mtu);
  }
  if (same) return lowest;
  return requested > 0 ? lowest : 0;
}

void addSettings(const RoceOptions& o, int path_mtu, RoceProfile* p) {
  auto& s = p->ucx_settings;
  // NET_DEVICES names exactly the rails: every other device's GID at the
  // same index may be a different (RoCE v1, link-local) GID.
  std::string devices;
  for (const RoceRail& r : p->rails)
    devices += (devices.empty() ? "" : ",") + railName(r.device, r.port);
  s.emplace_back("NET_DEVICES", devices);
  // UCX 1.13 hands cached keys to the IB memory domain without its "IB_"
  // table prefix, so the GID index must go in as GID_INDEX (the variable is
  // still UCX_IB_GID_INDEX); "IB_GID_INDEX" would be silently unused.
  s.emplace_back("GID_INDEX", std::to_string(p->gid_index));
  s.emplace_back("IB_TRAFFIC_CLASS", std::to_string(p->traffic_class));
  s.emplace_back("IB_SL", std::to_string(p->sl));
  if (path_mtu > 0) s.emplace_back("IB_PATH_MTU", std::to_string(path_mtu));
  if (o.rc_timeout_us > 0) s.emplace_back("RC_TIMEOUT", std::to_string(o.rc_timeout_us) + "us");
  s.emplace_back("RC_RETRY_COUNT", std::to_string(o.rc_retry_count));
  // With an explicit SL, "try" uses AR exactly when the fabric enabled it
  // on that SL and never fails; "yes" would fail where it is off.
  s.emplace_back("IB_AR_ENABLE", o.adaptive_routing ? "try" : "no");
  s.emplace_back("IB_ROCE_PATH_FACTOR", std::to_string(o.path_factor));
  if (o.num_paths > 0) s.emplace_back("IB_NUM_PATHS", std::to_string(o.num_paths));
  // UCX 1.13 splits a rendezvous message over 2 rails by default; with more
  // rails a large message should use them all (up to UCX's 8 lanes).
  if (p->rails.size() > 2)
    s.emplace_back("MAX_RNDV_RAILS", std::to_string(std::min<size_t>(p->rails.size(), 8)));
}

RoceRail railAt(const PortGids& port, int index, const RoceOptions& o, std::string* mtu_note) {
  const GidEntry& e = *port.best_entries.at(index);
  RoceRail r;
  r.device = e.device;
  r.port = e.port;
  r.gid_index = e.index;
  r.gid = e.gid;
  r.roce_version = roceVersion(e.type);
  r.netdev = e.netdev;
  r.traffic_class = (o.dscp << 2) | (o.ecn ? 2 : 0);
  r.path_mtu = choosePathMtu(o.path_mtu, e.port_mtu, mtu_note);
  return r;
}

// The reason's tail for several rails or left-out ports.
std::string railsText(const RoceProfile& p, int path_mtu) {
  std::string text;
  if (p.rails.size() > 1) {
    text += "; " + std::to_string(p.rails.size()) + " rails at GID index " +
            std::to_string(p.gid_index) + ":";
    for (const RoceRail& r : p.rails) text += " " + railName(r.device, r.port);
    if (path_mtu == 0 && p.path_mtu > 0) text += ", path MTU left to UCX per device";
  }
  for (const auto& left : p.rails_left_out) text += "; " + left.rail + " left out: " + left.why;
  return text;
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
  std::map<std::pair<std::string, int>, PortGids> by_port;
  for (const GidEntry& e : gids) {
    if (const char* why = skipReason(e, *filter)) {
      skipped.add(why);
      continue;
    }
    PortGids& port = by_port[{e.device, e.port}];
    port.device = e.device;
    port.port = e.port;
    port.add(e, qualityOf(e, options));
  }
  if (by_port.empty()) {
    p.reason = "RDMA device present but no usable RoCE GID" +
               (options.device.empty() ? "" : " for device '" + options.device + "'") + " (" +
               skipped.text() + "): no RoCE keys applied";
    return p;
  }
  // Best port first; ties go to the lowest device name and port, whatever
  // order the source listed them in (the map's order).
  std::vector<const PortGids*> ports;
  for (const auto& [key, port] : by_port) ports.push_back(&port);
  std::stable_sort(ports.begin(), ports.end(),
                   [](const PortGids* a, const PortGids* b) { return a->best < b->best; });
  int gid_index = -1;
  const std::vector<const PortGids*> rail_ports = chooseRails(ports, options, &gid_index, &p);
  std::string mtu_note;
  std::string other_note;  // the reason names the primary rail's cap only
  for (const PortGids* port : rail_ports)
    p.rails.push_back(railAt(*port, gid_index, options, p.rails.empty() ? &mtu_note : &other_note));
  const RoceRail& primary = p.rails.front();
  p.device = primary.device;
  p.port = primary.port;
  p.gid_index = primary.gid_index;
  p.gid = primary.gid;
  p.roce_version = primary.roce_version;
  p.netdev = primary.netdev;
  p.traffic_class = primary.traffic_class;
  p.sl = options.sl;
  p.path_mtu = primary.path_mtu;
  p.lanes = kRoceAutoLanes;
  const int path_mtu = commonPathMtu(p.rails, options.path_mtu);
  p.reason = describeChoice(p) + mtu_note;
  if (ports.front()->best.first != 0) p.reason += ", none on requested netdev " + options.netdev;
  p.reason += railsText(p, path_mtu);
  const std::string skip_text = skipped.text();
  if (!skip_text.empty()) p.reason += "; " + skip_text;
  addSettings(options, path_mtu, &p);
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
    // A port the hardware offers but UCX is not given is bandwidth lost.
    for (const auto& left : profile.rails_left_out) {
      if (!left.by_choice)
        SA_WARN("ucx", "RoCE: rail %s left out: %s", left.rail.c_str(), left.why.c_str());
    }
  });
}

}  // namespace switchagg::ucx
