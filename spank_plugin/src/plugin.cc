// switchagg_spank.so: the Slurm entry points. Each callback only dispatches
// by context (contexts.h) behind a barrier that keeps exceptions out of
// Slurm. Only these functions and plugin_* are exported (switchagg_spank.map).
#include "slurm_spank.h"

#include <exception>

#include "contexts.h"
#include "plugin_state.h"
#include "spank_log.h"

using namespace switchagg::spank;

namespace {

// A throwing callback must not unwind into slurmd; it fails nothing either,
// since returning an error from a prolog or batch step drains the node.
template <typename F>
int guarded(const char* where, F&& fn) {
  try {
    return fn();
  } catch (const std::exception& e) {
    logError("internal error in %s: %s", where, e.what());
  } catch (...) {
    logError("internal error in %s", where);
  }
  return 0;
}

}  // namespace

#define SWITCHAGG_EXPORT extern "C" __attribute__((visibility("default")))

SWITCHAGG_EXPORT const char plugin_name[] = "switchagg";
SWITCHAGG_EXPORT const char plugin_type[] = "spank";
SWITCHAGG_EXPORT const unsigned int plugin_version = SLURM_VERSION_NUMBER;

SWITCHAGG_EXPORT int slurm_spank_init(spank_t sp, int argc, char** argv) {
  return guarded("init", [&] {
    loadConfig(argc, argv);
    switch (spank_context()) {
      case S_CTX_LOCAL:
      case S_CTX_ALLOCATOR: return submitInit(sp);
      case S_CTX_REMOTE: return remoteInit(sp);
      case S_CTX_SLURMD: return slurmdInit(sp);
      default: return 0;
    }
  });
}

SWITCHAGG_EXPORT int slurm_spank_init_post_opt(spank_t sp, int, char**) {
  return guarded("init_post_opt", [&] {
    switch (spank_context()) {
      case S_CTX_LOCAL:
      case S_CTX_ALLOCATOR: return submitPostOpt(sp);
      default: return 0;
    }
  });
}

SWITCHAGG_EXPORT int slurm_spank_job_prolog(spank_t sp, int argc, char** argv) {
  return guarded("job_prolog", [&] { return jobProlog(sp, argc, argv); });
}

SWITCHAGG_EXPORT int slurm_spank_user_init(spank_t sp, int, char**) {
  return guarded("user_init", [&] { return remoteUserInit(sp); });
}

SWITCHAGG_EXPORT int slurm_spank_task_init(spank_t sp, int, char**) {
  return guarded("task_init", [&] { return remoteTaskInit(sp); });
}

SWITCHAGG_EXPORT int slurm_spank_job_epilog(spank_t sp, int argc, char** argv) {
  return guarded("job_epilog", [&] { return jobEpilog(sp, argc, argv); });
}
