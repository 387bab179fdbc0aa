// Shared by the multi-process UCX tests: payload patterns, hex, clocks.
#pragma once

#include <time.h>

#include <cstdint>
#include <string>
#include <vector>

namespace switchagg::test {

// A pattern that differs per message and per byte, so a swapped, shifted or
// truncated payload is caught.
inline uint8_t patternByte(uint64_t seed, size_t i) {
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + i;
  x ^= x >> 29;
  return static_cast<uint8_t>(x * 0xbf58476d1ce4e5b9ull >> 56);
}

inline void fillPattern(std::vector<uint8_t>& buf, uint64_t seed) {
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = patternByte(seed, i);
}

// Index of the first wrong byte, or -1.
inline long checkPattern(const uint8_t* data, size_t n, uint64_t seed) {
  for (size_t i = 0; i < n; ++i)
    if (data[i] != patternByte(seed, i)) return static_cast<long>(i);
  return -1;
}

inline std::string toHex(const std::vector<uint8_t>& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (uint8_t b : bytes) {
    s.push_back(digits[b >> 4]);
    s.push_back(digits[b & 15]);
  }
  return s;
}

inline std::vector<uint8_t> fromHex(const std::string& s) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < s.size(); i += 2)
    out.push_back(static_cast<uint8_t>(std::stoi(s.substr(i, 2), nullptr, 16)));
  return out;
}

inline int64_t monotonicMs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

}  // namespace switchagg::test
