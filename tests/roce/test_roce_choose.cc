// GID discovery + the one chooser, against the sysfs trees in tests/roce/sysfs
// (see its README for the scenarios) and against ibverbs-shaped tables.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <random>

#include "switchagg/ucx/roce_profile.h"

namespace switchagg::ucx {
namespace {

std::string tree(const std::string& scenario) {
  return std::string(SWITCHAGG_ROCE_SYSFS_DIR) + "/" + scenario;
}

RoceProfile resolveTree(const std::string& scenario, RoceOptions options = {}) {
  options.sysfs_root = tree(scenario);
  auto p = resolveProfile(options);
  EXPECT_TRUE(p.ok()) << p.status().toString();
  return p.ok() ? *p : RoceProfile{};
}

std::map<std::string, std::string> settings(const RoceProfile& p) {
  return {p.ucx_settings.begin(), p.ucx_settings.end()};
}

// The primary rail is device:port at GID `index` (RoCE `version`); with
// `rails` = 1 it is the only one UCX is given.
void expectChoice(const RoceProfile& p, const std::string& device, int port, int index, int version,
                  size_t rails = 1) {
  EXPECT_TRUE(p.rdma_present);
  EXPECT_EQ(p.device, device);
  EXPECT_EQ(p.port, port);
  EXPECT_EQ(p.gid_index, index);
  EXPECT_EQ(p.roce_version, version);
  ASSERT_EQ(p.rails.size(), rails) << p.reason;
  EXPECT_EQ(p.rails[0].device, device);
  EXPECT_EQ(p.rails[0].port, port);
  auto s = settings(p);
  if (rails == 1) {
    EXPECT_EQ(s["NET_DEVICES"], device + ":" + std::to_string(port));
  }
  EXPECT_EQ(s["GID_INDEX"], std::to_string(index));
}

// `scenario` resolves (with `options`) to GID `index` (RoCE `version`) on
// device:port, and the reason says each of `why`.
RoceProfile expectTreeChoice(const std::string& scenario, const std::string& device, int port,
                             int index, int version, std::initializer_list<const char*> why,
                             const RoceOptions& options = {}) {
  RoceProfile p = resolveTree(scenario, options);
  expectChoice(p, device, port, index, version);
  for (const char* w : why) EXPECT_NE(p.reason.find(w), std::string::npos) << p.reason;
  return p;
}

void expectNoChoice(const RoceProfile& p, bool rdma_present) {
  EXPECT_EQ(p.rdma_present, rdma_present);
  EXPECT_EQ(p.gid_index, -1);
  EXPECT_EQ(p.roce_version, 0);
  EXPECT_TRUE(p.ucx_settings.empty());
  EXPECT_EQ(p.reason.find('\n'), std::string::npos) << "reason must be one line";
}

TEST(RoceChoose, MixedV1V2PicksV2Ipv4) {
  RoceProfile p = resolveTree("mixed_v1_v2");
  expectChoice(p, "mlx5_0", 1, 3, 2);
  EXPECT_EQ(p.gid, "0000:0000:0000:0000:0000:ffff:0a00:0001");
  EXPECT_EQ(p.netdev, "eth0");
  EXPECT_NE(p.reason.find("RoCE v2, IPv4 10.0.0.1 on eth0"), std::string::npos) << p.reason;
  EXPECT_NE(p.reason.find("2 all-zero"), std::string::npos) << p.reason;
  EXPECT_EQ(p.source, "sysfs:" + tree("mixed_v1_v2"));
  EXPECT_EQ(p.lanes, kRoceAutoLanes);
  auto s = settings(p);
  EXPECT_EQ(s["IB_TRAFFIC_CLASS"], "104");  // DSCP 26 << 2, ECN bits clear
  EXPECT_EQ(s["IB_SL"], "3");
  EXPECT_EQ(s["IB_PATH_MTU"], "4096");  // eth0 MTU 9000 allows 4096
  EXPECT_EQ(p.path_mtu, 4096);
  EXPECT_EQ(s["RC_TIMEOUT"], "4000000us");
  EXPECT_EQ(s["RC_RETRY_COUNT"], "7");
  EXPECT_EQ(s["IB_AR_ENABLE"], "try");
  EXPECT_EQ(s["IB_ROCE_PATH_FACTOR"], "1");
  EXPECT_EQ(s.count("IB_NUM_PATHS"), 0u);  // 0 = UCX default, not set
}

TEST(RoceChoose, TwoDevicesDefaultNetdevAndFilter) {
  expectChoice(resolveTree("two_devices"), "mlx5_0", 1, 3, 2, 2);
  RoceOptions o;
  o.netdev = "eth1";
  RoceProfile by_netdev = expectTreeChoice("two_devices", "mlx5_1", 1, 3, 2, {}, o);
  EXPECT_EQ(by_netdev.gid, "0000:0000:0000:0000:0000:ffff:0a01:0001");
  EXPECT_EQ(by_netdev.path_mtu, 1024);  // eth1 MTU 1500
  EXPECT_EQ(settings(by_netdev)["IB_PATH_MTU"], "1024");
  o.path_mtu = 4096;
  RoceProfile capped = resolveTree("two_devices", o);
  ASSERT_EQ(capped.rails.size(), 1u);
  EXPECT_EQ(capped.path_mtu, 1024);
  EXPECT_NE(capped.reason.find("path MTU capped at 1024"), std::string::npos) << capped.reason;
  for (const char* filter : {"mlx5_1", "mlx5_1:1"}) {
    RoceOptions f;
    f.device = filter;
    expectTreeChoice("two_devices", "mlx5_1", 1, 3, 2, {"4 outside the device filter"}, f);
  }
  RoceOptions missing;
  missing.device = "mlx5_1:2";
  RoceProfile none = resolveTree("two_devices", missing);
  expectNoChoice(none, true);
  EXPECT_NE(none.reason.find("for device 'mlx5_1:2'"), std::string::npos) << none.reason;
  EXPECT_EQ(none.devices.size(), 2u);
}

TEST(RoceChoose, BadDeviceFilterIsInvalidArgument) {
  RoceOptions o;
  o.sysfs_root = tree("two_devices");
  o.device = "mlx5_0:x";
  auto p = resolveProfile(o);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), Code::kInvalidArgument);
  EXPECT_NE(p.status().message().find("SWITCHAGG_ROCE_DEVICE"), std::string::npos);
}

TEST(RoceChoose, Ipv6OnlyPicksGlobalV2NotLinkLocal) {
  expectTreeChoice("ipv6_only", "mlx5_0", 1, 3, 2, {"IPv6 2001:db8::1"});
}

TEST(RoceChoose, DownPortIsSkipped) {
  RoceProfile p = expectTreeChoice("down_port", "mlx5_0", 2, 3, 2, {"4 on down ports"});
  EXPECT_EQ(p.netdev, "eth1");
  EXPECT_EQ(p.devices, (std::vector<std::string>{"mlx5_0:1 DOWN Ethernet (4 GIDs)",
                                                 "mlx5_0:2 ACTIVE Ethernet (4 GIDs)"}));
}

TEST(RoceChoose, AllPortsDownGivesNoProfile) {
  RoceProfile p = resolveTree("all_down");
  expectNoChoice(p, true);
  EXPECT_NE(p.reason.find("no usable RoCE GID"), std::string::npos) << p.reason;
  EXPECT_NE(p.reason.find("3 on down ports"), std::string::npos) << p.reason;
}

TEST(RoceChoose, EmptyZeroAndUnreadableEntriesAreSkipped) {
  expectTreeChoice("empty_gids", "mlx5_0", 1, 4, 2, {"2 all-zero", "2 unreadable/empty"});
  expectNoChoice(resolveTree("zero_only"), true);
}

TEST(RoceChoose, NetdevPreference) {
  expectChoice(resolveTree("netdev_pref"), "mlx5_0", 1, 1, 2);
  RoceOptions vlan;
  vlan.netdev = "eth0.100";
  RoceProfile p =
      expectTreeChoice("netdev_pref", "mlx5_0", 1, 2, 2, {"192.168.7.1 on eth0.100"}, vlan);
  // A VLAN's MTU is not under the RDMA device: left to UCX (port active MTU).
  EXPECT_EQ(p.path_mtu, 0);
  EXPECT_EQ(settings(p).count("IB_PATH_MTU"), 0u);
  RoceOptions absent;
  absent.netdev = "eth9";
  expectTreeChoice("netdev_pref", "mlx5_0", 1, 1, 2, {"none on requested netdev eth9"}, absent);
}

TEST(RoceChoose, RoceV1OnlyWhenNothingElse) {
  expectTreeChoice("v1_only", "mlx5_0", 1, 1, 1, {"not routable beyond L2"});
}

TEST(RoceChoose, InfiniBandPortIsNotRoce) {
  expectTreeChoice("ib_and_roce", "mlx5_1", 1, 1, 2, {"1 on InfiniBand ports"});
}

TEST(RoceChoose, NoDeviceAndMissingRoot) {
  for (const std::string& root : {tree("no_device"), tree("does_not_exist")}) {
    RoceOptions o;
    o.sysfs_root = root;
    auto p = resolveProfile(o);
    ASSERT_TRUE(p.ok()) << p.status().toString();
    expectNoChoice(*p, false);
    EXPECT_EQ(p->source, "none");
    EXPECT_TRUE(p->devices.empty());
    EXPECT_EQ(p->reason,
              "no RDMA device found: UCX uses shared memory and TCP, no RoCE keys applied");
  }
}

TEST(RoceChoose, RootThatIsAFileIsAnError) {
  RoceOptions o;
  o.sysfs_root = tree("README.md");
  auto p = resolveProfile(o);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), Code::kIoError);
}

// ibverbs reports only populated entries, in its own order: the chooser must
// reach the same decision as from the full sysfs table.
TEST(RoceChoose, IbverbsShapedTableGivesSameChoice) {
  for (const char* scenario : {"mixed_v1_v2", "two_devices", "down_port", "netdev_pref"}) {
    auto sysfs = readSysfsGids(tree(scenario));
    ASSERT_TRUE(sysfs.ok());
    std::vector<GidEntry> verbs;
    for (const GidEntry& e : *sysfs) {
      const GidKind kind = classifyGid(e.gid);
      if (!e.type.empty() && kind != GidKind::kZero && kind != GidKind::kInvalid)
        verbs.push_back(e);
    }
    ASSERT_LT(verbs.size(), sysfs->size() + 1);
    std::mt19937 rng(7);
    std::shuffle(verbs.begin(), verbs.end(), rng);
    auto a = chooseProfile(*sysfs, RoceOptions{});
    auto b = chooseProfile(verbs, RoceOptions{});
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->device, b->device) << scenario;
    EXPECT_EQ(a->port, b->port) << scenario;
    EXPECT_EQ(a->gid_index, b->gid_index) << scenario;
    EXPECT_EQ(a->ucx_settings, b->ucx_settings) << scenario;
  }
}

// This host: libibverbs finds what sysfs has. Without RDMA support (CI) both
// are empty and the default resolution says so; on a RoCE host the populated
// sysfs entries and the ibverbs table must agree.
TEST(RoceChoose, IbverbsAgreesWithSysfsOnThisHost) {
  auto verbs = readIbverbsGids();
  ASSERT_TRUE(verbs.ok()) << verbs.status().toString();
  auto sysfs = readSysfsGids(kDefaultSysfsRoot);
  ASSERT_TRUE(sysfs.ok());
  size_t usable = 0;
  for (const GidEntry& e : *sysfs) {
    const GidKind k = classifyGid(e.gid);
    if (!e.type.empty() && k != GidKind::kZero && k != GidKind::kInvalid) ++usable;
  }
  EXPECT_EQ(verbs->size(), usable);
  auto p = resolveProfile(RoceOptions{});
  ASSERT_TRUE(p.ok());
  if (sysfs->empty()) {
    expectNoChoice(*p, false);
    EXPECT_EQ(p->source, "none");
  } else {
    EXPECT_TRUE(p->rdma_present);
  }
}

TEST(RoceChoose, ClassifyGid) {
  EXPECT_EQ(classifyGid("0000:0000:0000:0000:0000:ffff:0a00:0001"), GidKind::kIpv4Mapped);
  EXPECT_EQ(classifyGid("::ffff:10.0.0.1"), GidKind::kIpv4Mapped);
  EXPECT_EQ(classifyGid("fe80:0000:0000:0000:0248:52ff:fe0a:0001"), GidKind::kLinkLocal);
  EXPECT_EQ(classifyGid("febf::1"), GidKind::kLinkLocal);
  EXPECT_EQ(classifyGid("fec0::1"), GidKind::kIpv6Global);
  EXPECT_EQ(classifyGid("2001:0db8:0000:0000:0000:0000:0000:0001"), GidKind::kIpv6Global);
  EXPECT_EQ(classifyGid("0000:0000:0000:0000:0000:0000:0000:0000"), GidKind::kZero);
  EXPECT_EQ(classifyGid(""), GidKind::kInvalid);
  EXPECT_EQ(classifyGid("not-a-gid"), GidKind::kInvalid);
  EXPECT_EQ(gidToAddress("0000:0000:0000:0000:0000:ffff:c0a8:0701"), "192.168.7.1");
  EXPECT_EQ(gidToAddress("2001:0db8:0000:0000:0000:0000:0000:0001"), "2001:db8::1");
}

TEST(RoceChoose, OptionsShapeTheSettings) {
  auto gids = readSysfsGids(tree("mixed_v1_v2"));
  ASSERT_TRUE(gids.ok());
  RoceOptions o;
  o.dscp = 46;
  o.ecn = true;
  o.sl = 5;
  o.path_mtu = 2048;
  o.rc_timeout_us = 0;
  o.rc_retry_count = 3;
  o.adaptive_routing = false;
  o.path_factor = 2;
  o.num_paths = 4;
  auto p = chooseProfile(*gids, o);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->traffic_class, 46 * 4 + 2);
  auto s = settings(*p);
  EXPECT_EQ(s["IB_TRAFFIC_CLASS"], "186");
  EXPECT_EQ(s["IB_SL"], "5");
  EXPECT_EQ(s["IB_PATH_MTU"], "2048");  // below the port's 4096: kept
  EXPECT_EQ(s.count("RC_TIMEOUT"), 0u);
  EXPECT_EQ(s["RC_RETRY_COUNT"], "3");
  EXPECT_EQ(s["IB_AR_ENABLE"], "no");
  EXPECT_EQ(s["IB_ROCE_PATH_FACTOR"], "2");
  EXPECT_EQ(s["IB_NUM_PATHS"], "4");
}

// Port MTU unknown (no netdev MTU in the tree): a requested MTU is used as
// given, "auto" leaves the key to UCX.
TEST(RoceChoose, PathMtuWithUnknownPortMtu) {
  RoceOptions o;
  EXPECT_EQ(settings(resolveTree("ipv6_only", o)).count("IB_PATH_MTU"), 0u);
  o.path_mtu = 4096;
  EXPECT_EQ(settings(resolveTree("ipv6_only", o))["IB_PATH_MTU"], "4096");
}

TEST(RoceChoose, RoceMtuFromNetdevMtu) {
  EXPECT_EQ(roceMtuForNetdevMtu(9000), 4096);
  EXPECT_EQ(roceMtuForNetdevMtu(4200), 4096);
  EXPECT_EQ(roceMtuForNetdevMtu(4191), 2048);
  EXPECT_EQ(roceMtuForNetdevMtu(1500), 1024);
  EXPECT_EQ(roceMtuForNetdevMtu(600), 256);
  EXPECT_EQ(roceMtuForNetdevMtu(300), 0);
}

TEST(RoceChoose, OutOfRangeOptionsAreRejected) {
  auto gids = readSysfsGids(tree("mixed_v1_v2"));
  ASSERT_TRUE(gids.ok());
  std::vector<RoceOptions> bad(6);
  bad[0].dscp = 64;
  bad[1].sl = 8;
  bad[2].path_mtu = 9000;
  bad[3].rc_retry_count = 8;
  bad[4].path_factor = 0;
  bad[5].num_paths = -1;
  for (const RoceOptions& o : bad) {
    auto p = chooseProfile(*gids, o);
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.status().code(), Code::kInvalidArgument);
  }
}

}  // namespace
}  // namespace switchagg::ucx
