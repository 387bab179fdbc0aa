// One mechanism for every part's configuration: a table of keys, each with
// its name, environment variable (if any), kind, help, a parser into a typed
// struct T and a printer back. Environment, files, --set overrides,
// plugstack arguments, --help, switchagg-info and the agent's key table in
// docs/admin.md read the same rows (other docs tables are written by hand).
//
// Defaults are written once, in T's member initializers: a key's default
// text is what it prints for a default-constructed T.
//
//   struct Opts { int lanes = 0; uint64_t window = 8 << 20; };
//   const ConfigTable<Opts>& table() {
//     static const ConfigTable<Opts> t({
//         {"lanes", "SWITCHAGG_UCX_LANES", "endpoints per peer", intField(&Opts::lanes, 0, 64)},
//         {"cts_window", "SWITCHAGG_UCX_CTS_WINDOW", "bytes in flight",
//          sizeField(&Opts::window, 1, UINT64_MAX)}});
//     return t;
//   }
//   Opts o;  table().applyEnvironment(o);
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "switchagg/common/config.h"
#include "switchagg/common/status.h"

namespace switchagg {

enum class ConfigKind { kString, kInt, kSize, kDuration, kBool, kList, kChoice };

// How one key reads and prints its member of T.
template <typename T>
struct ConfigBinding {
  ConfigKind kind;
  // Parses `text` into the config; errors name `key` (the key or variable
  // the value came from) and the problem.
  std::function<Status(const std::string& key, T& config, const std::string& text)> set;
  // The current value as text (--print-config, the defaults column).
  std::function<std::string(const T& config)> get;
};

template <typename T>
struct ConfigKey {
  ConfigKey(const char* name_, const char* env_, const char* help_, ConfigBinding<T> b)
      : name(name_), env(env_), help(help_), kind(b.kind), set(std::move(b.set)),
        get(std::move(b.get)) {}

  const char* name;  // "pool.slots", "lanes", "ttl"
  const char* env;   // "SWITCHAGG_UCX_LANES"; nullptr when no variable sets it
  const char* help;
  ConfigKind kind;
  std::function<Status(const std::string& key, T& config, const std::string& text)> set;
  std::function<std::string(const T& config)> get;

  std::string defaultText() const { return get(T{}); }
};

// What --help, switchagg-info and the docs show of one key.
struct ConfigDoc {
  const char* name;
  const char* env;  // nullptr when no variable sets it
  std::string default_value;
  const char* help;
};

template <typename T>
class ConfigTable {
 public:
  explicit ConfigTable(std::vector<ConfigKey<T>> keys) : keys_(std::move(keys)) {}

  const std::vector<ConfigKey<T>>& keys() const { return keys_; }

  const ConfigKey<T>* find(const std::string& name) const {
    for (const ConfigKey<T>& k : keys_) {
      if (name == k.name) return &k;
    }
    return nullptr;
  }

  // "a, b, c": for errors that list what is valid.
  std::string names() const {
    std::string out;
    for (const ConfigKey<T>& k : keys_) out += (out.empty() ? "" : ", ") + std::string(k.name);
    return out;
  }

  std::vector<ConfigDoc> docs() const {
    std::vector<ConfigDoc> out;
    for (const ConfigKey<T>& k : keys_) out.push_back({k.name, k.env, k.defaultText(), k.help});
    return out;
  }

  // Sets every key whose variable is set (non-empty); errors name the variable.
  Status applyEnvironment(T& config) const {
    for (const ConfigKey<T>& k : keys_) SWITCHAGG_RETURN_IF_ERROR(applyVariable(k, config));
    return Status::Ok();
  }
  // Every key's variable, a bad value reported to `bad` (that key keeps
  // its default) while the other keys are still read: for a library, which
  // must not stop a job over a setting.
  void applyEnvironmentReporting(T& config, const std::function<void(const Status&)>& bad) const {
    for (const ConfigKey<T>& k : keys_) {
      Status st = applyVariable(k, config);
      if (!st.ok()) bad(st);
    }
  }
  // The same for the one key `name` (a caller that was given some values
  // reads only the others).
  Status applyEnvironment(T& config, const std::string& name) const {
    const ConfigKey<T>* k = find(name);
    return k != nullptr ? applyVariable(*k, config)
                        : Status(Code::kInternal, "no config key " + name);
  }

 private:
  static Status applyVariable(const ConfigKey<T>& k, T& config) {
    const char* text = k.env ? envOrNull(k.env) : nullptr;
    return text != nullptr ? k.set(k.env, config, text) : Status::Ok();
  }

  std::vector<ConfigKey<T>> keys_;
};

// Text forms every part prints its values in (the parsers accept them back).
std::string formatSize(uint64_t bytes);        // 262144 -> "256K", 1000 -> "1000"
std::string formatDurationMs(int64_t ms);      // 90000 -> "90s", 300000 -> "5m", 1500 -> "1500ms", 0 -> "0"

// ---- bindings for the usual member types --------------------------------

// An integer member (any integral type) within [lo, hi].
template <typename T, typename F>
ConfigBinding<T> intField(F T::*field, int64_t lo, int64_t hi) {
  static_assert(std::is_integral_v<F>, "intField needs an integer member");
  return {ConfigKind::kInt,
          [=](const std::string& key, T& c, const std::string& text) -> Status {
            Result<int64_t> v = parseInt(key, text, lo, hi);
            if (!v.ok()) return v.status();
            c.*field = static_cast<F>(*v);
            return Status::Ok();
          },
          [=](const T& c) { return std::to_string(c.*field); }};
}

// A byte count ("4096", "64K", "8MiB") within [lo, hi].
template <typename T, typename F>
ConfigBinding<T> sizeField(F T::*field, uint64_t lo, uint64_t hi) {
  static_assert(std::is_integral_v<F>, "sizeField needs an integer member");
  return {ConfigKind::kSize,
          [=](const std::string& key, T& c, const std::string& text) -> Status {
            Result<uint64_t> v = parseSize(key, text);
            if (!v.ok()) return v.status();
            if (*v < lo || *v > hi) {
              const std::string range = hi == UINT64_MAX
                                            ? "at least " + std::to_string(lo)
                                            : std::to_string(lo) + " to " + std::to_string(hi);
              return invalidValue(key, text, "expected " + range + " bytes");
            }
            c.*field = static_cast<F>(*v);
            return Status::Ok();
          },
          [=](const T& c) { return formatSize(static_cast<uint64_t>(c.*field)); }};
}

enum class DurationUnit {
  kOptional,  // a bare number is milliseconds
  kRequired,  // "3600" is refused: it would silently mean milliseconds
};

// A duration in milliseconds ("250ms", "2s", "5m") within [lo_ms, hi_ms];
// `scale` divides milliseconds into the member's unit (1000: seconds,
// rounded up).
template <typename T, typename F>
ConfigBinding<T> durationField(F T::*field, int64_t lo_ms, int64_t hi_ms,
                               DurationUnit unit = DurationUnit::kOptional, int64_t scale = 1) {
  return {ConfigKind::kDuration,
          [=](const std::string& key, T& c, const std::string& text) -> Status {
            if (unit == DurationUnit::kRequired &&
                (text.empty() || !((text.back() >= 'a' && text.back() <= 'z') ||
                                   (text.back() >= 'A' && text.back() <= 'Z')))) {
              return invalidValue(key, text, "give a unit: ms, s, m or h, e.g. \"90s\"");
            }
            Result<int64_t> v = parseDurationMs(key, text);
            if (!v.ok()) return v.status();
            if (*v < lo_ms || *v > hi_ms) {
              const std::string range =
                  hi_ms == INT64_MAX ? "at least " + formatDurationMs(lo_ms)
                                     : formatDurationMs(lo_ms) + " to " + formatDurationMs(hi_ms);
              return invalidValue(key, text, "expected " + range);
            }
            c.*field = static_cast<F>((*v + scale - 1) / scale);
            return Status::Ok();
          },
          [=](const T& c) { return formatDurationMs(static_cast<int64_t>(c.*field) * scale); }};
}

template <typename T>
ConfigBinding<T> boolField(bool T::*field) {
  return {ConfigKind::kBool,
          [=](const std::string& key, T& c, const std::string& text) -> Status {
            Result<bool> v = parseBool(key, text);
            if (!v.ok()) return v.status();
            c.*field = *v;
            return Status::Ok();
          },
          [=](const T& c) { return std::string(c.*field ? "true" : "false"); }};
}

// A string member; `check` (optional) refuses bad text with its own message.
template <typename T>
ConfigBinding<T> stringField(std::string T::*field,
                             std::function<Status(const std::string& key,
                                                  const std::string& text)> check = nullptr) {
  return {ConfigKind::kString,
          [=](const std::string& key, T& c, const std::string& text) -> Status {
            if (check) SWITCHAGG_RETURN_IF_ERROR(check(key, text));
            c.*field = text;
            return Status::Ok();
          },
          [=](const T& c) { return c.*field; }};
}

// One of a fixed set of names, stored as the value each name maps to (an
// enum, a number). The error lists the names.
template <typename T, typename F>
ConfigBinding<T> choiceField(F T::*field, std::vector<std::pair<std::string, F>> choices) {
  return {ConfigKind::kChoice,
          [=](const std::string& key, T& c, const std::string& text) -> Status {
            std::vector<std::string> names;
            for (const auto& ch : choices) names.push_back(ch.first);
            Result<std::string> v = parseChoice(key, text, names);
            if (!v.ok()) return v.status();
            for (const auto& ch : choices) {
              if (ch.first == *v) c.*field = ch.second;
            }
            return Status::Ok();
          },
          [=](const T& c) {
            for (const auto& ch : choices) {
              if (ch.second == c.*field) return ch.first;
            }
            return std::string("?");
          }};
}

// A string member that must be one of `names`, kept as the name itself.
template <typename T>
ConfigBinding<T> nameField(std::string T::*field, const std::vector<std::string>& names) {
  std::vector<std::pair<std::string, std::string>> choices;
  for (const std::string& n : names) choices.emplace_back(n, n);
  return choiceField(field, std::move(choices));
}

// A member of a struct the config holds whole (AgentConfig::engine): the
// nested struct's own binding, applied to config.*part.
template <typename T, typename Part>
ConfigBinding<T> nestedField(Part T::*part, ConfigBinding<Part> binding) {
  return {binding.kind,
          [part, set = std::move(binding.set)](const std::string& key, T& c,
                                               const std::string& text) {
            return set(key, c.*part, text);
          },
          [part, get = std::move(binding.get)](const T& c) { return get(c.*part); }};
}

// A member of its own type (a parsed test fault, a pair of numbers): `parse`
// reads text into it (errors name `key`), `print` writes it back.
template <typename T, typename F>
ConfigBinding<T> parsedField(
    F T::*field, ConfigKind kind,
    std::function<Status(const std::string& key, const std::string& text, F* out)> parse,
    std::function<std::string(const F& value)> print) {
  return {kind,
          [=](const std::string& key, T& c, const std::string& text) {
            return parse(key, text, &(c.*field));
          },
          [=](const T& c) { return print(c.*field); }};
}

// Anything else: a kind and the two functions, written by hand.
template <typename T>
ConfigBinding<T> customField(
    ConfigKind kind,
    std::function<Status(const std::string& key, T& config, const std::string& text)> set,
    std::function<std::string(const T& config)> get) {
  return {kind, std::move(set), std::move(get)};
}

}  // namespace switchagg
