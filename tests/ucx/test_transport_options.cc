// TransportOptions::fromEnvironment and the option table (label unit): the
// variables parse with the common parsers and bad values name the variable.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <string>

#include "switchagg/ucx/transport.h"

namespace switchagg::ucx {
namespace {

class EnvGuard {
 public:
  ~EnvGuard() {
    for (const auto& k : keys_) unsetenv(k.c_str());
  }
  void set(const std::string& k, const std::string& v) {
    keys_.insert(k);
    setenv(k.c_str(), v.c_str(), 1);
  }

 private:
  std::set<std::string> keys_;
};

// What the environment gave: lanes, the clear-to-send threshold and window,
// the peer timeout, the wait mode and the failure detection.
void expectOptions(Result<TransportOptions> o, int lanes, size_t cts_threshold, size_t cts_window,
                   int64_t peer_timeout_ms, WaitMode wait, FailureDetection detection) {
  ASSERT_TRUE(o.ok()) << o.status().toString();
  EXPECT_EQ(o->lanes, lanes);
  EXPECT_EQ(o->cts_threshold, cts_threshold);
  EXPECT_EQ(o->cts_window, cts_window);
  EXPECT_EQ(o->peer_timeout_ms, peer_timeout_ms);
  EXPECT_EQ(o->wait_mode, wait);
  EXPECT_EQ(o->failure_detection, detection);
}

TEST(TransportOptions, DefaultsWithoutEnvironment) {
  expectOptions(TransportOptions::fromEnvironment(), 0, 64u << 10, 8u << 20, 2000,
                WaitMode::kBlocking, FailureDetection::kAuto);
}

TEST(TransportOptions, ReadsEveryVariable) {
  EnvGuard env;
  env.set("SWITCHAGG_UCX_LANES", "4");
  env.set("SWITCHAGG_UCX_CTS_THRESHOLD", "128KiB");
  env.set("SWITCHAGG_UCX_CTS_WINDOW", "2M");
  env.set("SWITCHAGG_UCX_PEER_TIMEOUT", "1.5s");
  env.set("SWITCHAGG_UCX_WAIT", "busy");
  env.set("SWITCHAGG_UCX_FAILURE_DETECTION", "peer");
  env.set("SWITCHAGG_UCX_SPIN_US", "75");
  env.set("SWITCHAGG_ROCE_DSCP", "24");
  auto o = TransportOptions::fromEnvironment();
  ASSERT_NO_FATAL_FAILURE(expectOptions(o, 4, 128u << 10, 2u << 20, 1500, WaitMode::kBusyPoll,
                                        FailureDetection::kPeer));
  EXPECT_EQ(o->spin_us, 75);
  EXPECT_EQ(o->roce.dscp, 24);
}

TEST(TransportOptions, BadValuesNameTheVariable) {
  for (const auto& [key, value] :
       std::vector<std::pair<std::string, std::string>>{{"SWITCHAGG_UCX_LANES", "65"},
                                                        {"SWITCHAGG_UCX_CTS_WINDOW", "lots"},
                                                        {"SWITCHAGG_UCX_PEER_TIMEOUT", "0"},
                                                        {"SWITCHAGG_UCX_WAIT", "spin"},
                                                        {"SWITCHAGG_UCX_SPIN_US", "-1"},
                                                        {"SWITCHAGG_UCX_FAILURE_DETECTION", "x"}}) {
    EnvGuard env;
    env.set(key, value);
    auto o = TransportOptions::fromEnvironment();
    ASSERT_FALSE(o.ok()) << key << "=" << value;
    EXPECT_EQ(o.status().code(), Code::kInvalidArgument);
    EXPECT_NE(o.status().message().find(key), std::string::npos) << o.status().message();
  }
}

// What --help and switchagg-info print as each default is a value the
// variable accepts ("(any)" stands for unset and is not one).
TEST(TransportOptions, PrintedDefaultsAreAccepted) {
  for (const auto& d : transportOptionTable()) {
    if (d.default_value == "(any)") continue;
    setenv(d.env, d.default_value.c_str(), 1);
    Result<TransportOptions> o = TransportOptions::fromEnvironment();
    unsetenv(d.env);
    EXPECT_TRUE(o.ok()) << d.env << "=" << d.default_value << ": " << o.status().toString();
  }
}

TEST(TransportOptions, TableDocumentsTransportAndRoceVariables) {
  std::set<std::string> envs;
  for (const auto& d : transportOptionTable()) {
    EXPECT_NE(std::string(d.help), "");
    envs.insert(d.env);
  }
  for (const char* e : {"SWITCHAGG_UCX_LANES", "SWITCHAGG_UCX_CTS_THRESHOLD",
                        "SWITCHAGG_UCX_CTS_WINDOW", "SWITCHAGG_UCX_PEER_TIMEOUT",
                        "SWITCHAGG_UCX_WAIT", "SWITCHAGG_UCX_SPIN_US",
                        "SWITCHAGG_UCX_FAILURE_DETECTION",
                        "SWITCHAGG_ROCE_DSCP"})
    EXPECT_EQ(envs.count(e), 1u) << e;
}

// Context's own UCX keys (keepalive, the rendezvous threshold) go through
// the same environment-wins rule as the RoCE profile's.
bool hasPair(const std::vector<std::pair<std::string, std::string>>& v, const std::string& k,
             const std::string& val) {
  return std::find(v.begin(), v.end(), std::make_pair(k, val)) != v.end();
}

TEST(TransportOptions, ContextKeysYieldToTheUsersEnvironment) {
  auto o = TransportOptions::fromEnvironment();
  ASSERT_TRUE(o.ok()) << o.status().toString();
  o->rndv_threshold = 1 << 20;
  {
    auto ctx = Context::create(*o);
    ASSERT_TRUE(ctx.ok()) << ctx.status().toString();
    EXPECT_TRUE(hasPair((*ctx)->profile().applied, "KEEPALIVE_INTERVAL", "500ms"));
    EXPECT_TRUE(hasPair((*ctx)->profile().applied, "RNDV_THRESH", "1048576"));
  }
  EnvGuard env;
  env.set("UCX_RNDV_THRESH", "auto");
  auto ctx = Context::create(*o);
  ASSERT_TRUE(ctx.ok()) << ctx.status().toString();
  EXPECT_TRUE(hasPair((*ctx)->profile().left_to_user, "RNDV_THRESH", "auto"));
  for (const auto& [key, value] : (*ctx)->profile().applied) EXPECT_NE(key, "RNDV_THRESH");
}

}  // namespace
}  // namespace switchagg::ucx
