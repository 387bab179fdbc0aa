#include "dispatch.h"

#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <utility>
#include <vector>

#include "process_runtime.h"
#include "switch_path.h"
#include "switchagg/common/log.h"
#include "switchagg/common/reduce.h"
#include "switchagg/common/test_hooks.h"

namespace switchagg::coll {
namespace {

// Test-only fault point (common/test_hooks.h; never set in production):
// SWITCHAGG_TEST_EXIT_AFTER_SENDS=RANK:CALL. Communicator rank RANK runs
// its CALL-th host-algorithm allreduce over this wrapper, which SIGKILLs the
// process at the first completed wait after a send was posted: the peer's
// sends are in flight and a neighbour is inside the call (it sent what the
// wait received), as when a process dies mid-call. One line on stderr first,
// with the wall-clock time, so a test can measure the survivors' detection.
class ExitAfterSendsComm final : public HostComm {
 public:
  ExitAfterSendsComm(std::unique_ptr<HostComm> inner, uint64_t call)
      : inner_(std::move(inner)), call_(call) {}
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  Status postSend(int peer, uint32_t tag, const void* data, size_t bytes, Handle* h) override {
    Status st = inner_->postSend(peer, tag, data, bytes, h);
    if (st.ok() && bytes > 0) ++sends_;
    return st;
  }
  Status postRecv(int peer, uint32_t tag, void* data, size_t bytes, Handle* h) override {
    return inner_->postRecv(peer, tag, data, bytes, h);
  }
  Status wait(Handle h) override { return dieIfSent(inner_->wait(h)); }
  Status test(Handle h, bool* done) override {
    Status st = inner_->test(h, done);
    return *done ? dieIfSent(st) : st;
  }
  Status waitAll() override { return dieIfSent(inner_->waitAll()); }

 private:
  Status dieIfSent(Status st) {
    if (sends_ == 0) return st;
    const long long ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
    std::fprintf(stderr,
                 "switchagg[coll] warning: test fault point SWITCHAGG_TEST_EXIT_AFTER_SENDS: rank "
                 "%d killed inside host allreduce call %llu after posting %zu sends (at %lld ms)\n",
                 rank(), static_cast<unsigned long long>(call_), sends_, ms);
    std::fflush(stderr);
    raise(SIGKILL);
    return st;
  }

  std::unique_ptr<HostComm> inner_;
  uint64_t call_;
  size_t sends_ = 0;
};

// The host comm for one host-algorithm call, wrapped by the fault point
// when it is armed for this rank and call.
std::unique_ptr<HostComm> hostCommFor(CommState& state) {
  static const TestExitAfterSends want = [] {
    TestHooks hooks;
    (void)testHooksTable().applyEnvironment(hooks, "test.exit_after_sends");  // bad: off
    return hooks.exit_after_sends;
  }();
  std::unique_ptr<HostComm> comm = state.hostComm();
  if (want.rank < 0 || want.rank != state.rank()) return comm;
  uint64_t call = 1;  // this call: the host-algorithm calls served before it, plus one
  for (const AlgorithmInfo* info : algorithmsInTieOrder())
    if (info->run != nullptr) call += state.counters().served[static_cast<size_t>(info->id)];
  if (call != want.call) return comm;
  return std::make_unique<ExitAfterSendsComm>(std::move(comm), call);
}

Status runHost(CommState& state, Algorithm a, const AllreduceArgs& args) {
  const HostRunFn run = algorithmInfo(a).run;
  if (run == nullptr) return Status(Code::kInternal, "not a host algorithm");
  std::unique_ptr<HostComm> comm = hostCommFor(state);
  return run(*comm, args, state.layout());
}

SelectionInput describeCall(const CommState& state, const AllreduceArgs& args) {
  SelectionInput in = state.callShape(args.count * dtypeSize(args.dtype), args.dtype, args.op);
  if (const SwitchPath* sw = state.switchPath())
    sw->describe(SwitchCall::ofAllreduce(args, /*stream=*/false), &in);
  in.threads = ProcessRuntime::mpiThreads();
  return in;
}

void announce(CommState& state, Algorithm a, const SelectionInput& in, const char* reason) {
  if (state.rank() != 0) return;
  // verbose 1: the first time each path serves on this communicator;
  // verbose 2: every call.
  const bool first = state.counters().served[static_cast<size_t>(a)] == 0;
  const LogLevel level = first ? LogLevel::kInfo : LogLevel::kDebug;
  SWITCHAGG_LOG(level, "coll", "comm %s: allreduce %zu bytes (%s %s) -> %s (%s)",
                state.name().c_str(), in.bytes, dtypeName(in.dtype), opName(in.op),
                algorithmName(a), reason);
}

// The host algorithm the cost model rates fastest for this call (equal
// times: the first in tie order).
Algorithm cheapestHost(const SelectionInput& in) {
  const CostModel& model = ProcessRuntime::instance().selector().model();
  const AlgorithmInfo* best = nullptr;
  double best_us = 0;
  for (const AlgorithmInfo* info : algorithmsInTieOrder()) {
    if (info->run == nullptr) continue;
    const double us = model.predictUs(info->id, in);
    if (best == nullptr || us < best_us) {
      best = info;
      best_us = us;
    }
  }
  return best->id;
}

CallOutcome fail(CommState& state, Algorithm a, const Status& st) {
  state.markBroken();
  SA_ERROR("coll", "comm %s rank %d: %s allreduce failed: %s; returning MPI_ERR_OTHER (%s)",
           state.name().c_str(), state.rank(), algorithmName(a), st.toString().c_str(),
           st.code() == Code::kTimeout ? "a step stalled past coll_switchagg_stall_timeout"
                                       : "a peer failed, the result would be wrong");
  return CallOutcome::kError;
}

// What trying one candidate came to: kDone (it served), kError (it failed:
// the MPI error path) or kDeclined (the next candidate serves; for
// kPrevious, the previous module does and dispatch stops there).
CallOutcome tryCandidate(CommState& state, Algorithm a, const AllreduceArgs& args,
                  const SelectionInput& in, const char* reason) {
  if (a == Algorithm::kPrevious) {
    announce(state, a, in, reason);
    state.recordFallback(state.hostReady() ? kFallbackSelected : "host path unavailable");
    return CallOutcome::kDeclined;
  }
  if (a == Algorithm::kSwitch) {
    SwitchPath* sw = state.switchPath();
    if (!sw) return CallOutcome::kDeclined;
    CallOutcome how = CallOutcome::kDone;
    Status st = sw->start(SwitchCall::ofAllreduce(args, /*stream=*/false), &how);
    if (st.code() == Code::kUnsupported) return CallOutcome::kDeclined;
    if (!st.ok()) return fail(state, a, st);
    announce(state, a, in, reason);  // only once it served: it may have declined
  } else {
    if (!state.hostReady()) return CallOutcome::kDeclined;
    announce(state, a, in, reason);
    Status st = runHost(state, a, args);
    if (!st.ok()) return fail(state, a, st);
  }
  state.recordServed(a);
  return CallOutcome::kDone;
}

// The tuner's pick for this call, or kPrevious with *tuned false when the
// call is not tuned (a forced algorithm, a rule, offload=on, no host path).
Algorithm tunedPick(CommState& state, const SelectionInput& in, const Decision& d,
                    bool previous_differs, bool* tuned) {
  *tuned = false;
  Tuner* tuner = state.tuner();
  if (tuner == nullptr || !d.tunable || !state.hostReady()) return Algorithm::kPrevious;
  const SwitchPath* sw = state.switchPath();
  const uint64_t epoch = sw ? sw->epoch() : 0;
  if (previous_differs) {
    // The previous module would answer differently: not a candidate.
    std::vector<Algorithm> own;
    for (Algorithm a : d.candidates)
      if (a != Algorithm::kPrevious) own.push_back(a);
    if (own.empty()) return Algorithm::kPrevious;
    *tuned = true;
    return tuner->choose(in.bytes, in.switch_available, own, epoch);
  }
  *tuned = true;
  return tuner->choose(in.bytes, in.switch_available, d.candidates, epoch);
}

}  // namespace

Status runCheapestHost(CommState& state, const AllreduceArgs& args) {
  if (!state.hostReady()) return Status(Code::kUnsupported, "no host path");
  return runHost(state, cheapestHost(describeCall(state, args)), args);
}

Status runPartOnHost(CommState& state, const void* input, void* recv, size_t total, size_t at,
                     size_t part, Dtype dtype, Op op) {
  const size_t esize = dtypeSize(dtype);
  std::vector<uint8_t> whole(total * esize);
  if (!whole.empty()) std::memcpy(whole.data(), input, whole.size());
  SWITCHAGG_RETURN_IF_ERROR(runCheapestHost(state, {nullptr, whole.data(), total, dtype, op}));
  if (part) std::memcpy(recv, whole.data() + at * esize, part * esize);
  return Status::Ok();
}

CallOutcome countForcedPrevious(CommState& state, Dtype dtype, Op op) {
  if (state.broken()) return CallOutcome::kError;
  if (!reduceSupported(dtype, op)) {
    state.recordFallback("op not defined on datatype");
    return CallOutcome::kDeclined;
  }
  if (state.rank() == 0 && state.counters().served[size_t(Algorithm::kPrevious)] == 0)
    SA_INFO("coll", "comm %s: allreduce (%s %s) -> previous (forced by coll_switchagg_allreduce_algorithm)",
            state.name().c_str(), dtypeName(dtype), opName(op));
  state.recordFallback(kFallbackSelected);
  return CallOutcome::kDeclined;
}

CallOutcome dispatchAllreduce(CommState& state, const AllreduceArgs& args, bool previous_differs) {
  if (state.broken()) return CallOutcome::kError;
  if (args.count == 0 || state.size() == 1) {
    copyInput(args);
    state.recordLocal();
    return CallOutcome::kDone;
  }
  if (!reduceSupported(args.dtype, args.op)) {
    state.recordFallback("op not defined on datatype");
    return CallOutcome::kDeclined;
  }
  state.ensureSetup();
  // A switch path that failed may rejoin at this call (collective, at the
  // same call on every rank), before the call is described.
  if (SwitchPath* sw = state.switchPath()) sw->rejoinIfDue();
  const SelectionInput in = describeCall(state, args);
  const Decision& decision = state.decide(in);
  bool tuned = false;
  const Algorithm pick = tunedPick(state, in, decision, previous_differs, &tuned);
  const char* reason = decision.reason.c_str();
  if (tuned)
    reason = state.tuner()->lastSettled() ? "tuned: measured fastest" : "tuned: measuring";
  if (tuned && state.tuner()->syncBeforeCall()) {
    // A measuring call starts together on every rank (tuner.h).
    uint8_t mine = 1;
    std::vector<uint8_t> all(size_t(state.size()));
    Status st = state.tuningAllgather(&mine, all.data(), 1);
    if (!st.ok()) return fail(state, pick, st);
  }
  const double start = tuned ? nowUs() : 0;

  CallOutcome step = CallOutcome::kDeclined;
  Algorithm ran = pick;
  bool to_previous = false;  // the previous module was tried: it serves the call
  auto attempt = [&](Algorithm a) {
    ran = a;
    step = tryCandidate(state, a, args, in, reason);
    to_previous = a == Algorithm::kPrevious;
  };
  if (tuned) attempt(pick);
  for (Algorithm a : decision.ranked) {
    if (step != CallOutcome::kDeclined || to_previous) break;
    if (tuned && a == pick) continue;
    if (a == Algorithm::kPrevious && previous_differs && state.hostReady() &&
        !ProcessRuntime::instance().params().policy.forces(Algorithm::kPrevious)) {
      // All ranks see the same flag (it depends on dtype/op only).
      a = cheapestHost(in);
    }
    attempt(a);
  }
  if (step == CallOutcome::kDone) {
    if (!tuned) return CallOutcome::kDone;
    Status st = state.tunerRecord(ran, nowUs() - start);
    return st.ok() ? CallOutcome::kDone : fail(state, ran, st);
  }
  if (step == CallOutcome::kError) return CallOutcome::kError;
  if (to_previous) {
    if (tuned) state.startPreviousTiming(start);
    return CallOutcome::kDeclined;
  }
  state.recordFallback("no candidate");
  return CallOutcome::kDeclined;
}

}  // namespace switchagg::coll
