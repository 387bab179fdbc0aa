// The control server's HTTP/1.1 request parser: strict, bounded, incremental.
#include <gtest/gtest.h>

#include "http_message.h"

using namespace switchagg::agent;

namespace {

ParseResult parse(const std::string& text, HttpRequest* req, HttpLimits limits = {}) {
  return parseHttpRequest(text, limits, req);
}

TEST(ControlHttp, ParsesGetWithHeaders) {
  HttpRequest req;
  std::string text = "GET /v1/status?x=1 HTTP/1.1\r\nHost: a\r\nX-Thing:  v  \r\n\r\n";
  ParseResult r = parse(text, &req);
  ASSERT_EQ(r.state, ParseState::kComplete) << r.message;
  EXPECT_EQ(r.consumed, text.size());
  EXPECT_EQ(req.method, "GET");
  EXPECT_EQ(req.target, "/v1/status?x=1");
  EXPECT_EQ(req.path, "/v1/status");
  ASSERT_NE(req.header("x-thing"), nullptr);
  EXPECT_EQ(*req.header("x-thing"), "v");
  EXPECT_EQ(req.header("missing"), nullptr);
}

TEST(ControlHttp, ParsesPostBodyByContentLength) {
  HttpRequest req;
  std::string text = "POST /v1/leases HTTP/1.1\r\nContent-Length: 11\r\n\r\n{\"job\":\"1\"}EXTRA";
  ParseResult r = parse(text, &req);
  ASSERT_EQ(r.state, ParseState::kComplete);
  EXPECT_EQ(req.body, "{\"job\":\"1\"}");
  EXPECT_EQ(r.consumed, text.size() - 5);
}

TEST(ControlHttp, EveryPrefixNeedsMoreAndByteByByteMatchesWhole) {
  std::string text = "POST /v1/drain HTTP/1.0\r\nContent-Length: 4\r\nA: b\r\n\r\ntrue";
  for (size_t n = 0; n < text.size(); ++n) {
    HttpRequest req;
    EXPECT_EQ(parse(text.substr(0, n), &req).state, ParseState::kNeedMore) << n;
  }
  HttpRequest req;
  ASSERT_EQ(parse(text, &req).state, ParseState::kComplete);
  EXPECT_EQ(req.body, "true");
  EXPECT_EQ(req.version, "HTTP/1.0");
}

struct BadCase {
  const char* name;
  std::string text;
  int status;
};

TEST(ControlHttp, RejectsMalformedWithTheRightStatus) {
  std::string many_headers = "GET / HTTP/1.1\r\n";
  for (int i = 0; i < 70; ++i) many_headers += "H" + std::to_string(i) + ": x\r\n";
  many_headers += "\r\n";
  const BadCase cases[] = {
      {"bare LF", "GET / HTTP/1.1\nHost: a\r\n\r\n", 400},
      {"bare LF before the end", "GET / HTTP/1.1\nHost: a", 400},
      {"bare CR", "GET / HTTP/1.1\rHost: a", 400},
      {"bare LF in header", "GET / HTTP/1.1\r\nHost: a\nB: c\r\n\r\n", 400},
      {"lower-case method", "get / HTTP/1.1\r\n\r\n", 400},
      {"no target slash", "GET v1 HTTP/1.1\r\n\r\n", 400},
      {"double space", "GET  / HTTP/1.1\r\n\r\n", 400},
      {"http 2", "GET / HTTP/2.0\r\n\r\n", 505},
      {"garbage version", "GET / FTP/1.1\r\n\r\n", 400},
      {"folded header", "GET / HTTP/1.1\r\nA: b\r\n c\r\n\r\n", 400},
      {"space in header name", "GET / HTTP/1.1\r\nA b: c\r\n\r\n", 400},
      {"empty header name", "GET / HTTP/1.1\r\n: c\r\n\r\n", 400},
      {"control char in value", std::string("GET / HTTP/1.1\r\nA: b\x01\r\n\r\n"), 400},
      {"chunked", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 501},
      {"negative length", "POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400},
      {"hex length", "POST / HTTP/1.1\r\nContent-Length: 0x10\r\n\r\n", 400},
      {"conflicting lengths", "POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", 400},
      {"body too large", "POST / HTTP/1.1\r\nContent-Length: 999999\r\n\r\n", 413},
      {"huge length", "POST / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n", 400},
      {"too many headers", many_headers, 431},
      {"long request line", "GET /" + std::string(5000, 'a') + " HTTP/1.1\r\n\r\n", 414},
      {"long line no end", "GET /" + std::string(5000, 'a'), 414},
      {"header section too large", "GET / HTTP/1.1\r\nA: " + std::string(20000, 'b'), 431},
      {"NUL in target", std::string("GET /a\0b HTTP/1.1\r\n\r\n", 21), 400},
  };
  for (const BadCase& c : cases) {
    HttpRequest req;
    ParseResult r = parse(c.text, &req);
    EXPECT_EQ(r.state, ParseState::kError) << c.name;
    EXPECT_EQ(r.status, c.status) << c.name << ": " << r.message;
    EXPECT_FALSE(r.message.empty()) << c.name;
  }
}

TEST(ControlHttp, LimitsAreConfigurable) {
  HttpLimits tight;
  tight.max_body = 3;
  HttpRequest req;
  EXPECT_EQ(parse("POST / HTTP/1.1\r\nContent-Length: 4\r\n\r\nabcd", &req, tight).status, 413);
  EXPECT_EQ(parse("POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc", &req, tight).state,
            ParseState::kComplete);
}

TEST(ControlHttp, ResponseRoundTrip) {
  std::string wire = formatHttpResponse(429, "application/json", "{\"a\":1}");
  EXPECT_NE(wire.find("HTTP/1.1 429 Too Many Requests\r\n"), std::string::npos);
  HttpResponse resp;
  ParseResult r = parseHttpResponse(wire, false, 1 << 20, &resp);
  ASSERT_EQ(r.state, ParseState::kComplete) << r.message;
  EXPECT_EQ(resp.status, 429);
  EXPECT_EQ(resp.body, "{\"a\":1}");
  EXPECT_EQ(parseHttpResponse(wire.substr(0, wire.size() - 1), false, 1 << 20, &resp).state,
            ParseState::kNeedMore);
  EXPECT_EQ(parseHttpResponse(wire.substr(0, wire.size() - 1), true, 1 << 20, &resp).state,
            ParseState::kError);
  EXPECT_EQ(parseHttpResponse(wire, false, 3, &resp).state, ParseState::kError);
}

TEST(ControlHttp, RequestFormatterIsParsedBack) {
  std::string wire = formatHttpRequest("POST", "/v1/leases", "localhost",
                                       {{"X-Switchagg-Munge", "cred"}}, "{}");
  HttpRequest req;
  ASSERT_EQ(parse(wire, &req).state, ParseState::kComplete);
  EXPECT_EQ(req.method, "POST");
  EXPECT_EQ(req.body, "{}");
  ASSERT_NE(req.header("x-switchagg-munge"), nullptr);
  EXPECT_EQ(*req.header("x-switchagg-munge"), "cred");
}

}  // namespace
