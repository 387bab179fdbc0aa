// The extern "C" face of the core. Each entry point converts C arguments to
// core types and catches every exception: nothing C++ crosses into Open MPI.
#include "coll_core.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <initializer_list>
#include <string>
#include <vector>

#include "barrier.h"
#include "coll_core_internal.h"
#include "dispatch.h"
#include "process_runtime.h"
#include "routed.h"
#include "switchagg/ucx/transport.h"
#include "switch_path.h"
#include "switchagg/common/dtype.h"
#include "switchagg/common/log.h"


namespace {

using switchagg::Dtype;
using switchagg::Op;
using switchagg::coll::Algorithm;
using switchagg::coll::CallOutcome;
using switchagg::coll::outcomeInt;
using switchagg::coll::CollKind;
using switchagg::coll::guarded;

static_assert(SWITCHAGG_DT_INT8 == static_cast<int>(Dtype::kInt8) &&
                  SWITCHAGG_DT_FLOAT64 == static_cast<int>(Dtype::kFloat64) &&
                  SWITCHAGG_DT_BOOL == static_cast<int>(Dtype::kBool) &&
                  SWITCHAGG_DT_SHORT_INT == static_cast<int>(Dtype::kShortInt) &&
                  SWITCHAGG_DT_FLOAT16 == static_cast<int>(Dtype::kFloat16) &&
                  SWITCHAGG_DT_BFLOAT16 == switchagg::kNumDtypes,
              "coll_core.h dtype values must mirror switchagg::Dtype");
static_assert(SWITCHAGG_OP_SUM == static_cast<int>(Op::kSum) &&
                  SWITCHAGG_OP_BXOR == static_cast<int>(Op::kBxor) &&
                  SWITCHAGG_OP_MAXLOC == static_cast<int>(Op::kMaxloc) &&
                  SWITCHAGG_OP_MAXLOC == switchagg::kNumOps,
              "coll_core.h op values must mirror switchagg::Op");

}  // namespace

namespace {

int routedCall(const char* where, switchagg_coll_comm_t* comm,
               const switchagg::coll::RoutedArgs& args, int flags) {
  switchagg::coll::ProcessRuntime::CallScope in_call(comm->state.domain());
  return guarded(where, static_cast<int>(SWITCHAGG_OUTCOME_ERROR), [&] {
    return outcomeInt(switchagg::coll::dispatchRouted(
        comm->state, args, (flags & SWITCHAGG_COLL_PREVIOUS_DIFFERS) != 0,
        (flags & SWITCHAGG_COLL_PREVIOUS_WRONG) != 0));
  });
}

}  // namespace

extern "C" {

int switchagg_coll_open(const switchagg_coll_params_t* params) {
  return guarded("open", -1, [&] {
    switchagg::coll::ComponentParams p;
    // A NULL text is the table's default (switchagg/coll/coll_params.h).
    auto text = [](const char* value, const char* def) { return value ? value : def; };
    switchagg::Result<switchagg::coll::SelectionPolicy> policy = switchagg::coll::parsePolicy(
        text(params->allreduce_algorithm, switchagg_coll_default_allreduce_algorithm()),
        text(params->offload, switchagg_coll_default_offload()));
    if (!policy.ok()) {
      std::fprintf(stderr, "switchagg[coll] error: coll_switchagg disabled: %s\n",
                   policy.status().message().c_str());
      return -1;
    }
    p.policy = *policy;
    p.rules_path = text(params->rules, "");
    p.verbose = params->verbose;
    if (params->stall_timeout < SWITCHAGG_COLL_MIN_stall_timeout) {
      std::fprintf(stderr,
                   "switchagg[coll] error: coll_switchagg disabled: coll_switchagg_stall_timeout "
                   "must be >= %d seconds (0 = warn only), got %d\n",
                   int(SWITCHAGG_COLL_MIN_stall_timeout), params->stall_timeout);
      return -1;
    }
    p.stall.fail_ms = int64_t(params->stall_timeout) * 1000;
    // An enum parameter's value: one of `allowed`, or an error naming them.
    auto oneOf = [](const char* param, const std::string& value,
                    std::initializer_list<const char*> allowed) {
      std::string list;
      size_t i = 0;
      for (const char* a : allowed) {
        if (value == a) return true;
        list += std::string(i == 0 ? "" : i + 1 == allowed.size() ? " or " : ", ") + a;
        ++i;
      }
      std::fprintf(stderr,
                   "switchagg[coll] error: coll_switchagg disabled: coll_switchagg_%s must be %s, "
                   "got '%s'\n",
                   param, list.c_str(), value.c_str());
      return false;
    };
    const std::string tune = text(params->tune, switchagg_coll_default_tune());
    if (!oneOf("tune", tune, {"online", "off"})) return -1;
    p.tune_online = tune == "online";
    p.tune_file = text(params->tune_file, "");
    const std::string uplink = text(params->half_uplink, switchagg_coll_default_half_uplink());
    if (!oneOf("half_uplink", uplink, {"exact", "float32", "half"})) return -1;
    p.half_uplink = uplink == "exact"     ? switchagg::coll::HalfUplink::kExact
                    : uplink == "float32" ? switchagg::coll::HalfUplink::kFloat32
                                          : switchagg::coll::HalfUplink::kHalf;
    if (params->thread_domains < SWITCHAGG_COLL_MIN_thread_domains ||
        params->thread_domains > SWITCHAGG_COLL_MAX_thread_domains) {
      std::fprintf(stderr,
                   "switchagg[coll] error: coll_switchagg disabled: coll_switchagg_thread_domains "
                   "must be %d..%d, got %d\n",
                   int(SWITCHAGG_COLL_MIN_thread_domains), int(SWITCHAGG_COLL_MAX_thread_domains),
                   params->thread_domains);
      return -1;
    }
    p.thread_domains = params->thread_domains;
    // Warn early enough to be seen in a hung job, before a long bound fails.
    p.stall.warn_ms = p.stall.fail_ms > 0 ? std::min<int64_t>(10000, p.stall.fail_ms / 2) : 10000;
    switchagg::Status st = switchagg::coll::ProcessRuntime::instance().open(p);
    if (!st.ok()) {
      // Shown whatever the log level: the component disables itself.
      std::fprintf(stderr, "switchagg[coll] error: coll_switchagg disabled: %s\n",
                   st.message().c_str());
      return -1;
    }
    return 0;
  });
}

void switchagg_coll_close(void) {
  guarded("close", 0, [] {
    switchagg::coll::ProcessRuntime::instance().close();
    return 0;
  });
}

void switchagg_coll_enable_threads(void) { switchagg::coll::ProcessRuntime::enableThreads(true); }
void switchagg_coll_enable_gate(void) { switchagg::coll::ProcessRuntime::enableThreads(false); }

switchagg_coll_comm_t* switchagg_coll_comm_create(const switchagg_coll_comm_info_t* info) {
  // Counts live communicators and picks the new one's domain (no domain held).
  switchagg::coll::ProcessRuntime::CallScope in_call(-1);
  return guarded<switchagg_coll_comm_t*>("comm_create", nullptr,
                                         [&] { return new switchagg_coll_comm(*info); });
}

void switchagg_coll_comm_destroy(switchagg_coll_comm_t* comm) {
  switchagg::coll::ProcessRuntime::CallScope in_call(comm->state.domain());  // closes groups: no progress callback
  guarded("comm_destroy", 0, [&] {
    delete comm;
    return 0;
  });
}

namespace {
void (*g_mpi_progress)(void) = nullptr;
// The transport's wait hook (ucx::setWaitHook): MPI's progress, with the
// component's progress callbacks open again for the length of it (the
// waiting call is at a safe point: between rounds of its wait loop). With
// several thread domains, then the other domains' workers too, each if no
// other thread holds it: a peer may wait for one of them (a recovery
// question to answer, an endpoint flush at a communicator's free) while
// every thread here waits on another domain - with one worker any wait
// drove it. The MPICH family never calls our progress, Open MPI only every
// 8th round, so it is not left to them.
void mpiProgressFromWait() {
  switchagg::coll::ProcessRuntime& runtime = switchagg::coll::ProcessRuntime::instance();
  if (!switchagg::coll::ProcessRuntime::threadWithoutMpi()) {
    switchagg::coll::ProcessRuntime::OpenForProgress open;
    if (g_mpi_progress != nullptr) g_mpi_progress();
  }
  if (runtime.domains() > 1) (void)runtime.progress();
}
}  // namespace

void switchagg_coll_set_mpi_progress(void (*fn)(void)) {
  g_mpi_progress = fn;
  switchagg::ucx::setWaitHook(fn != nullptr ? mpiProgressFromWait : nullptr);
}

int switchagg_coll_progress(void) {
  return guarded("progress", 0, [] { return switchagg::coll::ProcessRuntime::instance().progress(); });
}

int switchagg_coll_progress_idle(void) {
  return guarded("progress", 0,
                 [] { return switchagg::coll::ProcessRuntime::instance().progress(true); });
}

void switchagg_coll_enable_idle_progress(void) { switchagg::coll::ProcessRuntime::trackBusy(); }

void switchagg_coll_mark_busy(int delta) { switchagg::coll::ProcessRuntime::markBusy(delta); }

namespace {
// Test fault point, the negative control of every checker (tests/mpi/
// verdict.h; never set in production): SWITCHAGG_TEST_WRONG_RESULT=
//   skip     a served MPI_Allreduce returns success without writing its
//            result (it runs, and is counted, on a scratch copy)
//   rank:R   communicator rank R's result gets its first byte's low bit
//            flipped after the call was served
// Read once. A checker family that passes with either armed cannot see a
// wrong answer (tests/mpi/negative_controls.cmake).
struct WrongResult {
  enum Mode { kOff, kSkip, kRank } mode = kOff;
  int rank = -1;
};
const WrongResult& wrongResult() {
  static const WrongResult w = [] {
    WrongResult r;
    const char* v = std::getenv("SWITCHAGG_TEST_WRONG_RESULT");
    if (v == nullptr || *v == '\0') return r;
    if (std::string(v) == "skip") {
      r.mode = WrongResult::kSkip;
    } else if (std::sscanf(v, "rank:%d", &r.rank) == 1) {
      r.mode = WrongResult::kRank;
    }
    std::fprintf(stderr, "switchagg[coll] warning: test fault point SWITCHAGG_TEST_WRONG_RESULT=%s%s\n",
                 v, r.mode == WrongResult::kOff ? " not understood (ignored)" : ": results are wrong on purpose");
    return r;
  }();
  return w;
}
}  // namespace

int switchagg_coll_allreduce(switchagg_coll_comm_t* comm, const void* send, void* recv,
                             size_t count, int dtype, int op, int flags) {
  switchagg::coll::ProcessRuntime::CallScope in_call(comm->state.domain());
  return guarded("allreduce", static_cast<int>(SWITCHAGG_OUTCOME_ERROR), [&] {
    const WrongResult& wrong = wrongResult();
    const size_t bytes = count * switchagg::dtypeSize(static_cast<Dtype>(dtype));
    std::vector<uint8_t> scratch;
    void* out = recv;
    if (wrong.mode == WrongResult::kSkip && bytes > 0) {
      scratch.assign(static_cast<const uint8_t*>(recv), static_cast<const uint8_t*>(recv) + bytes);
      out = scratch.data();  // in place: the input copied; else only the output's place
    }
    switchagg::coll::AllreduceArgs args{send, out, count, static_cast<Dtype>(dtype),
                                        static_cast<Op>(op)};
    const bool differs = (flags & SWITCHAGG_COLL_PREVIOUS_DIFFERS) != 0;
    const CallOutcome end = switchagg::coll::dispatchAllreduce(comm->state, args, differs);
    if (end == CallOutcome::kDone && wrong.mode == WrongResult::kRank && bytes > 0 &&
        comm->state.rank() == wrong.rank)
      static_cast<uint8_t*>(recv)[0] ^= 1;
    return outcomeInt(end);
  });
}

int switchagg_coll_allreduce_forced_previous(void) {
  return switchagg::coll::ProcessRuntime::instance().params().policy.forces(Algorithm::kPrevious)
             ? 1
             : 0;
}

int switchagg_coll_allreduce_previous(switchagg_coll_comm_t* comm, int dtype, int op) {
  return guarded("allreduce_previous", static_cast<int>(SWITCHAGG_OUTCOME_ERROR), [&] {
    return outcomeInt(switchagg::coll::countForcedPrevious(comm->state, static_cast<Dtype>(dtype),
                                                           static_cast<Op>(op)));
  });
}

int switchagg_coll_barrier(switchagg_coll_comm_t* comm) {
  switchagg::coll::ProcessRuntime::CallScope in_call(comm->state.domain());
  return guarded("barrier", static_cast<int>(SWITCHAGG_OUTCOME_ERROR), [&] {
    return outcomeInt(switchagg::coll::dispatchBarrier(comm->state));
  });
}

int switchagg_coll_reduce(switchagg_coll_comm_t* comm, const void* send, void* recv, size_t count,
                          int dtype, int op, int root, int flags) {
  return routedCall("reduce", comm,
                    {SWITCHAGG_COLL_REDUCE, send, recv, count, nullptr, static_cast<Dtype>(dtype),
                     static_cast<Op>(op), root},
                    flags);
}

int switchagg_coll_reduce_scatter(switchagg_coll_comm_t* comm, const void* send, void* recv,
                                  const size_t* recvcounts, int dtype, int op, int flags) {
  const CollKind kind = (flags & SWITCHAGG_COLL_BLOCK) ? SWITCHAGG_COLL_REDUCE_SCATTER_BLOCK
                                                       : SWITCHAGG_COLL_REDUCE_SCATTER;
  return routedCall("reduce_scatter", comm,
                    {kind, send, recv, 0, recvcounts, static_cast<Dtype>(dtype),
                     static_cast<Op>(op), 0},
                    flags);
}

int switchagg_coll_allgather(switchagg_coll_comm_t* comm, const void* send, void* recv,
                             size_t bytes) {
  return routedCall(
      "allgather", comm,
      {SWITCHAGG_COLL_ALLGATHER, send, recv, bytes, nullptr, Dtype::kUint8, Op::kSum, 0}, 0);
}

int switchagg_coll_bcast(switchagg_coll_comm_t* comm, void* buf, size_t bytes, int root) {
  return routedCall(
      "bcast", comm,
      {SWITCHAGG_COLL_BCAST, nullptr, buf, bytes, nullptr, Dtype::kUint8, Op::kSum, root}, 0);
}

void switchagg_coll_note_routed_fallback(switchagg_coll_comm_t* comm, int routed_op,
                                         const char* reason) {
  guarded("note_routed_fallback", 0, [&] {
    if (switchagg_coll_kind_is_routed(routed_op))
      switchagg::coll::recordRoutedFallback(
          comm->state, static_cast<switchagg::coll::CollKind>(routed_op), reason);
    return 0;
  });
}

int switchagg_coll_routed_previous_done(switchagg_coll_comm_t* comm, int routed_op) {
  if (!switchagg_coll_kind_is_routed(routed_op)) return 0;
  switchagg::coll::ProcessRuntime::CallScope in_call(comm->state.domain());
  return guarded("routed_previous_done", -1, [&] {
    const auto op = static_cast<switchagg::coll::CollKind>(routed_op);
    switchagg::Status st = comm->state.routedPreviousDone(op);
    if (st.ok()) return 0;
    SA_ERROR("coll", "comm %s rank %d: %s: online tuning could not agree with the other ranks: %s",
             comm->state.name().c_str(), comm->state.rank(), switchagg::coll::collKindName(op),
             st.toString().c_str());
    comm->state.markBroken();
    return -1;
  });
}

int switchagg_coll_previous_done(switchagg_coll_comm_t* comm) {
  switchagg::coll::ProcessRuntime::CallScope in_call(comm->state.domain());
  return guarded("previous_done", -1, [&] {
    switchagg::Status st = comm->state.previousDone();
    if (st.ok()) return 0;
    SA_ERROR("coll", "comm %s rank %d: online tuning could not agree with the other ranks: %s",
             comm->state.name().c_str(), comm->state.rank(), st.toString().c_str());
    comm->state.markBroken();
    return -1;
  });
}

void switchagg_coll_note_fallback(switchagg_coll_comm_t* comm, const char* reason) {
  guarded("note_fallback", 0, [&] {
    comm->state.recordFallback(reason);
    return 0;
  });
}

const char* switchagg_coll_algorithm_choice(int index) {
  if (index == 0) return "auto";
  const auto& registry = switchagg::coll::algorithmRegistry();
  if (index < 0 || static_cast<size_t>(index) > registry.size()) return nullptr;
  return registry[static_cast<size_t>(index - 1)].name;
}

const char* switchagg_coll_algorithm_help(void) {
  static const std::string help = [] {
    std::string h = "auto: chosen per call by the cost model and rules";
    for (const auto& info : switchagg::coll::algorithmRegistry())
      h += std::string("; ") + info.name + ": " + info.description;
    return h;
  }();
  return help.c_str();
}

const char* switchagg_coll_last_path(const switchagg_coll_comm_t* comm) {
  return comm->state.counters().last_path;
}

uint64_t switchagg_coll_counter(const switchagg_coll_comm_t* comm, const char* name) {
  return guarded<uint64_t>("counter", 0, [&]() -> uint64_t {
    const auto& c = comm->state.counters();
    const std::string key = name;
    // The switch path's own counters (switch:*, fallback:switch-failed/-busy).
    uint64_t value = 0;
    if (const switchagg::coll::SwitchPath* sw = comm->state.switchPath())
      if (sw->counter(key, &value)) return value;
    if (switchagg::coll::barrierCounter(comm->state.barrierCounters(), key, &value)) return value;
    if (switchagg::coll::routedCounter(comm->state, key, &value)) return value;
    if (switchagg::coll::iallreduceCounter(comm->iallreduce, "iallreduce:", key, &value) ||
        switchagg::coll::iallreduceCounter(comm->ibarrier, "ibarrier:", key, &value) ||
        switchagg::coll::iallreduceCounter(comm->iallgather, "iallgather:", key, &value) ||
        switchagg::coll::iallreduceCounter(comm->ibcast, "ibcast:", key, &value) ||
        switchagg::coll::iallreduceCounter(comm->ireduce_scatter_block, "ireduce_scatter_block:",
                                           key, &value))
      return value;
    if (key == "local") return c.local;
    if (key.rfind("tune:", 0) == 0) {
      const switchagg::coll::Tuner* t = comm->state.tuner();
      if (t == nullptr) return 0;
      const auto& tc = t->counters();
      if (key == "tune:explore_calls") return tc.explore_calls;
      if (key == "tune:settled_calls") return tc.settled_calls;
      if (key == "tune:agreements") return tc.agreements;
      if (key == "tune:reopened") return tc.reopened;
      if (key == "tune:retried") return tc.retried;
      if (key == "tune:settled_buckets") return t->settledBuckets();
      // tune:us:<algorithm>:<bytes>: the agreed time (µs, rounded) of that
      // candidate in the bucket of <bytes> with the switch available; 0:
      // not measured.
      if (key.rfind("tune:us:", 0) == 0) {
        const size_t colon = key.find(':', 8);
        switchagg::coll::Algorithm a;
        if (colon == std::string::npos ||
            !switchagg::coll::parseAlgorithm(key.substr(8, colon - 8), &a))
          return 0;
        const double us = t->agreedUs(std::strtoull(key.c_str() + colon + 1, nullptr, 10), true, a);
        return std::isnan(us) || us < 0 ? 0 : uint64_t(std::llround(us));
      }
      return 0;
    }
    if (key == "host:bytes_sent") return comm->state.hostBytesSent();
    if (key == "fallback") return c.served[static_cast<size_t>(Algorithm::kPrevious)];
    if (key == std::string("fallback:") + switchagg::coll::kFallbackSelected)
      return c.selected_previous;
    if (key.rfind("fallback:", 0) == 0) {
      auto it = c.fallback_reasons.find(key.substr(9));
      return it == c.fallback_reasons.end() ? 0 : it->second;
    }
    Algorithm a;
    if (switchagg::coll::parseAlgorithm(key, &a)) return c.served[static_cast<size_t>(a)];
    return 0;
  });
}

}  // extern "C"
