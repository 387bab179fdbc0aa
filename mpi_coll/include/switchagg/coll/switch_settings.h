// The user's settings of the switch path (SWITCHAGG_SWITCH_* variables):
// one table gives each its name, variable, help and parser; the defaults are
// SwitchSettings' initializers. The component reads them with the lease;
// switchagg-info --help lists them.
#pragma once

#include <cstdint>

#include "switchagg/common/config_table.h"

namespace switchagg::coll {

constexpr int64_t kMaxRejoinCalls = 1 << 20;
constexpr int64_t kMaxRejoinMs = int64_t(24) * 3600 * 1000;  // a day

struct SwitchSettings {
  int64_t call_timeout_ms = 2000;  // base bound of one call; + 1 ms per 4 KiB
  uint32_t window_request = 0;     // 0: half of the lease's slots
  uint32_t rejoin_calls = 100;     // 0: a failed switch path stays off
  int64_t rejoin_ms = 60000;       // or after this long, if sooner (0: calls only)
  bool node_leaders = true;        // reduce inside each node; one member per node
  // With node leaders and a lease of R >= 2 agents (rails): R leaders per
  // node, local rank k feeding stripe k to agent k (docs/offload.md "Rail
  // leaders"). Off by default: it serves blocking allreduces and barriers
  // only (one-round-trip completion, the pipeline, nonblocking and routed
  // calls go to the host path while it is on).
  bool rail_leaders = false;
  // Node leaders' pipeline segment; 0: no pipeline. Off by default: on the
  // only fabric measured (emulated, CPU-bound) it was slower than without
  // (benchmarks/results/fabric_leaders.md).
  uint64_t segment_bytes = 0;
  // Calls of at most this many bytes complete on one agent round trip: each
  // member keeps its last result this big for a peer that missed it, and
  // the ranks agree only when a call failed (docs/offload.md "Completion").
  // Larger calls end with the one-byte outcome agreement: from 1 MiB on it
  // measured within 1% of the call on the emulated cluster, below that it
  // cost 6-15% and the copy less (benchmarks/results/oneshot_fabric_large.md).
  uint64_t keep_bytes = uint64_t(1) << 20;
  // Every call ends with the outcome agreement, as before one-round-trip
  // completion (for comparison; benchmarks/oneshot_bench.sh).
  bool agree_every_call = false;
};

inline const ConfigTable<SwitchSettings>& switchSettingsTable() {
  using S = SwitchSettings;
  static const ConfigTable<S> t({
      {"switch.timeout", "SWITCHAGG_SWITCH_TIMEOUT_MS",
       "base bound of one offloaded call (a duration; a bare number is ms), plus 1 ms per 4 KiB",
       durationField(&S::call_timeout_ms, 1, INT64_MAX)},
      {"switch.window", "SWITCHAGG_SWITCH_WINDOW",
       "slots each communicator's group asks for (0: half of the lease's slots)",
       intField(&S::window_request, 0, 1 << 16)},
      {"switch.rejoin_calls", "SWITCHAGG_SWITCH_REJOIN_CALLS",
       "after a switch failure, allreduce calls on the host before the communicator rejoins "
       "(doubling after each failed rejoin; 0: never rejoin)",
       intField(&S::rejoin_calls, 0, kMaxRejoinCalls)},
      {"switch.rejoin_time", "SWITCHAGG_SWITCH_REJOIN_TIME",
       "after a switch failure, the time after which the communicator rejoins if "
       "SWITCHAGG_SWITCH_REJOIN_CALLS calls have not come first (a duration, e.g. 60s; a bare "
       "number is ms; rank 0's clock, checked at agreed calls; doubling after each failed "
       "rejoin; 0: calls only)",
       durationField(&S::rejoin_ms, 0, kMaxRejoinMs)},
      {"switch.leaders", "SWITCHAGG_SWITCH_LEADERS",
       "with several ranks per node, reduce inside each node first and let one leader per "
       "node (its lowest rank) talk to the agent (off: every rank is a member)",
       boolField(&S::node_leaders)},
      {"switch.rail_leaders", "SWITCHAGG_SWITCH_RAIL_LEADERS",
       "with node leaders and a lease of R >= 2 agents (rails), R leaders per node: local rank "
       "k reduces stripe k of the node's vector and streams it to agent k (blocking allreduce "
       "and barrier only; needs R ranks on every node)",
       boolField(&S::rail_leaders)},
      {"switch.segment", "SWITCHAGG_SWITCH_SEGMENT",
       "with node leaders, calls of at least two segments of this size overlap the node's "
       "reduce and broadcast with the agent stream segment by segment (0, the default: never; "
       "1M is a start)",
       sizeField(&S::segment_bytes, 0, uint64_t(1) << 40)},
      {"switch.keep", "SWITCHAGG_SWITCH_KEEP",
       "calls of at most this size complete on one agent round trip (each member keeps its "
       "last result this big for a peer that missed it; agreement only after a failure); "
       "larger calls end with a one-byte outcome agreement (0: every call does)",
       sizeField(&S::keep_bytes, 0, uint64_t(1) << 30)},
      {"switch.agree_every_call", "SWITCHAGG_SWITCH_AGREE_EVERY_CALL",
       "end every switch-path call with the outcome agreement, as before one-round-trip "
       "completion (for comparison only)",
       boolField(&S::agree_every_call)},
  });
  return t;
}

}  // namespace switchagg::coll
