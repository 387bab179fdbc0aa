// slurmd context: slurmd loads the plugin at start (because it has
// slurm_spank_init). Parsing the plugstack line there puts a broken line in
// slurmd's log when the node starts, long before a job trips over it;
// slurmd itself carries on (init never fails).
#include "contexts.h"
#include "plugin_state.h"
#include "spank_log.h"

namespace switchagg::spank {

int slurmdInit(spank_t) {
  if (state().config.ok()) {
    const PluginConfig& c = state().config.value();
    logInfo("loaded: control=%s mode=%s max_slots=%d", c.control.empty() ? "(default)" : c.control.c_str(),
            modeName(c.default_mode), c.max_slots);
  }
  return 0;
}

}  // namespace switchagg::spank
