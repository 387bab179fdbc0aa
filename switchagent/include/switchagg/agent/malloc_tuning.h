// Keeps glibc from giving large freed blocks back to the kernel on every
// message. The transport receives each large (rendezvous) active message
// into a freshly allocated buffer; with glibc's defaults a 256 KiB chunk is
// mmap'ed or trimmed away when freed, so every message page-faults its
// buffer in again: measured 5x the agent's CPU per byte and ~7x lower
// goodput (benchmarks/results/agent.md). A fixed mmap threshold (32 MiB)
// and trim threshold (256 MiB) make those buffers come from, and return to,
// the heap. Skipped when the user tunes malloc (GLIBC_TUNABLES, MALLOC_*)
// or sets SWITCHAGG_MALLOC_TUNING=0. Process-wide, so it runs once.
#pragma once

#include <malloc.h>

#include <cstdlib>

#include "switchagg/common/config_table.h"
#include "switchagg/common/log.h"

namespace switchagg::agent {

struct MallocTuning {
  bool tune = true;
};

// SWITCHAGG_MALLOC_TUNING's row (listed by switchagg-info).
inline const ConfigTable<MallocTuning>& mallocTuningTable() {
  static const ConfigTable<MallocTuning> t({
      {"malloc.tuning", "SWITCHAGG_MALLOC_TUNING",
       "agent and data clients keep large freed buffers on the heap (mmap threshold 32M, trim "
       "threshold 256M) unless GLIBC_TUNABLES or MALLOC_* tune malloc (false: never)",
       boolField(&MallocTuning::tune)},
  });
  return t;
}

inline void tuneMallocForStreaming() {
  static const bool done = [] {
    MallocTuning opt;
    // A bad value cannot stop a library: it is named and the default kept.
    Status st = mallocTuningTable().applyEnvironment(opt);
    if (!st.ok()) SA_WARN("malloc", "%s; tuning malloc as by default", st.message().c_str());
    if (!opt.tune || std::getenv("GLIBC_TUNABLES") || std::getenv("MALLOC_MMAP_THRESHOLD_") ||
        std::getenv("MALLOC_TRIM_THRESHOLD_"))
      return false;
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
    return true;
  }();
  (void)done;
}

}  // namespace switchagg::agent
