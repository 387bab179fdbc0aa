// The rate of the agent's data link, which it advertises in CAPACITY_ACK
// (link_mbps, docs/agent-protocol.md) for the clients' cost model: the
// admin's data.link_mbps when set, else read from sysfs for the network
// interface that holds the data plane's listen address — the RoCE port's
// `rate` when that interface is a RoCE device's netdev, else the netdev's
// `speed` — else unknown (0). The parsing and the sysfs lookup take the
// sysfs root as an argument, so tests run them on a shipped tree
// (tests/agent/sysfs).
#pragma once

#include <cstdint>
#include <string>

namespace switchagg::agent {

struct LinkRate {
  uint32_t mbps = 0;   // 0 = unknown
  std::string source;  // where the rate came from, or why it is unknown
  // "link 400 Mbit/s (config)", "link unknown (...)": the agent's start-up line.
  std::string text() const;
};

// <root>/class/net/<if>/speed: Mbit/s; "-1", "0", and anything not a
// positive number (the kernel's EINVAL for a link without a speed reads as
// nothing) are unknown: 0.
uint32_t parseNetSpeedMbps(const std::string& text);
// <root>/class/infiniband/<dev>/ports/<n>/rate, "100 Gb/sec (4X EDR)" or
// "2.5 Gb/sec (1X SDR)": Mbit/s (100000, 2500); 0 when it is not a rate.
uint32_t parseIbRateMbps(const std::string& text);

// The rate of interface `ifname` under sysfs root `sysfs_root` ("/sys"):
// the port's `rate` of a RoCE device whose port names it in
// gid_attrs/ndevs/* (or, failing that, the first port of a device that
// lists it in device/net/), else class/net/<ifname>/speed.
LinkRate interfaceLinkRate(const std::string& sysfs_root, const std::string& ifname);

// The interface of the IPv4 default route (lowest metric) in the text of
// /proc/net/route; "" when there is none.
std::string defaultRouteInterface(const std::string& proc_net_route);

// The agent's link: `configured_mbps` (data.link_mbps) when > 0; else the
// rate of the interface holding `listen`'s host (data.listen, "host:port";
// for a wildcard host, "*", 0.0.0.0 or ::, the default route's
// interface), read under `sysfs_root` ("" = do not read: unknown).
LinkRate dataLinkRate(uint32_t configured_mbps, const std::string& sysfs_root,
                      const std::string& listen);

}  // namespace switchagg::agent
