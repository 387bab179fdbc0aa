// Pieces the two builds of the key-level functions share (see
// switchagg/ucx/ucp_config.h): roce_ucx_tables.cc walks UCX's internal
// tables, ucx_tables_public.cc stands on the public API alone.
#pragma once

#include <ucp/api/ucp.h>

#include <string>

#include "switchagg/common/status.h"
#include "switchagg/ucx/roce_profile.h"

namespace switchagg::ucx {

// ucp_config_modify(key, value), recorded in profile.applied; a refusal is
// InvalidArgument naming the key and value.
Status modifyUcpConfig(ucp_config_t* config, const std::string& key, const std::string& value,
                       RoceProfile& profile);
// Records UCX_<var> (with the user's value) in profile.left_to_user, once.
void addLeftToUser(RoceProfile& profile, const std::string& var);
// ucp_config_print(CONFIG): UCP keys as UCX_<KEY>=v, then the cache as <KEY>=v.
Result<std::string> printUcpConfig(ucp_config_t* config);

}  // namespace switchagg::ucx
