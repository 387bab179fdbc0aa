#include "switchagg/common/log.h"

#include <atomic>
#include <cstdio>
#include <strings.h>

#include "switchagg/common/log_config.h"

namespace switchagg {
namespace {

constexpr const char* kLevelNames[] = {"error", "warn", "info", "debug", "trace"};

// A bad SWITCHAGG_LOG_LEVEL cannot stop a library from loading: it is named
// on stderr and the default level kept.
LogLevel initialLevel() {
  LogSettings settings;
  Status st = logSettingsTable().applyEnvironment(settings);
  if (!st.ok()) {
    std::fprintf(stderr, "switchagg: %s; logging at %s\n", st.message().c_str(),
                 logLevelName(settings.level));
  }
  return settings.level;
}

std::atomic<int>& levelStore() {
  static std::atomic<int> level{static_cast<int>(initialLevel())};
  return level;
}

}  // namespace

const ConfigTable<LogSettings>& logSettingsTable() {
  static const ConfigTable<LogSettings> t({
      {"log.level", "SWITCHAGG_LOG_LEVEL",
       "messages on stderr from this level up: error|warn|info|debug|trace (the agent's own "
       "default is agent.log_level)",
       logLevelField(&LogSettings::level)},
  });
  return t;
}

void setLogLevel(LogLevel level) { levelStore().store(static_cast<int>(level)); }
LogLevel logLevel() { return static_cast<LogLevel>(levelStore().load()); }
bool logEnabled(LogLevel level) { return static_cast<int>(level) <= levelStore().load(); }

const char* logLevelName(LogLevel level) { return kLevelNames[static_cast<int>(level)]; }

bool parseLogLevel(const char* text, LogLevel* out) {
  for (int i = 0; i < 5; ++i) {
    if (strcasecmp(text, kLevelNames[i]) == 0 || (text[0] == '0' + i && text[1] == '\0')) {
      *out = static_cast<LogLevel>(i);
      return true;
    }
  }
  return false;
}

void logMessage(LogLevel level, const char* part, const char* fmt, ...) {
  char body[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(body, sizeof body, fmt, ap);
  va_end(ap);
  // One fprintf per line so lines from threads and ranks do not interleave.
  std::fprintf(stderr, "switchagg[%s] %s: %s\n", part, logLevelName(level), body);
}

}  // namespace switchagg
