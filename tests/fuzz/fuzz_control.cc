// libFuzzer target: the control server's HTTP request parser and the control
// API behind it (routing, JSON bodies, policy), as one hostile client sees
// them. Properties checked beyond "no crash / no sanitizer report":
//  * parsing is monotonic: a prefix that is already an error stays one, a
//    prefix that is complete is complete with the same length;
//  * every answer is a valid HTTP status with a JSON error body on failure;
//  * no response except the token/create endpoints ever carries a token.
#include <cstddef>
#include <cstdint>
#include <string>

#include "control_api.h"
#include "http_message.h"
#include "fuzz_check.h"

using switchagg::fuzz::check;
using namespace switchagg;
using namespace switchagg::agent;

namespace {

class FakeDataPlane : public DataPlaneView {
 public:
  std::string address() const override { return "127.0.0.1:18515"; }
  DataPlaneCounters counters() const override {
    DataPlaneCounters c;
    c.rejected["malformed"] = 1;
    c.groups_by_job["42"] = 1;
    return c;
  }
  std::vector<std::pair<Dtype, std::vector<Op>>> capabilities() const override {
    return {{Dtype::kFloat32, {Op::kSum}}};
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  // First byte: who calls and where the parse is split; the rest is the wire.
  uint8_t selector = data[0];
  std::string_view wire(reinterpret_cast<const char*>(data + 1), size - 1);

  HttpLimits limits;
  HttpRequest req;
  ParseResult whole = parseHttpRequest(wire, limits, &req);
  size_t split = wire.size() * (selector & 0x0f) / 16;
  HttpRequest prefix_req;
  ParseResult prefix = parseHttpRequest(wire.substr(0, split), limits, &prefix_req);
  if (prefix.state == ParseState::kError) check(whole.state == ParseState::kError);
  if (prefix.state == ParseState::kComplete) {
    check(whole.state == ParseState::kComplete && whole.consumed == prefix.consumed);
  }
  if (whole.state == ParseState::kError) check(whole.status >= 400 && whole.status < 600);

  HttpResponse resp;
  (void)parseHttpResponse(wire, (selector & 0x10) != 0, 1 << 16, &resp);
  if (whole.state != ParseState::kComplete) return 0;

  AgentConfig config;
  config.limits.pool_slots = 16;
  config.limits.max_slots_per_job = 8;
  config.limits.max_slots_per_user = 12;
  config.allowed_users = {"1000"};
  LeaseTable leases({16, 8, 12});
  auto existing = leases.create("42", 1000, 2, 3600 * 1000);
  check(existing.ok());
  FakeDataPlane dp;
  ControlApi api(config, leases, &dp);

  Caller caller;
  switch ((selector >> 5) & 3) {
    case 0: caller = Caller{true, 0, 0, "unix"}; break;
    case 1: caller = Caller{true, 1000, 1000, "unix"}; break;
    case 2: caller = Caller{true, 65534, 65534, "tcp"}; break;
    default: caller = Caller{false, 0, 0, "tcp"}; break;
  }
  ControlResponse r = api.handle(req, caller);
  check(r.status >= 200 && r.status < 600);
  if (r.status >= 400) check(r.body.find("\"error\":") != std::string::npos);
  bool may_show_token = req.path == "/v1/leases" || req.path == "/v1/leases/42/token";
  if (!may_show_token) check(r.body.find(existing->lease.token.hex()) == std::string::npos);
  return 0;
}
