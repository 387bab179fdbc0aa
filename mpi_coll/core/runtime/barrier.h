// MPI_Barrier: the switch path's barrier (SwitchPath::start with a
// barrier SwitchCall) when the policy allows it, else the previous coll
// module (docs/offload.md "Barrier"). Every rank reaches the same outcome for the same call: the
// choice depends only on parameters and on state all ranks agreed on.
#pragma once

#include <cstdint>
#include <string>

#include "dispatch.h"

namespace switchagg::coll {

// The choice is barrierUsesSwitch (selector.h): offload `on` only.
CallOutcome dispatchBarrier(CommState& state);

// True when `name` is a barrier:* counter (its value in *value).
bool barrierCounter(const BarrierCounters& c, const std::string& name, uint64_t* value);

}  // namespace switchagg::coll
