#include <gtest/gtest.h>

#include "switchagg/common/config.h"
#include "switchagg/common/dtype.h"
#include "switchagg/common/status.h"

namespace {

TEST(Config, SizesWithUnits) {
  EXPECT_EQ(*switchagg::parseSize("k", "4096"), 4096u);
  EXPECT_EQ(*switchagg::parseSize("k", "64K"), 65536u);
  EXPECT_EQ(*switchagg::parseSize("k", "64KiB"), 65536u);
  EXPECT_EQ(*switchagg::parseSize("k", "4M"), 4u << 20);
  EXPECT_EQ(*switchagg::parseSize("k", "1g"), 1ull << 30);
}

TEST(Config, BadSizeNamesKeyAndValue) {
  auto r = switchagg::parseSize("slot_bytes", "12 parsecs");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("slot_bytes"), std::string::npos);
  EXPECT_NE(r.status().message().find("12 parsecs"), std::string::npos);
  EXPECT_FALSE(switchagg::parseSize("k", "-1").ok());
  EXPECT_FALSE(switchagg::parseSize("k", "").ok());
}

TEST(Config, IntRange) {
  EXPECT_EQ(*switchagg::parseInt("lanes", "4", 1, 16), 4);
  EXPECT_FALSE(switchagg::parseInt("lanes", "17", 1, 16).ok());
  EXPECT_FALSE(switchagg::parseInt("lanes", "4x", 1, 16).ok());
}

TEST(Config, BoolsAndDurations) {
  EXPECT_TRUE(*switchagg::parseBool("b", "On"));
  EXPECT_FALSE(*switchagg::parseBool("b", "no"));
  EXPECT_FALSE(switchagg::parseBool("b", "maybe").ok());
  EXPECT_EQ(*switchagg::parseDurationMs("t", "250ms"), 250);
  EXPECT_EQ(*switchagg::parseDurationMs("t", "1.5s"), 1500);
  EXPECT_EQ(*switchagg::parseDurationMs("t", "2m"), 120000);
  EXPECT_FALSE(switchagg::parseDurationMs("t", "soon").ok());
}

TEST(Config, ChoiceListsValidValues) {
  auto r = switchagg::parseChoice("mode", "bogus", {"off", "auto", "require"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("off|auto|require"), std::string::npos);
  EXPECT_EQ(*switchagg::parseChoice("mode", "auto", {"off", "auto", "require"}), "auto");
}

TEST(Dtype, NamesRoundTrip) {
  for (int d = 1; d <= switchagg::kNumDtypes; ++d) {
    switchagg::Dtype parsed;
    auto dt = static_cast<switchagg::Dtype>(d);
    ASSERT_TRUE(switchagg::parseDtype(switchagg::dtypeName(dt), &parsed));
    EXPECT_EQ(parsed, dt);
    EXPECT_GT(switchagg::dtypeSize(dt), 0u);
  }
  EXPECT_FALSE(switchagg::isValidDtype(0));
  EXPECT_TRUE(switchagg::isValidDtype(17));
  EXPECT_TRUE(switchagg::isValidDtype(18));
  EXPECT_FALSE(switchagg::isValidDtype(19));
  EXPECT_EQ(switchagg::dtypeSize(switchagg::Dtype::kLongInt), 16u);
  // 16-bit floats: wire values 17 and 18, floating, no pair type.
  switchagg::Dtype h;
  ASSERT_TRUE(switchagg::parseDtype("float16", &h));
  EXPECT_EQ(static_cast<int>(h), 17);
  ASSERT_TRUE(switchagg::parseDtype("bfloat16", &h));
  EXPECT_EQ(static_cast<int>(h), 18);
  EXPECT_EQ(switchagg::dtypeSize(h), 2u);
  EXPECT_TRUE(switchagg::isFloating(h));
  EXPECT_TRUE(switchagg::isHalfFloat(h));
  EXPECT_FALSE(switchagg::isPairType(h));
  EXPECT_FALSE(switchagg::isHalfFloat(switchagg::Dtype::kFloat32));
}

}  // namespace
