// The fuzz targets' property check: a violated property traps, so libFuzzer
// reports it as a crash and saves the input.
#pragma once

namespace switchagg::fuzz {

inline void check(bool ok) {
  if (!ok) __builtin_trap();
}

}  // namespace switchagg::fuzz
