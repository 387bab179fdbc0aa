#include "barrier.h"

#include "counter_names.h"
#include "process_runtime.h"
#include "switch_path.h"
#include "switchagg/common/log.h"

namespace switchagg::coll {

CallOutcome dispatchBarrier(CommState& state) {
  BarrierCounters& c = state.barrierCounters();
  if (state.broken()) return CallOutcome::kError;
  if (state.size() == 1) {
    ++c.local;
    return CallOutcome::kDone;
  }
  if (!barrierUsesSwitch(ProcessRuntime::instance().params().policy)) {
    ++c.previous;
    ++c.selected;
    return CallOutcome::kDeclined;
  }
  // Collective on first use, as for an allreduce: every rank calls it.
  state.ensureSetup();
  SwitchPath* sw = state.switchPath();
  if (sw == nullptr) {
    ++c.previous;
    ++c.unavailable;
    return CallOutcome::kDeclined;
  }
  sw->rejoinIfDue();
  CallOutcome how = CallOutcome::kDone;
  Status st = sw->start(SwitchCall::ofBarrier({}, /*stream=*/false), &how);
  if (st.code() == Code::kUnsupported) {
    ++c.previous;
    ++c.unavailable;
    return CallOutcome::kDeclined;
  }
  if (!st.ok()) {
    // The agreement itself failed: the ranks may now disagree.
    state.markBroken();
    SA_ERROR("coll", "comm %s rank %d: switch barrier failed: %s; returning MPI_ERR_OTHER",
             state.name().c_str(), state.rank(), st.toString().c_str());
    return CallOutcome::kError;
  }
  switch (how) {
    case CallOutcome::kDone: ++c.switched; break;
    case CallOutcome::kBusy: ++c.busy; break;
    default: ++c.failed; break;  // kFailed (a path says done, busy or failed)
  }
  return CallOutcome::kDone;
}

bool barrierCounter(const BarrierCounters& c, const std::string& name, uint64_t* value) {
  using B = BarrierCounters;
  std::string key;
  return counterKey(name, "barrier:", &key) &&
         counterField<B>(c, key,
                         {{"local", &B::local}, {"switch", &B::switched},
                          {"switch-failed", &B::failed}, {"switch-busy", &B::busy},
                          {"previous", &B::previous}, {"previous:selected", &B::selected},
                          {"previous:unavailable", &B::unavailable}},
                         value);
}

}  // namespace switchagg::coll
