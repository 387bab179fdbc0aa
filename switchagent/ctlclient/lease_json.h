// The lease view as JSON, for the agent (control_api.cc) and its client:
// one place that knows which fields each endpoint sends.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "switchagg/agent/control_schema.h"

namespace switchagg::agent {

nlohmann::json leaseJson(const LeaseView& lease, LeaseFields fields);
// Missing or mistyped fields read as empty/0.
LeaseView leaseFromJson(const nlohmann::json& j);

// Lenient field reads for answers: a missing or mistyped field is ""/0/false.
std::string jsonString(const nlohmann::json& j, const char* key);
int64_t jsonInt(const nlohmann::json& j, const char* key);
bool jsonFlag(const nlohmann::json& j, const char* key);

}  // namespace switchagg::agent
