// libFuzzer target: the agent's TOML config loader (agent_config.h:
// applyToml + validateConfig, what loadAgentConfig runs on agent.toml).
// Properties checked beyond "no crash / no sanitizer report":
//  * an error names where it is (the origin, for a TOML syntax error);
//  * a config that loads and validates renders (--print-config) to TOML that
//    loads and validates again and renders to the same text (a round trip).
#include <cstddef>
#include <string>

#include "agent_config.h"
#include "fuzz_check.h"

using namespace switchagg::agent;

namespace switchagg::fuzz {

const size_t kMaxTextBytes = 16384;

void fuzzText(const std::string& text) {
  AgentConfig config;
  Status s = applyToml(text, "fuzz.toml", &config);
  if (!s.ok()) {
    check(!s.message().empty());
    return;
  }
  if (!validateConfig(config).ok()) return;
  std::string rendered = renderConfigToml(config);
  AgentConfig again;
  check(applyToml(rendered, "rendered.toml", &again).ok());
  check(validateConfig(again).ok());
  check(renderConfigToml(again) == rendered);
}

}  // namespace switchagg::fuzz
