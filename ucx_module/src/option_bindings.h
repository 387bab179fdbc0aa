// Config bindings the transport's and the RoCE profile's option tables
// share (options.cc, roce_options.cc).
#pragma once

#include <string>

#include "switchagg/common/config_table.h"

namespace switchagg::ucx {

// A count in lo..hi, or `word` ("auto", "all") standing for 0, which the option
// reads as "decide for me" / "no limit"; printed back the same way.
template <typename T>
ConfigBinding<T> countOrWord(int T::*field, int lo, int hi, const char* word) {
  ConfigBinding<T> b = intField(field, lo, hi);
  auto parse = b.set;
  b.kind = ConfigKind::kChoice;
  b.set = [parse, field, word](const std::string& key, T& o, const std::string& text) -> Status {
    if (text == word) {
      o.*field = 0;
      return Status::Ok();
    }
    return parse(key, o, text);
  };
  b.get = [field, word](const T& o) {
    return o.*field == 0 ? std::string(word) : std::to_string(o.*field);
  };
  return b;
}

}  // namespace switchagg::ucx
