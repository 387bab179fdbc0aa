// GID table discovery from sysfs (/sys/class/infiniband layout) and GID text
// classification. Every GID file is reported, usable or not, so the one
// chooser (roce_profile.cc) can say what it skipped and why; the reader only
// fails when the root exists but cannot be listed.
#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "switchagg/ucx/roce_profile.h"

namespace switchagg::ucx {
namespace fs = std::filesystem;
namespace {

// First line of a sysfs attribute; nullopt when it cannot be read (the
// kernel returns EINVAL for unpopulated gid_attrs entries).
std::optional<std::string> readLine(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::string line;
  if (!std::getline(in, line)) {
    if (in.bad()) return std::nullopt;
    return std::string();
  }
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
  return line;
}

bool isNumber(const std::string& s) {
  return !s.empty() && s.size() < 9 &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

// Numeric directory entries (ports/<n>, gids/<i>), sorted numerically.
std::vector<int> numericEntries(const fs::path& dir) {
  std::vector<int> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (isNumber(name)) out.push_back(std::stoi(name));
  }
  std::sort(out.begin(), out.end());
  return out;
}

// "4: ACTIVE" (the kernel's format); a missing file means "unknown", which
// we treat as usable rather than hiding a device from the chooser.
bool portIsActive(const fs::path& port_dir) {
  auto state = readLine(port_dir / "state");
  if (!state) return true;
  return state->find("ACTIVE") != std::string::npos && state->find("INACTIVE") == std::string::npos;
}

// The netdev's MTU from the RDMA device's own PCI function
// (<dev>/device/net/<netdev>/mtu); VLAN and bond devices are not listed
// there, so their MTU stays unknown (0) and UCX picks the port's MTU.
int netdevRoceMtu(const fs::path& device_dir, const std::string& netdev) {
  if (netdev.empty()) return 0;
  auto text = readLine(device_dir / "device" / "net" / netdev / "mtu");
  if (!text || !isNumber(*text)) return 0;
  return roceMtuForNetdevMtu(std::stoi(*text));
}

void readPort(const fs::path& device_dir, int port, const fs::path& port_dir,
              std::vector<GidEntry>* out) {
  const std::string device = device_dir.filename().string();
  GidEntry base;
  base.device = device;
  base.port = port;
  base.port_active = portIsActive(port_dir);
  base.link_layer = readLine(port_dir / "link_layer").value_or("Ethernet");
  const std::vector<int> indices = numericEntries(port_dir / "gids");
  if (indices.empty()) {
    // Keep the port visible: index -1 marks "port without GIDs".
    base.index = -1;
    out->push_back(base);
    return;
  }
  for (int index : indices) {
    GidEntry e = base;
    e.index = index;
    const std::string i = std::to_string(index);
    e.gid = readLine(port_dir / "gids" / i).value_or("");
    e.type = readLine(port_dir / "gid_attrs" / "types" / i).value_or("");
    e.netdev = readLine(port_dir / "gid_attrs" / "ndevs" / i).value_or("");
    e.port_mtu = netdevRoceMtu(device_dir, e.netdev);
    out->push_back(std::move(e));
  }
}

bool parseGidBytes(const std::string& text, unsigned char bytes[16]) {
  // sysfs prints 8 groups of 4 hex digits, which inet_pton accepts as IPv6.
  return !text.empty() && inet_pton(AF_INET6, text.c_str(), bytes) == 1;
}

}  // namespace

GidKind classifyGid(const std::string& gid) {
  unsigned char b[16];
  if (!parseGidBytes(gid, b)) return GidKind::kInvalid;
  static const unsigned char zero[16] = {};
  if (std::memcmp(b, zero, 16) == 0) return GidKind::kZero;
  if (std::memcmp(b, zero, 10) == 0 && b[10] == 0xff && b[11] == 0xff) return GidKind::kIpv4Mapped;
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) return GidKind::kLinkLocal;
  return GidKind::kIpv6Global;
}

std::string gidToAddress(const std::string& gid) {
  unsigned char b[16];
  if (!parseGidBytes(gid, b)) return gid;
  char buf[INET6_ADDRSTRLEN] = {};
  if (classifyGid(gid) == GidKind::kIpv4Mapped) {
    inet_ntop(AF_INET, b + 12, buf, sizeof(buf));
  } else {
    inet_ntop(AF_INET6, b, buf, sizeof(buf));
  }
  return buf;
}

int roceMtuForNetdevMtu(int netdev_mtu) {
  const int room = netdev_mtu - 96;
  for (int mtu = 4096; mtu >= 256; mtu /= 2) {
    if (room >= mtu) return mtu;
  }
  return 0;
}

Result<std::vector<GidEntry>> readSysfsGids(const std::string& sysfs_root) {
  std::vector<GidEntry> out;
  std::error_code ec;
  const fs::path root(sysfs_root);
  if (!fs::exists(root, ec)) return out;  // no RDMA stack at all: not an error
  if (!fs::is_directory(root, ec)) {
    return Status(Code::kIoError, "RoCE sysfs root '" + sysfs_root + "' is not a directory");
  }
  std::vector<std::string> devices;
  fs::directory_iterator it(root, ec);
  if (ec) return Status(Code::kIoError, "cannot list '" + sysfs_root + "': " + ec.message());
  for (fs::directory_iterator end; !ec && it != end; it.increment(ec)) {
    devices.push_back(it->path().filename().string());
  }
  std::sort(devices.begin(), devices.end());
  for (const std::string& device : devices) {
    const fs::path ports = root / device / "ports";
    for (int port : numericEntries(ports)) {
      readPort(root / device, port, ports / std::to_string(port), &out);
    }
  }
  return out;
}

}  // namespace switchagg::ucx
