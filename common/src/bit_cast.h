// The bits of a value as another type of the same size (C++20's
// std::bit_cast, for C++17): what the 16-bit float conversions read and
// write floats and doubles through.
#pragma once

#include <cstring>

namespace switchagg::detail {

template <typename To, typename From>
inline To bitCast(From from) {
  static_assert(sizeof(To) == sizeof(From), "bitCast between types of different sizes");
  To to;
  std::memcpy(&to, &from, sizeof to);
  return to;
}

}  // namespace switchagg::detail
