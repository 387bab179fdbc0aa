// Per-call dispatch: the one place that decides who serves an
// MPI_Allreduce. Candidates come ranked from the selector; each is tried in
// turn (a candidate may decline) and the previous coll module ends the list.
#pragma once

#include "call_outcome.h"
#include "comm_state.h"
#include "host_algorithms.h"

namespace switchagg::coll {

// How a dispatched call ends (call_outcome.h): kDone (the result is in
// args.recv), kDeclined (nothing touched: the glue calls the previous
// module) or kError (communication failed mid-way: the glue returns an MPI
// error). Every rank of the communicator reaches the same outcome for the
// same call:
// decisions depend only on (count, dtype, op, communicator, parameters) and
// on state all ranks agreed on at setup.
// `previous_differs`: the previous module's answer would not follow C
// semantics for this dtype/op, so when the ranking puts it first (and the
// user did not force it) the cheapest host algorithm serves instead.
CallOutcome dispatchAllreduce(CommState& comm, const AllreduceArgs& args, bool previous_differs);
// An allreduce of count > 0 on more than one rank while the policy forces
// the previous module: counted as dispatchAllreduce counts it (kDeclined),
// kError on a broken communicator. No setup, no selection.
CallOutcome countForcedPrevious(CommState& comm, Dtype dtype, Op op);
// The call on the host algorithm the cost model rates fastest for it (the
// same choice on every rank), over the communicator's own transport; for a
// redo that must not call the previous module (a glue's progress thread).
// kUnsupported when the communicator has no host path.
Status runCheapestHost(CommState& comm, const AllreduceArgs& args);
// A reduction's part the same way: the cheapest host allreduce of the
// whole vector (`total` elements of `input`, reduced in a copy), then
// `part` elements from element `at` into `recv` (0: nothing kept here).
// For a reduce or reduce-scatter the previous module must not serve.
Status runPartOnHost(CommState& comm, const void* input, void* recv, size_t total, size_t at,
                     size_t part, Dtype dtype, Op op);

}  // namespace switchagg::coll
