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
#include <cstring>

namespace switchagg::agent {

inline void tuneMallocForStreaming() {
  static const bool done = [] {
    const char* opt = std::getenv("SWITCHAGG_MALLOC_TUNING");
    if ((opt && std::strcmp(opt, "0") == 0) || std::getenv("GLIBC_TUNABLES") ||
        std::getenv("MALLOC_MMAP_THRESHOLD_") || std::getenv("MALLOC_TRIM_THRESHOLD_"))
      return false;
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
    return true;
  }();
  (void)done;
}

}  // namespace switchagg::agent
