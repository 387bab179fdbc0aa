// A real agent process driven by the real switchagg-ctl binary and the
// control client library: round trip, wrong users, quotas, drain, TTL
// expiry, metrics.
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <thread>

#include "agent_fixture.h"
#include "switchagg/agent/control_client.h"

using namespace switchagg;
using namespace switchagg::agent;
using namespace switchagg::testing;
using nlohmann::json;

namespace {

constexpr int64_t kNobody = 65534;

std::unique_ptr<AgentProcess> startAgent(const std::vector<std::string>& sets = {}) {
  auto agent = AgentProcess::start(AgentOptions::withSets(sets));
  EXPECT_TRUE(agent.ok()) << agent.status().toString();
  return agent.ok() ? std::move(*agent) : nullptr;
}

ProcessResult ctl(const AgentProcess& agent, std::vector<std::string> args, int64_t uid = -1) {
  args.insert(args.begin(), binaryPath("switchagg-ctl"));
  // The agent is found through the environment, as users would set it.
  return runProcess(args, uid, uid, {"SWITCHAGG_CONTROL=" + agent.unixAddress()});
}

TEST(CtlAgent, CreateListDeleteRoundTrip) {
  auto agent = startAgent();
  ASSERT_TRUE(agent);
  ProcessResult r = ctl(*agent, {"lease", "create", "--job", "5", "--slots", "2", "--ttl", "10m"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::smatch m;
  std::regex exports("export SWITCHAGG_AGENT=(\\S+) SWITCHAGG_LEASE=([0-9a-f]{32}) SWITCHAGG_MODE=auto");
  ASSERT_TRUE(std::regex_search(r.out, m, exports)) << r.out;
  // The lease's home data-plane thread's address: one of the agent's.
  auto st = ControlClient({agent->unixAddress()}).request("GET", "/v1/status");
  ASSERT_TRUE(st.ok());
  std::set<std::string> threads;
  const json status = json::parse(st->body);
  for (const auto& t : status["data_threads"]) threads.insert(t["address"].get<std::string>());
  EXPECT_TRUE(threads.count(m[1].str())) << m[1].str() << " is not a data address of the agent: "
                                         << st->body;
  std::string token = m[2].str();

  r = ctl(*agent, {"lease", "create", "--job", "5", "--slots", "2"});  // idempotent
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(token), std::string::npos);
  EXPECT_NE(r.out.find("exists for job 5"), std::string::npos) << r.out;

  r = ctl(*agent, {"--json", "leases"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json leases = json::parse(r.out)["leases"];
  ASSERT_EQ(leases.size(), 1u);
  EXPECT_EQ(leases[0]["job"], "5");
  EXPECT_EQ(leases[0]["slots"], 2);
  EXPECT_LE(leases[0]["expires_in_s"].get<int>(), 600);
  EXPECT_EQ(r.out.find(token), std::string::npos) << "listing leaked the token";

  r = ctl(*agent, {"status", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["slots_in_use"], 2);
  r = ctl(*agent, {"status"});
  EXPECT_NE(r.out.find("2 of 64 leased"), std::string::npos) << r.out;

  r = ctl(*agent, {"lease", "token", "--job", "5", "--mode", "require"});
  EXPECT_NE(r.out.find("SWITCHAGG_LEASE=" + token + " SWITCHAGG_MODE=require"), std::string::npos);

  r = ctl(*agent, {"lease", "delete", "--job", "5"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = ctl(*agent, {"lease", "delete", "--job", "5"});
  EXPECT_EQ(r.exit_code, 0) << "delete is idempotent: " << r.err;
  EXPECT_NE(r.out.find("no lease for job 5"), std::string::npos);
  r = ctl(*agent, {"--json", "leases"});
  EXPECT_TRUE(json::parse(r.out)["leases"].empty());

  // The token no longer opens anything.
  r = ctl(*agent, {"lease", "token", "--job", "5"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("not_found"), std::string::npos);
  EXPECT_EQ(agent->stderrText().find(token), std::string::npos) << "the agent logged a token";
}

TEST(CtlAgent, WrongUserIsRefusedOverTheUnixSocket) {
  auto agent = startAgent({"policy.allowed_users=1000"});
  ASSERT_TRUE(agent);
  ProcessResult r = ctl(*agent, {"lease", "create", "--job", "7"}, kNobody);
  EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
  EXPECT_NE(r.err.find("policy_denied"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("uid 65534"), std::string::npos) << r.err;

  r = ctl(*agent, {"status"}, kNobody);  // reading is fine
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = ctl(*agent, {"drain"}, kNobody);
  EXPECT_EQ(r.exit_code, 4);

  // An allowed user leases for itself, not for others; others' leases are off limits.
  r = ctl(*agent, {"lease", "create", "--job", "8"}, 1000);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = ctl(*agent, {"lease", "create", "--job", "9", "--uid", "0"}, 1000);
  EXPECT_EQ(r.exit_code, 4) << r.err;
  r = ctl(*agent, {"lease", "delete", "--job", "8"}, kNobody);
  EXPECT_EQ(r.exit_code, 4) << r.err;
  r = ctl(*agent, {"lease", "token", "--job", "8"}, kNobody);
  EXPECT_EQ(r.exit_code, 4) << r.err;
  r = ctl(*agent, {"lease", "create", "--job", "8"}, kNobody);
  EXPECT_NE(r.exit_code, 0) << "nobody must not get uid 1000's lease";
  EXPECT_EQ(r.out.find("SWITCHAGG_LEASE"), std::string::npos);
  // Root (admin) may act for anyone.
  r = ctl(*agent, {"lease", "create", "--job", "10", "--uid", "1000"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = ctl(*agent, {"lease", "delete", "--job", "8"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(CtlAgent, QuotasAndDrain) {
  auto agent = startAgent({"pool.slots=8", "policy.max_slots_per_job=4",
                           "policy.max_slots_per_user=6", "policy.default_slots=1"});
  ASSERT_TRUE(agent);
  ControlClient client(agent->unixAddress());
  ASSERT_TRUE(client.createLease("a", 1000, 4, 600).ok());
  ApiResult<LeaseView> over = client.createLease("b", 1000, 4, 600);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), Code::kNoResource);
  EXPECT_EQ(over.error(), ApiError::kQuotaExceeded);
  EXPECT_NE(over.status().message().find("holds 4 slots and asks for 4 more"), std::string::npos)
      << over.status().message();
  ProcessResult r = ctl(*agent, {"lease", "create", "--job", "c", "--slots", "5", "--uid", "1001"});
  EXPECT_EQ(r.exit_code, 5) << r.err;
  EXPECT_NE(r.err.find("max_slots_per_job is 4"), std::string::npos) << r.err;
  ASSERT_TRUE(client.createLease("d", 1001, 4, 600).ok());
  ApiResult<LeaseView> pool = client.createLease("e", 1002, 1, 600);
  EXPECT_NE(pool.status().message().find("0 of 8 pool slots are free"), std::string::npos);

  r = ctl(*agent, {"drain"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ApiResult<AgentStatus> st = client.status();
  ASSERT_TRUE(st.ok());
  EXPECT_TRUE(st->draining);
  ASSERT_TRUE(client.deleteLease("d").ok());
  r = ctl(*agent, {"lease", "create", "--job", "f"});
  EXPECT_EQ(r.exit_code, 5);
  EXPECT_NE(r.err.find("draining"), std::string::npos);
  ApiResult<LeaseView> existing = client.fetchToken("a");
  EXPECT_TRUE(existing.ok()) << "running leases go on while draining";
  r = ctl(*agent, {"drain", "--off"});
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_TRUE(client.createLease("f", 1003, 1, 600).ok());
}

TEST(CtlAgent, LeasesExpireAfterTheirTtl) {
  auto agent = startAgent({"agent.reaper_interval=100ms"});
  ASSERT_TRUE(agent);
  ControlClient client(agent->unixAddress());
  ASSERT_TRUE(client.createLease("short", 0, 3, 1).ok());
  ASSERT_TRUE(client.createLease("long", 0, 1, 600).ok());
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  ApiResult<std::vector<LeaseView>> leases = client.listLeases();
  while (leases.ok() && leases->size() > 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    leases = client.listLeases();
  }
  ASSERT_TRUE(leases.ok());
  ASSERT_EQ(leases->size(), 1u);
  EXPECT_EQ((*leases)[0].job, "long");
  EXPECT_EQ(client.status()->slots_in_use, 1);
  EXPECT_EQ(client.renewLease("short", 60).error(), ApiError::kNotFound);
  ApiResult<LeaseView> renewed = client.renewLease("long", 30);
  ASSERT_TRUE(renewed.ok());
  EXPECT_LE(renewed->expires_in_s, 30);
}

TEST(CtlAgent, MetricsOverAnonymousTcp) {
  auto agent = startAgent();
  ASSERT_TRUE(agent);
  ASSERT_FALSE(agent->tcpAddress().empty());
  ControlClient local(agent->unixAddress());
  ASSERT_TRUE(local.createLease("m1", 1000, 3, 600).ok());
  ControlClientOptions o;
  o.address = "http://" + agent->tcpAddress();
  o.use_munge = false;
  ControlClient remote(o);
  ApiResult<ControlReply> m = remote.request("GET", "/metrics");
  ASSERT_TRUE(m.ok()) << m.status().toString();
  ASSERT_EQ(m->http_status, 200);
  for (const char* s : {"switchagg_slots_total 64", "switchagg_slots_in_use 3", "switchagg_leases 1",
                        "switchagg_groups 0", "switchagg_bytes_reduced_total 0",
                        "switchagg_chunks_reduced_total 0", "# TYPE switchagg_rejected_total counter",
                        "switchagg_job_slots{job=\"m1\",uid=\"1000\"} 3"}) {
    EXPECT_NE(m->body.find(s), std::string::npos) << s << "\n" << m->body;
  }
  // Anonymous TCP may read but not lease.
  ApiResult<LeaseView> l = remote.createLease("m2", -1, 1, 60);
  EXPECT_EQ(l.error(), ApiError::kUnauthenticated) << l.status().toString();
  EXPECT_EQ(l.status().code(), Code::kDenied);
  EXPECT_EQ(remote.listLeases()->size(), 1u);
}

TEST(CtlAgent, ClosedReadOnlyRefusesAnonymousReads) {
  auto agent = startAgent({"control.open_readonly=false"});
  ASSERT_TRUE(agent);
  ControlClientOptions o;
  o.address = agent->tcpAddress();
  o.use_munge = false;
  ControlClient remote(o);
  EXPECT_EQ(remote.status().error(), ApiError::kUnauthenticated);
  ControlClient local(agent->unixAddress());
  EXPECT_TRUE(local.status().ok());
}

}  // namespace
