// The fuzz targets' property check: a violated property traps, so libFuzzer
// reports it as a crash and saves the input.
#pragma once

#include <cstddef>
#include <string>

namespace switchagg::fuzz {

inline void check(bool ok) {
  if (!ok) __builtin_trap();
}

// The targets that read their input as text define these two; their
// libFuzzer entry is fuzz_text_main.cc: an input longer than kMaxTextBytes
// is skipped (it only slows the fuzzer), any other goes to fuzzText.
extern const size_t kMaxTextBytes;
void fuzzText(const std::string& text);

}  // namespace switchagg::fuzz
