// The agent's config table: TOML in, typed values out, every bad input
// refused with a message naming the key.
#include <gtest/gtest.h>

#include <fstream>

#include "agent_config.h"
#include "switchagg/agent/control_client.h"
#include "switchagg/agent/malloc_tuning.h"

using namespace switchagg;
using namespace switchagg::agent;

namespace {

Status load(const std::string& toml, AgentConfig* out = nullptr) {
  AgentConfig c;
  Status st = applyToml(toml, "test.toml", &c);
  if (st.ok()) st = validateConfig(c);
  if (out != nullptr) *out = c;
  return st;
}

TEST(ControlConfig, DefaultsAreValid) {
  AgentConfig c;
  EXPECT_TRUE(validateConfig(c).ok());
  EXPECT_EQ(c.unix_socket, "/run/switchagg/agent.sock");
}

TEST(ControlConfig, ParsesEveryKind) {
  AgentConfig c;
  Status st = load(R"(
[data]
listen = "0.0.0.0:0"
slot_bytes = "1M"
threads = 3
member_timeout = "2500ms"
[pool]
slots = 128
[control]
unix_socket = "/tmp/x.sock"
listen = ""
open_readonly = false
[policy]
max_slots_per_job = 32
max_slots_per_user = 64
default_slots = 8
default_ttl = "2h"
max_ttl = "48h"
allowed_users = ["alice", 1001, "*"]
allowed_groups = ["hpc"]
admin_users = []
)",
                   &c);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(c.data.listen, "0.0.0.0:0");
  EXPECT_EQ(c.data.engine.slot_bytes, 1u << 20);
  EXPECT_EQ(c.data.threads, 3);
  EXPECT_EQ(c.data.engine.member_timeout_ms, 2500);
  EXPECT_EQ(c.limits.pool_slots, 128);
  EXPECT_EQ(c.control_listen, "");
  EXPECT_FALSE(c.open_readonly);
  EXPECT_EQ(c.default_ttl_ms, 2 * 3600 * 1000);
  EXPECT_EQ(c.limits.max_ttl_ms, 48 * 3600 * 1000);
  EXPECT_EQ(c.allowed_users, (std::vector<std::string>{"alice", "1001", "*"}));
  EXPECT_EQ(c.allowed_groups, (std::vector<std::string>{"hpc"}));
  EXPECT_TRUE(c.admin_users.empty());
}

struct Bad {
  const char* toml;
  const char* must_mention;
};

TEST(ControlConfig, BadConfigNamesTheKey) {
  const Bad cases[] = {
      {"[pool]\nslot = 3\n", "pool.slot: unknown key"},
      {"[pool]\nslots = 0\n", "pool.slots"},
      {"[pool]\nslots = \"many\"\n", "pool.slots: expected an integer"},
      {"[pools]\nslots = 3\n", "[pools]: unknown section"},
      {"slots = 3\n", "slots: unknown key"},
      {"[data]\nslot_bytes = \"12 parsecs\"\n", "data.slot_bytes"},
      {"[data]\nslot_bytes = 16\n", "data.slot_bytes"},
      {"[data]\nlisten = \"nowhere\"\n", "data.listen"},
      {"[data]\nmember_timeout = \"10\"\n", "data.member_timeout"},
      {"[data]\nmember_timeout = 10\n", "data.member_timeout: expected a duration"},
      {"[control]\nunix_socket = \"relative.sock\"\n", "control.unix_socket"},
      {"[control]\nopen_readonly = \"maybe\"\n", "control.open_readonly"},
      {"[control]\nunix_socket = \"\"\nlisten = \"\"\n", "control.unix_socket"},
      {"[policy]\nallowed_users = \"alice\"\n", "policy.allowed_users: expected an array"},
      {"[policy]\nallowed_users = [\"a b\"]\n", "policy.allowed_users"},
      {"[policy]\ndefault_slots = 17\n", "policy.default_slots: 17 exceeds policy.max_slots_per_job"},
      {"[policy]\nmax_slots_per_job = 100\n", "policy.max_slots_per_job: 100 exceeds pool.slots"},
      {"[policy]\ndefault_ttl = \"9000h\"\n", "policy.default_ttl"},
      {"[policy]\nmax_ttl = \"1d\"\n", "policy.max_ttl"},
      {"[agent]\nlog_level = \"loud\"\n", "agent.log_level"},
      {"[pool\nslots = 1\n", "test.toml:1"},
  };
  for (const Bad& b : cases) {
    Status st = load(b.toml);
    EXPECT_FALSE(st.ok()) << b.toml;
    EXPECT_NE(st.message().find(b.must_mention), std::string::npos)
        << "config:\n" << b.toml << "message: " << st.message();
  }
}

// toml++ 3.3 reaches __builtin_unreachable on some non-ASCII code points
// outside strings (fuzz_agent_config, tests/fuzz/agent_config_corpus/
// toml_unreachable_fefe): refused before it parses, with where; inside
// strings and comments, and a leading BOM, non-ASCII stays allowed.
TEST(ControlConfig, NonAsciiOutsideStringsIsRefusedNamingWhere) {
  AgentConfig config;
  Status s = applyToml("\xEF\xBB\xBE", "a.toml", &config);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("a.toml:1:1: a non-ASCII character outside a string or comment"),
            std::string::npos) << s.message();
  s = applyToml("[agent]\nlog_level = \xC2\xA1\n", "b.toml", &config);
  EXPECT_NE(s.message().find("b.toml:2:13: a non-ASCII"), std::string::npos) << s.message();
  s = applyToml("x = \"\"\"a\\\n  \xC2\xA1\"\"\"\n", "c.toml", &config);
  EXPECT_NE(s.message().find("c.toml:2:3: a non-ASCII character after a line-ending backslash"),
            std::string::npos) << s.message();
  // A quote inside a value's bare token opens no string (toml++ reads on as
  // the token).
  for (const char* token : {"-\"1", "1=\"", "2.\"", "abc'", "0x0[\""}) {
    s = applyToml(std::string("[agent]\nlog_level = ") + token + "\xCA\x8C\"\n", "e.toml", &config);
    EXPECT_NE(s.message().find("e.toml:2:"), std::string::npos) << token << ": " << s.message();
    EXPECT_NE(s.message().find(": a non-ASCII character outside a string or comment"), std::string::npos)
        << token << ": " << s.message();
  }
  // After a BOM, a quoted key at the start of the line is a key (toml++
  // reads it so; fuzz_fabric_map, tests/fuzz/fabric_map_corpus/
  // toml_unreachable_bom_key).
  s = applyToml("\xEF\xBB\xBF\"[\"\xEF\xBB\xB7]", "f.toml", &config);
  EXPECT_NE(s.message().find("f.toml:1:4: a non-ASCII character outside a string or comment"),
            std::string::npos) << s.message();
  EXPECT_TRUE(applyToml("\xEF\xBB\xBF# caf\xC3\xA9 \xEF\xBB\xBE\n[control]\nunix_socket = \"/tmp/\xC2\xA1\"\n"
                        "[state]\nlease_file = \"\"\"/tmp/\xEF\xBB\xBE\"\"\"\n",
                        "d.toml", &config)
                  .ok());
  EXPECT_EQ(config.unix_socket, "/tmp/\xC2\xA1");
  EXPECT_EQ(config.lease_file, "/tmp/\xEF\xBB\xBE");
}

TEST(ControlConfig, OverridesWinAndNameUnknownKeys) {
  AgentConfig c;
  ASSERT_TRUE(applyOverrides({"pool.slots=9", "policy.allowed_users=a,b"}, &c).ok());
  EXPECT_EQ(c.limits.pool_slots, 9);
  EXPECT_EQ(c.allowed_users, (std::vector<std::string>{"a", "b"}));
  Status st = applyOverrides({"pool.slotz=9"}, &c);
  EXPECT_NE(st.message().find("pool.slotz: unknown key"), std::string::npos);
  EXPECT_FALSE(applyOverrides({"pool.slots"}, &c).ok());
}

TEST(ControlConfig, PrintedConfigParsesBackToTheSameValues) {
  AgentConfig c;
  ASSERT_TRUE(applyOverrides({"pool.slots=48", "policy.admin_users=ops,1002",
                              "data.member_timeout=1500ms", "data.slot_bytes=64K"},
                             &c)
                  .ok());
  AgentConfig back;
  Status st = applyToml(renderConfigToml(c), "printed", &back);
  ASSERT_TRUE(st.ok()) << st.message() << "\n" << renderConfigToml(c);
  EXPECT_EQ(renderConfigToml(back), renderConfigToml(c));
  EXPECT_EQ(back.admin_users, (std::vector<std::string>{"ops", "1002"}));
}

// Strings with quotes, backslashes and control characters print escaped
// (fuzz_agent_config: tests/fuzz/agent_config_corpus/print_config_unescaped_quote).
TEST(ControlConfig, PrintedStringsAreEscaped) {
  AgentConfig c;
  Status st = applyToml("[fabric]\nname = \"\\\"leaf\\\\1\\t\"\n", "odd.toml", &c);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(c.fabric_name, "\"leaf\\1\t");
  std::string printed = renderConfigToml(c);
  EXPECT_NE(printed.find("name = \"\\\"leaf\\\\1\\u0009\"\n"), std::string::npos) << printed;
  AgentConfig back;
  st = applyToml(printed, "printed", &back);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(back.fabric_name, c.fabric_name);
}

TEST(ControlConfig, EveryKeyIsDocumentedInTheAdminGuideAndExample) {
  std::ifstream admin(SWITCHAGG_SOURCE_DIR "/docs/admin.md");
  std::string doc((std::istreambuf_iterator<char>(admin)), std::istreambuf_iterator<char>());
  EXPECT_NE(doc.find(renderConfigMarkdown()), std::string::npos)
      << "docs/admin.md is missing the current key table; regenerate with "
         "switchagg-agent --print-config-markdown";
  std::ifstream ex(SWITCHAGG_SOURCE_DIR "/config/agent.toml");
  std::string example((std::istreambuf_iterator<char>(ex)), std::istreambuf_iterator<char>());
  AgentConfig c;
  Status st = applyToml(example, "config/agent.toml", &c);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_TRUE(validateConfig(c).ok());
  for (const AgentConfigKey& k : agentConfigKeys()) {
    std::string name = k.name;
    std::string leaf = name.substr(name.find('.') + 1);
    EXPECT_NE(example.find("\n" + leaf + " = "), std::string::npos) << name << " missing in agent.toml";
  }
}

// A control client's environment (SWITCHAGG_CONTROL, SWITCHAGG_MUNGE_SOCKET)
// comes through its table: a bad value fails the call as a configuration
// error naming the variable, and a value the options give is not read.
TEST(ControlClientEnvironment, BadVariablesAreConfigErrorsNamingThem) {
  unsetenv("SWITCHAGG_MUNGE_SOCKET");
  setenv("SWITCHAGG_CONTROL", "no-port-here", 1);
  ApiResult<AgentStatus> bad = ControlClient().status();
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error(), ApiError::kConfig);
  EXPECT_EQ(bad.failure().message.rfind("SWITCHAGG_CONTROL: ", 0), 0u) << bad.failure().message;
  // Given an address, the client does not read the variable: the call gets
  // as far as the (absent) socket.
  ApiResult<AgentStatus> given = ControlClient("unix:/nonexistent/switchagg.sock").status();
  ASSERT_FALSE(given.ok());
  EXPECT_EQ(given.error(), ApiError::kUnreachable) << given.failure().message;
  unsetenv("SWITCHAGG_CONTROL");

  setenv("SWITCHAGG_MUNGE_SOCKET", "relative/munge.socket", 1);
  ControlClientOptions o;
  o.address = "127.0.0.1:1";
  ApiResult<AgentStatus> munge = ControlClient(o).status();
  ASSERT_FALSE(munge.ok());
  EXPECT_EQ(munge.error(), ApiError::kConfig);
  EXPECT_NE(munge.failure().message.find("SWITCHAGG_MUNGE_SOCKET"), std::string::npos)
      << munge.failure().message;
  o.use_munge = false;  // no credential: the socket is not needed
  EXPECT_EQ(ControlClient(o).status().error(), ApiError::kUnreachable);
  unsetenv("SWITCHAGG_MUNGE_SOCKET");
}

TEST(ControlClientEnvironment, DefaultsAndValidValues) {
  unsetenv("SWITCHAGG_CONTROL");  // a caller's own (the docs test exports one)
  unsetenv("SWITCHAGG_MUNGE_SOCKET");
  ControlEnvironment env;
  ASSERT_TRUE(controlEnvironmentTable().applyEnvironment(env).ok());
  EXPECT_EQ(env.address, "unix:/run/switchagg/agent.sock");
  setenv("SWITCHAGG_CONTROL", "http://agent-host:18516", 1);
  setenv("SWITCHAGG_MUNGE_SOCKET", "/run/munge/other.socket", 1);
  ASSERT_TRUE(controlEnvironmentTable().applyEnvironment(env).ok());
  EXPECT_EQ(env.address, "http://agent-host:18516");
  EXPECT_EQ(env.munge_socket, "/run/munge/other.socket");
  EXPECT_EQ(ControlClient().address(), "http://agent-host:18516");
  unsetenv("SWITCHAGG_CONTROL");
  unsetenv("SWITCHAGG_MUNGE_SOCKET");
}

TEST(MallocTuningTable, ReadsTheVariableAndNamesItOnABadValue) {
  unsetenv("SWITCHAGG_MALLOC_TUNING");
  MallocTuning m;
  EXPECT_TRUE(m.tune);
  setenv("SWITCHAGG_MALLOC_TUNING", "0", 1);
  ASSERT_TRUE(mallocTuningTable().applyEnvironment(m).ok());
  EXPECT_FALSE(m.tune);
  setenv("SWITCHAGG_MALLOC_TUNING", "sometimes", 1);
  Status st = mallocTuningTable().applyEnvironment(m);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message().rfind("SWITCHAGG_MALLOC_TUNING: ", 0), 0u) << st.message();
  unsetenv("SWITCHAGG_MALLOC_TUNING");
}

}  // namespace
