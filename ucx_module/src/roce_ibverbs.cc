// The GID table from libibverbs (rdma-core 44): the same GidEntry rows that
// sysfs gives, so one chooser serves both. Built only when the library is
// linked (SWITCHAGG_HAVE_IBVERBS); without devices it returns an empty table.
#include "switchagg/ucx/roce_profile.h"

#ifdef SWITCHAGG_HAVE_IBVERBS
#include <infiniband/verbs.h>
#include <net/if.h>

#include <cstdio>
#include <memory>
#endif

namespace switchagg::ucx {

#ifdef SWITCHAGG_HAVE_IBVERBS
namespace {

// sysfs text form: 8 groups of 4 lower-case hex digits.
std::string gidText(const union ibv_gid& gid) {
  char buf[40];
  const uint8_t* r = gid.raw;
  std::snprintf(buf, sizeof(buf),
                "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x", r[0],
                r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12], r[13],
                r[14], r[15]);
  return buf;
}

const char* gidTypeText(uint32_t type) {
  switch (type) {
    case IBV_GID_TYPE_ROCE_V2:
      return "RoCE v2";
    case IBV_GID_TYPE_ROCE_V1:
      return "IB/RoCE v1";  // sysfs spells v1 this way
    default:
      return "IB";
  }
}

struct DeviceCloser {
  void operator()(ibv_context* c) const { ibv_close_device(c); }
};

void readDevice(ibv_device* dev, std::vector<GidEntry>* out) {
  std::unique_ptr<ibv_context, DeviceCloser> ctx(ibv_open_device(dev));
  if (!ctx) return;  // permission or driver problem: treat as absent
  ibv_device_attr attr{};
  if (ibv_query_device(ctx.get(), &attr) != 0) return;
  size_t total = 0;
  std::vector<ibv_port_attr> ports(attr.phys_port_cnt + 1);
  for (int p = 1; p <= attr.phys_port_cnt; ++p) {
    if (ibv_query_port(ctx.get(), static_cast<uint8_t>(p), &ports[p]) == 0)
      total += static_cast<size_t>(ports[p].gid_tbl_len);
  }
  std::vector<ibv_gid_entry> entries(total);
  // Returns only valid (populated) entries, so zero GIDs never show up here.
  ssize_t n = total ? ibv_query_gid_table(ctx.get(), entries.data(), entries.size(), 0) : 0;
  for (ssize_t i = 0; i < n; ++i) {
    const ibv_gid_entry& g = entries[i];
    GidEntry e;
    e.device = ibv_get_device_name(dev);
    e.port = static_cast<int>(g.port_num);
    e.index = static_cast<int>(g.gid_index);
    e.gid = gidText(g.gid);
    e.type = gidTypeText(g.gid_type);
    char name[IF_NAMESIZE] = {};
    if (g.ndev_ifindex && if_indextoname(g.ndev_ifindex, name)) e.netdev = name;
    if (e.port >= 1 && e.port <= attr.phys_port_cnt) {
      e.port_active = ports[e.port].state == IBV_PORT_ACTIVE;
      e.port_mtu = 128 << static_cast<int>(ports[e.port].active_mtu);  // IBV_MTU_256 = 1
      e.link_layer =
          ports[e.port].link_layer == IBV_LINK_LAYER_INFINIBAND ? "InfiniBand" : "Ethernet";
    }
    out->push_back(std::move(e));
  }
}

}  // namespace

Result<std::vector<GidEntry>> readIbverbsGids() {
  std::vector<GidEntry> out;
  int num = 0;
  // NULL (e.g. ENOSYS without kernel RDMA support) means "no devices".
  ibv_device** list = ibv_get_device_list(&num);
  if (!list) return out;
  for (int i = 0; i < num; ++i) readDevice(list[i], &out);
  ibv_free_device_list(list);
  return out;
}
#else
Result<std::vector<GidEntry>> readIbverbsGids() {
  return std::vector<GidEntry>{};
}
#endif

}  // namespace switchagg::ucx
