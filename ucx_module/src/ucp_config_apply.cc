// RoceProfile -> ucp_config_t, the environment-wins rule, read-back, and key
// validation against UCX's own configuration tables.
#include "switchagg/ucx/ucp_config.h"

#include <ucs/config/parser.h>
#include <uct/api/uct.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>

#include "switchagg/common/config.h"

namespace switchagg::ucx {
namespace {

bool sameField(const UcxField* a, const UcxField* b) {
  return a->entry == b->entry && a->offset == b->offset;
}

bool allIn(const std::vector<const UcxField*>& sub, const std::vector<const UcxField*>& set) {
  for (const UcxField* f : sub) {
    bool found = false;
    for (const UcxField* g : set) found = found || sameField(f, g);
    if (!found) return false;
  }
  return true;
}

// Keys that reach only fields in `free` (ucp_config_modify cannot name one
// transport: RC_SL is rc_verbs + rc_mlx5 + dc_mlx5), widest first, until
// every field of `free` that some such key reaches is covered.
std::vector<std::string> coveringKeys(const std::vector<const UcxField*>& free) {
  std::vector<std::pair<std::string, std::vector<const UcxField*>>> candidates;
  for (const UcxField* f : free) {
    for (const std::string& key : f->modify_names) {
      auto reach = fieldsReachedBy(key);
      if (allIn(reach, free)) candidates.emplace_back(key, std::move(reach));
    }
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
  std::vector<std::string> keys;
  std::vector<const UcxField*> covered;
  for (const auto& [key, reach] : candidates) {
    if (allIn(reach, covered)) continue;
    keys.push_back(key);
    covered.insert(covered.end(), reach.begin(), reach.end());
  }
  return keys;
}

// `key` is either one applyUcxSetting checked or a narrower key UCX's own
// tables name for a subset of its fields, so it is not checked again.
Status modify(ucp_config_t* config, const std::string& key, const std::string& value,
              RoceProfile& profile) {
  ucs_status_t st = ucp_config_modify(config, key.c_str(), value.c_str());
  if (st != UCS_OK) {
    return Status(Code::kInvalidArgument,
                  "ucp_config_modify(" + key + "=" + value + "): " + ucs_status_string(st));
  }
  profile.applied.emplace_back(key, value);
  return Status::Ok();
}

void addLeftToUser(RoceProfile& profile, const std::string& var) {
  std::pair<std::string, std::string> kv(var, envOrNull(("UCX_" + var).c_str()));
  if (std::find(profile.left_to_user.begin(), profile.left_to_user.end(), kv) ==
      profile.left_to_user.end())
    profile.left_to_user.push_back(std::move(kv));
}

}  // namespace

Status applyUcxSetting(ucp_config_t* config, const std::string& key, const std::string& value,
                       RoceProfile& profile) {
  SWITCHAGG_RETURN_IF_ERROR(checkUcxSetting(key, value));
  const std::vector<const UcxField*> reached = fieldsReachedBy(key);
  if (reached.empty()) {
    return Status(Code::kInvalidArgument, "'" + key +
                                              "' reaches no UCP or transport setting in UCX " +
                                              ucp_get_version_string() + " (ignored if set)");
  }
  std::vector<const UcxField*> free;
  bool user_set = false;
  for (const UcxField* f : reached) {
    if (auto var = userVariable(*f)) {
      addLeftToUser(profile, *var);
      user_set = true;
    } else {
      free.push_back(f);
    }
  }
  if (!user_set) return modify(config, key, value, profile);
  for (const std::string& narrower : coveringKeys(free))
    SWITCHAGG_RETURN_IF_ERROR(modify(config, narrower, value, profile));
  return Status::Ok();
}

void loadUcxTransportModules() {
  // Transport tables are registered when their modules load (uct_ib etc.),
  // which uct_query_components triggers, as ucp_init would.
  uct_component_h* components = nullptr;
  unsigned count = 0;
  if (uct_query_components(&components, &count) == UCS_OK) uct_release_component_list(components);
}

std::string ucxEnvName(const std::string& key) {
  auto reached = fieldsReachedBy(key);
  for (const UcxField* f : reached)
    if (std::find(f->env_names.begin(), f->env_names.end(), key) != f->env_names.end()) return key;
  return reached.empty() ? key : reached.front()->name.substr(4);
}

Status checkUcxSetting(const std::string& key, const std::string& value) {
  loadUcxTransportModules();
  bool known = false;
  Status bad_value;
  forEachUcxConfigTable([&](ucs_config_global_list_entry_t* entry) {
    if (!bad_value.ok()) return;
    std::unique_ptr<void, decltype(&std::free)> opts(std::calloc(1, entry->size), &std::free);
    if (!opts) return;
    // Defaults only (no environment), so a user's odd UCX_* cannot interfere.
    if (ucs_config_parser_fill_opts(opts.get(), entry->table, "SWITCHAGG_UNUSED_PREFIX_", nullptr,
                                    1) != UCS_OK)
      return;
    ucs_status_t st =
        ucs_config_parser_set_value(opts.get(), entry->table, key.c_str(), value.c_str());
    ucs_config_parser_release_opts(opts.get(), entry->table);
    if (st == UCS_OK) {
      known = true;
    } else if (st != UCS_ERR_NO_ELEM) {
      bad_value =
          Status(Code::kInvalidArgument, "UCX rejects " + key + "=" + value + " (" + entry->name +
                                             ": " + ucs_status_string(st) + ")");
    }
  });
  if (!bad_value.ok()) return bad_value;
  if (!known) {
    return Status(Code::kInvalidArgument, "UCX " + std::string(ucp_get_version_string()) +
                                              " has no configuration key '" + key +
                                              "' (see ucx_info -c -f)");
  }
  return Status::Ok();
}

Status applyProfile(ucp_config_t* config, RoceProfile& profile) {
  if (config == nullptr) return Status(Code::kInvalidArgument, "applyProfile: null ucp_config_t");
  profile.applied.clear();
  profile.left_to_user.clear();
  for (const auto& [key, value] : profile.ucx_settings)
    SWITCHAGG_RETURN_IF_ERROR(applyUcxSetting(config, key, value, profile));
  return Status::Ok();
}

namespace {

// ucp_config_print(CONFIG): UCP keys as UCX_<KEY>=v, then the cache as <KEY>=v.
Result<std::string> printUcpConfig(ucp_config_t* config) {
  char* buf = nullptr;
  size_t len = 0;
  FILE* stream = open_memstream(&buf, &len);
  if (stream == nullptr) return Status(Code::kIoError, "open_memstream failed");
  ucp_config_print(config, stream, nullptr, UCS_CONFIG_PRINT_CONFIG);
  std::fclose(stream);
  std::string text(buf ? buf : "", len);
  std::free(buf);
  return text;
}

}  // namespace

Result<std::string> readUcpConfigValue(ucp_config_t* config, const std::string& key) {
  if (config == nullptr) return Status(Code::kInvalidArgument, "readUcpConfigValue: null config");
  auto text = printUcpConfig(config);
  if (!text.ok()) return text.status();
  std::optional<std::string> found;  // later lines win: UCX applies cached keys in order
  std::istringstream lines(*text);
  const std::string prefixed = "UCX_" + key + "=";
  const std::string bare = key + "=";
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(prefixed, 0) == 0)
      found = line.substr(prefixed.size());
    else if (line.rfind(bare, 0) == 0)
      found = line.substr(bare.size());
  }
  if (!found) return Status(Code::kInvalidArgument, "UCX configuration holds no '" + key + "'");
  return *found;
}

std::vector<std::pair<std::string, std::string>> cachedTransportKeys(ucp_config_t* config) {
  std::vector<std::pair<std::string, std::string>> out;
  auto text = config ? printUcpConfig(config) : Result<std::string>(std::string());
  if (!text.ok()) return out;
  std::istringstream lines(*text);
  for (std::string line; std::getline(lines, line);) {
    const size_t eq = line.find('=');
    if (eq == std::string::npos || eq == 0 || line.rfind("UCX_", 0) == 0 || line[0] == '#')
      continue;
    out.emplace_back(line.substr(0, eq), line.substr(eq + 1));
  }
  return out;
}

Result<std::vector<UcxEffectiveValue>> effectiveTransportConfig(
    ucp_config_t* config, const std::vector<std::string>& keys) {
  if (config == nullptr) return Status(Code::kInvalidArgument, "effectiveTransportConfig: null");
  std::vector<const UcxField*> fields;
  for (const std::string& key : keys) {
    for (const UcxField* f : fieldsReachedBy(key))
      if (std::find(fields.begin(), fields.end(), f) == fields.end()) fields.push_back(f);
  }
  return effectiveUcxValues(cachedTransportKeys(config), fields);
}

}  // namespace switchagg::ucx
