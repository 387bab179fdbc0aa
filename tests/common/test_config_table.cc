// The config-table mechanism every part declares its options with: bindings
// parse and print back, errors name the key or variable, the environment
// applies, the default text comes from the struct's initializers.
#include <gtest/gtest.h>
#include <stdlib.h>

#include "switchagg/coll/switch_settings.h"
#include "switchagg/common/config_table.h"
#include "switchagg/common/log_config.h"

namespace switchagg {
namespace {

enum class Colour { kRed, kBlue };

struct Opts {
  int count = 3;
  uint64_t bytes = 256 * 1024;
  int64_t wait_ms = 90000;
  bool on = true;
  std::string path = "/run/x";
  Colour colour = Colour::kBlue;
};

const ConfigTable<Opts>& table() {
  static const ConfigTable<Opts> t({
      {"count", "SWITCHAGG_TEST_COUNT", "how many", intField(&Opts::count, 1, 10)},
      {"bytes", "SWITCHAGG_TEST_BYTES", "how big", sizeField(&Opts::bytes, 4096, 1 << 20)},
      {"wait", nullptr, "how long", durationField(&Opts::wait_ms, 100, 600000, DurationUnit::kRequired)},
      {"on", nullptr, "whether", boolField(&Opts::on)},
      {"path", nullptr, "where",
       stringField(&Opts::path,
                   [](const std::string& key, const std::string& text) {
                     return text.empty() || text[0] != '/'
                                ? Status(Code::kInvalidArgument, key + ": not absolute")
                                : Status::Ok();
                   })},
      {"colour", nullptr, "which", choiceField(&Opts::colour, {{"red", Colour::kRed}, {"blue", Colour::kBlue}})},
  });
  return t;
}

TEST(ConfigTable, DefaultsComeFromTheStructAndParseBack) {
  std::vector<std::string> want = {"3", "256K", "90s", "true", "/run/x", "blue"};
  ASSERT_EQ(table().keys().size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const ConfigKey<Opts>& k = table().keys()[i];
    EXPECT_EQ(k.defaultText(), want[i]) << k.name;
    Opts o;
    o.count = 9;  // parsing the default text must give the default back
    ASSERT_TRUE(k.set(k.name, o, k.defaultText()).ok()) << k.name;
    EXPECT_EQ(k.get(o), k.defaultText()) << k.name;
  }
}

TEST(ConfigTable, SetsEveryKindAndPrintsItBack) {
  Opts o;
  struct Case {
    const char* key;
    const char* text;
    const char* printed;
  };
  for (const Case& c : std::vector<Case>{{"count", "7", "7"},
                                         {"bytes", "8192", "8K"},
                                         {"wait", "1500ms", "1500ms"},
                                         {"wait", "5m", "5m"},
                                         {"wait", "60s", "60s"},
                                         {"on", "off", "false"},
                                         {"path", "/var/y", "/var/y"},
                                         {"colour", "red", "red"}}) {
    const ConfigKey<Opts>* k = table().find(c.key);
    ASSERT_NE(k, nullptr) << c.key;
    ASSERT_TRUE(k->set(c.key, o, c.text).ok()) << c.key << "=" << c.text;
    EXPECT_EQ(k->get(o), c.printed) << c.key << "=" << c.text;
  }
  EXPECT_EQ(o.colour, Colour::kRed);
  EXPECT_EQ(o.wait_ms, 60000);
}

TEST(ConfigTable, BadValuesNameTheKeyAndWhatIsValid) {
  struct Case {
    const char* key;
    const char* text;
    const char* expect;
  };
  for (const Case& c : std::vector<Case>{{"count", "11", "expected an integer from 1 to 10"},
                                         {"bytes", "1K", "expected 4096 to 1048576 bytes"},
                                         {"wait", "90", "give a unit"},
                                         {"wait", "1h", "expected 100ms to 10m"},
                                         {"on", "maybe", "true/false"},
                                         {"path", "rel", "not absolute"},
                                         {"colour", "green", "valid values: red|blue"}}) {
    Opts o;
    const Opts before = o;
    Status st = table().find(c.key)->set(c.key, o, c.text);
    ASSERT_FALSE(st.ok()) << c.key << "=" << c.text;
    EXPECT_EQ(st.message().rfind(c.key, 0), 0u) << st.message();
    EXPECT_NE(st.message().find(c.expect), std::string::npos) << st.message();
    EXPECT_EQ(o.count, before.count);  // nothing half-set
    EXPECT_EQ(o.bytes, before.bytes);
  }
}

TEST(ConfigTable, EnvironmentAppliesAndErrorsNameTheVariable) {
  setenv("SWITCHAGG_TEST_COUNT", "5", 1);
  setenv("SWITCHAGG_TEST_BYTES", "", 1);  // empty = unset
  Opts o;
  ASSERT_TRUE(table().applyEnvironment(o).ok());
  EXPECT_EQ(o.count, 5);
  EXPECT_EQ(o.bytes, 256u * 1024);
  setenv("SWITCHAGG_TEST_BYTES", "lots", 1);
  Status st = table().applyEnvironment(o);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("SWITCHAGG_TEST_BYTES"), std::string::npos) << st.message();
  unsetenv("SWITCHAGG_TEST_COUNT");
  unsetenv("SWITCHAGG_TEST_BYTES");
}

TEST(ConfigTable, ReportingReadsPastABadValueAndKeepsItsDefault) {
  setenv("SWITCHAGG_TEST_COUNT", "99", 1);  // outside 1..10, and read first
  setenv("SWITCHAGG_TEST_BYTES", "8K", 1);
  Opts o;
  std::vector<std::string> bad;
  table().applyEnvironmentReporting(o, [&](const Status& st) { bad.push_back(st.message()); });
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0].rfind("SWITCHAGG_TEST_COUNT", 0), 0u) << bad[0];
  EXPECT_EQ(o.count, Opts{}.count);
  EXPECT_EQ(o.bytes, 8192u);
  unsetenv("SWITCHAGG_TEST_COUNT");
  unsetenv("SWITCHAGG_TEST_BYTES");
}

TEST(ConfigTable, OneKeysVariableLeavesTheOthersUnread) {
  setenv("SWITCHAGG_TEST_COUNT", "7", 1);
  setenv("SWITCHAGG_TEST_BYTES", "lots", 1);
  Opts o;
  ASSERT_TRUE(table().applyEnvironment(o, "count").ok());
  EXPECT_EQ(o.count, 7);
  Status st = table().applyEnvironment(o, "bytes");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message().rfind("SWITCHAGG_TEST_BYTES", 0), 0u) << st.message();
  EXPECT_FALSE(table().applyEnvironment(o, "nope").ok());
  unsetenv("SWITCHAGG_TEST_COUNT");
  unsetenv("SWITCHAGG_TEST_BYTES");
}

TEST(LogSettingsTable, NamesCaseAndNumbersParseABadValueNamesTheVariable) {
  unsetenv("SWITCHAGG_LOG_LEVEL");
  LogSettings s;
  EXPECT_EQ(logSettingsTable().find("log.level")->defaultText(), "warn");
  for (const auto& [text, want] : std::vector<std::pair<std::string, LogLevel>>{
           {"debug", LogLevel::kDebug}, {"ERROR", LogLevel::kError}, {"4", LogLevel::kTrace}}) {
    setenv("SWITCHAGG_LOG_LEVEL", text.c_str(), 1);
    ASSERT_TRUE(logSettingsTable().applyEnvironment(s).ok()) << text;
    EXPECT_EQ(s.level, want) << text;
  }
  setenv("SWITCHAGG_LOG_LEVEL", "loud", 1);
  Status st = logSettingsTable().applyEnvironment(s);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message().rfind("SWITCHAGG_LOG_LEVEL: invalid value 'loud'", 0), 0u)
      << st.message();
  unsetenv("SWITCHAGG_LOG_LEVEL");
}

TEST(ConfigTable, DocsAndNamesListEveryKeyInOrder) {
  std::vector<ConfigDoc> docs = table().docs();
  ASSERT_EQ(docs.size(), 6u);
  EXPECT_STREQ(docs[0].env, "SWITCHAGG_TEST_COUNT");
  EXPECT_EQ(docs[2].env, nullptr);
  EXPECT_EQ(docs[1].default_value, "256K");
  EXPECT_EQ(table().names(), "count, bytes, wait, on, path, colour");
  EXPECT_EQ(table().find("nope"), nullptr);
}

// The switch-path settings (SWITCHAGG_SWITCH_*): what switchagg-info prints
// as the default is a value the variable accepts and gives the default back.
TEST(ConfigTable, SwitchSettingsDefaultsParseBack) {
  for (const ConfigKey<coll::SwitchSettings>& k : coll::switchSettingsTable().keys()) {
    coll::SwitchSettings s;
    s.call_timeout_ms = 7;
    s.window_request = 7;
    s.rejoin_calls = 7;
    ASSERT_TRUE(k.set(k.env, s, k.defaultText()).ok()) << k.env << "=" << k.defaultText();
    EXPECT_EQ(k.get(s), k.defaultText()) << k.env;
  }
}

}  // namespace
}  // namespace switchagg
