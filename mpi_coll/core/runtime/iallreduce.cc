// MPI_Iallreduce's core side (iallreduce.h): the route of a posted call and
// the switch stream in steps. The glue runs the queue, the agreement and the
// redo through Open MPI.
#include "iallreduce.h"

#include <exception>

#include "coll_core_internal.h"
#include "counter_names.h"
#include "process_runtime.h"
#include "selector.h"
#include "switch_path.h"
#include "switchagg/common/log.h"
#include "switchagg/common/reduce.h"
#include "switchagg/ucx/thread_gate.h"

namespace switchagg::coll {
namespace {

// How long one progress callback may step a stream (see istream_step).
constexpr double kStepBudgetUs = 50;

// An event <prefix><what>; a call posted to the previous module
// ("previous:<reason>", by the core's route or the glue) is one of
// <prefix>previous as well (docs/offload.md's counter table).
void noteEvent(IallreduceCounters& c, const std::string& what) {
  ++c.events[what];
  if (what.rfind("previous:", 0) == 0) ++c.previous;
}

int routePrevious(IallreduceCounters& c, const char* why) {
  noteEvent(c, std::string("previous:") + why);
  return SWITCHAGG_COLL_IROUTE_PREVIOUS;
}

int route(switchagg_coll_comm& comm, const AllreduceArgs& args) {
  CommState& state = comm.state;
  IallreduceCounters& c = comm.iallreduce;
  ++c.calls;
  if (state.broken()) return SWITCHAGG_COLL_IROUTE_FAILED;
  if (args.count == 0 || state.size() == 1) {
    copyInput(args);
    ++c.local;
    return SWITCHAGG_COLL_IROUTE_LOCAL;
  }
  if (!reduceSupported(args.dtype, args.op)) return routePrevious(c, "op not defined on datatype");
  // Collective on first use, as for MPI_Allreduce: posting is in the same
  // order on every rank.
  state.ensureSetup();
  SwitchPath* sw = state.switchPath();
  if (sw == nullptr) return routePrevious(c, "no switch path");
  SelectionInput in = state.callShape(args.count * dtypeSize(args.dtype), args.dtype, args.op);
  sw->describeStream(args, &in);
  if (!in.switch_available) return routePrevious(c, "switch cannot stream");
  // The host algorithms have no nonblocking form: the switch serves when
  // the selector ranks it before the previous module (offload=on always).
  for (Algorithm a : state.decide(in).ranked) {
    if (a == Algorithm::kSwitch) return SWITCHAGG_COLL_IROUTE_SWITCH;
    if (a == Algorithm::kPrevious) break;
  }
  return routePrevious(c, "selected");
}

int routeBarrier(switchagg_coll_comm& comm) {
  CommState& state = comm.state;
  IallreduceCounters& c = comm.ibarrier;
  ++c.calls;
  if (state.broken()) return SWITCHAGG_COLL_IROUTE_FAILED;
  if (state.size() == 1) {
    ++c.local;
    return SWITCHAGG_COLL_IROUTE_LOCAL;
  }
  // The blocking barrier's policy (offload on), decided alike on every rank.
  if (!barrierUsesSwitch(ProcessRuntime::instance().params().policy))
    return routePrevious(c, "selected");
  state.ensureSetup();
  SwitchPath* sw = state.switchPath();
  if (sw == nullptr) return routePrevious(c, "no switch path");
  const int32_t one = 1;
  int32_t entered = 0;
  const AllreduceArgs args{&one, &entered, 1, Dtype::kInt32, Op::kSum};
  SelectionInput in = state.callShape(sizeof one, Dtype::kInt32, Op::kSum);
  sw->describeStream(args, &in);
  if (!in.switch_available) return routePrevious(c, "switch cannot stream");
  return SWITCHAGG_COLL_IROUTE_SWITCH;
}

// A step from a progress callback must not run inside a blocking switchagg
// call on this thread (UCX is not re-entrant) nor, with threads, while
// another thread holds the gate.
class StepScope {
 public:
  bool allowed() const {
    return gate_.held() &&
           (ucx::ThreadGate::enabled() || ProcessRuntime::instance().inCall() == 0);
  }

 private:
  ucx::ThreadGate::TryHold gate_;
};

// The counters of the stream running on `comm` (an Iallreduce's or an
// Ibarrier's: set when it started).
IallreduceCounters& streamCounters(switchagg_coll_comm& comm) {
  return comm.istream_barrier ? comm.ibarrier : comm.iallreduce;
}

int streamResult(const Status& st, int* outcome) {
  if (st.code() == Code::kInProgress) return SWITCHAGG_COLL_ISTREAM_RUNNING;
  *outcome = st.ok() ? SwitchPath::kStreamOk
                     : st.code() == Code::kBusy ? SwitchPath::kStreamBusy : SwitchPath::kStreamFailed;
  return SWITCHAGG_COLL_ISTREAM_OUTCOME;
}

}  // namespace

bool iallreduceCounter(const IallreduceCounters& c, const std::string& prefix,
                       const std::string& name, uint64_t* value) {
  using I = IallreduceCounters;
  std::string key;
  if (!counterKey(name, prefix, &key)) return false;
  if (!counterField<I>(c, key,
                       {{"calls", &I::calls}, {"local", &I::local}, {"switch", &I::switched},
                        {"previous", &I::previous}, {"redo", &I::redo}, {"steps", &I::steps}},
                       value))
    *value = countOf(c.events, key);
  return true;
}

}  // namespace switchagg::coll

using switchagg::Dtype;
using switchagg::Op;
using switchagg::coll::AllreduceArgs;
using switchagg::coll::ProcessRuntime;
using switchagg::coll::SwitchPath;

extern "C" {

int switchagg_coll_iallreduce_route(switchagg_coll_comm_t* comm, const void* send, void* recv,
                                    size_t count, int dtype, int op) {
  ProcessRuntime::CallScope in_call;
  return switchagg::coll::guarded<int>("iallreduce", SWITCHAGG_COLL_IROUTE_FAILED, [&] {
    AllreduceArgs args{send, recv, count, static_cast<Dtype>(dtype), static_cast<Op>(op)};
    return switchagg::coll::route(*comm, args);
  });
}

int switchagg_coll_ibarrier_route(switchagg_coll_comm_t* comm) {
  ProcessRuntime::CallScope in_call;
  return switchagg::coll::guarded<int>("ibarrier", SWITCHAGG_COLL_IROUTE_FAILED,
                                       [&] { return switchagg::coll::routeBarrier(*comm); });
}

int switchagg_coll_istream_start(switchagg_coll_comm_t* comm, const void* send, void* recv,
                                 size_t count, int dtype, int op, int barrier, int* outcome) {
  switchagg::coll::StepScope step;
  if (!step.allowed()) return SWITCHAGG_COLL_ISTREAM_NOT_NOW;
  ProcessRuntime::CallScope in_call;
  return switchagg::coll::guarded<int>("iallreduce start", SWITCHAGG_COLL_ISTREAM_DECLINED, [&] {
    SwitchPath* sw = comm->state.switchPath();
    comm->istream_barrier = barrier != 0;
    switchagg::coll::IallreduceCounters& c = switchagg::coll::streamCounters(*comm);
    AllreduceArgs args{send, recv, count, static_cast<Dtype>(dtype), static_cast<Op>(op)};
    switchagg::Status st = sw ? sw->startStream(args, comm->istream_barrier)
                              : switchagg::Status(switchagg::Code::kUnsupported, "no path");
    if (st.code() == switchagg::Code::kUnsupported) {
      // The path failed on an earlier call (every rank agreed to that).
      ++c.redo;
      ++c.events["redo:switch-unavailable"];
      return static_cast<int>(SWITCHAGG_COLL_ISTREAM_DECLINED);
    }
    ++c.steps;
    return switchagg::coll::streamResult(st, outcome);
  });
}

int switchagg_coll_istream_step(switchagg_coll_comm_t* comm, int* outcome) {
  switchagg::coll::StepScope step;
  if (!step.allowed()) return SWITCHAGG_COLL_ISTREAM_NOT_NOW;
  ProcessRuntime::CallScope in_call;
  return switchagg::coll::guarded<int>("iallreduce step", SWITCHAGG_COLL_ISTREAM_OUTCOME, [&] {
    *outcome = SwitchPath::kStreamFailed;
    // One step sends what the window allows and drives the clients' worker
    // once; a 256 KiB chunk over TCP takes many. A code that calls MPI_Test
    // every few hundred microseconds would stream at one step per test, so
    // each progress call steps for up to kStepBudgetUs (or to the end).
    SwitchPath* sw = comm->state.switchPath();
    const double until = switchagg::coll::nowUs() + switchagg::coll::kStepBudgetUs;
    int rc;
    switchagg::coll::IallreduceCounters& c = switchagg::coll::streamCounters(*comm);
    do {
      ++c.steps;
      rc = switchagg::coll::streamResult(sw->stepStream(), outcome);
    } while (rc == SWITCHAGG_COLL_ISTREAM_RUNNING && switchagg::coll::nowUs() < until);
    return rc;
  });
}

int switchagg_coll_istream_settle(switchagg_coll_comm_t* comm, int outcome, int* agreed) {
  switchagg::coll::StepScope step;
  SwitchPath* sw = comm->state.switchPath();
  if (!sw || !sw->streamSettles()) return SWITCHAGG_COLL_ISETTLE_AGREE;
  // Recovery waits on the process's worker: not inside a blocking call.
  if (outcome != SwitchPath::kStreamOk && !step.allowed()) return SWITCHAGG_COLL_ISETTLE_NOT_NOW;
  ProcessRuntime::CallScope in_call;
  return switchagg::coll::guarded<int>("iallreduce settle", SWITCHAGG_COLL_ISETTLE_ERROR, [&] {
    switchagg::Status st = sw->settleStream(outcome, agreed);
    return static_cast<int>(st.ok() ? SWITCHAGG_COLL_ISETTLE_SETTLED : SWITCHAGG_COLL_ISETTLE_ERROR);
  });
}

int switchagg_coll_istream_end(switchagg_coll_comm_t* comm, int agreed, int first_rank) {
  ProcessRuntime::CallScope in_call;
  return switchagg::coll::guarded<int>("iallreduce end", 1, [&] {
    switchagg::coll::IallreduceCounters& c = switchagg::coll::streamCounters(*comm);
    switchagg::Status st = comm->state.switchPath()->endStream(agreed, first_rank);
    if (st.ok()) {
      ++c.switched;
      return 0;
    }
    ++c.redo;
    ++c.events[agreed == SwitchPath::kStreamBusy ? "redo:switch-busy" : "redo:switch-failed"];
    return 1;
  });
}

void switchagg_coll_iallreduce_note(switchagg_coll_comm_t* comm, const char* what) {
  switchagg::coll::guarded<int>("iallreduce note", 0, [&] {
    switchagg::coll::noteEvent(comm->iallreduce, what);
    return 0;
  });
}

void switchagg_coll_ibarrier_note(switchagg_coll_comm_t* comm, const char* what) {
  switchagg::coll::guarded<int>("ibarrier note", 0, [&] {
    switchagg::coll::noteEvent(comm->ibarrier, what);
    return 0;
  });
}

}  // extern "C"
