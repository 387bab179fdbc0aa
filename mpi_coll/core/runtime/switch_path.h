// The slot for the switch candidate (issue 5: offload to the switch agent).
// Dispatch asks it two things per call and knows nothing else about it:
//
//   describe()   fills SelectionInput's switch fields (available, window,
//                slot bytes) so the selector can rank `switch`;
//   allreduce()  runs the call when `switch` is tried.
//
// Both must give the same answer on every rank of the communicator for the
// same call, as every candidate must (see dispatch.cc).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "cost_model.h"
#include "host_algorithms.h"
#include "switchagg/common/status.h"

namespace switchagg::coll {

class CommState;

class SwitchPath {
 public:
  virtual ~SwitchPath() = default;
  virtual void describe(const AllreduceArgs& args, SelectionInput* in) = 0;
  // Ok: the result is in args.recv. kUnsupported: declined before anything
  // was touched, on every rank alike -> dispatch tries the next candidate.
  // Anything else: the call failed (dispatch reports it; issue 5 requires
  // the switch path to recover on the host itself instead of failing).
  virtual Status allreduce(const AllreduceArgs& args) = 0;
  // Counters the switch path keeps (issue 5: "switch:bytes_sent",
  // "fallback:switch-failed", ...; docs/offload.md). False: not one of its
  // names, the caller looks elsewhere.
  virtual bool counter(const std::string& /*name*/, uint64_t* /*value*/) const { return false; }
  // Changes, alike on every rank, whenever the path fails or rejoins: what
  // online tuning measured of it before no longer holds.
  virtual uint64_t epoch() const { return 0; }
};

// The switch path for a communicator, or nullptr when this build or this
// job has none (no lease in the environment). Called once per communicator,
// after its address exchange.
std::unique_ptr<SwitchPath> createSwitchPath(CommState& comm);

}  // namespace switchagg::coll
