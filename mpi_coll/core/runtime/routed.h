// MPI_Reduce, MPI_Reduce_scatter(_block), MPI_Allgather, MPI_Bcast: the
// switch path's routed calls (SwitchPath::start with a routed SwitchCall)
// when the policy and the path allow, else the previous coll module
// (docs/offload.md "Routed collectives"). Every rank reaches the same outcome for the same call: the
// choice depends only on the call's shape (alike on every rank: sizes,
// dtype, op, root), the parameters and state all ranks agreed on.
#pragma once

#include <cstdint>
#include <string>

#include "dispatch.h"
#include "switch_path.h"

namespace switchagg::coll {

// kServed: the result is in place (through the agent, or trivially: one
// rank or nothing to move). kDeclined: call the previous module with the
// caller's untouched input (after a busy refusal or a failure too, counted).
// kFailed: the outcome agreement itself failed; the communicator is broken.
// `previous_differs` (reductions): the previous module would not follow C
// semantics for the pair, so `auto` prefers the switch when it can serve.
// `previous_wrong` (reductions): it would abort or answer wrongly, so a
// call the switch does not serve runs as a host allreduce (<op>:host).
CallOutcome dispatchRouted(CommState& state, const RoutedArgs& args, bool previous_differs,
                           bool previous_wrong = false);

// Counts a call the glue handed to the previous module without asking the
// core (derived datatype, user-defined op, ...): <op>:previous:<reason>.
void recordRoutedFallback(CommState& state, CollKind op, const char* reason);

// True when `name` is a routed op's counter ("reduce:switch", ...; its
// value in *value, 0 for an unknown <op>:previous:<reason>).
bool routedCounter(const CommState& state, const std::string& name, uint64_t* value);

}  // namespace switchagg::coll
