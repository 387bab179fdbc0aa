// Logging: one line per message on stderr, "switchagg[<part>] <level>: ...".
// Level comes from SWITCHAGG_LOG_LEVEL (error|warn|info|debug|trace, default
// warn; its row is logSettingsTable() in log_config.h) or setLogLevel(); the
// MPI component maps coll_switchagg_verbose onto it.
#pragma once

#include <cstdarg>

namespace switchagg {

enum class LogLevel { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3, kTrace = 4 };

void setLogLevel(LogLevel level);
LogLevel logLevel();
bool logEnabled(LogLevel level);
// Parses "error".."trace" or "0".."4"; returns false on anything else.
bool parseLogLevel(const char* text, LogLevel* out);
const char* logLevelName(LogLevel level);  // "error".."trace"
void logMessage(LogLevel level, const char* part, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));

}  // namespace switchagg

#define SWITCHAGG_LOG(level, part, ...)                                    \
  do {                                                                     \
    if (::switchagg::logEnabled(level))                                    \
      ::switchagg::logMessage(level, part, __VA_ARGS__);                   \
  } while (0)
#define SA_ERROR(part, ...) SWITCHAGG_LOG(::switchagg::LogLevel::kError, part, __VA_ARGS__)
#define SA_WARN(part, ...) SWITCHAGG_LOG(::switchagg::LogLevel::kWarn, part, __VA_ARGS__)
#define SA_INFO(part, ...) SWITCHAGG_LOG(::switchagg::LogLevel::kInfo, part, __VA_ARGS__)
#define SA_DEBUG(part, ...) SWITCHAGG_LOG(::switchagg::LogLevel::kDebug, part, __VA_ARGS__)
#define SA_TRACE(part, ...) SWITCHAGG_LOG(::switchagg::LogLevel::kTrace, part, __VA_ARGS__)
