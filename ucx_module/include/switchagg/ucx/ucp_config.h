// Applying a RoceProfile to a ucp_config_t, and reading values back from
// UCX's own configuration: the transport's inspection API (switchagg-info
// and the RoCE tests use it; the transport applies profiles with it).
//
// Two builds of the key-level functions (checkUcxSetting, applyUcxSetting,
// ucxEnvName, effectiveTransportConfig), chosen at configure time
// (ucx_module/CMakeLists.txt): where UCX is a release whose internal
// configuration tables (ucs/config/parser.h) are known to match what
// roce_ucx_tables.cc reads (1.13), SWITCHAGG_UCX_INTERNAL_TABLES=1 and they
// walk those tables field by field; elsewhere (UCX 1.18, ...) they stand on
// the public API alone (ucx_tables_public.cc): ucp_config_modify checks UCP
// keys, uct_config_modify on the md/iface configs of the transports present
// checks transport keys, and what neither can check is applied with one
// "switchagg[ucx] warn: ... not checked" line naming the key.
//
// How UCX 1.13 treats ucp_config_modify keys (v1.13.1 source; see
// roce_ucx_tables.cc for the functions): UCP context and UCS global keys are
// set at once; any other key is cached unchecked and, at ucp_init /
// ucp_worker_create, applied to every memory-domain and transport config
// with uct_config_modify. That match ignores the table's own prefix
// (RC_MLX5_, TCP_, the IB memory domain's IB_), so IB_GID_INDEX and
// TCP_SNDBUF are silently unused (GID_INDEX, SNDBUF work), while IB_SL or
// RC_TIMEOUT reach rc/dc/ud through the names of their embedded tables. A
// key no table takes is only a "UCX WARN invalid configuration" line at
// worker creation. Cached keys are applied over the environment, so
// "the user's UCX_* wins" is ours to enforce, per transport field.
#pragma once

#include <ucp/api/ucp.h>
#if SWITCHAGG_UCX_INTERNAL_TABLES
#include <ucs/config/parser.h>
#endif

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "switchagg/common/status.h"
#include "switchagg/ucx/roce_profile.h"

namespace switchagg::ucx {

// Applies profile.ucx_settings with ucp_config_modify (keys without the UCX_
// prefix). For each key: every UCX field it reaches that the user set in
// the environment (any spelling UCX reads, e.g. UCX_RC_MLX5_SL for IB_SL)
// is left alone and the variable recorded in profile.left_to_user; the other
// fields still get the value, through the narrowest keys that do not touch
// the user's (UD_SL, DC_SL, ...), recorded in profile.applied. A transport
// that no such key separates from the user's keeps UCX's value.
// Any key/value UCX would not accept gives InvalidArgument naming it.
Status applyProfile(ucp_config_t* config, RoceProfile& profile);

// The value UCX holds for `key` (no UCX_ prefix), from ucp_config_print:
// UCP context keys print as UCX_<KEY>=v, cached transport keys as <KEY>=v.
Result<std::string> readUcpConfigValue(ucp_config_t* config, const std::string& key);

// The cached transport keys of `config`, in the order UCX applies them.
std::vector<std::pair<std::string, std::string>> cachedTransportKeys(ucp_config_t* config);

// Ok if some UCX 1.13 configuration table (UCP context, IB memory domain,
// rc/dc/ud transports, ...) knows `key` and accepts `value` for it.
// InvalidArgument otherwise, naming the key (and the value if that's wrong).
Status checkUcxSetting(const std::string& key, const std::string& value);

// The environment variable (without UCX_) that sets what `key` sets: the
// key itself where UCX reads it from the environment too, else the name
// ucx_info -c prints (GID_INDEX -> IB_GID_INDEX).
std::string ucxEnvName(const std::string& key);

// Sets UCX `key` = `value` in `config` with the environment-wins rule, per
// field: fields the user set (UCX_RC_MLX5_SL for IB_SL, UCX_RNDV_THRESH, ...)
// keep the user's value and are listed in profile.left_to_user; the others
// get `value`, through `key` or through narrower keys that miss the user's
// fields; what was set goes to profile.applied. InvalidArgument for a key
// no UCX table knows or a value it refuses.
Status applyUcxSetting(ucp_config_t* config, const std::string& key, const std::string& value,
                       RoceProfile& profile);

// A transport field's value as UCX will hold it.
struct UcxEffectiveValue {
  std::string table, name, value;
  std::string source;  // "profile <KEY>", "environment UCX_<VAR>" or "default"
};
// The transport fields that `keys` reach, with the values `config` gives them.
// Without the internal tables: one entry per key, its value and source from
// the environment (UCX_<KEY>) or the config's cache, table "(not inspected)".
Result<std::vector<UcxEffectiveValue>> effectiveTransportConfig(
    ucp_config_t* config, const std::vector<std::string>& keys);

// True where this build walks UCX's internal configuration tables.
bool ucxInternalTablesInspected();

// Internal helpers shared by the implementations.
void loadUcxTransportModules();

#if SWITCHAGG_UCX_INTERNAL_TABLES
// One field of a registered UCX configuration table.
struct UcxField {
  std::string table;                      // "rc_mlx5 transport", "IB memory domain"
  std::string name;                       // "UCX_RC_MLX5_SL", as ucx_info -c prints it
  std::vector<std::string> env_names;     // UCX_ + each sets it; the last set one counts
  std::vector<std::string> modify_names;  // ucp_config_modify keys that reach it
  bool consumed_by_ucp = false;           // UCP context / UCS global: never cached
  const ucs_config_global_list_entry_t* entry = nullptr;
  size_t offset = 0;  // inside the table's config struct
  const ucs_config_field_t* field = nullptr;
};

// Every field of every table registered once the transport modules loaded.
const std::vector<UcxField>& ucxConfigFields();
// The fields ucp_config_modify(key) ends up setting (UCP ones if it is a
// UCP key, else every transport/md field the cached key reaches).
std::vector<const UcxField*> fieldsReachedBy(const std::string& key);
// The variable (without UCX_) that sets `field` in this environment, if any.
std::optional<std::string> userVariable(const UcxField& field);

// What a transport field will hold, built as UCX builds md/iface configs:
// uct_config_read (defaults, ucx.conf, environment), then each cached key in
// order through uct_config_modify's parser call.
Result<std::vector<UcxEffectiveValue>> effectiveUcxValues(
    const std::vector<std::pair<std::string, std::string>>& cached,
    const std::vector<const UcxField*>& fields);
template <typename Fn>
void forEachUcxConfigTable(Fn fn) {
  // ucs_list_for_each is typeof-based C; walk the list by hand.
  const size_t off = offsetof(ucs_config_global_list_entry_t, list);
  for (ucs_list_link_t* l = ucs_config_global_list.next; l != &ucs_config_global_list;
       l = l->next) {
    auto* entry =
        reinterpret_cast<ucs_config_global_list_entry_t*>(reinterpret_cast<char*>(l) - off);
    if (entry->table != nullptr && entry->size > 0) fn(entry);
  }
}
#endif  // SWITCHAGG_UCX_INTERNAL_TABLES

}  // namespace switchagg::ucx
