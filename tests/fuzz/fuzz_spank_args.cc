// libFuzzer target: the SPANK plugin's pure parsers (spank_plugin/src):
// the plugstack.conf arguments (parsePluginArgs), the option values
// (parseMode, parseSlots) and the request a job carries between contexts
// (decodeRequest, resolveRequest). Input: one argument per line. Properties
// checked beyond "no crash / no sanitizer report":
//  * parsed arguments respect their own bounds (default_slots <= max_slots,
//    slots and durations not negative);
//  * encodeRequest and decodeRequest round-trip;
//  * a resolved request's slots given as an option or in the environment
//    stay within max_slots.
#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "job_request.h"
#include "plugin_config.h"
#include "fuzz_check.h"

using namespace switchagg::spank;

namespace switchagg::fuzz {

const size_t kMaxTextBytes = 8192;

void fuzzText(const std::string& text) {
  std::vector<std::string> args;
  for (size_t pos = 0; pos <= text.size();) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    args.push_back(text.substr(pos, nl - pos));
    pos = nl + 1;
  }

  PluginConfig config;
  auto parsed = parsePluginArgs(args);
  if (parsed.ok()) {
    config = *parsed;
    check(config.max_slots >= 0 && config.default_slots >= 0);
    check(config.default_slots <= config.max_slots);
    check(config.ttl_s >= 0 && config.timeout_ms >= 0);
  } else {
    check(!parsed.status().message().empty());
  }

  for (const std::string& a : args) {
    (void)parseMode("--switch-agg", a);
    auto slots = parseSlots("--switch-agg-slots", a, config.max_slots);
    if (slots.ok()) check(*slots >= 1 && *slots <= config.max_slots);
    auto request = decodeRequest(a);
    if (request.ok()) {
      auto again = decodeRequest(encodeRequest(*request));
      check(again.ok() && *again == *request);
    }
  }

  RequestSources sources;
  if (args.size() > 0) sources.option_mode = args[0];
  if (args.size() > 1) sources.option_slots = args[1];
  if (args.size() > 2) sources.env_mode = args[2];
  if (args.size() > 3) sources.env_slots = args[3];
  if (args.size() > 4) sources.recorded = args[4];
  auto resolved = resolveRequest(sources, config);
  if (resolved.ok()) {
    // Given as an option or in the environment: bounded by max_slots; a
    // recorded request was bounded at submission (decodeRequest: 0..4096).
    int bound = (sources.option_slots || sources.env_slots) ? config.max_slots
                                                            : std::max(config.max_slots, 4096);
    check(resolved->request.slots >= 0 && resolved->request.slots <= bound);
  }
}

}  // namespace switchagg::fuzz
