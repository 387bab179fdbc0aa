// libFuzzer target: the control client's side of an answer, as a hostile or
// broken agent could send it: the HTTP response parser (http_message.h) fed
// the way control_transport.cc feeds it (a growing buffer, eof at the end),
// then the JSON body read as the client reads it (leaseFromJson and the
// lenient field reads). Properties checked beyond "no crash / no sanitizer
// report":
//  * a prefix that already parses (Content-Length known) parses the same as
//    the whole answer: same status, same body, same length;
//  * a prefix that is already an error keeps the whole answer an error;
//  * a complete answer's body is the bytes before `consumed`, at most
//    max_body long, and its status has three digits.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "http_message.h"
#include "lease_json.h"
#include "fuzz_check.h"

using switchagg::fuzz::check;
using namespace switchagg::agent;

namespace {

void readBody(const std::string& body) {
  nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  if (!j.is_object()) return;
  LeaseView one = leaseFromJson(j);
  (void)one;
  (void)jsonString(j, "error");
  (void)jsonFlag(j, "draining");
  auto leases = j.find("leases");
  if (leases != j.end() && leases->is_array()) {
    for (const auto& l : *leases) {
      if (l.is_object()) (void)leaseFromJson(l);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  // First byte: where the first read ends and how large a body is allowed.
  uint8_t selector = data[0];
  std::string_view wire(reinterpret_cast<const char*>(data + 1), size - 1);
  size_t max_body = (selector & 0x80) ? 64 : (1 << 16);

  HttpResponse whole;
  ParseResult w = parseHttpResponse(wire, true, max_body, &whole);
  check(w.state != ParseState::kNeedMore);  // eof: complete or an error
  if (w.state == ParseState::kComplete) {
    check(w.consumed <= wire.size());
    check(whole.status >= 0 && whole.status <= 999);
    check(whole.body.size() <= max_body);
    check(whole.body.size() <= w.consumed &&
          wire.substr(w.consumed - whole.body.size(), whole.body.size()) == whole.body);
    readBody(whole.body);
  }

  size_t split = wire.size() * (selector & 0x3f) / 64;
  HttpResponse part;
  ParseResult p = parseHttpResponse(wire.substr(0, split), false, max_body, &part);
  if (p.state == ParseState::kComplete) {
    check(w.state == ParseState::kComplete && w.consumed == p.consumed);
    check(part.status == whole.status && part.body == whole.body);
  }
  // Past 64 KiB without a blank line the prefix is refused while the whole
  // answer may still end its header; below that an error is final.
  if (p.state == ParseState::kError && split <= 65536) check(w.state == ParseState::kError);
  return 0;
}
