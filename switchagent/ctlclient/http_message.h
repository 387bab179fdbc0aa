// Minimal HTTP/1.1 messages for the control API: a strict, bounded request
// parser (the agent's attack surface; a fuzz target) and a response parser
// for the client. One request per connection; no chunked encoding, no
// pipelining, no line folding. Pure functions over byte buffers.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace switchagg::agent {

struct HttpLimits {
  size_t max_request_line = 2048;   // "METHOD /target HTTP/1.1"
  size_t max_header_bytes = 16384;  // everything up to the blank line
  size_t max_headers = 64;
  size_t max_body = 65536;
};

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;  // names lower-case

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string target;  // as sent, e.g. "/v1/leases?x=1"
  std::string path;    // target without the query
  std::string version; // "HTTP/1.1" or "HTTP/1.0"
  HttpHeaders headers;
  std::string body;
  // First value of a header (name lower-case), or nullptr.
  const std::string* header(std::string_view name) const;
};

enum class ParseState { kNeedMore, kComplete, kError };

struct ParseResult {
  ParseState state = ParseState::kNeedMore;
  int status = 0;       // on kError: the HTTP status to answer (400, 413, 431, 501, 505)
  std::string message;  // on kError: why, one line
  size_t consumed = 0;  // on kComplete: bytes of `data` that formed the request
};

// Parses one request from the start of `data`. kNeedMore: a prefix of a valid
// request (read more, unless the peer closed). Never reads past `data`.
ParseResult parseHttpRequest(std::string_view data, const HttpLimits& limits, HttpRequest* out);

struct HttpResponse {
  int status = 0;
  std::string reason;
  HttpHeaders headers;
  std::string body;
  const std::string* header(std::string_view name) const;
};

// Parses a response read until the server closed the connection (the agent
// always answers with Connection: close). `eof`=false allows kNeedMore.
ParseResult parseHttpResponse(std::string_view data, bool eof, size_t max_body,
                              HttpResponse* out);

const char* httpReason(int status);
// "HTTP/1.1 <status> <reason>" + Content-Type/Length + Connection: close.
std::string formatHttpResponse(int status, std::string_view content_type, std::string_view body,
                               const HttpHeaders& extra = {});
std::string formatHttpRequest(std::string_view method, std::string_view target,
                              std::string_view host, const HttpHeaders& headers,
                              std::string_view body);

}  // namespace switchagg::agent
