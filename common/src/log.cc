#include "switchagg/common/log.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <strings.h>

namespace switchagg {
namespace {

LogLevel initialLevel() {
  LogLevel level = LogLevel::kWarn;
  const char* env = std::getenv("SWITCHAGG_LOG_LEVEL");
  if (env && *env && !parseLogLevel(env, &level)) {
    std::fprintf(stderr,
                 "switchagg: ignoring SWITCHAGG_LOG_LEVEL=%s (want error|warn|info|debug|trace)\n",
                 env);
  }
  return level;
}

std::atomic<int>& levelStore() {
  static std::atomic<int> level{static_cast<int>(initialLevel())};
  return level;
}

const char* levelName(LogLevel l) {
  static const char* const kNames[] = {"error", "warn", "info", "debug", "trace"};
  return kNames[static_cast<int>(l)];
}

}  // namespace

void setLogLevel(LogLevel level) { levelStore().store(static_cast<int>(level)); }
LogLevel logLevel() { return static_cast<LogLevel>(levelStore().load()); }
bool logEnabled(LogLevel level) { return static_cast<int>(level) <= levelStore().load(); }

bool parseLogLevel(const char* text, LogLevel* out) {
  static const char* const kNames[] = {"error", "warn", "info", "debug", "trace"};
  for (int i = 0; i < 5; ++i) {
    if (strcasecmp(text, kNames[i]) == 0 || (text[0] == '0' + i && text[1] == '\0')) {
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
  std::fprintf(stderr, "switchagg[%s] %s: %s\n", part, levelName(level), body);
}

}  // namespace switchagg
