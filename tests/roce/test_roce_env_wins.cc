// Run by CTest with UCX_IB_SL=5 in the environment (see CMakeLists.txt): the
// user's variable must win over the profile's IB_SL, visibly.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "switchagg/ucx/roce_profile.h"
#include "switchagg/ucx/ucp_config.h"

namespace switchagg::ucx {
namespace {

TEST(RoceEnvWins, UcxIbSlFromTheEnvironmentIsLeftToTheUser) {
  const char* sl = std::getenv("UCX_IB_SL");
  ASSERT_NE(sl, nullptr) << "this test must run with UCX_IB_SL=5 (ctest sets it)";
  ASSERT_EQ(std::string(sl), "5");
  RoceOptions o;
  o.sysfs_root = std::string(SWITCHAGG_ROCE_SYSFS_DIR) + "/mixed_v1_v2";
  auto p = resolveProfile(o);
  ASSERT_TRUE(p.ok());
  ucp_config_t* config = nullptr;
  ASSERT_EQ(ucp_config_read(nullptr, nullptr, &config), UCS_OK);
  Status st = applyProfile(config, *p);
  ASSERT_TRUE(st.ok()) << st.toString();
  ASSERT_EQ(p->left_to_user.size(), 1u);
  EXPECT_EQ(p->left_to_user[0].first, "IB_SL");
  EXPECT_EQ(p->left_to_user[0].second, "5");
  EXPECT_EQ(p->applied.size(), p->ucx_settings.size() - 1);
  for (const auto& kv : p->applied) EXPECT_NE(kv.first, "IB_SL");
  // Nothing of ours is cached for IB_SL, so UCX reads the user's 5 at init.
  EXPECT_FALSE(readUcpConfigValue(config, "IB_SL").ok());
  EXPECT_EQ(*readUcpConfigValue(config, "GID_INDEX"), "3");
  ucp_config_release(config);
}

}  // namespace
}  // namespace switchagg::ucx
