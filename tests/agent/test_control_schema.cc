// The control API's contract (control_schema.h) as pure functions: the error
// table, the job-id rule and the lease view each endpoint renders.
#include <gtest/gtest.h>

#include <string>

#include "lease_json.h"
#include "switchagg/agent/control_schema.h"

using namespace switchagg;
using namespace switchagg::agent;

namespace {

struct ErrorRow {
  ApiError error;
  const char* code;
  int http_status;
  bool refusal;
};

class ApiErrorTable : public ::testing::TestWithParam<ErrorRow> {};

TEST_P(ApiErrorTable, CodeHttpStatusAndRefusal) {
  const ErrorRow& r = GetParam();
  EXPECT_STREQ(apiErrorCode(r.error), r.code);
  EXPECT_EQ(apiErrorHttpStatus(r.error), r.http_status);
  EXPECT_EQ(isRefusal(r.error), r.refusal);
  EXPECT_EQ(apiErrorFromCode(r.code), r.error);
}

// docs/control-api.md's table, plus the two errors that arise at the client.
INSTANTIATE_TEST_SUITE_P(
    Schema, ApiErrorTable,
    ::testing::Values(ErrorRow{ApiError::kBadRequest, "bad_request", 400, false},
                      ErrorRow{ApiError::kUnauthenticated, "unauthenticated", 401, true},
                      ErrorRow{ApiError::kPolicyDenied, "policy_denied", 403, true},
                      ErrorRow{ApiError::kNotFound, "not_found", 404, true},
                      ErrorRow{ApiError::kConflict, "conflict", 409, true},
                      ErrorRow{ApiError::kQuotaExceeded, "quota_exceeded", 429, true},
                      ErrorRow{ApiError::kOverloaded, "overloaded", 503, false},
                      ErrorRow{ApiError::kDraining, "draining", 503, true},
                      ErrorRow{ApiError::kInternal, "internal", 500, false},
                      ErrorRow{ApiError::kUnreachable, "unreachable", 0, false},
                      ErrorRow{ApiError::kConfig, "config", 0, false}),
    [](const ::testing::TestParamInfo<ErrorRow>& p) { return std::string(p.param.code); });

TEST(ApiFailure, StatusNamesTheServersCodeButNotAClientSideOne) {
  Status quota = ApiFailure{ApiError::kQuotaExceeded, "pool is full"}.status();
  EXPECT_EQ(quota.code(), Code::kNoResource);
  EXPECT_EQ(quota.message(), "quota_exceeded: pool is full");
  Status gone = ApiFailure{ApiError::kUnreachable, "cannot connect to agent at unix:/x"}.status();
  EXPECT_EQ(gone.code(), Code::kIoError);
  EXPECT_EQ(gone.message(), "cannot connect to agent at unix:/x");
  EXPECT_FALSE(apiErrorFromCode("policy_denied: x").has_value());
  EXPECT_FALSE(apiErrorFromCode("").has_value());
}

TEST(ApiResult, CarriesTheValueOrTheTypedFailure) {
  ApiResult<int> ok = 7;
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 7);
  ApiResult<int> denied(ApiError::kPolicyDenied, "uid 5 may not lease");
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(denied.error(), ApiError::kPolicyDenied);
  EXPECT_EQ(denied.failure().message, "uid 5 may not lease");
  EXPECT_EQ(denied.status().code(), Code::kDenied);
  ApiResult<std::string> passed_on = ApiResult<std::string>::failed(denied);
  EXPECT_EQ(passed_on.error(), ApiError::kPolicyDenied);
}

class JobIdRule : public ::testing::TestWithParam<std::pair<std::string, bool>> {};

TEST_P(JobIdRule, SlurmIdsPassAndPathsDoNot) {
  EXPECT_EQ(isValidJobId(GetParam().first), GetParam().second) << GetParam().first;
}

INSTANTIATE_TEST_SUITE_P(
    Schema, JobIdRule,
    ::testing::Values(std::make_pair(std::string("1234"), true), std::make_pair(std::string("1234_7"), true),
                      std::make_pair(std::string("1234+0"), true), std::make_pair(std::string("a.B-c"), true),
                      std::make_pair(std::string(64, '9'), true), std::make_pair(std::string(65, '9'), false),
                      std::make_pair(std::string(""), false), std::make_pair(std::string("a/b"), false),
                      std::make_pair(std::string("../x"), false), std::make_pair(std::string("a b"), false),
                      std::make_pair(std::string("x\n"), false), std::make_pair(std::string("j%20"), false)));

LeaseView sample() {
  LeaseView v;
  v.job = "42";
  v.uid = 1000;
  v.user = "alice";
  v.slots = 4;
  v.ttl_s = 600;
  v.expires_in_s = 599;
  v.token = "00112233445566778899aabbccddeeff";
  v.data_address = "127.0.0.1:18515";
  v.groups = 2;
  return v;
}

TEST(LeaseJson, EachEndpointRendersItsFieldsAndListingsNoToken) {
  EXPECT_EQ(leaseJson(sample(), LeaseFields::kListing).dump(),
            R"({"expires_in_s":599,"groups":2,"job":"42","slots":4,"ttl_s":600,"uid":1000,"user":"alice"})");
  EXPECT_EQ(leaseJson(sample(), LeaseFields::kCreated).dump(),
            R"({"data_address":"127.0.0.1:18515","expires_in_s":599,"job":"42","slots":4,)"
            R"("token":"00112233445566778899aabbccddeeff","ttl_s":600,"uid":1000})");
  EXPECT_EQ(leaseJson(sample(), LeaseFields::kToken).dump(),
            R"({"data_address":"127.0.0.1:18515","job":"42","slots":4,)"
            R"("token":"00112233445566778899aabbccddeeff"})");
  EXPECT_EQ(leaseJson(sample(), LeaseFields::kRenewed).dump(),
            R"({"data_address":"127.0.0.1:18515","expires_in_s":599,"job":"42","slots":4,"ttl_s":600,"uid":1000})");
}

TEST(LeaseJson, TheClientReadsWhatTheAgentRenders) {
  LeaseView back = leaseFromJson(leaseJson(sample(), LeaseFields::kCreated));
  EXPECT_EQ(back.job, "42");
  EXPECT_EQ(back.uid, 1000u);
  EXPECT_EQ(back.slots, 4);
  EXPECT_EQ(back.ttl_s, 600);
  EXPECT_EQ(back.expires_in_s, 599);
  EXPECT_EQ(back.token, sample().token);
  EXPECT_EQ(back.data_address, sample().data_address);
  LeaseView odd = leaseFromJson(nlohmann::json{{"job", 7}, {"slots", "x"}});
  EXPECT_EQ(odd.job, "");
  EXPECT_EQ(odd.slots, 0);
  // A float beyond int64 reads as mistyped (0), not as an undefined cast
  // (fuzz_http_response: tests/fuzz/http_response_corpus/ttl_out_of_int64).
  nlohmann::json big = nlohmann::json::parse(R"({"ttl_s": 7.7e99, "slots": -1e30, "uid": 12.9})");
  EXPECT_EQ(jsonInt(big, "ttl_s"), 0);
  EXPECT_EQ(jsonInt(big, "slots"), 0);
  EXPECT_EQ(jsonInt(big, "uid"), 12);
}

}  // namespace
