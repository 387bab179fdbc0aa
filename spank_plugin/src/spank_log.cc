#include "spank_log.h"

#include <cstdarg>
#include <cstdio>

#include "slurm_spank.h"

namespace switchagg::spank {
namespace {

using Sink = void (*)(const char* fmt, ...);

// Formats first, so the prefix is added once and Slurm sees one "%s".
__attribute__((format(printf, 2, 0))) void emit(Sink sink, const char* fmt, va_list ap) {
  char line[1024];
  std::vsnprintf(line, sizeof(line), fmt, ap);
  sink("switchagg: %s", line);
}

}  // namespace

#define SWITCHAGG_LOG_FN(name, sink) \
  void name(const char* fmt, ...) {  \
    va_list ap;                      \
    va_start(ap, fmt);               \
    emit(sink, fmt, ap);             \
    va_end(ap);                      \
  }

SWITCHAGG_LOG_FN(logError, slurm_error)
SWITCHAGG_LOG_FN(logInfo, slurm_info)
SWITCHAGG_LOG_FN(logDebug, slurm_debug)
SWITCHAGG_LOG_FN(userLine, slurm_spank_log)

}  // namespace switchagg::spank
