// MPI_Iallreduce's core side (iallreduce.h): the route of a posted call and
// the switch stream in steps. The glue runs the queue, the agreement and the
// redo through Open MPI; a host without MPI of its own (the PMPI layer's
// threads) runs them over the communicator's transport:
// nonblocking/nonblocking_host.cc.
#include "iallreduce.h"

#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "coll_core_internal.h"
#include "counter_names.h"
#include "dispatch.h"
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
  sw->describe(SwitchCall::ofAllreduce(args, /*stream=*/true), &in);
  if (!in.switch_available) return routePrevious(c, "switch cannot stream");
  // The host algorithms have no nonblocking form: the switch serves when
  // the selector ranks it before the previous module (offload=on always),
  // or, under offload=auto, when the blocking calls of this size, once
  // settled, measured it no slower than every other path (the previous
  // module's nonblocking allreduce runs a host schedule, which the best
  // measured host path stands for): a nonblocking call cannot be timed
  // call by call (its wait is the application's), so it inherits their
  // measurements (Tuner::settledNonblocking). Alike on every rank
  // (settling and the times are agreed; calls of a communicator come in
  // one order).
  const Decision& d = state.decide(in);
  if (Tuner* tuner = state.tuner(); tuner != nullptr && d.tunable) {
    if (auto path = tuner->settledNonblocking(in.bytes, in.switch_available, sw->epoch())) {
      ++c.inherited;
      if (*path == Algorithm::kSwitch) return SWITCHAGG_COLL_IROUTE_SWITCH;
      return routePrevious(c, "tuned: the blocking calls of this size measured a host path faster");
    }
  }
  for (Algorithm a : d.ranked) {
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
  sw->describe(SwitchCall::ofBarrier(args, /*stream=*/true), &in);
  if (!in.switch_available) return routePrevious(c, "switch cannot stream");
  return SWITCHAGG_COLL_IROUTE_SWITCH;
}

// `count`: bytes (allgather: one rank's block; bcast: the buffer) or, for
// reduce_scatter_block, one rank's elements of dtype/op (`counts` holds
// them per rank for the call's lifetime here).
RoutedArgs iroutedArgs(const switchagg_coll_comm& comm, int routed_op, const void* send,
                       void* recv, size_t count, int dtype, int op, int root,
                       std::vector<size_t>* counts) {
  RoutedArgs args;
  args.op = static_cast<CollKind>(routed_op);
  args.send = send;
  args.recv = recv;
  args.count = count;
  args.root = root;
  if (args.op == SWITCHAGG_COLL_REDUCE_SCATTER_BLOCK) {
    counts->assign(size_t(comm.state.size()), count);
    args.counts = counts->data();
    args.dtype = static_cast<Dtype>(dtype);
    args.reduce_op = static_cast<Op>(op);
  }
  return args;
}

// As route(), for a routed call (docs/offload.md "MPI_Iallreduce"): the
// blocking routed call's choice (chooseRouted) on the path's state that
// every rank had agreed before the call was posted.
int routeRouted(switchagg_coll_comm& comm, IallreduceCounters& c, const RoutedArgs& args) {
  CommState& state = comm.state;
  ++c.calls;
  if (state.broken()) return SWITCHAGG_COLL_IROUTE_FAILED;
  const size_t bytes = routedVectorBytes(args, state.size());
  if (bytes == 0 || state.size() == 1) {
    ++c.local;
    return SWITCHAGG_COLL_IROUTE_LOCAL;
  }
  const SelectionPolicy& policy = ProcessRuntime::instance().params().policy;
  if (policy.offload == Offload::kOff) return routePrevious(c, "selected");
  state.ensureSetup();
  SwitchPath* sw = state.switchPath();
  if (sw == nullptr) return routePrevious(c, "no switch path");
  SelectionInput in = state.callShape(args.op == SWITCHAGG_COLL_ALLGATHER ? args.count : bytes,
                                      args.dtype, args.reduce_op);
  if (const char* why = sw->describe(SwitchCall::ofRouted(args, /*stream=*/true), &in))
    return routePrevious(c, why);
  if (!chooseRouted(args.op, in, ProcessRuntime::instance().selector().model(), policy).use_switch)
    return routePrevious(c, "selected");
  return SWITCHAGG_COLL_IROUTE_SWITCH;
}

// A step from a progress callback must not run inside a blocking switchagg
// call on this thread (UCX is not re-entrant) nor, with threads, while
// another thread holds the communicator's domain.
class StepScope {
 public:
  explicit StepScope(const switchagg_coll_comm& comm)
      : gate_(ProcessRuntime::instance().gate(comm.state.domain())) {}
  bool allowed() const {
    return gate_.held() &&
           (ucx::ThreadGate::enabled() || ProcessRuntime::instance().inCall() == 0);
  }

 private:
  ucx::ThreadGate::TryHold gate_;
};

// The counters of the stream running on `comm` (set when it started).
IallreduceCounters& streamCounters(switchagg_coll_comm& comm) { return *comm.istream; }

// A started or stepped stream's answer (SwitchPath::start, step): pending
// (still streaming), or this rank's outcome.
int streamResult(const Status& st, CallOutcome how) {
  if (st.code() == Code::kInProgress) return SWITCHAGG_OUTCOME_PENDING;
  return outcomeInt(st.ok() ? how : CallOutcome::kFailed);
}

// A stream's start, counted in `c` (the running stream's counters from now
// on).
int startCounted(switchagg_coll_comm& comm, IallreduceCounters& c, const SwitchCall& call) {
  StepScope step(comm);
  if (!step.allowed()) return SWITCHAGG_OUTCOME_NOT_NOW;
  ProcessRuntime::CallScope in_call(comm.state.domain());
  return guarded<int>("istream start", SWITCHAGG_OUTCOME_DECLINED, [&] {
    SwitchPath* sw = comm.state.switchPath();
    comm.istream = &c;
    CallOutcome how = CallOutcome::kFailed;
    Status st = sw ? sw->start(call, &how) : Status(Code::kUnsupported, "no path");
    if (st.code() == Code::kUnsupported) {
      // The path failed on an earlier call (every rank agreed to that).
      ++c.redo;
      ++c.events["redo:switch-unavailable"];
      return static_cast<int>(SWITCHAGG_OUTCOME_DECLINED);
    }
    ++c.steps;
    return streamResult(st, how);
  });
}

}  // namespace

bool iallreduceCounter(const IallreduceCounters& c, const std::string& prefix,
                       const std::string& name, uint64_t* value) {
  using I = IallreduceCounters;
  std::string key;
  if (!counterKey(name, prefix, &key)) return false;
  if (!counterField<I>(c, key,
                       {{"calls", &I::calls}, {"local", &I::local}, {"switch", &I::switched},
                        {"previous", &I::previous}, {"redo", &I::redo}, {"steps", &I::steps},
                         {"inherited", &I::inherited}, {"agreements", &I::agreements}, {"agreement_us", &I::agreement_us}},
                       value))
    *value = countOf(c.events, key);
  return true;
}

}  // namespace switchagg::coll

using switchagg::Dtype;
using switchagg::Op;
using switchagg::coll::AllreduceArgs;
using switchagg::coll::ProcessRuntime;
using switchagg::coll::SwitchCall;
using switchagg::coll::SwitchPath;
using switchagg::coll::CallOutcome;
using switchagg::coll::outcomeInt;
using switchagg::Status;
using switchagg::Code;

extern "C" {

int switchagg_coll_iallreduce_route(switchagg_coll_comm_t* comm, const void* send, void* recv,
                                    size_t count, int dtype, int op) {
  ProcessRuntime::CallScope in_call(comm->state.domain());
  return switchagg::coll::guarded<int>("iallreduce", SWITCHAGG_COLL_IROUTE_FAILED, [&] {
    AllreduceArgs args{send, recv, count, static_cast<Dtype>(dtype), static_cast<Op>(op)};
    return switchagg::coll::route(*comm, args);
  });
}

int switchagg_coll_ibarrier_route(switchagg_coll_comm_t* comm) {
  ProcessRuntime::CallScope in_call(comm->state.domain());
  return switchagg::coll::guarded<int>("ibarrier", SWITCHAGG_COLL_IROUTE_FAILED,
                                       [&] { return switchagg::coll::routeBarrier(*comm); });
}


int switchagg_coll_irouted_route(switchagg_coll_comm_t* comm, int routed_op, size_t count,
                                 int dtype, int op, int root) {
  ProcessRuntime::CallScope in_call(comm->state.domain());
  return switchagg::coll::guarded<int>("irouted", SWITCHAGG_COLL_IROUTE_FAILED, [&] {
    switchagg::coll::IallreduceCounters* c = switchagg::coll::iroutedCounters(*comm, routed_op);
    if (c == nullptr) return static_cast<int>(SWITCHAGG_COLL_IROUTE_FAILED);
    std::vector<size_t> counts;
    return switchagg::coll::routeRouted(
        *comm, *c,
        switchagg::coll::iroutedArgs(*comm, routed_op, nullptr, nullptr, count, dtype, op, root,
                                     &counts));
  });
}

int switchagg_coll_istream_start(switchagg_coll_comm_t* comm, int kind, const void* send,
                                 void* recv, size_t count, int dtype, int op, int root) {
  switchagg::coll::IallreduceCounters* c = switchagg::coll::icounters(*comm, kind);
  if (c == nullptr) return SWITCHAGG_OUTCOME_DECLINED;
  if (switchagg_coll_kind_is_routed(kind)) {
    std::vector<size_t> counts;  // copied by the path (SwitchPath::start)
    const switchagg::coll::RoutedArgs args = switchagg::coll::iroutedArgs(
        *comm, kind, send, recv, count, dtype, op, root, &counts);
    return switchagg::coll::startCounted(*comm, *c, SwitchCall::ofRouted(args, /*stream=*/true));
  }
  AllreduceArgs args{send, recv, count, static_cast<Dtype>(dtype), static_cast<Op>(op)};
  return switchagg::coll::startCounted(*comm, *c,
                                       kind == SWITCHAGG_COLL_BARRIER
                                           ? SwitchCall::ofBarrier(args, /*stream=*/true)
                                           : SwitchCall::ofAllreduce(args, /*stream=*/true));
}

int switchagg_coll_istream_step(switchagg_coll_comm_t* comm) {
  switchagg::coll::StepScope step(*comm);
  if (!step.allowed()) return SWITCHAGG_OUTCOME_NOT_NOW;
  ProcessRuntime::CallScope in_call(comm->state.domain());
  return switchagg::coll::guarded<int>("iallreduce step", SWITCHAGG_OUTCOME_FAILED, [&] {
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
      CallOutcome how = CallOutcome::kFailed;
      const switchagg::Status st = sw->step(&how);
      rc = switchagg::coll::streamResult(st, how);
    } while (rc == SWITCHAGG_OUTCOME_PENDING && switchagg::coll::nowUs() < until);
    return rc;
  });
}

int switchagg_coll_istream_settle(switchagg_coll_comm_t* comm, int outcome) {
  switchagg::coll::StepScope step(*comm);
  SwitchPath* sw = comm->state.switchPath();
  if (!sw || !sw->settles()) {
    comm->istream_agree_start_us = switchagg::coll::nowUs();
    return SWITCHAGG_OUTCOME_PENDING;
  }
  // Recovery waits on the process's worker: not inside a blocking call.
  if (outcome != SWITCHAGG_OUTCOME_DONE && !step.allowed()) return SWITCHAGG_OUTCOME_NOT_NOW;
  ProcessRuntime::CallScope in_call(comm->state.domain());
  return switchagg::coll::guarded<int>("iallreduce settle", SWITCHAGG_OUTCOME_ERROR, [&] {
    CallOutcome settled = CallOutcome::kFailed;
    switchagg::Status st = sw->settle(static_cast<CallOutcome>(outcome), &settled);
    // Only an end every rank sees alike settles the call.
    if (st.ok() && (settled == CallOutcome::kDone || settled == CallOutcome::kBusy ||
                    settled == CallOutcome::kFailed))
      return outcomeInt(settled);
    if (st.ok())
      st = Status(Code::kInternal, std::string("settled as '") +
                                       switchagg::coll::callOutcomeName(settled) + "'");
    // Bounded waits that ran out (a node step, recovery): say what for.
    SA_ERROR("coll",
             "comm %s rank %d: a nonblocking switch call ended without an outcome: %s; the "
             "request completes with MPI_ERR_OTHER",
             comm->state.name().c_str(), comm->state.rank(), st.toString().c_str());
    return static_cast<int>(SWITCHAGG_OUTCOME_ERROR);
  });
}

int switchagg_coll_istream_end(switchagg_coll_comm_t* comm, int agreed, int first_rank) {
  ProcessRuntime::CallScope in_call(comm->state.domain());
  return switchagg::coll::guarded<int>("iallreduce end", int(SWITCHAGG_OUTCOME_FAILED), [&] {
    switchagg::coll::IallreduceCounters& c = switchagg::coll::streamCounters(*comm);
    if (comm->istream_agree_start_us > 0) {
      ++c.agreements;
      c.agreement_us += static_cast<uint64_t>(switchagg::coll::nowUs() - comm->istream_agree_start_us);
      comm->istream_agree_start_us = 0;
    }
    const CallOutcome end =
        comm->state.switchPath()->finish(static_cast<CallOutcome>(agreed), first_rank);
    if (end == CallOutcome::kDone) {
      ++c.switched;
      return outcomeInt(end);
    }
    ++c.redo;
    ++c.events[end == CallOutcome::kBusy ? "redo:switch-busy" : "redo:switch-failed"];
    return outcomeInt(end);
  });
}

void switchagg_coll_inote(switchagg_coll_comm_t* comm, int kind, const char* what) {
  switchagg::coll::guarded<int>("nonblocking note", 0, [&] {
    if (switchagg::coll::IallreduceCounters* c = switchagg::coll::icounters(*comm, kind))
      switchagg::coll::noteEvent(*c, what);
    return 0;
  });
}

}  // extern "C"
