// SWITCHAGG_LOG_LEVEL as a config row: the binding every table that sets a
// log level uses (the agent's agent.log_level, this file's table), and the
// table every other process reads its level from (log.cc), which
// switchagg-info lists.
#pragma once

#include "switchagg/common/config_table.h"
#include "switchagg/common/log.h"

namespace switchagg {

// "error".."trace" (any case) or "0".."4", printed as the name.
template <typename T>
ConfigBinding<T> logLevelField(LogLevel T::*field) {
  return customField<T>(
      ConfigKind::kChoice,
      [=](const std::string& key, T& c, const std::string& text) -> Status {
        if (!parseLogLevel(text.c_str(), &(c.*field)))
          return invalidValue(key, text, "valid values: error|warn|info|debug|trace or 0-4");
        return Status::Ok();
      },
      [=](const T& c) { return std::string(logLevelName(c.*field)); });
}

struct LogSettings {
  LogLevel level = LogLevel::kWarn;
};

const ConfigTable<LogSettings>& logSettingsTable();

}  // namespace switchagg
