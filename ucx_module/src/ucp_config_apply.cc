// RoceProfile -> ucp_config_t, the environment-wins rule, read-back, and key
// validation against UCX's own configuration tables.
#include "ucp_config_apply.h"

#include <ucs/config/parser.h>
#include <uct/api/uct.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>

#include "switchagg/common/config.h"

namespace switchagg::ucx {
namespace {

// Transport-specific spellings that UCX resolves before the generic key:
// e.g. UCX_RC_MLX5_SL beats the IB_SL we would cache (cached keys are
// applied over the environment at ucp_init, so we must not set them).
const std::vector<std::string>& specificPrefixes(const std::string& family) {
  static const std::vector<std::string> ib = {"RC_",      "RC_VERBS_", "RC_MLX5_",  "DC_",
                                              "DC_MLX5_", "UD_",       "UD_VERBS_", "UD_MLX5_"};
  static const std::vector<std::string> rc = {"RC_VERBS_", "RC_MLX5_", "DC_", "DC_MLX5_"};
  static const std::vector<std::string> none;
  if (family == "IB_") return ib;
  if (family == "RC_") return rc;
  return none;
}

// Walks ucs_config_global_list without its typeof-based C macros.
template <typename Fn>
void forEachConfigTable(Fn fn) {
  const size_t off = offsetof(ucs_config_global_list_entry_t, list);
  for (ucs_list_link_t* l = ucs_config_global_list.next; l != &ucs_config_global_list;
       l = l->next) {
    auto* entry =
        reinterpret_cast<ucs_config_global_list_entry_t*>(reinterpret_cast<char*>(l) - off);
    if (entry->table != nullptr && entry->size > 0) fn(entry);
  }
}

// Transport tables are registered when their modules load (uct_ib etc.),
// which uct_query_components triggers, as ucp_init would.
void loadTransportModules() {
  uct_component_h* components = nullptr;
  unsigned count = 0;
  if (uct_query_components(&components, &count) == UCS_OK) uct_release_component_list(components);
}

}  // namespace

std::string ucxEnvName(const std::string& key) {
  return key == "GID_INDEX" ? "IB_GID_INDEX" : key;
}

std::optional<std::pair<std::string, std::string>> userOverride(const std::string& key) {
  const std::string env = ucxEnvName(key);
  if (const char* v = envOrNull(("UCX_" + env).c_str())) return std::make_pair(env, std::string(v));
  if (env.size() <= 3) return std::nullopt;
  const std::string family = env.substr(0, 3);
  const std::string suffix = env.substr(3);
  for (const std::string& prefix : specificPrefixes(family)) {
    const std::string name = prefix + suffix;
    if (name == env) continue;
    if (const char* v = envOrNull(("UCX_" + name).c_str()))
      return std::make_pair(name, std::string(v));
  }
  return std::nullopt;
}

Status checkUcxSetting(const std::string& key, const std::string& value) {
  loadTransportModules();
  bool known = false;
  Status bad_value;
  forEachConfigTable([&](ucs_config_global_list_entry_t* entry) {
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
  for (const auto& [key, value] : profile.ucx_settings) {
    if (auto user = userOverride(key)) {
      profile.left_to_user.push_back(*user);
      continue;
    }
    SWITCHAGG_RETURN_IF_ERROR(checkUcxSetting(key, value));
    ucs_status_t st = ucp_config_modify(config, key.c_str(), value.c_str());
    if (st != UCS_OK) {
      return Status(Code::kInvalidArgument,
                    "ucp_config_modify(" + key + "=" + value + "): " + ucs_status_string(st));
    }
    profile.applied.emplace_back(key, value);
  }
  return Status::Ok();
}

Result<std::string> readUcpConfigValue(ucp_config_t* config, const std::string& key) {
  if (config == nullptr) return Status(Code::kInvalidArgument, "readUcpConfigValue: null config");
  char* buf = nullptr;
  size_t len = 0;
  FILE* stream = open_memstream(&buf, &len);
  if (stream == nullptr) return Status(Code::kIoError, "open_memstream failed");
  ucp_config_print(config, stream, nullptr, UCS_CONFIG_PRINT_CONFIG);
  std::fclose(stream);
  std::string text(buf ? buf : "", len);
  std::free(buf);

  std::optional<std::string> found;  // later lines win: UCX applies cached keys in order
  std::istringstream lines(text);
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

}  // namespace switchagg::ucx
