// Reading a collective's counters by name (switchagg_coll_counter): one
// lookup for every counter struct (barrier, iallreduce/ibarrier, the routed
// collectives), so that each names its fields once, in a table, instead of
// an if/else chain of its own.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>

namespace switchagg::coll {

// One plain counter of struct C: its name after the "<op>:" prefix.
template <typename C>
struct CounterField {
  const char* name;
  uint64_t C::*field;
};

// The part of `name` after `prefix` ("barrier:"), or false when `name` does
// not start with it.
inline bool counterKey(const std::string& name, const std::string& prefix, std::string* key) {
  if (name.compare(0, prefix.size(), prefix) != 0) return false;
  *key = name.substr(prefix.size());
  return true;
}

// The field of `c` named `key` in `fields`; false when none is.
template <typename C>
bool counterField(const C& c, const std::string& key,
                  std::initializer_list<CounterField<C>> fields, uint64_t* value) {
  for (const CounterField<C>& f : fields) {
    if (key == f.name) {
      *value = c.*(f.field);
      return true;
    }
  }
  return false;
}

// A count kept by reason (a name no call has counted yet is 0).
inline uint64_t countOf(const std::map<std::string, uint64_t>& counts, const std::string& key) {
  auto it = counts.find(key);
  return it == counts.end() ? 0 : it->second;
}

}  // namespace switchagg::coll
