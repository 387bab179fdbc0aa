// ControlApi without sockets: routing, JSON validation, policy decisions,
// status codes and error bodies, as docs/control-api.md specifies them.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "control_api.h"

using namespace switchagg;
using namespace switchagg::agent;
using nlohmann::json;

namespace {

class FakeDataPlane : public DataPlaneView {
 public:
  std::string address() const override { return "10.0.0.1:18515"; }
  DataPlaneCounters counters() const override {
    DataPlaneCounters c;
    c.groups_active = 2;
    c.bytes_reduced = 4096;
    c.chunks_reduced = 16;
    c.rejected["bad_token"] = 3;
    c.groups_by_job["42"] = 2;
    c.bytes_in_by_job["42"] = 8192;
    return c;
  }
  std::vector<std::pair<Dtype, std::vector<Op>>> capabilities() const override {
    return {{Dtype::kFloat32, {Op::kSum, Op::kMax}}};
  }
};

Caller unixCaller(uint32_t uid, uint32_t gid = 100) { return Caller{true, uid, gid, "unix"}; }
Caller anonymous() { return Caller{false, 0, 0, "tcp"}; }

class ControlApiTest : public ::testing::Test {
 protected:
  ControlApiTest() : leases_({16, 8, 10}) {
    config_.limits.pool_slots = 16;
    config_.limits.max_slots_per_job = 8;
    config_.limits.max_slots_per_user = 10;
    config_.default_slots = 2;
    config_.allowed_users = {"1000", "1001"};
    config_.admin_users = {"2000"};
    api_ = std::make_unique<ControlApi>(config_, leases_, &data_plane_);
  }

  ControlResponse call(const std::string& method, const std::string& path, const Caller& who,
                       const std::string& body = "") {
    HttpRequest req;
    req.method = method;
    req.target = req.path = path;
    req.version = "HTTP/1.1";
    req.body = body;
    return api_->handle(req, who);
  }
  static json body(const ControlResponse& r) { return json::parse(r.body); }
  static std::string error(const ControlResponse& r) { return body(r).value("error", ""); }

  AgentConfig config_;
  LeaseTable leases_;
  FakeDataPlane data_plane_;
  std::unique_ptr<ControlApi> api_;
};

TEST_F(ControlApiTest, StatusCarriesCapabilitiesAndCounters) {
  ControlResponse r = call("GET", "/v1/status", unixCaller(1234));
  ASSERT_EQ(r.status, 200);
  json j = body(r);
  EXPECT_EQ(j["data_address"], "10.0.0.1:18515");
  EXPECT_EQ(j["slots_total"], 16);
  EXPECT_EQ(j["groups"], 2);
  EXPECT_EQ(j["capabilities"][0]["dtype"], "float32");
  EXPECT_EQ(j["capabilities"][0]["ops"], json({"sum", "max"}));
  EXPECT_EQ(j["counters"]["bytes_reduced"], 4096);
  EXPECT_EQ(j["rejected"]["bad_token"], 3);
}

TEST_F(ControlApiTest, CreateFetchRenewDeleteRoundTrip) {
  ControlResponse r = call("POST", "/v1/leases", unixCaller(1000), R"({"job": "42", "slots": 3})");
  ASSERT_EQ(r.status, 201) << r.body;
  json lease = body(r);
  EXPECT_EQ(lease["uid"], 1000);
  EXPECT_EQ(lease["slots"], 3);
  EXPECT_EQ(lease["token"].get<std::string>().size(), 32u);
  EXPECT_EQ(lease["data_address"], "10.0.0.1:18515");

  r = call("POST", "/v1/leases", unixCaller(1000), R"({"job": "42", "slots": 3})");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(body(r)["token"], lease["token"]);

  json listing = body(call("GET", "/v1/leases", unixCaller(1001)));
  ASSERT_EQ(listing["leases"].size(), 1u);
  EXPECT_EQ(listing["leases"][0]["groups"], 2);
  EXPECT_EQ(listing["leases"][0].count("token"), 0u) << "listings never show tokens";

  r = call("GET", "/v1/leases/42/token", unixCaller(1000));
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(body(r)["token"], lease["token"]);
  EXPECT_EQ(error(call("GET", "/v1/leases/42/token", unixCaller(1001))), "policy_denied");
  EXPECT_EQ(call("GET", "/v1/leases/42/token", unixCaller(2000)).status, 200);  // admin

  r = call("POST", "/v1/leases/42/renew", unixCaller(1000), R"({"ttl_s": 60})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(body(r)["ttl_s"], 60);

  EXPECT_EQ(error(call("DELETE", "/v1/leases/42", unixCaller(1001))), "policy_denied");
  r = call("DELETE", "/v1/leases/42", unixCaller(1000));
  EXPECT_EQ(body(r)["deleted"], true);
  r = call("DELETE", "/v1/leases/42", unixCaller(1000));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(body(r)["deleted"], false);
  EXPECT_EQ(error(call("POST", "/v1/leases/42/renew", unixCaller(1000))), "not_found");
}

TEST_F(ControlApiTest, PolicyDecidesWhoMayLeaseForWhom) {
  ControlResponse r = call("POST", "/v1/leases", unixCaller(65534), R"({"job": "1"})");
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(error(r), "policy_denied");
  EXPECT_NE(body(r)["message"].get<std::string>().find("policy.allowed_users"), std::string::npos);

  r = call("POST", "/v1/leases", unixCaller(1000), R"({"job": "1", "uid": 1001})");
  EXPECT_EQ(error(r), "policy_denied");
  EXPECT_EQ(call("POST", "/v1/leases", unixCaller(2000), R"({"job": "1", "uid": 1001})").status, 201);
  EXPECT_EQ(call("POST", "/v1/leases", unixCaller(0), R"({"job": "2", "uid": 77})").status, 201);

  r = call("POST", "/v1/leases", unixCaller(1000), R"({"job": "1"})");
  EXPECT_EQ(r.status, 409);
  EXPECT_EQ(error(r), "conflict");

  EXPECT_EQ(error(call("POST", "/v1/drain", unixCaller(1000), R"({"drain": true})")),
            "policy_denied");
  EXPECT_EQ(body(call("POST", "/v1/drain", unixCaller(2000), R"({"drain": true})"))["draining"], true);
  r = call("POST", "/v1/leases", unixCaller(1000), R"({"job": "9"})");
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(error(r), "draining");
}

TEST_F(ControlApiTest, AnonymousCallersMayOnlyReadWhenOpen) {
  EXPECT_EQ(call("GET", "/v1/status", anonymous()).status, 200);
  EXPECT_EQ(call("GET", "/metrics", anonymous()).status, 200);
  ControlResponse r = call("POST", "/v1/leases", anonymous(), R"({"job": "1"})");
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(error(r), "unauthenticated");
  EXPECT_EQ(call("DELETE", "/v1/leases/1", anonymous()).status, 401);
  EXPECT_EQ(call("GET", "/v1/leases/1/token", anonymous()).status, 401);
  EXPECT_EQ(call("POST", "/v1/drain", anonymous()).status, 401);

  config_.open_readonly = false;
  ControlApi closed(config_, leases_, &data_plane_);
  HttpRequest req;
  req.method = "GET";
  req.path = req.target = "/v1/status";
  EXPECT_EQ(closed.handle(req, anonymous()).status, 401);
}

TEST_F(ControlApiTest, QuotaErrorsCarryTheNumbers) {
  ControlResponse r = call("POST", "/v1/leases", unixCaller(1000), R"({"job": "1", "slots": 9})");
  EXPECT_EQ(r.status, 429);
  EXPECT_EQ(error(r), "quota_exceeded");
  EXPECT_NE(r.body.find("max_slots_per_job is 8"), std::string::npos) << r.body;
  r = call("POST", "/v1/leases", unixCaller(1000), R"({"job": "1", "ttl_s": 99999999})");
  EXPECT_EQ(error(r), "quota_exceeded");
  EXPECT_NE(r.body.find("policy.max_ttl"), std::string::npos) << r.body;
}

TEST_F(ControlApiTest, BadRequestsAreAnswered400WithAReason) {
  const char* bodies[] = {
      "", "not json", "[1,2]", R"({"job": 1.5})", R"({"job": "1", "slots": "two"})",
      R"({"job": "1", "slots": 0})", R"({"job": "1", "uid": -1})", R"({"job": "1", "bogus": 1})",
      R"({"job": "a/b"})", R"({"job": "1", "ttl_s": 1e300})", "[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]",
      R"({"job": "1", "uid": 18446744073709551615})",
  };
  for (const char* b : bodies) {
    ControlResponse r = call("POST", "/v1/leases", unixCaller(0), b);
    EXPECT_EQ(r.status, 400) << b << " -> " << r.body;
    EXPECT_EQ(error(r), "bad_request") << b;
  }
  EXPECT_EQ(call("PUT", "/v1/leases", unixCaller(0)).status, 405);
  EXPECT_EQ(call("POST", "/v1/status", unixCaller(0)).status, 405);
  EXPECT_EQ(call("GET", "/v1/nothing", unixCaller(0)).status, 404);
  EXPECT_EQ(call("GET", "/v1/leases/1/x/y", unixCaller(0)).status, 404);
  EXPECT_EQ(call("POST", "/v1/drain", unixCaller(0), R"({"drain": "yes"})").status, 400);
  std::map<std::string, uint64_t> refused = api_->refusedCounts();
  EXPECT_GE(refused["bad_request"], 14u);
}

TEST_F(ControlApiTest, MetricsAreValidPrometheusText) {
  ASSERT_EQ(call("POST", "/v1/leases", unixCaller(1000), R"({"job": "42", "slots": 3})").status, 201);
  call("POST", "/v1/leases", unixCaller(65534), R"({"job": "43"})");
  ControlResponse r = call("GET", "/metrics", unixCaller(0));
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type.rfind("text/plain", 0), 0u);
  for (const char* line : {"switchagg_slots_total 16\n", "switchagg_slots_in_use 3\n",
                           "switchagg_leases 1\n", "switchagg_groups 2\n",
                           "switchagg_bytes_reduced_total 4096\n",
                           "switchagg_chunks_reduced_total 16\n",
                           "switchagg_rejected_total{reason=\"bad_token\"} 3\n",
                           "switchagg_control_refused_total{error=\"policy_denied\"} 1\n",
                           "switchagg_job_slots{job=\"42\",uid=\"1000\"} 3\n",
                           "switchagg_job_groups{job=\"42\"} 2\n",
                           "switchagg_job_bytes_in_total{job=\"42\"} 8192\n"}) {
    EXPECT_NE(r.body.find(line), std::string::npos) << "missing " << line << "in\n" << r.body;
  }
  auto lease = leases_.findByJob("42");
  ASSERT_TRUE(lease.has_value());
  EXPECT_EQ(r.body.find(lease->token.hex()), std::string::npos) << "tokens never appear in metrics";
  // Every sample line belongs to a family declared with HELP and TYPE.
  size_t pos = 0;
  while (pos < r.body.size()) {
    size_t eol = r.body.find('\n', pos);
    std::string line = r.body.substr(pos, eol - pos);
    pos = eol + 1;
    if (line.rfind("#", 0) == 0) continue;
    std::string name = line.substr(0, line.find_first_of("{ "));
    EXPECT_NE(r.body.find("# TYPE " + name + " "), std::string::npos) << line;
  }
}

}  // namespace
