// MPI_Allreduce through the switch path: the agreed call above the keep
// limit (and the node leaders' pipeline), the one-round-trip call below it,
// and MPI_Iallreduce's stream in steps.
#include "switch_path_internal.h"

#include <cinttypes>
#include <cstring>

#include "process_runtime.h"
#include "switchagg/common/log.h"
#include "switchagg/common/test_hooks.h"

namespace switchagg::coll::switch_detail {

Status AgentSwitchPath::allreduce(const AllreduceArgs& args) {
  if (!serves(args)) return Status(Code::kUnsupported, "switch path cannot serve this call");
  if (railLeaders()) return allreduceRails(args);
  const size_t bytes = args.count * dtypeSize(args.dtype);
  const bool in_place = args.send == nullptr;
  const void* input = in_place ? args.recv : args.send;
  void* out = args.recv;
  Status mine;
  last_bytes_sent_ = 0;
  const size_t segment = lease_.segment_bytes / dtypeSize(args.dtype);
  // Calls within the keep limit go one round trip; the pipeline (which
  // ends with the agreement) serves only the calls above it.
  if (oneRoundTrip(bytes)) return allreduceOneRoundTrip(args, bytes);
  // A wide uplink streams the whole fp64 node sum (no overlapped pipeline).
  const bool wide = wideUplink(args);
  const bool pipelined = leaders_ && segment > 0 && args.count >= 2 * segment && !wide;
  if (pipelined) {
    // The node's reduce, the stream and the node's broadcast overlapped.
    if (group_ && in_place) {
      if (scratch_.size() < bytes) scratch_.resize(bytes);
      out = scratch_.data();
    }
    const agent::ClientCounters before = group_ ? group_->counters() : agent::ClientCounters{};
    mine = leaders_->pipelined(args, segment, group_.get(), out, timeoutFor(bytes));
    if (group_) countStream(before);
  } else if (leaders_) {
    // The node's inputs, reduced in rank order: the leader's contribution.
    Result<const void*> node_input = leaders_->reduce(args);
    mine = node_input.status();
    input = node_input.value();
  }
  if (!pipelined && mine.ok() && group_) {
    if (in_place) {
      if (scratch_.size() < bytes) scratch_.resize(bytes);
      out = scratch_.data();
    }
    mine = wide ? streamWide(args, out) : stream(args, input, out, bytes);
  }
  // Success is local (the agent may die after sending some members their
  // last chunk): nobody trusts its result until every rank says ok.
  std::vector<uint8_t> oks;
  SWITCHAGG_RETURN_IF_ERROR(agree(mine, &oks));
  if (allDone(oks)) {
    if (in_place && group_) std::memcpy(args.recv, scratch_.data(), bytes);
    ++calls_;
    if (pipelined) {
      ++pipelined_;
      // The node's ranks already hold the result (the broadcast overlapped).
      if (!group_ && bytes) std::memcpy(args.recv, leaders_->result(), bytes);
      return Status::Ok();
    }
    // A broadcast that fails is a host transport failure after the commit:
    // reported like a host algorithm's.
    return leaders_ ? leaders_->broadcast(args) : Status::Ok();
  }
  if (leaders_ && !pipelined) leaders_->abandon();
  return redoAgreed(mine, oks);
}

Status AgentSwitchPath::redoAgreed(const Status& mine, const std::vector<uint8_t>& oks) {
  if (!anyFailed(oks)) {
    // Busy (the job's other communicators held the lease's slots when this
    // call began): refused for this call only, the group is alive. Same
    // host redo as after a failure, but no give-up and no rejoin.
    return redoBusy();
  }
  giveUp(mine, firstFailedRank(oks), "allreduce", "result recomputed on the host");
  // The input is intact on every rank (send never written; in place results
  // went to scratch): the next candidate redoes the reduction on the host.
  return Status(Code::kUnsupported, "switch path failed; redone on the host");
}

namespace {
// Test-only fault point: SWITCHAGG_TEST_CUT=RANK:CALL makes communicator
// rank RANK drop its agent group right after its one-round-trip call CALL
// (an allreduce, a routed reduction, or a nonblocking stream) succeeded, as
// if its connection had been cut after the agent sent the results: the
// call counts as failed here (recovered from the others; a stream's result
// is dropped), the group is left (unusable here; its LEAVE makes the agent
// abort it for the others' next call). Fires once per process.
bool testCutNow(int rank, uint64_t call) {
  static std::atomic<bool> fired{false};
  static const TestCut want = [] {
    TestHooks hooks;
    (void)testHooksTable().applyEnvironment(hooks, "test.cut");  // a bad value: off
    return hooks.cut;
  }();
  if (want.rank != rank || want.call != call) return false;
  return !fired.exchange(true);
}
}  // namespace

Status AgentSwitchPath::testCut(const Status& st) {
  if (!st.ok() || !group_ || !ledger_ || !testCutNow(comm_.rank(), ledger_->seq())) return st;
  (void)group_->leave(agent::AggClient::kDrainMs);  // unusable from now on, as after a cut
  return Status(Code::kPeerFailed, "test fault: agent connection cut after the call");
}

// One agent round trip and nothing between hosts on success: node reduce
// (leaders), the member's stream, its outcome (recovered from the other
// members only if it failed here), the node's one broadcast of [outcome,
// result] (leaders). Busy or failed everywhere: the input is intact on
// every rank and the next candidate redoes the call, as with the
// agreement.
Status AgentSwitchPath::allreduceOneRoundTrip(const AllreduceArgs& args, size_t bytes) {
  const bool in_place = args.send == nullptr;
  const void* input = in_place ? args.recv : args.send;
  void* out = ledger_ && in_place ? scratchFor(bytes) : args.recv;
  Status mine;
  last_bytes_sent_ = 0;
  if (leaders_) {
    Result<const void*> node_input = leaders_->reduce(args);
    mine = node_input.status();
    input = node_input.value();
  }
  int source = -1;
  if (ledger_) {
    ledger_->begin();
    if (mine.ok())
      mine = !group_ ? Status(Code::kAborted, "the switch group was lost in an earlier call")
             : wideUplink(args) ? streamWide(args, out)
                                : stream(args, input, out, bytes);
    mine = testCut(mine);
  }
  Result<CallOutcome> end = endOneRoundTrip(mine, out, args.recv, bytes, &source, "allreduce");
  if (!end.ok()) return end.status();
  const CallOutcome outcome = *end;
  if (outcome == CallOutcome::kDone) {
    if (ledger_ && in_place) std::memcpy(args.recv, out, bytes);
    ++calls_;
    ++one_trip_;
    return Status::Ok();
  }
  if (outcome == CallOutcome::kBusy) {
    return redoBusy();
  }
  giveUp(mine, firstFailed(mine, source), "allreduce",
         "no member had the result (all asked); result recomputed on the host");
  return Status(Code::kUnsupported, "switch path failed; redone on the host");
}

Status AgentSwitchPath::stream(const AllreduceArgs& args, const void* input, void* out,
                               size_t bytes) {
  const agent::ClientCounters before = group_->counters();
  Status st = group_->allreduce(args.dtype, args.op, input, out, args.count, timeoutFor(bytes));
  countStream(before);
  return st;
}

void AgentSwitchPath::countStream(const agent::ClientCounters& before) {
  const agent::ClientCounters after = group_->counters();
  last_bytes_sent_ = after.bytes_sent - before.bytes_sent;
  bytes_sent_ += last_bytes_sent_;
  chunks_ += after.chunks_sent - before.chunks_sent;
}

int64_t steadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// With node leaders the node's steps are one message each way between each
// rank and its leader, posted and tested without waiting
// (NodeLeaders::startFlat): the leader sends [outcome][result] once its call
// settled (up to the keep limit), else as soon as its stream ended, before
// the outcome agreement, in which every rank votes its leader's outcome.
void AgentSwitchPath::describeStream(const AllreduceArgs& args, SelectionInput* in) const {
  // Not joined_: decided when posted, streamed later (startStream declines
  // then, alike on every rank, if the path failed meanwhile).
  if (info_.caps.supports(args.dtype, args.op) && !railLeaders()) fill(in);
}

// As allreduce() without the blocking parts: the result goes to scratch for
// an in-place call (the input stays intact until the ranks agree). With node
// leaders: the node's inputs to the leader first (stepStream), the leader's
// stream, then its [outcome][result] to the node (settle).
Status AgentSwitchPath::startStream(const AllreduceArgs& args, bool barrier) {
  const size_t bytes = args.count * dtypeSize(args.dtype);
  // Alike on every rank: joined_, the caps and the keep limit are agreed
  // (a non-leader never holds a group).
  if (!serves(args) || (!leaders_ && !group_) || railLeaders())
    return Status(Code::kUnsupported, "switch path cannot stream this call");
  stream_ = Stream{};
  stream_.args = args;
  stream_.barrier = barrier;
  stream_.bytes = bytes;
  stream_.deadline_ms = steadyMs() + timeoutFor(stream_.bytes);
  void* out = args.recv;
  if (args.send == nullptr) {
    if (scratch_.size() < stream_.bytes) scratch_.resize(stream_.bytes);
    out = scratch_.data();
  }
  stream_.out = out;
  stream_.one_trip = oneRoundTrip(stream_.bytes) && (leaders_ || ledger_);
  if (stream_.one_trip && ledger_) ledger_->begin();
  last_bytes_sent_ = 0;
  if (leaders_) {
    stream_.node_phase = true;
    stream_.wide = wideUplink(args) && leaders_->leader();
    Status st = leaders_->startFlat(args, stream_.wide);
    if (!st.ok()) {
      stream_.mine = st;
      return st;
    }
    return Status(Code::kInProgress, "the node's inputs are on their way");
  }
  stream_.before = group_->counters();
  Status st = group_->startCall(args.dtype, args.op, args.send ? args.send : args.recv, out,
                                args.count);
  if (st.code() == Code::kInProgress) return st;
  countStream(stream_.before);
  stream_.mine = st;
  return st;
}

// The node's step of a stream with node leaders: the leader's inputs (then
// its agent call starts, with the call's bound from then on), a
// non-leader's [outcome][result] from its leader. Ranks may post far apart,
// as MPI allows, so the node's step is bounded like a host collective's
// wait (coll_switchagg_stall_timeout's failure bound, 0: unbounded): past
// it on the leader, past the leader's own worst case on a non-leader.
Status AgentSwitchPath::stepNode() {
  bool ready = false;
  Status st = leaders_->stepFlat(&ready);
  if (st.ok() && !ready) {
    const int64_t fail_ms = ProcessRuntime::instance().params().stall.fail_ms;
    const bool leader = leaders_->leader();
    // The leader: its node, then the agent (the call's bound), then recovery.
    const int64_t wait_ms = leader ? fail_ms : 2 * fail_ms + timeoutFor(stream_.bytes);
    if (fail_ms <= 0 || steadyMs() < stream_.deadline_ms + wait_ms)
      return Status(Code::kInProgress, "node step");
    const int64_t waited = wait_ms + timeoutFor(stream_.bytes);
    const std::string what = std::string("MPI_I") +
                             (stream_.routed ? collKindName(stream_.rargs.op)
                              : stream_.barrier ? "barrier"
                                                : "allreduce");
    st = Status(Code::kTimeout,
                leader ? "node leader: rank " + std::to_string(leaders_->flatMissing()) + "'s " +
                             what + " input did not arrive within " + std::to_string(waited) +
                             " ms"
                       : "the node leader (rank " + std::to_string(leaders_->locals().front()) +
                             ") sent no " + what + " outcome within " + std::to_string(waited) +
                             " ms");
  }
  stream_.node_phase = false;
  if (!st.ok()) {
    stream_.node_failed = true;
    leaders_->abandon();
    return st;
  }
  if (!leaders_->leader()) {
    // The leader's settled outcome: the call ends as it says.
    const CallOutcome leader = CallOutcome(leaders_->flatOutcome());
    // A routed call's result waits in the node message (deliverRoutedLeaders).
    if (leader == CallOutcome::kDone && stream_.bytes && !stream_.routed)
      std::memcpy(stream_.out, leaders_->flatResult(), stream_.bytes);
    return leader == CallOutcome::kDone ? Status::Ok()
           : leader == CallOutcome::kBusy ? Status(Code::kBusy, "refused busy (the leader says)")
                                          : Status(Code::kAborted, "the node leader's call failed");
  }
  if (!group_) return Status(Code::kAborted, "the switch group was lost in an earlier call");
  if (stream_.routed) return startLeaderRouted();
  stream_.deadline_ms = steadyMs() + timeoutFor(stream_.bytes);
  stream_.before = group_->counters();
  if (stream_.wide) {
    const AllreduceArgs w = wideArgs(stream_.args);
    st = group_->startCall(w.dtype, w.op, w.send, w.recv, w.count);
  } else {
    st = group_->startCall(stream_.args.dtype, stream_.args.op, leaders_->nodeSum(), stream_.out,
                           stream_.args.count);
  }
  if (st.code() == Code::kInProgress) return st;
  countStream(stream_.before);
  return st;
}

Status AgentSwitchPath::stepStream() {
  Status st;
  if (leaders_ && stream_.node_phase) {
    st = stepNode();
    if (st.code() == Code::kInProgress) return st;
    if (!leaders_->leader() || stream_.node_failed) {
      stream_.mine = st;
      return st;
    }
    // The leader's agent call ended as soon as it started.
  } else {
    if (!group_) return Status(Code::kInternal, "no stream running");
    st = group_->stepCall();
    if (st.code() == Code::kInProgress) {
      // Past the bound only while the agent says the call waits for a late
      // member (WAITING, within the wait limit).
      const int64_t timeout = timeoutFor(stream_.bytes);
      const int64_t now = steadyMs();
      if (now < stream_.deadline_ms || now < group_->deadline(stream_.deadline_ms, timeout))
        return st;
      st = group_->abortCall(now - stream_.deadline_ms + timeout);
    }
    countStream(stream_.before);
    if (stream_.routed) st = routedDecline(st);
  }
  // The test-only cut (SWITCHAGG_TEST_CUT) of a one-round-trip stream: its
  // result is dropped before anything uses it; settle recovers it.
  if (stream_.one_trip) st = testCut(st);
  // A wide uplink's fp64 result, rounded once (the leader's call ended).
  if (stream_.wide && st.ok()) narrowWide(stream_.args, stream_.out);
  if (stream_.wide_routed.on && st.ok()) narrowRouted(stream_.wide_routed);
  stream_.mine = st;
  // Above the keep limit the leader's node learns its outcome (and result)
  // now, before the agreement; a node message that cannot go fails the call
  // here (the others time out and vote failed too).
  if (leaders_ && !stream_.one_trip) {
    const Status sent = leaders_->finishFlat(uint8_t(outcomeOf(st)), leaderNodeResult());
    if (!sent.ok()) stream_.mine = sent;
  }
  // A flat member's vector in placement order (a tree): into rank order.
  if (stream_.routed && stream_.mine.ok()) unplace(stream_.rargs, stream_.plan);
  return stream_.mine;
}

Status AgentSwitchPath::settle(CallOutcome outcome, CallOutcome* agreed) {
  const Status mine = outcome == CallOutcome::kDone   ? Status::Ok()
                      : outcome == CallOutcome::kBusy ? Status(Code::kBusy, "refused busy")
                      : !stream_.mine.ok()     ? stream_.mine
                                               : Status(Code::kInternal, "stream failed");
  CallOutcome end = CallOutcome::kDone;
  if (leaders_ && !leaders_->leader()) {
    // Its leader settled the call: what it sent is final. A node step that
    // failed here leaves this rank without an outcome: the request fails.
    if (!stream_.mine.ok() && stream_.mine.code() != Code::kBusy &&
        stream_.mine.code() != Code::kAborted)
      return stream_.mine;
    end = outcomeOf(mine);
  } else {
    int source = -1;
    Result<CallOutcome> settled =
        stream_.routed ? (leaders_ ? settleRoutedLeaders(mine, &source)
                                   : settleRoutedStream(mine, &source))
                       : settle(mine, stream_.out, stream_.bytes, &source,
                                stream_.barrier ? "ibarrier" : "iallreduce");
    if (!settled.ok()) {
      if (leaders_) leaders_->abandon();
      return settled.status();
    }
    end = *settled;
    // A node step that failed here (a rank's input never came): its node
    // has no transport left to tell, and no member can be done without it.
    if (leaders_ && stream_.node_failed) return stream_.mine;
    if (leaders_) SWITCHAGG_RETURN_IF_ERROR(leaders_->finishFlat(uint8_t(end), leaderNodeResult()));
  }
  stream_.settled = true;
  *agreed = end == CallOutcome::kDone || end == CallOutcome::kBusy ? end : CallOutcome::kFailed;
  return Status::Ok();
}

CallOutcome AgentSwitchPath::finish(CallOutcome agreed, int first_rank) {
  if (stream_.settled) ++one_trip_;
  else ++agreements_;  // the glue's nonblocking agreement ended
  if (stream_.routed) return endRoutedStream(agreed, first_rank);
  if (agreed == CallOutcome::kDone) {
    if (stream_.args.send == nullptr && stream_.bytes)
      std::memcpy(stream_.args.recv, scratch_.data(), stream_.bytes);
    if (stream_.barrier) {
      ++barriers_;
      return CallOutcome::kDone;
    }
    ++calls_;
    ++streamed_;
    return CallOutcome::kDone;
  }
  if (agreed == CallOutcome::kBusy) {  // redone on the host
    ++busy_;
    if (stream_.barrier) ++barrier_busy_;
    return CallOutcome::kBusy;
  }
  if (stream_.barrier) ++barrier_failed_;
  const char* redo = stream_.barrier ? "barrier redone on the host" : "result recomputed on the host";
  giveUp(stream_.mine, first_rank, stream_.barrier ? "barrier" : "allreduce",
         (stream_.settled ? std::string("no member had the result (all asked); ") + redo
                          : std::string(redo)).c_str());
  return CallOutcome::kFailed;  // redone on the host
}

}  // namespace switchagg::coll::switch_detail
