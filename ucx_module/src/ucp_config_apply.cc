// RoceProfile -> ucp_config_t and read-back through the public UCP API; the
// key-level rules (validation, environment wins) are in roce_ucx_tables.cc
// or ucx_tables_public.cc, whichever this UCX allows (ucp_config.h).
#include "switchagg/ucx/ucp_config.h"

#include <uct/api/uct.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>

#include "switchagg/common/config.h"
#include "ucp_config_internal.h"

namespace switchagg::ucx {

Status modifyUcpConfig(ucp_config_t* config, const std::string& key, const std::string& value,
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

void loadUcxTransportModules() {
  // Transport tables are registered when their modules load (uct_ib etc.),
  // which uct_query_components triggers, as ucp_init would.
  uct_component_h* components = nullptr;
  unsigned count = 0;
  if (uct_query_components(&components, &count) == UCS_OK) uct_release_component_list(components);
}

Status applyProfile(ucp_config_t* config, RoceProfile& profile) {
  if (config == nullptr) return Status(Code::kInvalidArgument, "applyProfile: null ucp_config_t");
  profile.applied.clear();
  profile.left_to_user.clear();
  for (const auto& [key, value] : profile.ucx_settings)
    SWITCHAGG_RETURN_IF_ERROR(applyUcxSetting(config, key, value, profile));
  return Status::Ok();
}

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

}  // namespace switchagg::ucx
