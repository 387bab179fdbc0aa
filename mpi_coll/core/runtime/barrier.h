// MPI_Barrier: the switch path's barrier (SwitchPath::barrier) when the
// policy allows it, else the previous coll module (docs/offload.md
// "Barrier"). Every rank reaches the same outcome for the same call: the
// choice depends only on parameters and on state all ranks agreed on.
#pragma once

#include <cstdint>
#include <string>

#include "dispatch.h"

namespace switchagg::coll {

// Whether the policy sends barriers to the switch path: offload `on` only.
// `auto` keeps the previous module: a switch barrier costs one agent round
// trip plus the outcome agreement (an allgather over the previous module),
// which is never cheaper than the previous module's barrier alone.
bool barrierUsesSwitch(const SelectionPolicy& policy);

Outcome dispatchBarrier(CommState& state);

// True when `name` is a barrier:* counter (its value in *value).
bool barrierCounter(const BarrierCounters& c, const std::string& name, uint64_t* value);

}  // namespace switchagg::coll
