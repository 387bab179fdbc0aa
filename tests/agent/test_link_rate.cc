// The agent's data link rate (switchagent/daemon/link_rate.h): the sysfs
// files' formats, the shipped tree tests/agent/sysfs (its README lists what
// each interface holds), the interface of a listen address, and config
// over sysfs.
#include "link_rate.h"

#include <gtest/gtest.h>

#include <string>

namespace switchagg::agent {
namespace {

const std::string kTree = SWITCHAGG_SOURCE_DIR "/tests/agent/sysfs";

TEST(LinkRate, NetdevSpeedIsMbitOrUnknown) {
  EXPECT_EQ(parseNetSpeedMbps("25000"), 25000u);
  EXPECT_EQ(parseNetSpeedMbps("10"), 10u);
  for (const char* unknown : {"-1", "0", "", "fast", "100x", "4294967296000"})
    EXPECT_EQ(parseNetSpeedMbps(unknown), 0u) << unknown;
}

TEST(LinkRate, InfinibandPortRateIsGbitTimesAThousand) {
  EXPECT_EQ(parseIbRateMbps("100 Gb/sec (4X EDR)"), 100000u);
  EXPECT_EQ(parseIbRateMbps("2.5 Gb/sec (1X SDR)"), 2500u);
  EXPECT_EQ(parseIbRateMbps("400 Gb/sec (4X NDR)"), 400000u);
  EXPECT_EQ(parseIbRateMbps("10 Mb/sec"), 10u);
  for (const char* unknown : {"", "0 Gb/sec (1X)", "100", "100 GB/s", "Gb/sec", "-25 Gb/sec"})
    EXPECT_EQ(parseIbRateMbps(unknown), 0u) << unknown;
}

struct TreeCase {
  const char* ifname;
  uint32_t mbps;
  const char* source;  // a part of LinkRate::source
};

class LinkRateTree : public ::testing::TestWithParam<TreeCase> {};

TEST_P(LinkRateTree, ReadsTheInterfacesRate) {
  const TreeCase& c = GetParam();
  const LinkRate r = interfaceLinkRate(kTree, c.ifname);
  EXPECT_EQ(r.mbps, c.mbps) << r.text();
  EXPECT_NE(r.source.find(c.source), std::string::npos) << r.text();
}

INSTANTIATE_TEST_SUITE_P(
    ShippedTree, LinkRateTree,
    ::testing::Values(
        TreeCase{"eth0", 25000,
                 "sysfs " SWITCHAGG_SOURCE_DIR "/tests/agent/sysfs/class/net/eth0/speed"},
        TreeCase{"eth1", 0, "class/net/eth1/speed says '-1'"},
        TreeCase{"eth9", 0, "class/net/eth9/speed unreadable"},
        // The RoCE port's rate wins over the netdev's speed (25000).
        TreeCase{"ens1f0", 100000, "class/infiniband/mlx5_0/ports/1/rate, the RoCE port of ens1f0"},
        // Named by the device's device/net/ only (no GID table).
        TreeCase{"ens2f0", 200000, "class/infiniband/mlx5_1/ports/1/rate"},
        // A RoCE port without a rate: the netdev's speed.
        TreeCase{"eth3", 10000, "class/net/eth3/speed"}),
    [](const ::testing::TestParamInfo<TreeCase>& i) { return std::string(i.param.ifname); });

TEST(LinkRate, ConfigWinsOverSysfs) {
  const LinkRate r = dataLinkRate(400, kTree, "127.0.0.1:0");
  EXPECT_EQ(r.mbps, 400u);
  EXPECT_EQ(r.text(), "link 400 Mbit/s (config)");
}

// The listen address's interface comes from the machine (getifaddrs): a
// loopback address is lo's, whose speed the tree gives.
TEST(LinkRate, ALoopbackListenAddressReadsLo) {
  for (const char* listen : {"127.0.0.1:18515", "127.0.0.2:0", "localhost:0"}) {
    const LinkRate r = dataLinkRate(0, kTree, listen);
    EXPECT_EQ(r.mbps, 40000u) << listen << ": " << r.text();
    EXPECT_EQ(r.text(), "link 40000 Mbit/s (sysfs " + kTree + "/class/net/lo/speed)") << listen;
  }
}

TEST(LinkRate, UnknownSaysWhy) {
  LinkRate r = dataLinkRate(0, "", "127.0.0.1:0");
  EXPECT_EQ(r.mbps, 0u);
  EXPECT_EQ(r.text(), "link unknown (data.link_mbps is 0 and data.sysfs_root is \"\")");
  r = dataLinkRate(0, kTree, "203.0.113.77:0");  // TEST-NET-3: on no interface here
  EXPECT_EQ(r.mbps, 0u);
  EXPECT_EQ(r.text(),
            "link unknown (data.listen 203.0.113.77:0: no network interface holds 203.0.113.77)")
      << "or the machine holds a TEST-NET address";
  r = dataLinkRate(0, kTree + "/missing", "127.0.0.1:0");
  EXPECT_EQ(r.mbps, 0u);
  EXPECT_NE(r.text().find("missing/class/net/lo/speed unreadable"), std::string::npos) << r.text();
}

// A wildcard listen address has no interface of its own: the default
// route's is taken (which one depends on the machine), and the source says so.
TEST(LinkRate, AWildcardListenAddressSaysItTookTheDefaultRoute) {
  for (const char* listen : {"0.0.0.0:18515", "*:0", "[::]:0"}) {
    const LinkRate r = dataLinkRate(0, kTree, listen);
    EXPECT_NE(r.source.find(std::string("data.listen ") + listen + " is a wildcard: "),
              std::string::npos)
        << r.text();
  }
}

TEST(LinkRate, DefaultRouteIsTheUpZeroRouteOfLowestMetric) {
  const std::string header =
      "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n";
  const std::string table = header +
                            "eth1\t0002A8C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n"
                            "eth2\t00000000\t0102A8C0\t0002\t0\t0\t10\t00000000\t0\t0\t0\n"
                            "eth0\t00000000\t0101A8C0\t0003\t0\t0\t600\t00000000\t0\t0\t0\n"
                            "eth5\t00000000\t0105A8C0\t0003\t0\t0\t100\t00000000\t0\t0\t0\n";
  EXPECT_EQ(defaultRouteInterface(table), "eth5");  // eth2's is not up
  EXPECT_EQ(defaultRouteInterface(header + "eth1\t0002A8C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\n"),
            "");
  EXPECT_EQ(defaultRouteInterface(""), "");
}

}  // namespace
}  // namespace switchagg::agent
