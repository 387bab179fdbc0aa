// Shared by the multi-process UCX tests: payload patterns, hex, clocks.
#pragma once

#include <time.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace switchagg::test {

// A pattern that differs per message and per 8-byte word, so a swapped,
// shifted or truncated payload is caught; word-wise to stay cheap at 64 MiB.
inline uint64_t patternWord(uint64_t seed, size_t word) {
  uint64_t x = (seed + 1) * 0x9e3779b97f4a7c15ull + word * 0xbf58476d1ce4e5b9ull;
  return x ^ (x >> 31);
}

inline void fillPattern(std::vector<uint8_t>& buf, uint64_t seed) {
  const size_t words = buf.size() / 8;
  for (size_t w = 0; w < words; ++w) {
    uint64_t v = patternWord(seed, w);
    std::memcpy(buf.data() + w * 8, &v, 8);
  }
  // No tail (an empty buffer's data() may be null: memcpy of 0 bytes from
  // or to it is still undefined, UBSan says).
  if (buf.size() == words * 8) return;
  uint64_t tail = patternWord(seed, words);
  std::memcpy(buf.data() + words * 8, &tail, buf.size() - words * 8);
}

// Index of the first wrong byte, or -1.
inline long checkPattern(const uint8_t* data, size_t n, uint64_t seed) {
  const size_t words = n / 8;
  for (size_t w = 0; w <= words; ++w) {
    uint64_t v = patternWord(seed, w);
    size_t len = w < words ? 8 : n - words * 8;
    if (len > 0 && std::memcmp(data + w * 8, &v, len) != 0) {
      for (size_t i = 0; i < len; ++i)
        if (data[w * 8 + i] != reinterpret_cast<const uint8_t*>(&v)[i])
          return static_cast<long>(w * 8 + i);
    }
  }
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
