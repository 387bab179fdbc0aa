// The libFuzzer entry of the text targets (fuzz_agent_config,
// fuzz_fabric_map, fuzz_spank_args): see fuzz_check.h.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > switchagg::fuzz::kMaxTextBytes) return 0;
  switchagg::fuzz::fuzzText(std::string(reinterpret_cast<const char*>(data), size));
  return 0;
}
