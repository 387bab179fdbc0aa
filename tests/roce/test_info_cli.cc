// switchagg-info as users run it: the real binary against the shipped sysfs
// trees, its --json parsed and checked.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

namespace {

struct RunResult {
  int exit_code = -1;
  std::string out;
};

// Runs switchagg-info with `args` (and `env` prefixed, e.g. "UCX_IB_SL=5"),
// capturing stdout; stderr goes to the test log.
RunResult runInfo(const std::string& args, const std::string& env = "") {
  const std::string cmd =
      "env -u UCX_IB_SL -u UCX_NET_DEVICES " + env + " " + SWITCHAGG_INFO_BIN + " " + args;
  RunResult r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return r;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof(buf), pipe)) > 0;) r.out.append(buf, n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

nlohmann::json infoJson(const std::string& scenario, const std::string& extra = "",
                        const std::string& env = "") {
  RunResult r = runInfo(
      "--json --sysfs-root " + std::string(SWITCHAGG_ROCE_SYSFS_DIR) + "/" + scenario + " " + extra,
      env);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.out;
  return j;
}

TEST(InfoCli, JsonHasTheDocumentedKeys) {
  auto j = infoJson("mixed_v1_v2");
  for (const char* key :
       {"device", "port", "gid_index", "gid", "roce_version", "netdev", "traffic_class", "sl",
        "path_mtu", "lanes", "rdma_present", "reason", "applied", "left_to_user"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["device"], "mlx5_0");
  EXPECT_EQ(j["port"], 1);
  EXPECT_EQ(j["gid_index"], 3);
  EXPECT_EQ(j["gid"], "0000:0000:0000:0000:0000:ffff:0a00:0001");
  EXPECT_EQ(j["gid_address"], "10.0.0.1");
  EXPECT_EQ(j["roce_version"], 2);
  EXPECT_EQ(j["netdev"], "eth0");
  EXPECT_EQ(j["traffic_class"], 104);
  EXPECT_EQ(j["sl"], 3);
  EXPECT_EQ(j["path_mtu"], 4096);
  EXPECT_EQ(j["lanes"], 1);  // auto: one lane (kRoceAutoLanes, measured)
  EXPECT_EQ(j["rdma_present"], true);
  // Applied values are read back from UCX's configuration.
  EXPECT_EQ(j["applied"]["NET_DEVICES"], "mlx5_0:1");
  EXPECT_EQ(j["applied"]["GID_INDEX"], "3");
  EXPECT_EQ(j["applied"]["IB_TRAFFIC_CLASS"], "104");
  EXPECT_EQ(j["applied"].size(), j["ucx_settings"].size());
  EXPECT_TRUE(j["left_to_user"].empty());
  // ...and shown as UCX's transport configs will hold them.
  const auto& eff = j["effective"];
  EXPECT_EQ(eff["UCX_IB_GID_INDEX"]["value"], "3");
  EXPECT_EQ(eff["UCX_IB_GID_INDEX"]["source"], "profile GID_INDEX");
  for (const char* tl : {"RC_MLX5", "RC_VERBS", "DC_MLX5", "UD_MLX5", "UD_VERBS"}) {
    const std::string pre = std::string("UCX_") + tl + "_";
    EXPECT_EQ(eff[pre + "SL"]["value"], "3") << tl;
    EXPECT_EQ(eff[pre + "TRAFFIC_CLASS"]["value"], "104") << tl;
  }
  EXPECT_EQ(eff["UCX_RC_MLX5_TIMEOUT"]["value"], "4000000.00us");
  // The reductions the kernels (and so the agent) serve, 16-bit floats too.
  EXPECT_EQ(j["reductions"]["float16"], nlohmann::json({"sum", "min", "max"}));
  EXPECT_EQ(j["reductions"]["bfloat16"], nlohmann::json({"sum", "min", "max"}));
  EXPECT_EQ(j["reductions"]["float32"], nlohmann::json({"sum", "prod", "min", "max"}));
}

// Every rail listed with its own GID choice, and the one left out named.
TEST(InfoCli, RailsAreListed) {
  auto j = infoJson("rails_gid_mismatch");
  ASSERT_EQ(j["rails"].size(), 3u);
  for (int k = 0; k < 3; ++k) {
    const auto& rail = j["rails"][size_t(k)];
    EXPECT_EQ(rail["device"], "mlx5_" + std::to_string(k));
    EXPECT_EQ(rail["gid_index"], 3);
    EXPECT_EQ(rail["gid_address"], "10." + std::to_string(k) + ".0.1");
    EXPECT_EQ(rail["netdev"], "eth" + std::to_string(k));
    EXPECT_EQ(rail["traffic_class"], 104);
    EXPECT_EQ(rail["path_mtu"], 4096);
  }
  EXPECT_EQ(j["applied"]["NET_DEVICES"], "mlx5_0:1,mlx5_1:1,mlx5_2:1");
  ASSERT_EQ(j["rails_left_out"].size(), 2u);
  std::set<std::string> left;
  for (const auto& l : j["rails_left_out"]) left.insert(l["rail"].get<std::string>());
  EXPECT_EQ(left, (std::set<std::string>{"mlx5_3:1", "mlx5_4:1"}));
  auto one = infoJson("rails_gid_mismatch", "", "SWITCHAGG_ROCE_RAILS=1");
  EXPECT_EQ(one["rails"].size(), 1u);
  EXPECT_EQ(one["applied"]["NET_DEVICES"], "mlx5_0:1");
}

TEST(InfoCli, NetdevAndDeviceFlags) {
  auto by_netdev = infoJson("two_devices", "--netdev eth1");
  EXPECT_EQ(by_netdev["device"], "mlx5_1");
  EXPECT_EQ(by_netdev["applied"]["NET_DEVICES"], "mlx5_1:1");
  auto by_device = infoJson("two_devices", "--device=mlx5_1:1");
  EXPECT_EQ(by_device["device"], "mlx5_1");
  EXPECT_EQ(by_device["port"], 1);
  auto down = infoJson("down_port");
  EXPECT_EQ(down["port"], 2);
  EXPECT_EQ(down["devices"].size(), 2u);
}

TEST(InfoCli, NoDeviceSaysSoAndAppliesNothing) {
  for (const char* scenario : {"no_device", "missing_root"}) {
    auto j = infoJson(scenario);
    EXPECT_EQ(j["rdma_present"], false);
    EXPECT_EQ(j["gid_index"], -1);
    EXPECT_EQ(j["roce_version"], 0);
    EXPECT_EQ(j["lanes"], 1);
    EXPECT_TRUE(j["applied"].empty());
    EXPECT_TRUE(j["effective"].empty());
    EXPECT_NE(j["reason"].get<std::string>().find("no RDMA device"), std::string::npos);
  }
}

TEST(InfoCli, EnvironmentWinsAndShowsInOptions) {
  auto j = infoJson("mixed_v1_v2", "", "UCX_IB_SL=5 SWITCHAGG_ROCE_DSCP=24 SWITCHAGG_UCX_LANES=2");
  EXPECT_EQ(j["left_to_user"]["IB_SL"], "5");
  EXPECT_FALSE(j["applied"].contains("IB_SL"));
  EXPECT_EQ(j["effective"]["UCX_UD_VERBS_SL"]["value"], "5");
  EXPECT_EQ(j["effective"]["UCX_UD_VERBS_SL"]["source"], "environment UCX_IB_SL");
  EXPECT_EQ(j["traffic_class"], 96);
  EXPECT_EQ(j["lanes"], 2);
  bool saw_dscp = false, saw_sysfs = false;
  for (const auto& o : j["options"]) {
    if (o["env"] == "SWITCHAGG_ROCE_DSCP") {
      saw_dscp = true;
      EXPECT_EQ(o["value"], "24");
      EXPECT_EQ(o["source"], "environment");
    }
    if (o["env"] == "SWITCHAGG_ROCE_SYSFS_ROOT") {
      saw_sysfs = true;
      EXPECT_EQ(o["source"], "command line");
    }
  }
  EXPECT_TRUE(saw_dscp);
  EXPECT_TRUE(saw_sysfs);
}

TEST(InfoCli, TextReportAndHelp) {
  RunResult text = runInfo("--sysfs-root " + std::string(SWITCHAGG_ROCE_SYSFS_DIR) + "/ipv6_only");
  ASSERT_EQ(text.exit_code, 0);
  EXPECT_NE(text.out.find("mlx5_0:1 ACTIVE Ethernet (4 GIDs)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("2001:db8::1"), std::string::npos);
  EXPECT_NE(text.out.find("IB_SL=3"), std::string::npos);
  EXPECT_NE(text.out.find("SWITCHAGG_ROCE_DSCP=26"), std::string::npos);
  EXPECT_NE(text.out.find("  float16: sum min max\n"), std::string::npos) << text.out;
  RunResult help = runInfo("--help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--sysfs-root DIR"), std::string::npos);
}

// Variables read outside the transport (logging, control clients, malloc
// tuning, the job's lease, the tests' fault points) are listed with the
// rest, with the value the environment gives.
TEST(InfoCli, ListsTheProcessWideVariables) {
  auto j = infoJson("no_device", "",
                    "-u SWITCHAGG_MUNGE_SOCKET -u SWITCHAGG_LEASE -u SWITCHAGG_AGENT_NAMES "
                    "-u SWITCHAGG_AGENT_TEST_FAULT SWITCHAGG_LOG_LEVEL=debug "
                    "SWITCHAGG_CONTROL=agent-host:18516 "
                    "SWITCHAGG_MALLOC_TUNING=0 SWITCHAGG_NODE_NAME=n7 "
                    "SWITCHAGG_AGENT=10.0.0.1:18515 SWITCHAGG_MODE=Require "
                    "SWITCHAGG_TEST_CUT=1:16");
  std::map<std::string, nlohmann::json> by_env;
  for (const auto& o : j["options"]) by_env[o["env"].get<std::string>()] = o;
  for (const auto& [env, value, source] : std::vector<std::array<std::string, 3>>{
           {"SWITCHAGG_LOG_LEVEL", "debug", "environment"},
           {"SWITCHAGG_CONTROL", "agent-host:18516", "environment"},
           {"SWITCHAGG_MALLOC_TUNING", "0", "environment"},
           {"SWITCHAGG_NODE_NAME", "n7", "environment"},
           {"SWITCHAGG_MUNGE_SOCKET", "", "default"},
           {"SWITCHAGG_AGENT", "10.0.0.1:18515", "environment"},
           {"SWITCHAGG_LEASE", "", "default"},
           {"SWITCHAGG_MODE", "Require", "environment"},
           {"SWITCHAGG_AGENT_NAMES", "", "default"},
           {"SWITCHAGG_TEST_CUT", "1:16", "environment"},
           {"SWITCHAGG_AGENT_TEST_FAULT", "", "default"}}) {
    ASSERT_EQ(by_env.count(env), 1u) << env;
    EXPECT_EQ(by_env[env]["value"], value) << env;
    EXPECT_EQ(by_env[env]["source"], source) << env;
    EXPECT_FALSE(by_env[env]["help"].get<std::string>().empty()) << env;
  }
  EXPECT_EQ(by_env["SWITCHAGG_LOG_LEVEL"]["default"], "warn");
  EXPECT_EQ(by_env["SWITCHAGG_CONTROL"]["default"], "unix:/run/switchagg/agent.sock");
  EXPECT_EQ(by_env["SWITCHAGG_MALLOC_TUNING"]["default"], "true");
  EXPECT_EQ(by_env["SWITCHAGG_MODE"]["default"], "auto");
}

// A bad value of any listed variable is a usage error whose message names
// the variable.
TEST(InfoCli, BadVariableIsAnErrorNamingIt) {
  for (const char* env : {"SWITCHAGG_LOG_LEVEL=loud", "SWITCHAGG_CONTROL=no-port-here",
                          "SWITCHAGG_MUNGE_SOCKET=relative.sock", "SWITCHAGG_MALLOC_TUNING=maybe",
                          "SWITCHAGG_SWITCH_WINDOW=many", "SWITCHAGG_TEST_CUT=soon",
                          "SWITCHAGG_AGENT_TEST_FAULT=partial:0"}) {
    RunResult r = runInfo("--json 2>&1", env);
    EXPECT_EQ(r.exit_code, 2) << env << ": " << r.out;
    const std::string name = std::string(env).substr(0, std::string(env).find('='));
    EXPECT_NE(r.out.find("switchagg-info: InvalidArgument: " + name + ": "), std::string::npos)
        << r.out;
  }
}

TEST(InfoCli, BadInputExitsWithUsageError) {
  EXPECT_EQ(runInfo("--bogus").exit_code, 2);
  EXPECT_EQ(runInfo("--netdev").exit_code, 2);
  EXPECT_EQ(runInfo("--json", "SWITCHAGG_ROCE_DSCP=99").exit_code, 2);
  EXPECT_EQ(runInfo("--json --sysfs-root " + std::string(SWITCHAGG_ROCE_SYSFS_DIR) + "/README.md")
                .exit_code,
            1);
}

}  // namespace
