#include "http_message.h"

#include <cctype>

namespace switchagg::agent {

namespace {

// RFC 9110 token characters (method and header names).
bool isTokenChar(char c) {
  if (std::isalnum(static_cast<unsigned char>(c))) return true;
  switch (c) {
    case '!': case '#': case '$': case '%': case '&': case '\'': case '*': case '+':
    case '-': case '.': case '^': case '_': case '`': case '|': case '~':
      return true;
    default:
      return false;
  }
}

bool isFieldValueChar(char c) {
  auto u = static_cast<unsigned char>(c);
  return c == '\t' || (u >= 0x20 && u != 0x7f);
}

bool isTargetChar(char c) {
  auto u = static_cast<unsigned char>(c);
  return u > 0x20 && u < 0x7f;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trimOws(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

ParseResult fail(int status, std::string message) {
  ParseResult r;
  r.state = ParseState::kError;
  r.status = status;
  r.message = std::move(message);
  return r;
}

// Splits `head` (without the final blank line) into CRLF-terminated lines;
// a bare LF or CR is an error (request smuggling hides in lenient parsers).
bool splitLines(std::string_view head, std::vector<std::string_view>* lines) {
  size_t start = 0;
  for (size_t i = 0; i < head.size(); ++i) {
    if (head[i] == '\n') return false;
    if (head[i] == '\r') {
      if (i + 1 >= head.size() || head[i + 1] != '\n') return false;
      lines->push_back(head.substr(start, i - start));
      start = i + 2;
      ++i;
    }
  }
  if (start != head.size()) return false;
  return true;
}

// Header lines after the start line; fills `headers` and the body length.
ParseResult parseHeaders(const std::vector<std::string_view>& lines, const HttpLimits& limits,
                         HttpHeaders* headers, size_t* content_length) {
  bool have_length = false;
  *content_length = 0;
  if (lines.size() - 1 > limits.max_headers) return fail(431, "too many header fields");
  for (size_t i = 1; i < lines.size(); ++i) {
    std::string_view line = lines[i];
    size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) return fail(400, "malformed header field");
    std::string_view name = line.substr(0, colon);
    for (char c : name) {
      if (!isTokenChar(c)) return fail(400, "invalid character in header name");
    }
    std::string_view value = trimOws(line.substr(colon + 1));
    for (char c : value) {
      if (!isFieldValueChar(c)) return fail(400, "invalid character in header value");
    }
    std::string lname = lower(name);
    if (lname == "transfer-encoding") return fail(501, "transfer-encoding is not supported");
    if (lname == "content-length") {
      if (value.empty() || value.size() > 9) return fail(400, "invalid content-length");
      size_t n = 0;
      for (char c : value) {
        if (c < '0' || c > '9') return fail(400, "invalid content-length");
        n = n * 10 + static_cast<size_t>(c - '0');
      }
      if (have_length && n != *content_length) return fail(400, "conflicting content-length");
      have_length = true;
      *content_length = n;
    }
    headers->emplace_back(std::move(lname), std::string(value));
  }
  return ParseResult{};
}

ParseResult parseRequestLine(std::string_view line, const HttpLimits& limits, HttpRequest* out) {
  if (line.size() > limits.max_request_line) return fail(414, "request line too long");
  size_t sp1 = line.find(' ');
  if (sp1 == std::string_view::npos || sp1 == 0 || sp1 > 16) return fail(400, "malformed request line");
  size_t sp2 = line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || sp2 == sp1 + 1) return fail(400, "malformed request line");
  std::string_view method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  for (char c : method) {
    if (c < 'A' || c > 'Z') return fail(400, "invalid method");
  }
  if (target.front() != '/') return fail(400, "request target must start with '/'");
  for (char c : target) {
    if (!isTargetChar(c)) return fail(400, "invalid character in request target");
  }
  if (version != "HTTP/1.1" && version != "HTTP/1.0") {
    if (version.substr(0, 5) == "HTTP/") return fail(505, "only HTTP/1.0 and HTTP/1.1");
    return fail(400, "malformed request line");
  }
  out->method = std::string(method);
  out->target = std::string(target);
  out->path = std::string(target.substr(0, target.find('?')));
  out->version = std::string(version);
  return ParseResult{};
}

const std::string* findHeader(const HttpHeaders& headers, std::string_view name) {
  for (const auto& [k, v] : headers) {
    if (k == name) return &v;
  }
  return nullptr;
}

}  // namespace

const std::string* HttpRequest::header(std::string_view name) const {
  return findHeader(headers, name);
}

const std::string* HttpResponse::header(std::string_view name) const {
  return findHeader(headers, name);
}

ParseResult parseHttpRequest(std::string_view data, const HttpLimits& limits, HttpRequest* out) {
  size_t end = data.find("\r\n\r\n");
  size_t head_limit = limits.max_header_bytes;
  if (end == std::string_view::npos) {
    // Reject early what can never become valid, so a slow peer cannot make
    // us buffer unbounded garbage or wait for a CRLF that will not come.
    for (size_t i = 0; i < data.size(); ++i) {
      bool bare_lf = data[i] == '\n' && (i == 0 || data[i - 1] != '\r');
      bool bare_cr = data[i] == '\r' && i + 1 < data.size() && data[i + 1] != '\n';
      if (bare_lf || bare_cr) return fail(400, "lines must end with CRLF");
    }
    size_t first_eol = data.find_first_of("\r\n");
    size_t line_len = first_eol == std::string_view::npos ? data.size() : first_eol;
    if (line_len > limits.max_request_line) return fail(414, "request line too long");
    if (data.size() > head_limit) return fail(431, "request header too large");
    return ParseResult{};
  }
  if (end + 4 > head_limit) return fail(431, "request header too large");
  std::vector<std::string_view> lines;
  if (!splitLines(data.substr(0, end + 2), &lines) || lines.empty()) {
    return fail(400, "lines must end with CRLF");
  }
  *out = HttpRequest{};
  ParseResult r = parseRequestLine(lines[0], limits, out);
  if (r.state == ParseState::kError) return r;
  size_t body_len = 0;
  r = parseHeaders(lines, limits, &out->headers, &body_len);
  if (r.state == ParseState::kError) return r;
  if (body_len > limits.max_body) return fail(413, "request body too large");
  size_t total = end + 4 + body_len;
  if (data.size() < total) return ParseResult{};
  out->body = std::string(data.substr(end + 4, body_len));
  ParseResult done;
  done.state = ParseState::kComplete;
  done.consumed = total;
  return done;
}

ParseResult parseHttpResponse(std::string_view data, bool eof, size_t max_body,
                              HttpResponse* out) {
  size_t end = data.find("\r\n\r\n");
  if (end == std::string_view::npos) {
    if (eof) return fail(0, "connection closed before the response header ended");
    if (data.size() > 65536) return fail(0, "response header too large");
    return ParseResult{};
  }
  std::vector<std::string_view> lines;
  if (!splitLines(data.substr(0, end + 2), &lines) || lines.empty()) {
    return fail(0, "malformed response header");
  }
  std::string_view status_line = lines[0];
  if (status_line.size() < 12 || status_line.substr(0, 7) != "HTTP/1." || status_line[8] != ' ') {
    return fail(0, "malformed status line");
  }
  int status = 0;
  for (size_t i = 9; i < 12; ++i) {
    char c = status_line[i];
    if (c < '0' || c > '9') return fail(0, "malformed status code");
    status = status * 10 + (c - '0');
  }
  *out = HttpResponse{};
  out->status = status;
  out->reason = std::string(trimOws(status_line.substr(12)));
  HttpLimits limits;
  limits.max_headers = 256;
  size_t body_len = 0;
  ParseResult r = parseHeaders(lines, limits, &out->headers, &body_len);
  if (r.state == ParseState::kError) return fail(0, "malformed response header: " + r.message);
  std::string_view rest = data.substr(end + 4);
  if (out->header("content-length") != nullptr) {
    if (body_len > max_body) return fail(0, "response body too large");
    if (rest.size() < body_len) {
      if (eof) return fail(0, "connection closed before the response body ended");
      return ParseResult{};
    }
    rest = rest.substr(0, body_len);
  } else {
    if (rest.size() > max_body) return fail(0, "response body too large");
    if (!eof) return ParseResult{};
  }
  out->body = std::string(rest);
  ParseResult done;
  done.state = ParseState::kComplete;
  done.consumed = end + 4 + rest.size();
  return done;
}

const char* httpReason(int status) {
  switch (status) {
    case 200: return "OK";
    case 201: return "Created";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
  }
}

std::string formatHttpResponse(int status, std::string_view content_type, std::string_view body,
                               const HttpHeaders& extra) {
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + httpReason(status) + "\r\n";
  out += "Content-Type: ";
  out += content_type;
  out += "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  for (const auto& [k, v] : extra) out += k + ": " + v + "\r\n";
  out += "Connection: close\r\n\r\n";
  out += body;
  return out;
}

std::string formatHttpRequest(std::string_view method, std::string_view target,
                              std::string_view host, const HttpHeaders& headers,
                              std::string_view body) {
  std::string out;
  out.reserve(256 + body.size());
  out += method;
  out += ' ';
  out += target;
  out += " HTTP/1.1\r\nHost: ";
  out += host;
  out += "\r\n";
  for (const auto& [k, v] : headers) out += k + ": " + v + "\r\n";
  if (!body.empty()) out += "Content-Type: application/json\r\n";
  out += "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n";
  out += body;
  return out;
}

}  // namespace switchagg::agent
