// Applying a RoceProfile to a ucp_config_t, and reading values back from
// UCX's own configuration (tests, switchagg-info).
//
// UCX 1.13 quirk this layer exists for: ucp_config_modify() validates only
// keys of the UCP context table (NET_DEVICES, TLS, ...). Transport keys
// (IB_*, RC_*) are cached unchecked and applied at ucp_init; a misspelt key or
// a bad value then only shows up as a "UCX WARN invalid configuration" line
// at worker creation. checkUcxSetting() runs UCX's own parser over its
// registered tables first, so such a mistake is an error here instead.
#pragma once

#include <ucp/api/ucp.h>

#include <string>

#include "switchagg/common/status.h"
#include "switchagg/ucx/roce_profile.h"

namespace switchagg::ucx {

// Applies profile.ucx_settings with ucp_config_modify (keys without the UCX_
// prefix). A key the user set in the environment (UCX_<key>, or a more
// specific transport variant such as UCX_RC_MLX5_SL for IB_SL) is left
// alone and recorded in profile.left_to_user; the rest go to profile.applied.
// Any key/value UCX would not accept gives InvalidArgument naming it.
Status applyProfile(ucp_config_t* config, RoceProfile& profile);

// The value UCX holds for `key` (no UCX_ prefix), from ucp_config_print:
// UCP context keys print as UCX_<KEY>=v, cached transport keys as <KEY>=v.
Result<std::string> readUcpConfigValue(ucp_config_t* config, const std::string& key);

// Ok if some UCX 1.13 configuration table (UCP context, IB memory domain,
// rc/dc/ud transports, ...) knows `key` and accepts `value` for it.
// InvalidArgument otherwise, naming the key (and the value if that's wrong).
Status checkUcxSetting(const std::string& key, const std::string& value);

// The environment variable (without UCX_) that sets `key`: the key itself,
// except for keys UCX 1.13 applies to a memory domain without the domain's
// table prefix (GID_INDEX is UCX_IB_GID_INDEX in the environment).
std::string ucxEnvName(const std::string& key);

// The variable (without UCX_) and value that override `key`, if the user set
// one: UCX_<ucxEnvName(key)> or a more specific transport spelling.
std::optional<std::pair<std::string, std::string>> userOverride(const std::string& key);

}  // namespace switchagg::ucx
