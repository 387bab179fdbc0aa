// SWITCHAGG_ROCE_* environment parsing (roceOptionsFromEnvironment).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "switchagg/ucx/roce_profile.h"

namespace switchagg::ucx {
namespace {

// Sets variables for one test and removes every SWITCHAGG_ROCE_* variable the
// table knows before and after, so tests do not leak into each other.
class RoceEnv {
 public:
  explicit RoceEnv(std::vector<std::pair<std::string, std::string>> vars) {
    clear();
    for (const auto& [k, v] : vars) setenv(k.c_str(), v.c_str(), 1);
  }
  ~RoceEnv() { clear(); }

 private:
  static void clear() {
    for (const ConfigDoc& d : roceOptionTable()) unsetenv(d.env);
  }
};

TEST(RoceOptionsEnv, DefaultsWithoutVariables) {
  RoceEnv env({});
  auto o = roceOptionsFromEnvironment();
  ASSERT_TRUE(o.ok()) << o.status().toString();
  RoceOptions d;
  EXPECT_EQ(o->sysfs_root, std::string(kDefaultSysfsRoot));
  EXPECT_EQ(o->dscp, d.dscp);
  EXPECT_EQ(o->sl, d.sl);
  EXPECT_EQ(o->path_mtu, 0);  // auto: the port's
  EXPECT_EQ(o->rc_timeout_us, 4000000);
  EXPECT_EQ(o->rc_retry_count, 7);
  EXPECT_TRUE(o->adaptive_routing);
  EXPECT_FALSE(o->ecn);
  EXPECT_EQ(o->max_rails, 0);  // every rail
}

TEST(RoceOptionsEnv, EveryVariableIsRead) {
  RoceEnv env({{"SWITCHAGG_ROCE_SYSFS_ROOT", "/tmp/x"},
               {"SWITCHAGG_ROCE_DEVICE", "mlx5_1:1"},
               {"SWITCHAGG_ROCE_NETDEV", "eth1"},
               {"SWITCHAGG_ROCE_DSCP", "24"},
               {"SWITCHAGG_ROCE_ECN", "yes"},
               {"SWITCHAGG_ROCE_SL", "4"},
               {"SWITCHAGG_ROCE_MTU", "2048"},
               {"SWITCHAGG_ROCE_RC_TIMEOUT", "2s"},
               {"SWITCHAGG_ROCE_RETRY", "5"},
               {"SWITCHAGG_ROCE_AR", "off"},
               {"SWITCHAGG_ROCE_PATH_FACTOR", "3"},
               {"SWITCHAGG_ROCE_NUM_PATHS", "2"},
               {"SWITCHAGG_ROCE_RAILS", "2"}});
  auto o = roceOptionsFromEnvironment();
  ASSERT_TRUE(o.ok()) << o.status().toString();
  EXPECT_EQ(o->sysfs_root, "/tmp/x");
  EXPECT_EQ(o->device, "mlx5_1:1");
  EXPECT_EQ(o->netdev, "eth1");
  EXPECT_EQ(o->dscp, 24);
  EXPECT_TRUE(o->ecn);
  EXPECT_EQ(o->sl, 4);
  EXPECT_EQ(o->path_mtu, 2048);
  EXPECT_EQ(o->rc_timeout_us, 2000000);
  EXPECT_EQ(o->rc_retry_count, 5);
  EXPECT_FALSE(o->adaptive_routing);
  EXPECT_EQ(o->path_factor, 3);
  EXPECT_EQ(o->num_paths, 2);
  EXPECT_EQ(o->max_rails, 2);
}

TEST(RoceOptionsEnv, MtuAutoAndTimeoutZeroMeanDefaults) {
  RoceEnv env({{"SWITCHAGG_ROCE_MTU", "auto"},
               {"SWITCHAGG_ROCE_RC_TIMEOUT", "0"},
               {"SWITCHAGG_ROCE_RAILS", "all"}});
  auto o = roceOptionsFromEnvironment();
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->path_mtu, 0);
  EXPECT_EQ(o->rc_timeout_us, 0);
  EXPECT_EQ(o->max_rails, 0);
}

TEST(RoceOptionsEnv, BadValuesNameTheVariable) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"SWITCHAGG_ROCE_DSCP", "64"},
      {"SWITCHAGG_ROCE_DSCP", "af41"},
      {"SWITCHAGG_ROCE_SL", "8"},
      {"SWITCHAGG_ROCE_MTU", "9000"},
      {"SWITCHAGG_ROCE_RC_TIMEOUT", "soon"},
      {"SWITCHAGG_ROCE_RC_TIMEOUT", "2h"},
      {"SWITCHAGG_ROCE_RETRY", "8"},
      {"SWITCHAGG_ROCE_AR", "maybe"},
      {"SWITCHAGG_ROCE_ECN", "2"},
      {"SWITCHAGG_ROCE_PATH_FACTOR", "0"},
      {"SWITCHAGG_ROCE_NUM_PATHS", "-1"},
      {"SWITCHAGG_ROCE_RAILS", "65"},
      {"SWITCHAGG_ROCE_RAILS", "every"},
  };
  for (const auto& [name, value] : bad) {
    RoceEnv env({{name, value}});
    auto o = roceOptionsFromEnvironment();
    ASSERT_FALSE(o.ok()) << name << "=" << value;
    EXPECT_EQ(o.status().code(), Code::kInvalidArgument);
    EXPECT_NE(o.status().message().find(name), std::string::npos) << o.status().message();
  }
}

TEST(RoceOptionsEnv, TableListsEveryVariableOnce) {
  std::vector<std::string> names;
  for (const ConfigDoc& d : roceOptionTable()) {
    EXPECT_NE(std::string(d.help), "");
    names.emplace_back(d.env);
  }
  EXPECT_EQ(names.size(), 13u);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end());
}

}  // namespace
}  // namespace switchagg::ucx
