#include "job_request.h"

#include "switchagg/common/config.h"

namespace switchagg::spank {

Result<int> parseSlots(const std::string& what, const std::string& text, int max_slots) {
  Result<int64_t> v = parseInt(what, text, 1, max_slots);
  if (!v.ok()) {
    return invalidValue(
        what, text,
        "valid: an integer from 1 to " + std::to_string(max_slots) + ", this site's max_slots");
  }
  return static_cast<int>(*v);
}

Result<int> parseReducers(const std::string& what, const std::string& text) {
  Result<int64_t> v = parseInt(what, text, 1, kMaxReducers);
  if (!v.ok())
    return invalidValue(what, text,
                        "valid: an integer from 1 to " + std::to_string(kMaxReducers) +
                            " (agents of the nodes' reducer pool)");
  return static_cast<int>(*v);
}

std::string encodeRequest(const JobRequest& request) {
  std::string out = std::string("mode=") + modeName(request.mode);
  if (request.slots > 0) out += ",slots=" + std::to_string(request.slots);
  if (request.reducers > 0) out += ",reducers=" + std::to_string(request.reducers);
  return out;
}

Result<JobRequest> decodeRequest(const std::string& text) {
  JobRequest r;
  bool have_mode = false;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string item =
        text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    size_t eq = item.find('=');
    std::string key = item.substr(0, eq);
    std::string value = eq == std::string::npos ? "" : item.substr(eq + 1);
    if (key == "mode") {
      Result<Mode> m = parseMode(kRequestVar, value);
      if (!m.ok()) return m.status();
      r.mode = *m;
      have_mode = true;
    } else if (key == "slots") {
      Result<int64_t> s = parseInt(kRequestVar, value, 0, 4096);
      if (!s.ok()) return s.status();
      r.slots = static_cast<int>(*s);
    } else if (key == "reducers") {
      Result<int64_t> k = parseInt(kRequestVar, value, 0, kMaxReducers);
      if (!k.ok()) return k.status();
      r.reducers = static_cast<int>(*k);
    } else {
      return Status(Code::kInvalidArgument,
                    std::string(kRequestVar) + ": unexpected '" + item + "'");
    }
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  if (!have_mode) return Status(Code::kInvalidArgument, std::string(kRequestVar) + ": no mode");
  return r;
}

Result<ResolvedRequest> resolveRequest(const RequestSources& s, const PluginConfig& config) {
  // The first source that says something wins; later ones are not read.
  ResolvedRequest out;
  JobRequest recorded{config.default_mode, 0};
  const bool mode_given = s.option_mode || s.env_mode;
  const bool slots_given = s.option_slots || s.env_slots;
  const bool reducers_given = s.option_reducers || s.env_reducers;
  if (s.recorded && !(mode_given && slots_given && reducers_given)) {
    Result<JobRequest> rec = decodeRequest(*s.recorded);
    if (!rec.ok()) return rec.status();
    recorded = *rec;
  }
  if (mode_given) {
    const bool from_option = s.option_mode.has_value();
    Result<Mode> m = parseMode(from_option ? "--switch-agg" : kEnvJobMode,
                               from_option ? *s.option_mode : *s.env_mode);
    if (!m.ok()) return m.status();
    out.request.mode = *m;
  } else {
    out.request.mode = recorded.mode;
  }
  out.explicit_mode = mode_given || s.recorded;
  // An integer from the option, else the environment (the names in errors).
  auto number = [](const std::optional<std::string>& option, const std::optional<std::string>& env,
                   const char* option_name, const char* env_name, auto parse) {
    return option ? parse(option_name, *option) : parse(env_name, *env);
  };
  if (slots_given) {
    Result<int> n = number(s.option_slots, s.env_slots, "--switch-agg-slots", kEnvSlots,
                           [&](const char* what, const std::string& v) {
                             return parseSlots(what, v, config.max_slots);
                           });
    if (!n.ok()) return n.status();
    out.request.slots = *n;
  } else {
    out.request.slots = recorded.slots > 0 ? recorded.slots : config.default_slots;
  }
  if (reducers_given) {
    Result<int> k = number(s.option_reducers, s.env_reducers, "--switch-agg-reducers", kEnvReducers,
                           parseReducers);
    if (!k.ok()) return k.status();
    out.request.reducers = *k;
  } else {
    out.request.reducers = recorded.reducers;
  }
  return out;
}

}  // namespace switchagg::spank
