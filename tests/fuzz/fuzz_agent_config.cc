// libFuzzer target: the agent's TOML config loader (agent_config.h:
// applyToml + validateConfig, what loadAgentConfig runs on agent.toml).
// Properties checked beyond "no crash / no sanitizer report":
//  * an error names where it is (the origin, for a TOML syntax error);
//  * a config that loads and validates renders (--print-config) to TOML that
//    loads and validates again and renders to the same text (a round trip).
#include <cstddef>
#include <cstdint>
#include <string>

#include "agent_config.h"
#include "fuzz_check.h"

using switchagg::fuzz::check;
using namespace switchagg;
using namespace switchagg::agent;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 16384) return 0;
  std::string text(reinterpret_cast<const char*>(data), size);
  AgentConfig config;
  Status s = applyToml(text, "fuzz.toml", &config);
  if (!s.ok()) {
    check(!s.message().empty());
    return 0;
  }
  if (!validateConfig(config).ok()) return 0;
  std::string rendered = renderConfigToml(config);
  AgentConfig again;
  check(applyToml(rendered, "rendered.toml", &again).ok());
  check(validateConfig(again).ok());
  check(renderConfigToml(again) == rendered);
  return 0;
}
