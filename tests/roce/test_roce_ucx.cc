// The RoCE profile as UCX sees it: ucp_config_read -> applyProfile ->
// readUcpConfigValue, the environment-wins rule, and every key/value checked
// against UCX 1.13's own configuration tables and ucx_info.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>

#include "switchagg/ucx/roce_profile.h"
#include "switchagg/ucx/ucp_config.h"

namespace switchagg::ucx {
namespace {

// UCX variables these tests touch; cleared around each test.
const char* const kUcxVars[] = {"UCX_NET_DEVICES",      "UCX_IB_SL",
                                "UCX_RC_MLX5_SL",       "UCX_IB_GID_INDEX",
                                "UCX_IB_TRAFFIC_CLASS", "UCX_RC_TIMEOUT"};

class RoceUcx : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : kUcxVars) unsetenv(v);
  }
  void TearDown() override {
    if (config_) ucp_config_release(config_);
    for (const char* v : kUcxVars) unsetenv(v);
  }
  // Reads UCX's configuration now, so variables set before count.
  ucp_config_t* readConfig() {
    if (config_) ucp_config_release(config_);
    config_ = nullptr;
    EXPECT_EQ(ucp_config_read(nullptr, nullptr, &config_), UCS_OK);
    return config_;
  }
  static RoceProfile profileFor(const std::string& scenario, RoceOptions o = {}) {
    o.sysfs_root = std::string(SWITCHAGG_ROCE_SYSFS_DIR) + "/" + scenario;
    auto p = resolveProfile(o);
    EXPECT_TRUE(p.ok()) << p.status().toString();
    return p.ok() ? *p : RoceProfile{};
  }
  // Every knob set, so every key the profile can emit is exercised.
  static RoceProfile fullProfile() {
    RoceOptions o;
    o.ecn = true;
    o.num_paths = 2;
    o.path_factor = 2;
    return profileFor("mixed_v1_v2", o);
  }
  // The mixed_v1_v2 profile applied to a config read with the user's
  // UCX_<key>=<value> set: that one setting is left to the user.
  void applyUnderUserSetting(const std::string& key, const std::string& value, RoceProfile* p,
                             ucp_config_t** c) {
    setenv(("UCX_" + key).c_str(), value.c_str(), 1);
    *p = profileFor("mixed_v1_v2");
    *c = readConfig();
    ASSERT_TRUE(applyProfile(*c, *p).ok());
    ASSERT_EQ(p->left_to_user.size(), 1u);
    EXPECT_EQ(p->left_to_user[0], std::make_pair(key, value));
  }
  ucp_config_t* config_ = nullptr;
};

TEST_F(RoceUcx, AppliedValuesReadBackFromUcx) {
  RoceProfile p = fullProfile();
  ASSERT_EQ(p.ucx_settings.size(), 10u);
  ucp_config_t* c = readConfig();
  Status st = applyProfile(c, p);
  ASSERT_TRUE(st.ok()) << st.toString();
  EXPECT_EQ(p.applied, p.ucx_settings);
  EXPECT_TRUE(p.left_to_user.empty());
  for (const auto& [key, value] : p.ucx_settings) {
    auto got = readUcpConfigValue(c, key);
    ASSERT_TRUE(got.ok()) << key << ": " << got.status().toString();
    EXPECT_EQ(*got, value) << key;
  }
  EXPECT_EQ(*readUcpConfigValue(c, "NET_DEVICES"), "mlx5_0:1");
  EXPECT_EQ(*readUcpConfigValue(c, "GID_INDEX"), "3");
  EXPECT_EQ(*readUcpConfigValue(c, "IB_TRAFFIC_CLASS"), "106");  // ECN on: DSCP 26 + ECT(0)
}

TEST_F(RoceUcx, NetdevChoiceReachesNetDevices) {
  RoceOptions o;
  o.netdev = "eth1";
  RoceProfile p = profileFor("two_devices", o);
  ucp_config_t* c = readConfig();
  ASSERT_TRUE(applyProfile(c, p).ok());
  EXPECT_EQ(*readUcpConfigValue(c, "NET_DEVICES"), "mlx5_1:1");
  EXPECT_EQ(*readUcpConfigValue(c, "GID_INDEX"), "3");
  EXPECT_EQ(*readUcpConfigValue(c, "IB_SL"), "3");
  EXPECT_EQ(*readUcpConfigValue(c, "IB_TRAFFIC_CLASS"), "104");
}

// Every rail reaches UCX in one NET_DEVICES list, with the one GID index,
// traffic class and path MTU UCX 1.13 has for all of them.
TEST_F(RoceUcx, FourRailsReachNetDevices) {
  RoceProfile p = profileFor("four_rails");
  ucp_config_t* c = readConfig();
  ASSERT_TRUE(applyProfile(c, p).ok());
  EXPECT_EQ(*readUcpConfigValue(c, "NET_DEVICES"), "mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1");
  EXPECT_EQ(*readUcpConfigValue(c, "GID_INDEX"), "3");
  EXPECT_EQ(*readUcpConfigValue(c, "IB_TRAFFIC_CLASS"), "104");
  EXPECT_EQ(*readUcpConfigValue(c, "IB_PATH_MTU"), "4096");
  EXPECT_EQ(*readUcpConfigValue(c, "MAX_RNDV_RAILS"), "4");
  for (const auto& [key, value] : p.ucx_settings) {
    Status st = checkUcxSetting(key, value);
    EXPECT_TRUE(st.ok()) << key << "=" << value << ": " << st.toString();
  }
}

TEST_F(RoceUcx, MismatchedRailIsNotInNetDevices) {
  RoceProfile p = profileFor("rails_gid_mismatch");
  ucp_config_t* c = readConfig();
  ASSERT_TRUE(applyProfile(c, p).ok());
  EXPECT_EQ(*readUcpConfigValue(c, "NET_DEVICES"), "mlx5_0:1,mlx5_1:1,mlx5_2:1");
  EXPECT_EQ(*readUcpConfigValue(c, "GID_INDEX"), "3");
}

// No RDMA device: nothing is applied, UCX keeps its defaults and a context
// comes up on shared memory and TCP.
TEST_F(RoceUcx, NoDeviceLeavesUcxAlone) {
  RoceProfile p = profileFor("no_device");
  ucp_config_t* c = readConfig();
  ASSERT_TRUE(applyProfile(c, p).ok());
  EXPECT_TRUE(p.applied.empty());
  EXPECT_EQ(*readUcpConfigValue(c, "NET_DEVICES"), "all");
  EXPECT_FALSE(readUcpConfigValue(c, "IB_SL").ok());
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_TAG;
  ucp_context_h context = nullptr;
  ASSERT_EQ(ucp_init(&params, c, &context), UCS_OK);
  ucp_cleanup(context);
}

TEST_F(RoceUcx, UserUcpKeyWins) {
  setenv("UCX_NET_DEVICES", "lo", 1);
  RoceProfile p = profileFor("mixed_v1_v2");
  ucp_config_t* c = readConfig();
  ASSERT_TRUE(applyProfile(c, p).ok());
  std::map<std::string, std::string> left(p.left_to_user.begin(), p.left_to_user.end());
  EXPECT_EQ(left["NET_DEVICES"], "lo");
  EXPECT_EQ(*readUcpConfigValue(c, "NET_DEVICES"), "lo");
  EXPECT_EQ(p.applied.size() + p.left_to_user.size(), p.ucx_settings.size());
}

// A transport-specific spelling (UCX_RC_MLX5_SL) also beats our IB_SL: the
// cached IB_SL would be applied over it at ucp_init, so it is not set; ud
// and dc get the SL through keys that miss rc_mlx5 (test_roce_reach.cc).
TEST_F(RoceUcx, UserTransportVariantWins) {
  RoceProfile p;
  ucp_config_t* c = nullptr;
  ASSERT_NO_FATAL_FAILURE(applyUnderUserSetting("RC_MLX5_SL", "5", &p, &c));
  for (const auto& kv : p.applied) EXPECT_NE(kv.first, "IB_SL");
  EXPECT_FALSE(readUcpConfigValue(c, "IB_SL").ok());
  EXPECT_EQ(*readUcpConfigValue(c, "UD_SL"), "3");
  EXPECT_EQ(*readUcpConfigValue(c, "DC_SL"), "3");
  EXPECT_EQ(*readUcpConfigValue(c, "GID_INDEX"), "3");
}

// The GID index is set as GID_INDEX but users spell it UCX_IB_GID_INDEX.
TEST_F(RoceUcx, UserGidIndexWins) {
  RoceProfile p;
  ucp_config_t* c = nullptr;
  ASSERT_NO_FATAL_FAILURE(applyUnderUserSetting("IB_GID_INDEX", "1", &p, &c));
  EXPECT_FALSE(readUcpConfigValue(c, "GID_INDEX").ok());
  EXPECT_EQ(*readUcpConfigValue(c, "NET_DEVICES"), "mlx5_0:1");
}

TEST_F(RoceUcx, EveryEmittedKeyIsKnownToUcx) {
  for (const auto& [key, value] : fullProfile().ucx_settings) {
    Status st = checkUcxSetting(key, value);
    EXPECT_TRUE(st.ok()) << key << "=" << value << ": " << st.toString();
  }
}

// ucp_config_modify caches unknown transport keys silently in UCX 1.13; we
// must turn a misspelt key or a bad value into an error ourselves.
TEST_F(RoceUcx, UnknownKeysAndBadValuesAreRejected) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"IB_BOGUS_KNOB", "1"},
      // The environment spelling: UCX 1.13 would cache it and never apply it.
      {"IB_GID_INDEX", "3"},
      {"IB_TRAFFIC_CLAS", "104"},
      {"IB_SL", "three"},
      {"RC_TIMEOUT", "soon"},
      {"IB_PATH_MTU", "9000"},
      {"IB_AR_ENABLE", "sometimes"},
  };
  for (const auto& [key, value] : bad) {
    Status st = checkUcxSetting(key, value);
    EXPECT_EQ(st.code(), Code::kInvalidArgument) << key << "=" << value;
    EXPECT_NE(st.message().find(key), std::string::npos) << st.message();
  }

  RoceProfile p = fullProfile();
  p.ucx_settings.insert(p.ucx_settings.begin() + 1, {"IB_BOGUS_KNOB", "1"});
  ucp_config_t* c = readConfig();
  Status st = applyProfile(c, p);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_EQ(p.applied.size(), 1u);  // stopped at the bad key
  EXPECT_FALSE(readUcpConfigValue(c, "IB_BOGUS_KNOB").ok());
}

// Independent oracle: UCX's own tool lists each key (as a name or as an
// "inherits:" alias of the rc/dc/ud transport keys).
TEST_F(RoceUcx, UcxInfoListsEveryKey) {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen("ucx_info -c -f 2>/dev/null", "r"), pclose);
  ASSERT_TRUE(pipe) << "ucx_info (package ucx-utils) must be installed";
  std::string text;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof(buf), pipe.get())) > 0;) text.append(buf, n);
  ASSERT_GT(text.size(), 10000u);
  auto listed = [&text](const std::string& key) {
    const std::string name = "UCX_" + key;
    for (size_t pos = text.find(name); pos != std::string::npos; pos = text.find(name, pos + 1)) {
      const char next = pos + name.size() < text.size() ? text[pos + name.size()] : '\n';
      if (next == '=' || next == ',' || next == '\n') return true;
    }
    return false;
  };
  for (const auto& kv : fullProfile().ucx_settings) {
    EXPECT_TRUE(listed(ucxEnvName(kv.first))) << kv.first;
  }
  EXPECT_FALSE(listed("IB_BOGUS_KNOB"));
}

}  // namespace
}  // namespace switchagg::ucx
