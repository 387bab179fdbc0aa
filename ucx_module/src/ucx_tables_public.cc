// The key-level functions of ucp_config.h on UCX's public API alone, for
// UCX releases whose internal configuration tables roce_ucx_tables.cc does
// not know (configure leaves SWITCHAGG_UCX_INTERNAL_TABLES off; UCX 1.18).
//
// What it can promise: UCP context and UCS global keys are checked by
// ucp_config_modify itself; a transport key is checked with
// uct_config_modify on the md and iface configs of the transports present
// on this host (what ucp_init would open). A key none of those knows (an IB
// key on a host without IB devices) cannot be checked: it is applied as
// given, with one warning naming it. The environment-wins rule works per
// key (UCX_<KEY> set: left to the user), not per field: another spelling of
// the same field (UCX_RC_MLX5_SL for IB_SL) is not seen.
#include <uct/api/uct.h>

#include <cstdlib>
#include <mutex>
#include <set>
#include <vector>

#include "switchagg/common/config.h"
#include "switchagg/common/log.h"
#include "switchagg/ucx/ucp_config.h"
#include "ucp_config_internal.h"

namespace switchagg::ucx {
namespace {

// Result of offering key=value to one uct config.
enum class Verdict { kUnknown, kAccepted, kRejected };

Verdict offer(void* config, const std::string& key, const std::string& value, std::string* why) {
  ucs_status_t st = uct_config_modify(config, key.c_str(), value.c_str());
  if (st == UCS_OK) return Verdict::kAccepted;
  if (st == UCS_ERR_NO_ELEM) return Verdict::kUnknown;
  *why = ucs_status_string(st);
  return Verdict::kRejected;
}

// Offers key=value to the md config of every component and the iface config
// of every transport those mds have here; the first rejection wins.
Verdict offerToTransports(const std::string& key, const std::string& value, std::string* where,
                          std::string* why) {
  loadUcxTransportModules();
  uct_component_h* components = nullptr;
  unsigned count = 0;
  if (uct_query_components(&components, &count) != UCS_OK) return Verdict::kUnknown;
  Verdict verdict = Verdict::kUnknown;
  for (unsigned c = 0; c < count && verdict != Verdict::kRejected; ++c) {
    uct_component_attr_t attr{};
    attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME | UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
    if (uct_component_query(components[c], &attr) != UCS_OK) continue;
    std::vector<uct_md_resource_desc_t> mds(attr.md_resource_count);
    attr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
    attr.md_resources = mds.data();
    if (!mds.empty() && uct_component_query(components[c], &attr) != UCS_OK) continue;

    uct_md_config_t* md_config = nullptr;
    if (uct_md_config_read(components[c], nullptr, nullptr, &md_config) != UCS_OK) continue;
    Verdict v = offer(md_config, key, value, why);
    if (v != Verdict::kUnknown) {
      verdict = v;
      *where = std::string(attr.name) + " memory domain";
    }
    for (const uct_md_resource_desc_t& md_res : mds) {
      if (verdict == Verdict::kRejected) break;
      uct_md_h md = nullptr;
      if (uct_md_open(components[c], md_res.md_name, md_config, &md) != UCS_OK) continue;
      uct_tl_resource_desc_t* tls = nullptr;
      unsigned num_tls = 0;
      if (uct_md_query_tl_resources(md, &tls, &num_tls) == UCS_OK) {
        for (unsigned t = 0; t < num_tls && verdict != Verdict::kRejected; ++t) {
          uct_iface_config_t* iface_config = nullptr;
          if (uct_md_iface_config_read(md, tls[t].tl_name, nullptr, nullptr, &iface_config) !=
              UCS_OK)
            continue;
          v = offer(iface_config, key, value, why);
          if (v != Verdict::kUnknown) {
            verdict = v;
            *where = std::string(tls[t].tl_name) + " transport";
          }
          uct_config_release(iface_config);
        }
        uct_release_tl_resource_list(tls);
      }
      uct_md_close(md);
    }
    uct_config_release(md_config);
  }
  uct_release_component_list(components);
  return verdict;
}

// True if ucp_config_modify kept key in its transport cache (a bare KEY=
// line in ucp_config_print): UCP did not consume it, so it did not check it.
bool cachedForTransports(ucp_config_t* config, const std::string& key) {
  for (const auto& kv : cachedTransportKeys(config))
    if (kv.first == key) return true;
  return false;
}

void warnUncheckedOnce(const std::string& key) {
  static std::mutex mu;
  static std::set<std::string> warned;
  std::lock_guard<std::mutex> lock(mu);
  if (!warned.insert(key).second) return;
  SA_WARN("ucx",
          "UCX %s: transport key '%s' not checked: no transport present here knows it and this "
          "build does not read UCX's internal configuration tables (applied as given)",
          ucp_get_version_string(), key.c_str());
}

}  // namespace

bool ucxInternalTablesInspected() {
  return false;
}

Status checkUcxSetting(const std::string& key, const std::string& value) {
  ucp_config_t* config = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
  if (st != UCS_OK)
    return Status(Code::kInternal, std::string("ucp_config_read: ") + ucs_status_string(st));
  st = ucp_config_modify(config, key.c_str(), value.c_str());
  const bool transport_key = st == UCS_OK && cachedForTransports(config, key);
  ucp_config_release(config);
  if (st != UCS_OK) {
    return Status(Code::kInvalidArgument, "UCX rejects " + key + "=" + value +
                                              " (UCP context: " + ucs_status_string(st) + ")");
  }
  if (!transport_key) return Status::Ok();
  std::string where, why;
  switch (offerToTransports(key, value, &where, &why)) {
    case Verdict::kAccepted:
      return Status::Ok();
    case Verdict::kRejected:
      return Status(Code::kInvalidArgument,
                    "UCX rejects " + key + "=" + value + " (" + where + ": " + why + ")");
    case Verdict::kUnknown:
      warnUncheckedOnce(key);
      return Status::Ok();
  }
  return Status::Ok();
}

std::string ucxEnvName(const std::string& key) {
  return key;
}

Status applyUcxSetting(ucp_config_t* config, const std::string& key, const std::string& value,
                       RoceProfile& profile) {
  SWITCHAGG_RETURN_IF_ERROR(checkUcxSetting(key, value));
  if (envOrNull(("UCX_" + key).c_str()) != nullptr) {
    addLeftToUser(profile, key);
    return Status::Ok();
  }
  return modifyUcpConfig(config, key, value, profile);
}

Result<std::vector<UcxEffectiveValue>> effectiveTransportConfig(
    ucp_config_t* config, const std::vector<std::string>& keys) {
  if (config == nullptr) return Status(Code::kInvalidArgument, "effectiveTransportConfig: null");
  const std::string table =
      std::string("(transport tables not inspected in UCX ") + ucp_get_version_string() + ")";
  const auto cached = cachedTransportKeys(config);
  std::vector<UcxEffectiveValue> out;
  for (const std::string& key : keys) {
    UcxEffectiveValue v{table, "UCX_" + key, "", ""};
    for (const auto& [k, val] : cached) {
      if (k != key) continue;
      v.value = val;
      v.source = "profile " + key;
    }
    if (v.source.empty()) {
      const char* env = envOrNull(("UCX_" + key).c_str());
      if (env == nullptr) continue;  // a UCP key or UCX's default: nothing known here
      v.value = env;
      v.source = "environment UCX_" + key;
    }
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace switchagg::ucx
