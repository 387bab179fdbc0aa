// The plugin's one way to the agent: a control client configured from the
// plugstack arguments (address, timeout).
#pragma once

#include "plugin_config.h"
#include "switchagg/agent/control_client.h"

namespace switchagg::spank {

inline agent::ControlClient controlClient(const PluginConfig& config) {
  agent::ControlClientOptions options;
  options.address = config.control;
  options.timeout_ms = config.timeout_ms;
  return agent::ControlClient(options);
}

}  // namespace switchagg::spank
