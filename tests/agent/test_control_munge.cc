// What a munge credential on the TCP listener binds (munge_cred.h): the
// payload a client signs and the agent's check of it against the request it
// received, without munged (the real credentials: test_control_faults).
#include <gtest/gtest.h>

#include "munge_cred.h"

using namespace switchagg;
using namespace switchagg::agent;

namespace {

const std::string kBody = "{\"job\":\"j1\",\"uid\":1000,\"slots\":2,\"ttl_s\":600}";

TEST(ControlMunge, PayloadIsTheRequestLineAndTheBodysDigest) {
  EXPECT_EQ(mungeRequestPayload("GET", "/v1/status", ""),
            "GET /v1/status body-sha256="
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(mungeRequestPayload("POST", "/v1/leases", "abc"),
            "POST /v1/leases body-sha256="
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(ControlMunge, ThePayloadMatchesOnlyItsOwnRequest) {
  const std::string payload = mungeRequestPayload("POST", "/v1/leases", kBody);
  EXPECT_TRUE(checkMungeRequestPayload(payload, "POST", "/v1/leases", kBody).ok());
  const std::string empty = mungeRequestPayload("DELETE", "/v1/leases/j1", "");
  EXPECT_TRUE(checkMungeRequestPayload(empty, "DELETE", "/v1/leases/j1", "").ok());

  // Another request line: another endpoint, method, query or a longer target.
  const std::pair<const char*, const char*> lines[] = {
      {"POST", "/v1/drain"}, {"PUT", "/v1/leases"}, {"POST", "/v1/leases?x=1"},
      {"POST", "/v1/leases/j1"}, {"POST", "/v1/lease"}};
  for (const auto& [method, target] : lines) {
    Status st = checkMungeRequestPayload(payload, method, target, kBody);
    EXPECT_EQ(st.code(), Code::kDenied) << method << " " << target;
    EXPECT_NE(st.message().find("another request"), std::string::npos) << st.message();
  }

  // Same request line, another body: another uid, more slots, a body added
  // to a request signed without one, the body dropped.
  const std::pair<std::string, std::string> bodies[] = {
      {payload, "{\"job\":\"j1\",\"uid\":4242,\"slots\":2,\"ttl_s\":600}"},
      {payload, "{\"job\":\"j1\",\"uid\":1000,\"slots\":8,\"ttl_s\":600}"},
      {payload, kBody + " "},
      {payload, ""},
      {mungeRequestPayload("POST", "/v1/leases", ""), kBody}};
  for (const auto& [signed_payload, body] : bodies) {
    Status st = checkMungeRequestPayload(signed_payload, "POST", "/v1/leases", body);
    EXPECT_EQ(st.code(), Code::kDenied) << body;
    EXPECT_NE(st.message().find("does not match the request body"), std::string::npos)
        << st.message();
  }

  // A digest field that is not a SHA-256 of anything, or junk after the line.
  const std::string junk[] = {"POST /v1/leases body-sha256=", "POST /v1/leases body-sha256=abc",
                              "POST /v1/leases  body-sha256=" + std::string(64, '0'),
                              "POST /v1/leases x"};
  for (const std::string& p : junk) {
    EXPECT_EQ(checkMungeRequestPayload(p, "POST", "/v1/leases", kBody).code(), Code::kDenied) << p;
  }
}

TEST(ControlMunge, TheRequestLineAloneBindsOnlyARequestWithoutABody) {
  // What clients signed before the body was bound: still good where there
  // is no body, and refused with a body saying why.
  EXPECT_TRUE(checkMungeRequestPayload("DELETE /v1/leases/j1", "DELETE", "/v1/leases/j1", "").ok());
  EXPECT_TRUE(checkMungeRequestPayload("GET /v1/status", "GET", "/v1/status", "").ok());
  Status st = checkMungeRequestPayload("POST /v1/leases", "POST", "/v1/leases", kBody);
  EXPECT_EQ(st.code(), Code::kDenied);
  EXPECT_NE(st.message().find("signs the request line only"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("upgrade the client"), std::string::npos) << st.message();
}

}  // namespace
