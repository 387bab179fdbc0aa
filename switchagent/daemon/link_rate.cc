// The agent's data link rate: config, or sysfs (link_rate.h).
#include "link_rate.h"

#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <system_error>
#include <vector>

namespace switchagg::agent {
namespace fs = std::filesystem;
namespace {

// The most a rate may say (data.link_mbps's bound): 100 Tbit/s.
constexpr double kMaxMbps = 100000000;

// A sysfs attribute's first line without trailing white space; false when
// it cannot be read (the kernel answers EINVAL for a speed it does not know).
bool readAttribute(const fs::path& path, std::string* text) {
  std::ifstream in(path);
  text->clear();
  if (!in || !std::getline(in, *text)) return false;
  text->erase(text->find_last_not_of(" \t\r\n") + 1);
  return true;
}

// Directory entries' names, sorted (ports numerically: "10" after "9").
std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    names.push_back(it->path().filename().string());
  std::sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
    return a.size() != b.size() ? a.size() < b.size() : a < b;
  });
  return names;
}

// The port directory of the RoCE device that carries `ifname`: a port whose
// GID table names it (gid_attrs/ndevs/*), else the first port of a device
// whose PCI function lists it (device/net/<ifname>). "" when none does.
fs::path rocePortOf(const fs::path& infiniband, const std::string& ifname) {
  const std::vector<std::string> devices = entries(infiniband);
  for (const std::string& dev : devices) {
    for (const std::string& port : entries(infiniband / dev / "ports")) {
      const fs::path ndevs = infiniband / dev / "ports" / port / "gid_attrs" / "ndevs";
      std::string name;
      for (const std::string& i : entries(ndevs))
        if (readAttribute(ndevs / i, &name) && name == ifname)
          return infiniband / dev / "ports" / port;
    }
  }
  std::error_code ec;
  for (const std::string& dev : devices) {
    if (!fs::exists(infiniband / dev / "device" / "net" / ifname, ec)) continue;
    const std::vector<std::string> ports = entries(infiniband / dev / "ports");
    if (!ports.empty()) return infiniband / dev / "ports" / ports.front();
  }
  return {};
}

// The address bytes of an IPv4 or IPv6 socket address ("" for others).
std::string addressBytes(const sockaddr* sa) {
  if (sa == nullptr) return {};
  if (sa->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    return std::string(reinterpret_cast<const char*>(&in->sin_addr), sizeof in->sin_addr);
  }
  if (sa->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    return std::string(reinterpret_cast<const char*>(&in6->sin6_addr), sizeof in6->sin6_addr);
  }
  return {};
}

// `a` equals `b` in the bits `mask` keeps (every bit without a mask).
bool sameUnderMask(const std::string& a, const std::string& b, const std::string& mask) {
  if (a.empty() || a.size() != b.size() || mask.size() != a.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if ((a[i] ^ b[i]) & mask[i]) return false;
  return true;
}

// The interface holding `host`'s address: one with that address, else one
// whose subnet holds it (127.0.0.2 is lo's). "" with *why when none does.
std::string interfaceHolding(const std::string& host, std::string* why) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res); rc != 0 || res == nullptr) {
    *why = "cannot resolve " + host + ": " + gai_strerror(rc);
    return {};
  }
  ifaddrs* ifs = nullptr;
  if (getifaddrs(&ifs) != 0) {
    freeaddrinfo(res);
    *why = "cannot list the network interfaces";
    return {};
  }
  std::string exact, subnet;
  for (const addrinfo* a = res; a != nullptr && exact.empty(); a = a->ai_next) {
    const std::string want = addressBytes(a->ai_addr);
    for (const ifaddrs* i = ifs; i != nullptr && exact.empty(); i = i->ifa_next) {
      const std::string have = addressBytes(i->ifa_addr), mask = addressBytes(i->ifa_netmask);
      if (sameUnderMask(want, have, std::string(want.size(), '\xff'))) {
        exact = i->ifa_name;
      } else if (subnet.empty() && mask.find_first_not_of('\0') != std::string::npos &&
                 sameUnderMask(want, have, mask)) {
        subnet = i->ifa_name;
      }
    }
  }
  freeifaddrs(ifs);
  freeaddrinfo(res);
  if (exact.empty() && subnet.empty()) *why = "no network interface holds " + host;
  return exact.empty() ? subnet : exact;
}

}  // namespace

std::string LinkRate::text() const {
  return (mbps > 0 ? "link " + std::to_string(mbps) + " Mbit/s (" : "link unknown (") + source +
         ")";
}

uint32_t parseNetSpeedMbps(const std::string& text) {
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v <= 0 || v > kMaxMbps) return 0;
  return static_cast<uint32_t>(v);
}

uint32_t parseIbRateMbps(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || !(v > 0)) return 0;
  std::string unit(end);
  unit.erase(0, unit.find_first_not_of(' '));
  double mbps = 0;
  if (unit.rfind("Gb/sec", 0) == 0) {
    mbps = v * 1000;
  } else if (unit.rfind("Mb/sec", 0) == 0) {
    mbps = v;
  }
  return mbps >= 1 && mbps <= kMaxMbps ? static_cast<uint32_t>(std::lround(mbps)) : 0;
}

LinkRate interfaceLinkRate(const std::string& sysfs_root, const std::string& ifname) {
  const fs::path root(sysfs_root);
  LinkRate r;
  std::string text;
  if (const fs::path port = rocePortOf(root / "class" / "infiniband", ifname); !port.empty()) {
    if (readAttribute(port / "rate", &text) && (r.mbps = parseIbRateMbps(text)) > 0) {
      r.source = "sysfs " + (port / "rate").string() + ", the RoCE port of " + ifname;
      return r;
    }
  }
  const fs::path speed = root / "class" / "net" / ifname / "speed";
  if (!readAttribute(speed, &text)) {
    r.source = speed.string() + " unreadable";
  } else if ((r.mbps = parseNetSpeedMbps(text)) == 0) {
    r.source = speed.string() + " says '" + text + "'";
  } else {
    r.source = "sysfs " + speed.string();
  }
  return r;
}

std::string defaultRouteInterface(const std::string& proc_net_route) {
  std::istringstream in(proc_net_route);
  std::string line, best;
  long best_metric = std::numeric_limits<long>::max();
  std::getline(in, line);  // the header
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string iface, dest, gateway, flags, refcnt, use, mask;
    long metric = 0;
    if (!(f >> iface >> dest >> gateway >> flags >> refcnt >> use >> metric >> mask)) continue;
    const bool up = (std::strtoul(flags.c_str(), nullptr, 16) & 1) != 0;  // RTF_UP
    if (up && dest == "00000000" && mask == "00000000" && metric < best_metric) {
      best = iface;
      best_metric = metric;
    }
  }
  return best;
}

LinkRate dataLinkRate(uint32_t configured_mbps, const std::string& sysfs_root,
                      const std::string& listen) {
  if (configured_mbps > 0) return {configured_mbps, "config"};
  if (sysfs_root.empty()) return {0, "data.link_mbps is 0 and data.sysfs_root is \"\""};
  std::string host = listen.substr(0, listen.rfind(':'));
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  std::string ifname, why, note;
  if (host.empty() || host == "*" || host == "0.0.0.0" || host == "::") {
    std::ifstream route("/proc/net/route");
    std::ostringstream text;
    text << route.rdbuf();
    ifname = defaultRouteInterface(text.str());
    note = "data.listen " + listen + " is a wildcard: ";
    if (ifname.empty()) return {0, note + "no IPv4 default route to take the interface of"};
    note += "the default route's interface " + ifname;
  } else if ((ifname = interfaceHolding(host, &why)).empty()) {
    return {0, "data.listen " + listen + ": " + why};
  }
  LinkRate r = interfaceLinkRate(sysfs_root, ifname);
  if (!note.empty()) r.source += "; " + note;
  return r;
}

}  // namespace switchagg::agent
