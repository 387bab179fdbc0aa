// routeNetdev: the local network device a connection to an address leaves
// through, as the kernel's routing table says (a UDP socket's connect sends
// nothing; getsockname gives the source address the route picks, and the
// interface holding that address is the device).
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "switchagg/ucx/transport.h"

namespace switchagg::ucx {
namespace {

bool sameAddress(const sockaddr* a, const sockaddr_storage& b) {
  if (a == nullptr || a->sa_family != b.ss_family) return false;
  if (a->sa_family == AF_INET)
    return std::memcmp(&reinterpret_cast<const sockaddr_in*>(a)->sin_addr,
                       &reinterpret_cast<const sockaddr_in*>(&b)->sin_addr, sizeof(in_addr)) == 0;
  if (a->sa_family == AF_INET6)
    return std::memcmp(&reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr,
                       &reinterpret_cast<const sockaddr_in6*>(&b)->sin6_addr,
                       sizeof(in6_addr)) == 0;
  return false;
}

}  // namespace

std::string routeNetdev(const std::string& host_port) {
  const size_t colon = host_port.rfind(':');
  std::string host = colon == std::string::npos ? host_port : host_port.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  if (host.empty()) return "";
  addrinfo hints{};
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), "9", &hints, &found) != 0 || found == nullptr) return "";
  sockaddr_storage local{};
  socklen_t len = sizeof(local);
  const int fd = socket(found->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  const bool routed = fd >= 0 && connect(fd, found->ai_addr, found->ai_addrlen) == 0 &&
                      getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0;
  if (fd >= 0) close(fd);
  freeaddrinfo(found);
  if (!routed) return "";
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return "";
  std::string name;
  for (ifaddrs* i = list; i != nullptr && name.empty(); i = i->ifa_next)
    if (sameAddress(i->ifa_addr, local)) name = i->ifa_name;
  freeifaddrs(list);
  return name;
}

}  // namespace switchagg::ucx
