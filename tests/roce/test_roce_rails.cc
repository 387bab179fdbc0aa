// Every rail: one GID choice per RoCE port, UCX given all of them, against
// the multi-device sysfs trees (tests/roce/sysfs/README.md). UCX 1.13 has one
// GID index, traffic class and path MTU for every device, so the rails share
// an index or the ones that cannot are left out, by name.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "switchagg/ucx/roce_profile.h"

namespace switchagg::ucx {
namespace {

RoceProfile resolveTree(const std::string& scenario, RoceOptions options = {}) {
  options.sysfs_root = std::string(SWITCHAGG_ROCE_SYSFS_DIR) + "/" + scenario;
  auto p = resolveProfile(options);
  EXPECT_TRUE(p.ok()) << p.status().toString();
  return p.ok() ? *p : RoceProfile{};
}

std::map<std::string, std::string> settings(const RoceProfile& p) {
  return {p.ucx_settings.begin(), p.ucx_settings.end()};
}

std::string ipv4Gid(int net, int host) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "0000:0000:0000:0000:0000:ffff:0a%02x:%04x", net, host);
  return buf;
}

// Rail k is mlx5_k:1 on eth<k>, 10.k.0.1 at GID `index`, RoCE v2.
void expectRail(const RoceRail& r, int k, int index, int traffic_class, int path_mtu) {
  EXPECT_EQ(r.device, "mlx5_" + std::to_string(k));
  EXPECT_EQ(r.port, 1);
  EXPECT_EQ(r.gid_index, index);
  EXPECT_EQ(r.gid, ipv4Gid(k, 1));
  EXPECT_EQ(r.roce_version, 2);
  EXPECT_EQ(r.netdev, "eth" + std::to_string(k));
  EXPECT_EQ(r.traffic_class, traffic_class);
  EXPECT_EQ(r.path_mtu, path_mtu);
}

TEST(RoceRails, TwoDevicesAreBothRails) {
  RoceProfile p = resolveTree("two_devices");
  ASSERT_EQ(p.rails.size(), 2u) << p.reason;
  expectRail(p.rails[0], 0, 3, 104, 4096);
  expectRail(p.rails[1], 1, 3, 104, 1024);  // eth1 MTU 1500
  auto s = settings(p);
  EXPECT_EQ(s["NET_DEVICES"], "mlx5_0:1,mlx5_1:1");
  EXPECT_EQ(s["GID_INDEX"], "3");
  EXPECT_EQ(s["IB_TRAFFIC_CLASS"], "104");
  // One IB_PATH_MTU for both: the rails differ, so each device keeps its own.
  EXPECT_EQ(s.count("IB_PATH_MTU"), 0u);
  EXPECT_NE(p.reason.find("2 rails at GID index 3: mlx5_0:1 mlx5_1:1"), std::string::npos)
      << p.reason;
  EXPECT_NE(p.reason.find("path MTU left to UCX per device"), std::string::npos) << p.reason;
  EXPECT_TRUE(p.rails_left_out.empty());
  EXPECT_EQ(s.count("MAX_RNDV_RAILS"), 0u);  // UCX's default is 2 already
  // A cap the user asked for goes to every rail, at the smallest rail's MTU.
  RoceOptions capped;
  capped.path_mtu = 2048;
  RoceProfile c = resolveTree("two_devices", capped);
  ASSERT_EQ(c.rails.size(), 2u);
  EXPECT_EQ(c.rails[0].path_mtu, 2048);
  EXPECT_EQ(c.rails[1].path_mtu, 1024);
  EXPECT_EQ(settings(c)["IB_PATH_MTU"], "1024");
}

TEST(RoceRails, FourDevicesEachConfigured) {
  RoceOptions o;
  o.ecn = true;
  RoceProfile p = resolveTree("four_rails", o);
  ASSERT_EQ(p.rails.size(), 4u) << p.reason;
  for (int k = 0; k < 4; ++k) expectRail(p.rails[size_t(k)], k, 3, 106, 4096);
  auto s = settings(p);
  EXPECT_EQ(s["NET_DEVICES"], "mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1");
  EXPECT_EQ(s["GID_INDEX"], "3");
  EXPECT_EQ(s["IB_TRAFFIC_CLASS"], "106");
  EXPECT_EQ(s["IB_PATH_MTU"], "4096");
  EXPECT_EQ(s["MAX_RNDV_RAILS"], "4");  // a large message over all four
  EXPECT_EQ(p.device, "mlx5_0");        // the primary rail
  EXPECT_TRUE(p.rails_left_out.empty());
}

TEST(RoceRails, RestrictedToOneRail) {
  RoceOptions o;
  o.max_rails = 1;
  RoceProfile p = resolveTree("four_rails", o);
  ASSERT_EQ(p.rails.size(), 1u);
  expectRail(p.rails[0], 0, 3, 104, 4096);
  EXPECT_EQ(settings(p)["NET_DEVICES"], "mlx5_0:1");
  ASSERT_EQ(p.rails_left_out.size(), 3u);
  for (const auto& left : p.rails_left_out) {
    EXPECT_TRUE(left.by_choice);
    EXPECT_EQ(left.why, "SWITCHAGG_ROCE_RAILS=1");
  }
  o.max_rails = 2;
  EXPECT_EQ(settings(resolveTree("four_rails", o))["NET_DEVICES"], "mlx5_0:1,mlx5_1:1");
  // The device filter restricts to one rail as well.
  RoceOptions one;
  one.device = "mlx5_2";
  RoceProfile d = resolveTree("four_rails", one);
  ASSERT_EQ(d.rails.size(), 1u);
  expectRail(d.rails[0], 2, 3, 104, 4096);
}

// mlx5_0's best GIDs are at 1 and 3, mlx5_1's at 3 only: the common index 3
// serves both (mlx5_0 alone would take 1).
TEST(RoceRails, CommonGidIndexWhenOneExists) {
  RoceProfile p = resolveTree("rails_common_index");
  ASSERT_EQ(p.rails.size(), 2u) << p.reason;
  EXPECT_EQ(p.rails[0].device, "mlx5_0");
  EXPECT_EQ(p.rails[0].gid_index, 3);
  EXPECT_EQ(p.rails[0].gid, ipv4Gid(0, 2));
  expectRail(p.rails[1], 1, 3, 104, 4096);
  EXPECT_EQ(settings(p)["GID_INDEX"], "3");
  EXPECT_TRUE(p.rails_left_out.empty());
  RoceOptions alone;
  alone.device = "mlx5_0";
  EXPECT_EQ(resolveTree("rails_common_index", alone).gid_index, 1);
}

// No index serves every rail: the rails that agree stay, the other is left
// out with a warning naming it and both indexes; a RoCE v1-only device is
// not a rail next to RoCE v2 ones.
TEST(RoceRails, MismatchedGidIndexLeavesThatRailOut) {
  RoceProfile p = resolveTree("rails_gid_mismatch");
  ASSERT_EQ(p.rails.size(), 3u) << p.reason;
  for (int k = 0; k < 3; ++k) expectRail(p.rails[size_t(k)], k, 3, 104, 4096);
  auto s = settings(p);
  EXPECT_EQ(s["NET_DEVICES"], "mlx5_0:1,mlx5_1:1,mlx5_2:1");
  EXPECT_EQ(s["GID_INDEX"], "3");
  ASSERT_EQ(p.rails_left_out.size(), 2u);
  std::map<std::string, RoceProfile::RailLeftOut> left;
  for (const auto& l : p.rails_left_out) left[l.rail] = l;
  ASSERT_EQ(left.count("mlx5_3:1"), 1u);
  EXPECT_FALSE(left["mlx5_3:1"].by_choice);
  EXPECT_EQ(left["mlx5_3:1"].why,
            "GID index mismatch: its RoCE v2 IPv4 GIDs are at index 2, the other rails' at 3 "
            "(UCX 1.13 takes one GID index for every device)");
  ASSERT_EQ(left.count("mlx5_4:1"), 1u);
  EXPECT_FALSE(left["mlx5_4:1"].by_choice);
  EXPECT_EQ(left["mlx5_4:1"].why, "its best GIDs are RoCE v1 IPv4, mlx5_0:1's RoCE v2 IPv4");
  EXPECT_NE(p.reason.find("mlx5_3:1 left out: GID index mismatch"), std::string::npos) << p.reason;
  EXPECT_EQ(p.reason.find('\n'), std::string::npos);
  // Asked for on its own, mlx5_3 is a rail at its own index.
  RoceOptions o;
  o.device = "mlx5_3";
  RoceProfile alone = resolveTree("rails_gid_mismatch", o);
  ASSERT_EQ(alone.rails.size(), 1u);
  EXPECT_EQ(alone.rails[0].gid_index, 2);
  EXPECT_EQ(settings(alone)["NET_DEVICES"], "mlx5_3:1");
}

// The netdev option keeps the rails that carry it.
TEST(RoceRails, NetdevKeepsItsRail) {
  RoceOptions o;
  o.netdev = "eth2";
  RoceProfile p = resolveTree("four_rails", o);
  ASSERT_EQ(p.rails.size(), 1u);
  expectRail(p.rails[0], 2, 3, 104, 4096);
  ASSERT_EQ(p.rails_left_out.size(), 3u);
  for (const auto& left : p.rails_left_out) {
    EXPECT_TRUE(left.by_choice);
    EXPECT_EQ(left.why, "no GID on netdev eth2");
  }
}

TEST(RoceRails, NegativeMaxRailsIsRejected) {
  RoceOptions o;
  o.max_rails = -1;
  o.sysfs_root = std::string(SWITCHAGG_ROCE_SYSFS_DIR) + "/four_rails";
  auto p = resolveProfile(o);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace switchagg::ucx
