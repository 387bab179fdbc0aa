// plugstack.conf arguments -> PluginConfig (pure parser, no Slurm).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "plugin_config.h"

namespace switchagg::spank {
namespace {

Result<PluginConfig> parse(std::vector<std::string> args) { return parsePluginArgs(args); }

TEST(SpankConfig, EmptyLineGivesDefaults) {
  Result<PluginConfig> c = parse({});
  ASSERT_TRUE(c.ok()) << c.status().toString();
  EXPECT_EQ(c->control, "");
  EXPECT_EQ(c->default_mode, Mode::kOff);
  EXPECT_EQ(c->default_slots, 0);
  EXPECT_EQ(c->max_slots, 64);
  EXPECT_EQ(c->ttl_s, 0);
  EXPECT_EQ(c->timeout_ms, 5000);
  EXPECT_FALSE(c->fail_job_on_error);
  EXPECT_EQ(c->state_dir, "/run/switchagg-spank");
}

TEST(SpankConfig, EveryKeyParses) {
  Result<PluginConfig> c =
      parse({"control=10.0.0.5:18516", "mode=auto", "default_slots=4", "max_slots=16", "ttl=12h",
             "timeout=2s", "fail_job_on_error=yes", "state_dir=/var/run/sa"});
  ASSERT_TRUE(c.ok()) << c.status().toString();
  EXPECT_EQ(c->control, "10.0.0.5:18516");
  EXPECT_EQ(c->default_mode, Mode::kAuto);
  EXPECT_EQ(c->default_slots, 4);
  EXPECT_EQ(c->max_slots, 16);
  EXPECT_EQ(c->ttl_s, 12 * 3600);
  EXPECT_EQ(c->timeout_ms, 2000);
  EXPECT_TRUE(c->fail_job_on_error);
  EXPECT_EQ(c->state_dir, "/var/run/sa");
}

TEST(SpankConfig, ControlAddressFormsAreCanonical) {
  EXPECT_EQ(parse({"control=unix:/run/x.sock"})->control, "unix:/run/x.sock");
  EXPECT_EQ(parse({"control=/run/x.sock"})->control, "unix:/run/x.sock");
  EXPECT_EQ(parse({"control=http://agent1:18516"})->control, "agent1:18516");
  Result<PluginConfig> bad = parse({"control=agent1"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("control"), std::string::npos);
}

TEST(SpankConfig, UnknownKeyIsNamedWithTheValidOnes) {
  Result<PluginConfig> c = parse({"mode=auto", "max_slot=4"});
  ASSERT_FALSE(c.ok());
  const std::string& m = c.status().message();
  EXPECT_NE(m.find("unknown key 'max_slot'"), std::string::npos) << m;
  EXPECT_NE(m.find("max_slots"), std::string::npos) << m;
  EXPECT_NE(m.find("fail_job_on_error"), std::string::npos) << m;
}

TEST(SpankConfig, MalformedArgumentsAreRefused) {
  for (const char* arg : {"mode", "=auto", "mode:auto"}) {
    Result<PluginConfig> c = parse({arg});
    ASSERT_FALSE(c.ok()) << arg;
    EXPECT_NE(c.status().message().find("not key=value"), std::string::npos) << c.status().message();
  }
  Result<PluginConfig> twice = parse({"mode=auto", "mode=off"});
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find("'mode' given twice"), std::string::npos);
}

TEST(SpankConfig, BadValuesNameTheKey) {
  struct Case {
    const char* arg;
    const char* expect;
  };
  for (const Case& c : std::vector<Case>{{"mode=sometimes", "valid: off, auto, require"},
                                         {"default_slots=-1", "default_slots"},
                                         {"max_slots=0", "max_slots"},
                                         {"max_slots=5000", "max_slots"},
                                         {"ttl=forever", "ttl"},
                                         {"ttl=500ms", "at least 1s"},
                                         {"timeout=0", "timeout"},
                                         {"timeout=2m", "100ms to 60s"},
                                         {"fail_job_on_error=maybe", "fail_job_on_error"},
                                         {"state_dir=relative/dir", "absolute path"}}) {
    Result<PluginConfig> r = parse({c.arg});
    ASSERT_FALSE(r.ok()) << c.arg;
    EXPECT_NE(r.status().message().find(c.expect), std::string::npos)
        << c.arg << " -> " << r.status().message();
  }
}

TEST(SpankConfig, DefaultSlotsMustFitMaxSlots) {
  Result<PluginConfig> c = parse({"default_slots=8", "max_slots=4"});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("exceeds max_slots"), std::string::npos);
  EXPECT_TRUE(parse({"default_slots=4", "max_slots=4"}).ok());
}

TEST(SpankConfig, TableListsEveryKeyWithHelp) {
  std::vector<std::string> names;
  for (const ConfigDoc& k : pluginConfigKeys()) {
    names.emplace_back(k.name);
    EXPECT_NE(std::string(k.help), "") << k.name;
    // Every documented default is accepted by the parser.
    EXPECT_TRUE(parse({std::string(k.name) + "=" + k.default_value}).ok()) << k.name;
  }
  EXPECT_EQ(names,
            (std::vector<std::string>{"control", "mode", "default_slots", "max_slots", "ttl",
                                      "timeout", "fail_job_on_error", "state_dir", "fabric"}));
}

TEST(SpankMode, ParsesCaseInsensitivelyAndListsValidValues) {
  EXPECT_EQ(*parseMode("--switch-agg", "REQUIRE"), Mode::kRequire);
  EXPECT_EQ(*parseMode("--switch-agg", "auto"), Mode::kAuto);
  EXPECT_EQ(*parseMode("--switch-agg", "off"), Mode::kOff);
  Result<Mode> bad = parseMode("--switch-agg", "bogus");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "--switch-agg: invalid value 'bogus' (valid: off, auto, require)");
  EXPECT_FALSE(parseMode("--switch-agg", "").ok());
}

}  // namespace
}  // namespace switchagg::spank

namespace switchagg::spank {
namespace {

// config/plugstack.conf is what admins copy: its line must parse.
TEST(SpankConfig, ShippedExampleLineParses) {
  std::ifstream in(SWITCHAGG_PLUGSTACK_EXAMPLE);
  ASSERT_TRUE(in) << SWITCHAGG_PLUGSTACK_EXAMPLE;
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::string kind, path, arg;
    words >> kind >> path;
    EXPECT_EQ(kind, "required");
    EXPECT_NE(path.find("/lib/slurm/switchagg_spank.so"), std::string::npos);
    std::vector<std::string> args;
    while (words >> arg) args.push_back(arg);
    Result<PluginConfig> c = parsePluginArgs(args);
    ASSERT_TRUE(c.ok()) << c.status().toString();
    EXPECT_EQ(args.size(), pluginConfigKeys().size()) << "the example shows every key";
    ++lines;
  }
  EXPECT_EQ(lines, 1);
}

}  // namespace
}  // namespace switchagg::spank
