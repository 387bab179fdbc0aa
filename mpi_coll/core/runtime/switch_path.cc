// The switch candidate: MPI_Allreduce offloaded to the switch
// agent's aggregation engine through the data-plane client.
//
// Joining (once per communicator, collective, in createSwitchPath which
// CommState calls on the communicator's first eligible allreduce): every
// rank connects (one process-wide connection per agent of the lease), then
// the ranks allgather {connected, rank 0's nonce} over the previous coll module; only if ALL
// connected do they join group id = rank 0's random nonce with the cid in
// its low 16 bits (unique per communicator per job, never reused after a
// free), then allgather the join outcome. Any failure anywhere -> no switch
// candidate for this communicator on every rank alike.
//
// With K agents the group is one per agent and each call is cut into K
// stripes streamed at once (agent::StripedGroup; docs/offload.md "Stripes").
//
// One call: the client streams the buffer (window = the group's slots) into
// a result buffer that is never the caller's input (scratch for in place),
// then every rank allgathers its local outcome. All ok -> the result is
// committed. Anyone failed -> the input is untouched everywhere, the path
// is dead for the communicator (agreed, so all ranks alike) and we return
// kUnsupported: dispatch runs the next candidate (a host algorithm) from the
// intact input. After `rejoin_calls` more calls (counted alike on every
// rank, so no extra communication decides it) the communicator runs the
// join again; a failed rejoin doubles the wait. Nobody failed but someone
// was told busy (the agent refused the call: the job's other communicators
// held the lease's slots) -> the same host redo, but the path stays alive.
// Detailed semantics: docs/offload.md.
//
// Node leaders (switch_leaders.h): with several ranks per node only each
// node's lowest rank is a member of the agent's group; the node reduces to
// it first and it broadcasts the result after the agreement. Every step
// above still runs on every rank; a non-leader says ok for what it skips.
#include "switch_path.h"

#include <strings.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "process_runtime.h"
#include "switch_leaders.h"
#include "switch_lease.h"
#include "switch_recovery.h"
#include "switchagg/agent/data_client.h"
#include "switchagg/common/config.h"
#include "switchagg/common/log.h"

namespace switchagg::coll {
namespace {

constexpr int64_t kJoinTimeoutMs = 5000;

struct JoinHello {
  uint64_t nonce;
  uint8_t connected;
  uint8_t pad;
  uint16_t leaf;  // a tree lease: 1 + the index of this rank's leaf agent (0: not a tree)
  // What the agent told this rank's connection (CAPACITY_ACK). Ranks asked
  // at different moments, so everyone uses rank 0's: the selector's input
  // must be the same on every rank.
  agent::wire::Capacity capacity;
};

// One call's outcome as the ranks agree on it (allgathered byte).
constexpr uint8_t kOutcomeFailed = 0, kOutcomeOk = 1, kOutcomeBusy = 2;

bool allOnes(const std::vector<uint8_t>& flags) {
  return std::all_of(flags.begin(), flags.end(), [](uint8_t f) { return f == 1; });
}

// The one-byte outcome agreement of a call (allreduce or barrier): every
// rank's ok / busy / failed into *oks, in rank order, over the previous
// module. An error: the allgather itself failed.
Status agreeOutcome(CommGroup& comm, const Status& mine, std::vector<uint8_t>* oks) {
  const uint8_t outcome = mine.ok()                      ? kOutcomeOk
                          : mine.code() == Code::kBusy ? kOutcomeBusy
                                                         : kOutcomeFailed;
  oks->assign(size_t(comm.size()), 0);
  return comm.allgather(&outcome, oks->data(), 1);
}

bool anyFailed(const std::vector<uint8_t>& oks) {
  return std::find(oks.begin(), oks.end(), kOutcomeFailed) != oks.end();
}

int firstFailedRank(const std::vector<uint8_t>& oks) {
  int first_bad = 0;
  while (first_bad < int(oks.size()) && oks[size_t(first_bad)] != kOutcomeFailed) ++first_bad;
  return first_bad;
}

uint64_t randomNonce() {
  std::random_device rd;
  return (uint64_t(rd()) << 32) ^ rd() ^
         uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
}

struct Joined {
  bool ok = false;  // every rank joined (a non-leader has no group)
  bool routed = false;  // every member's agent serves routed calls (agreed)
  // One group per agent (stripe); holds the clients. Null on a non-leader.
  std::unique_ptr<agent::StripedGroup> group;
  agent::wire::Capacity capacity;  // the agent's figures as agreed (rank 0's)
  agent::GroupInfo info;           // the group's geometry, alike on every rank
};

// The collective join (first or rejoin); no group on every rank alike when
// any rank failed. `first`: report a `require` failure and say why at info
// level (a failed rejoin is logged at debug level only: its first failure
// was already reported). `leaders`: null, or only they join the agent.
Joined joinGroup(CommGroup& comm, const SwitchLease& lease, bool first, NodeLeaders* leaders);

class AgentSwitchPath : public SwitchPath {
 public:
  AgentSwitchPath(CommGroup& comm, const SwitchLease& lease, Joined joined,
                  std::unique_ptr<NodeLeaders> leaders)
      : comm_(comm), lease_(lease), leaders_(std::move(leaders)),
        group_(std::move(joined.group)),
        capacity_(joined.capacity), info_(joined.info), joined_(joined.ok),
        routed_(joined.routed) {
    makeLedger();
  }
  ~AgentSwitchPath() override;

  void rejoinIfDue() override;
  void describe(const AllreduceArgs& args, SelectionInput* in) const override;
  Status allreduce(const AllreduceArgs& args) override;
  Status barrier(BarrierEnd* how) override;
  const char* describeRouted(const RoutedArgs& args, SelectionInput* in) const override;
  Status routed(const RoutedArgs& args, RoutedEnd* how) override;
  Status routedLeaders(const RoutedArgs& args, RoutedEnd* how);  // bcast, reduce
  void describeStream(const AllreduceArgs& args, SelectionInput* in) const override;
  Status startStream(const AllreduceArgs& args) override;
  Status stepStream() override;
  Status endStream(int agreed, int first_rank) override;
  bool streamSettles() const override { return stream_.one_trip; }
  Status settleStream(int outcome, int* agreed) override;
  bool counter(const std::string& name, uint64_t* value) const override;
  uint64_t epoch() const override { return failed_ + rejoined_; }

 private:
  void fill(SelectionInput* in) const;  // describe's switch fields
  // One-round-trip completion (switch_recovery.h, docs/offload.md
  // "Completion"): on every rank alike, whether a call of `bytes` ends
  // without the outcome agreement.
  bool oneRoundTrip(size_t bytes) const {
    return one_round_trip_ && bytes <= lease_.keep_bytes;
  }
  void makeLedger();
  Status allreduceOneRoundTrip(const AllreduceArgs& args, size_t bytes);
  Status barrierOneRoundTrip(BarrierEnd* how);
  // A member's end of a one-round-trip call: its own outcome, or after a
  // failure what the other members said (recovery). *source: the member
  // that gave the result. An error: recovery could not decide (bounded).
  Result<CallOutcome> settle(const Status& mine, void* out, size_t bytes, int* source,
                             const char* what);
  Result<CallOutcome> endOneRoundTrip(const Status& mine, void* out, void* node_result,
                                      size_t bytes, int* source, const char* what);
  // The outcome agreement of a call that has one, counted.
  Status agree(const Status& mine, std::vector<uint8_t>* oks) {
    ++agreements_;
    return agreeOutcome(comm_, mine, oks);
  }
  bool serves(const AllreduceArgs& args) const {
    return joined_ && info_.caps.supports(args.dtype, args.op);
  }
  int64_t timeoutFor(size_t bytes) const {
    // A slow but alive agent on a loaded machine: ~4 MB/s at least (the
    // benchmark saw 16 MiB calls over 3 s under load 19 on 2 cores).
    return lease_.call_timeout_ms + int64_t(bytes / 4096);
  }
  Status stream(const AllreduceArgs& args, const void* input, void* out, size_t bytes);
  void countStream(const agent::ClientCounters& before);  // the call's bytes and chunks
  // A routed call's stream (counted); a client decline is taken as busy:
  // nothing was sent, the ranks redo the call and keep the path.
  Status streamRouted(const agent::RoutedCall& call, size_t bytes);
  // A routed call the ranks did not all finish: busy, or given up.
  Status endRoutedUnserved(const Status& mine, const std::vector<uint8_t>& oks, RoutedOp op,
                           RoutedEnd* how);
  // scratch_ of at least `bytes` (a dummy for 0: a member that gets nothing).
  void* scratchFor(size_t bytes);
  // `what` failed ("allreduce", "barrier", "reduce", ...); `after` says
  // what became of the call ("result recomputed on the host", ...).
  // first_bad: the lowest rank that failed, if known (-1: not known here).
  void giveUp(const Status& mine, int first_bad, const char* what, const char* after);
  // An allreduce refused busy on every rank: counted, redone on the host, path kept.
  Status redoBusy() {
    ++busy_;
    if (busy_ == 1 && comm_.rank() == 0)
      SA_INFO("coll",
              "comm %s: switch busy (the lease's slots were in use by the job's other "
              "communicators); call redone on the host (fallback:switch-busy), switch path kept",
              comm_.name().c_str());
    return Status(Code::kUnsupported, "switch busy; redone on the host");
  }
  int firstFailed(const Status& mine, int /*source*/) const { return mine.ok() ? -1 : comm_.rank(); }
  void logSummary() const;

  CommGroup& comm_;
  const SwitchLease& lease_;
  std::unique_ptr<NodeLeaders> leaders_;  // null: every rank is a member
  // One group per agent of the lease (stripes), holding their clients.
  // Null after a failure, until a rejoin; always null on a non-leader.
  std::unique_ptr<agent::StripedGroup> group_;
  // Agreed at the first join and kept (a rejoin does not change the
  // selector's input: decisions are memoised per call shape).
  agent::wire::Capacity capacity_;
  agent::GroupInfo info_;  // the group's geometry (rank 0's; its slowest stripe's), every rank
  bool joined_;            // false after a failure, until a rejoin
  bool routed_;            // every member's agent routes (agreed at each join)
  std::vector<uint8_t> scratch_;  // in-place results until all ranks agree
  uint64_t calls_since_failure_ = 0, rejoin_after_ = 0;
  uint64_t calls_ = 0, bytes_sent_ = 0, chunks_ = 0, failed_ = 0, rejoined_ = 0, busy_ = 0;
  uint64_t last_bytes_sent_ = 0;
  uint64_t barriers_ = 0, barrier_failed_ = 0, barrier_busy_ = 0;
  uint64_t pipelined_ = 0;  // served calls whose node phases overlapped the stream
  uint64_t routed_calls_ = 0;  // switch:routed_calls, routed collectives served
  uint8_t no_output_[8] = {};  // `out` of a member that receives nothing
  // Members only: this member's calls for recovery (null on a non-leader,
  // or without a host transport: then every call has its agreement).
  std::unique_ptr<CallLedger> ledger_;
  bool one_round_trip_ = false;  // alike on every rank (setting + host transport)
  uint64_t agreements_ = 0;      // switch:agreements, outcome agreements run
  uint64_t one_trip_ = 0;        // switch:one_round_trip, calls completed without one
  uint64_t recovered_ = 0;       // switch:recovered, results copied from another member
  int32_t barrier_sink_ = 0;     // the node reduce's output of a barrier (unused)
  // The MPI_Iallreduce stream in flight (one per communicator at a time).
  struct Stream {
    AllreduceArgs args;
    size_t bytes = 0;
    int64_t deadline_ms = 0;
    agent::ClientCounters before;
    Status mine;
    void* out = nullptr;    // where the result goes (scratch for in place)
    bool one_trip = false;  // ends without the agreement (settleStream)
    bool settled = false;   // settleStream ran
  } stream_;
  uint64_t streamed_ = 0;  // switch:streamed, MPI_Iallreduce calls served
};

AgentSwitchPath::~AgentSwitchPath() {
  logSummary();
  // Leaving is collective at the agent; every member frees the
  // communicator, and the client bounds it (kDrainMs) if one does not.
  if (group_ && group_->usable()) {
    Status st = group_->leave(agent::AggClient::kDrainMs);
    if (!st.ok()) SA_DEBUG("coll", "comm %s: leaving switch group: %s", comm_.name().c_str(),
                           st.toString().c_str());
  }
  group_.reset();
}

void AgentSwitchPath::describe(const AllreduceArgs& args, SelectionInput* in) const {
  if (serves(args)) fill(in);
}

void AgentSwitchPath::fill(SelectionInput* in) const {
  in->switch_available = true;
  in->switch_window = int(info_.window);
  in->switch_slot_bytes = info_.slot_bytes;
  in->switch_members = leaders_ ? leaders_->nodes() : comm_.size();
  in->switch_stripes = int(lease_.agents.size());
  in->switch_segment_bytes = leaders_ ? size_t(lease_.segment_bytes) : 0;
  in->switch_reduce_mbps = capacity_.reduce_mbps;
  in->switch_link_mbps = capacity_.link_mbps;
  in->switch_turnaround_us = capacity_.turnaround_us;
}

Status AgentSwitchPath::allreduce(const AllreduceArgs& args) {
  if (!serves(args)) return Status(Code::kUnsupported, "switch path cannot serve this call");
  const size_t bytes = args.count * dtypeSize(args.dtype);
  const bool in_place = args.send == nullptr;
  const void* input = in_place ? args.recv : args.send;
  void* out = args.recv;
  Status mine;
  last_bytes_sent_ = 0;
  const size_t segment = lease_.segment_bytes / dtypeSize(args.dtype);
  const bool pipelined = leaders_ && segment > 0 && args.count >= 2 * segment;
  if (!pipelined && oneRoundTrip(bytes)) return allreduceOneRoundTrip(args, bytes);
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
    mine = stream(args, input, out, bytes);
  }
  // Success is local (the agent may die after sending some members their
  // last chunk): nobody trusts its result until every rank says ok.
  std::vector<uint8_t> oks;
  SWITCHAGG_RETURN_IF_ERROR(agree(mine, &oks));
  if (allOnes(oks)) {
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

// Members: every rank, or the node leaders. The key is the first join's
// group id (alike on every rank; a rejoin keeps the ledger and its count).
void AgentSwitchPath::makeLedger() {
  const std::vector<std::vector<uint8_t>>& addresses = comm_.workerAddresses();
  one_round_trip_ = !lease_.agree_every_call && lease_.keep_bytes > 0 && !addresses.empty();
  if (!one_round_trip_ || (leaders_ && !leaders_->leader())) return;
  Result<ucx::Worker*> worker = ProcessRuntime::instance().worker();
  if (!worker.ok()) return;  // cannot be: the host transport runs on it
  std::vector<int> members;
  if (leaders_)
    for (int n = 0; n < leaders_->nodes(); ++n) members.push_back(leaders_->leaderOf(n));
  else
    for (int r = 0; r < comm_.size(); ++r) members.push_back(r);
  ledger_ = std::make_unique<CallLedger>(*worker.value(), info_.group_id, comm_.rank(),
                                         std::move(members), addresses);
}

// Test-only fault point: SWITCHAGG_TEST_CUT=RANK:CALL makes communicator
// rank RANK drop its agent group right after its one-round-trip call CALL
// succeeded, as if its connection had been cut after the agent sent the
// results: the call counts as failed here (recovered from the others), the
// group is left (unusable here; its LEAVE makes the agent abort it for the
// others' next call). Fires once per process.
bool testCutNow(int rank, uint64_t call) {
  static bool fired = false;
  static long want_rank = -1;
  static unsigned long long want_call = 0;
  static bool parsed = false;
  if (!parsed) {
    parsed = true;
    if (const char* v = envOrNull("SWITCHAGG_TEST_CUT"))
      if (std::sscanf(v, "%ld:%llu", &want_rank, &want_call) != 2) want_rank = -1;
  }
  if (fired || want_rank != rank || want_call != call) return false;
  fired = true;
  return true;
}

Result<CallOutcome> AgentSwitchPath::settle(const Status& mine, void* out, size_t bytes,
                                            int* source, const char* what) {
  if (mine.ok()) {
    ledger_->done(out, bytes);
    return CallOutcome::kDone;
  }
  if (mine.code() == Code::kBusy) {
    ledger_->busy();
    return CallOutcome::kBusy;
  }
  ledger_->failed();
  SA_DEBUG("coll", "comm %s rank %d: switch %s call %" PRIu64 " failed here (%s); asking the other members",
           comm_.name().c_str(), comm_.rank(), what, ledger_->seq(), mine.toString().c_str());
  Result<Recovery> r = ledger_->recover(out, bytes, ProcessRuntime::instance().params().stall);
  if (!r.ok()) return r.status();
  *source = r->source;
  if (r->outcome == CallOutcome::kDone) {
    ++recovered_;
    SA_INFO("coll",
            "comm %s rank %d: switch %s call %" PRIu64 " failed here (%s); its result came from "
            "rank %d (switch:recovered), switch path kept",
            comm_.name().c_str(), comm_.rank(), what, ledger_->seq(), mine.toString().c_str(),
            r->source);
  }
  return r->outcome;
}

// A one-round-trip call's end on every rank: a member settles its outcome
// (recovering it after a failure here); with node leaders one broadcast
// hands the outcome, and the result when done, to the node's ranks.
Result<CallOutcome> AgentSwitchPath::endOneRoundTrip(const Status& mine, void* out,
                                                     void* node_result, size_t bytes,
                                                     int* source, const char* what) {
  CallOutcome outcome = CallOutcome::kDone;
  if (ledger_) {
    Result<CallOutcome> end = settle(mine, out, bytes, source, what);
    if (!end.ok()) {
      if (leaders_) leaders_->abandon();
      return end.status();
    }
    outcome = *end;
  }
  if (leaders_) {
    uint8_t shared = uint8_t(outcome);
    SWITCHAGG_RETURN_IF_ERROR(leaders_->shareOutcome(&shared, out, node_result, bytes));
    outcome = CallOutcome(shared);
  }
  return outcome;
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
      mine = group_ ? stream(args, input, out, bytes)
                    : Status(Code::kAborted, "the switch group was lost in an earlier call");
    if (mine.ok() && testCutNow(comm_.rank(), ledger_->seq())) {
      (void)group_->leave(agent::AggClient::kDrainMs);  // unusable from now on, as after a cut
      mine = Status(Code::kPeerFailed, "test fault: agent connection cut after the call");
    }
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

// Every rank calls it for the same calls in the same order, so the count -
// and the decision to run the collective join - agree everywhere.
void AgentSwitchPath::rejoinIfDue() {
  if (joined_ || rejoin_after_ == 0 || ++calls_since_failure_ < rejoin_after_) return;
  calls_since_failure_ = 0;
  Joined joined = joinGroup(comm_, lease_, false, leaders_.get());
  if (!joined.ok) {
    rejoin_after_ = std::min<uint64_t>(rejoin_after_ * 2, kMaxRejoinCalls);
    if (comm_.rank() == 0)
      SA_DEBUG("coll", "comm %s: switch rejoin failed; next try after %" PRIu64 " calls",
               comm_.name().c_str(), rejoin_after_);
    return;
  }
  group_ = std::move(joined.group);
  info_ = joined.info;
  joined_ = true;
  routed_ = joined.routed;
  ++rejoined_;
  if (comm_.rank() == 0)
    SA_INFO("coll", "comm %s: switch path back after a failure (rejoined the agent)",
            comm_.name().c_str());
}

void AgentSwitchPath::giveUp(const Status& mine, int first_bad, const char* what,
                             const char* after) {
  ++failed_;
  calls_since_failure_ = 0;
  rejoin_after_ = lease_.rejoin_calls;
  if (!mine.ok())
    SA_DEBUG("coll", "comm %s rank %d: switch %s failed: %s", comm_.name().c_str(),
             comm_.rank(), what, mine.toString().c_str());
  const std::string who = first_bad >= 0 ? "rank " + std::to_string(first_bad) : "a member";
  if (comm_.rank() == 0)
    SA_INFO("coll",
            "comm %s: switch %s failed (%s: %s); %s, "
            "switch path disabled for this communicator (fallback:switch-failed)%s",
            comm_.name().c_str(), what, who.c_str(),
            mine.ok() ? "see its log at verbose 2" : mine.toString().c_str(), after,
            rejoin_after_ ? "; rejoin attempts follow" : "");
  // The group is dead or about to be; drop it (a usable one is left).
  group_.reset();
  joined_ = false;
}

int64_t steadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Node leaders reduce and broadcast on the host with blocking steps: such a
// communicator's MPI_Iallreduce stays with the previous module.
void AgentSwitchPath::describeStream(const AllreduceArgs& args, SelectionInput* in) const {
  // Not joined_: decided when posted, streamed later (startStream declines
  // then, alike on every rank, if the path failed meanwhile).
  if (!leaders_ && info_.caps.supports(args.dtype, args.op)) fill(in);
}

// As allreduce() without the blocking parts: the result goes to scratch for
// an in-place call (the input stays intact until the ranks agree).
Status AgentSwitchPath::startStream(const AllreduceArgs& args) {
  if (!serves(args) || leaders_ || !group_)
    return Status(Code::kUnsupported, "switch path cannot stream this call");
  stream_ = Stream{};
  stream_.args = args;
  stream_.bytes = args.count * dtypeSize(args.dtype);
  stream_.deadline_ms = steadyMs() + timeoutFor(stream_.bytes);
  void* out = args.recv;
  if (args.send == nullptr) {
    if (scratch_.size() < stream_.bytes) scratch_.resize(stream_.bytes);
    out = scratch_.data();
  }
  stream_.out = out;
  stream_.one_trip = ledger_ && oneRoundTrip(stream_.bytes);
  if (stream_.one_trip) ledger_->begin();
  last_bytes_sent_ = 0;
  stream_.before = group_->counters();
  Status st = group_->startCall(args.dtype, args.op, args.send ? args.send : args.recv, out,
                                args.count);
  if (st.code() == Code::kInProgress) return st;
  countStream(stream_.before);
  stream_.mine = st;
  return st;
}

Status AgentSwitchPath::stepStream() {
  if (!group_) return Status(Code::kInternal, "no stream running");
  Status st = group_->stepCall();
  if (st.code() == Code::kInProgress) {
    if (steadyMs() < stream_.deadline_ms) return st;
    st = group_->abortCall(timeoutFor(stream_.bytes));
  }
  countStream(stream_.before);
  stream_.mine = st;
  return st;
}

Status AgentSwitchPath::settleStream(int outcome, int* agreed) {
  const Status mine = outcome == kStreamOk     ? Status::Ok()
                      : outcome == kStreamBusy ? Status(Code::kBusy, "refused busy")
                      : !stream_.mine.ok()     ? stream_.mine
                                               : Status(Code::kInternal, "stream failed");
  int source = -1;
  Result<CallOutcome> end = settle(mine, stream_.out, stream_.bytes, &source, "iallreduce");
  if (!end.ok()) return end.status();
  stream_.settled = true;
  *agreed = *end == CallOutcome::kDone ? kStreamOk
            : *end == CallOutcome::kBusy ? kStreamBusy
                                         : kStreamFailed;
  return Status::Ok();
}

Status AgentSwitchPath::endStream(int agreed, int first_rank) {
  if (stream_.settled) ++one_trip_;
  else ++agreements_;  // the glue's nonblocking agreement ended
  if (agreed == kStreamOk) {
    if (stream_.args.send == nullptr && stream_.bytes)
      std::memcpy(stream_.args.recv, scratch_.data(), stream_.bytes);
    ++calls_;
    ++streamed_;
    return Status::Ok();
  }
  if (agreed == kStreamBusy) {
    ++busy_;
    return Status(Code::kUnsupported, "switch busy; redone on the host");
  }
  giveUp(stream_.mine, first_rank, "allreduce",
         stream_.settled ? "no member had the result (all asked); result recomputed on the host"
                         : "result recomputed on the host");
  return Status(Code::kUnsupported, "switch path failed; redone on the host");
}

bool isReduction(RoutedOp op) {
  return op == RoutedOp::kReduce || op == RoutedOp::kReduceScatter ||
         op == RoutedOp::kReduceScatterBlock;
}

// Why the path cannot route this call (the reason counted as
// <op>:previous:<reason>), or null after filling `in`'s switch fields.
// Alike on every rank: joined_, leaders_, routed_ and the caps are agreed.
const char* AgentSwitchPath::describeRouted(const RoutedArgs& args, SelectionInput* in) const {
  if (!joined_) return "unavailable";
  // Node leaders: MPI_Bcast and MPI_Reduce wrap the leaders' call in node
  // steps (routedLeaders); reduce-scatter and allgather would need a
  // node-level scatter/gather around the agent's, not built. On one node
  // the whole call is node steps: nothing for the agent to route.
  if (leaders_ && ((args.op != RoutedOp::kBcast && args.op != RoutedOp::kReduce) ||
                   leaders_->nodes() == 1))
    return "node-leaders";
  if (!routed_) return "agent-not-routed";
  if (isReduction(args.op) && !info_.caps.supports(args.dtype, args.reduce_op))
    return "dtype-op";
  if (in) fill(in);
  return nullptr;
}

// One routed call: the RoutedCall for this rank, the client's stream (all
// stripes), then the allreduce's one-byte outcome agreement. Results meant
// for the caller's buffer go there directly when the input stays intact
// anyway, else to scratch_, committed only once every rank said ok; an
// in-place allgather streams its own block from a copy and restores it
// before a redo.
Status AgentSwitchPath::routed(const RoutedArgs& args, RoutedEnd* how) {
  if (describeRouted(args, nullptr) != nullptr || (!leaders_ && !group_))
    return Status(Code::kUnsupported, "switch path cannot route this call");
  if (leaders_) return routedLeaders(args, how);
  const int size = comm_.size(), rank = comm_.rank();
  const bool in_place = args.send == nullptr;
  const size_t esize = isReduction(args.op) ? dtypeSize(args.dtype) : 1;
  agent::RoutedCall call;
  void* commit = nullptr;   // scratch_ -> commit (commit_bytes) after an all-ok agreement
  void* restore = nullptr;  // scratch_ -> restore (commit_bytes) before a redo
  size_t commit_bytes = 0;
  switch (args.op) {
    case RoutedOp::kReduce: {
      call.kind = agent::RoutedCall::Kind::kReduce;
      call.dtype = args.dtype;
      call.op = args.reduce_op;
      call.total = args.count;
      call.in = in_place ? args.recv : args.send;  // MPI_IN_PLACE: the root's input is recv
      call.want.resize(size_t(size) + 1);
      for (int r = 0; r <= size; ++r) call.want[size_t(r)] = r <= args.root ? 0 : args.count;
      if (rank == args.root && in_place) {
        commit = args.recv;
        commit_bytes = args.count * esize;
        call.out = scratchFor(commit_bytes);
      } else {
        call.out = rank == args.root ? args.recv : no_output_;
      }
      break;
    }
    case RoutedOp::kReduceScatter:
    case RoutedOp::kReduceScatterBlock: {
      call.kind = agent::RoutedCall::Kind::kReduce;
      call.dtype = args.dtype;
      call.op = args.reduce_op;
      call.want.resize(size_t(size) + 1);
      for (int r = 0; r < size; ++r)
        call.want[size_t(r) + 1] = call.want[size_t(r)] + args.counts[r];
      call.total = call.want.back();
      call.in = in_place ? args.recv : args.send;  // in place: the whole vector in recv
      const size_t mine = args.counts[rank] * esize;
      if (in_place) {
        commit = args.recv;
        commit_bytes = mine;
        call.out = scratchFor(mine);
      } else {
        call.out = mine ? args.recv : no_output_;
      }
      break;
    }
    case RoutedOp::kAllgather: {
      const size_t b = args.count;
      call.kind = agent::RoutedCall::Kind::kForward;
      call.dtype = Dtype::kUint8;
      call.total = size_t(size) * b;
      call.in_begin = size_t(rank) * b;
      call.in_end = call.in_begin + b;
      call.out = args.recv;
      if (in_place) {
        // Our block from a copy: recv is the output, and a redo needs it back.
        restore = static_cast<uint8_t*>(args.recv) + call.in_begin;
        commit_bytes = b;
        void* copy = scratchFor(b);
        std::memcpy(copy, restore, b);
        call.in = copy;
      } else {
        call.in = args.send;
      }
      break;
    }
    case RoutedOp::kBcast: {
      call.kind = agent::RoutedCall::Kind::kForward;
      call.dtype = Dtype::kUint8;
      call.total = args.count;
      if (rank == args.root) {
        call.in = args.recv;
        call.in_begin = 0;
        call.in_end = args.count;
        call.out = scratchFor(args.count);  // the root's copy comes back; its buffer stays
      } else {
        call.in_begin = call.in_end = rank < args.root ? 0 : args.count;
        call.out = args.recv;
      }
      break;
    }
  }
  last_bytes_sent_ = 0;
  const size_t vector_bytes = routedVectorBytes(args, size);
  // Allgather and bcast leave the same vector on every rank, so a member
  // that missed it can copy it from one that has it: one round trip
  // ("Completion"). Reduce and reduce-scatter results differ per rank: they
  // keep the agreement.
  if (ledger_ && oneRoundTrip(vector_bytes) &&
      (args.op == RoutedOp::kAllgather || args.op == RoutedOp::kBcast)) {
    ledger_->begin();
    const Status mine = streamRouted(call, vector_bytes);
    // The whole vector: recv (a bcast root's own buffer, only read; after
    // a failure there its copy goes to scratch).
    void* whole = args.op == RoutedOp::kBcast && rank == args.root && !mine.ok()
                      ? scratchFor(vector_bytes)
                      : args.recv;
    int source = -1;
    Result<CallOutcome> end = settle(mine, whole, vector_bytes, &source, routedOpName(args.op));
    if (!end.ok()) return end.status();
    if (*end == CallOutcome::kDone) {
      ++routed_calls_;
      ++one_trip_;
      *how = RoutedEnd::kSwitched;
      return Status::Ok();
    }
    if (restore && commit_bytes) std::memcpy(restore, scratch_.data(), commit_bytes);
    if (*end == CallOutcome::kBusy) {
      ++busy_;
      *how = RoutedEnd::kBusy;
      return Status::Ok();
    }
    giveUp(mine, firstFailed(mine, source), routedOpName(args.op),
           "no member had the result (all asked); redone on the previous module");
    *how = RoutedEnd::kFailed;
    return Status::Ok();
  }
  const Status mine = streamRouted(call, vector_bytes);
  std::vector<uint8_t> oks;
  SWITCHAGG_RETURN_IF_ERROR(agree(mine, &oks));
  if (allOnes(oks)) {
    if (commit && commit_bytes) std::memcpy(commit, scratch_.data(), commit_bytes);
    ++routed_calls_;
    *how = RoutedEnd::kSwitched;
    return Status::Ok();
  }
  if (restore && commit_bytes) std::memcpy(restore, scratch_.data(), commit_bytes);
  return endRoutedUnserved(mine, oks, args.op, how);
}

Status AgentSwitchPath::streamRouted(const agent::RoutedCall& call, size_t bytes) {
  const agent::ClientCounters before = group_->counters();
  Status st = group_->routed(call, timeoutFor(bytes));
  countStream(before);
  // A decline here is unexpected (checked before, alike everywhere): no
  // harm done, redo the call, keep the path.
  if (st.code() == Code::kUnsupported || st.code() == Code::kInvalidArgument)
    st = Status(Code::kBusy, "client declined the routed call: " + st.message());
  return st;
}

Status AgentSwitchPath::endRoutedUnserved(const Status& mine, const std::vector<uint8_t>& oks,
                                          RoutedOp op, RoutedEnd* how) {
  if (!anyFailed(oks)) {
    ++busy_;
    *how = RoutedEnd::kBusy;
    return Status::Ok();
  }
  giveUp(mine, firstFailedRank(oks), routedOpName(op), "redone on the previous module");
  *how = RoutedEnd::kFailed;
  return Status::Ok();
}

void* AgentSwitchPath::scratchFor(size_t bytes) {
  if (scratch_.size() < bytes) scratch_.resize(bytes);
  return bytes ? static_cast<void*>(scratch_.data()) : no_output_;
}

// MPI_Bcast / MPI_Reduce with node leaders, mirroring allreduce(): node
// step, the leaders' routed call among nodes (member = node index, the
// root's node owns the bcast input / wants the whole reduction), then the
// one-byte agreement over every rank; only after an all-ok agreement the
// result is delivered inside the nodes (a failure there is a host transport
// failure after the commit, reported like a host algorithm's). Before it:
//   bcast: a root that is not its node's leader sends its buffer to the
//     leader (a staging copy there); the root's buffer is only ever read.
//   reduce: the node's inputs reduced into the leader in rank order
//     (NodeLeaders::reduce: a copy, the inputs stay intact for a redo).
// After it: bcast: each leader's result to its node (a non-leader root
// receives into staging); reduce: the root's leader sends the result to
// the root if that is another rank. Non-leaders say ok for the agent step.
Status AgentSwitchPath::routedLeaders(const RoutedArgs& args, RoutedEnd* how) {
  const int rank = comm_.rank();
  const bool bcast = args.op == RoutedOp::kBcast;
  const bool in_place = args.send == nullptr;
  const size_t bytes = args.count * (bcast ? 1 : dtypeSize(args.dtype));
  const int node = leaders_->node(), nodes = leaders_->nodes();
  const int root_node = leaders_->nodeOf(args.root);
  const int root_leader = leaders_->leaderOf(root_node);
  agent::RoutedCall call;
  call.total = args.count;
  Status mine;
  if (bcast) {
    mine = leaders_->begin();
    if (mine.ok() && root_leader != args.root)
      mine = leaders_->move(args.root, root_leader, args.recv, scratchFor(bytes), bytes);
    call.kind = agent::RoutedCall::Kind::kForward;
    call.dtype = Dtype::kUint8;
    if (node == root_node) {
      call.in = rank == args.root ? args.recv : scratchFor(bytes);
      call.in_begin = 0;
      call.in_end = args.count;
      // A root leader's copy comes back to staging; its buffer stays.
      call.out = rank == args.root ? scratchFor(bytes) : args.recv;
    } else {
      call.in_begin = call.in_end = node < root_node ? 0 : args.count;
      call.out = args.recv;
    }
  } else {
    AllreduceArgs local;
    local.send = args.send;  // null: in place at the root, its input in recv
    local.recv = args.recv;
    local.count = args.count;
    local.dtype = args.dtype;
    local.op = args.reduce_op;
    Result<const void*> node_input = leaders_->reduce(local);
    mine = node_input.status();
    call.kind = agent::RoutedCall::Kind::kReduce;
    call.dtype = args.dtype;
    call.op = args.reduce_op;
    call.in = mine.ok() ? node_input.value() : nullptr;
    call.want.resize(size_t(nodes) + 1);
    for (int m = 0; m <= nodes; ++m) call.want[size_t(m)] = m <= root_node ? 0 : args.count;
    // The root's node gets the result: straight into a root leader's recv
    // unless in place (its input), else staging.
    call.out = node != root_node                   ? static_cast<void*>(no_output_)
               : rank == args.root && !in_place ? args.recv
                                                  : scratchFor(bytes);
  }
  last_bytes_sent_ = 0;
  if (mine.ok() && group_) mine = streamRouted(call, bytes);
  std::vector<uint8_t> oks;
  Status agreed = agree(mine, &oks);
  if (!agreed.ok()) {
    leaders_->abandon();
    return agreed;
  }
  if (allOnes(oks)) {
    ++routed_calls_;
    *how = RoutedEnd::kSwitched;
    // A leader sends from its recv (a root leader's buffer is only read; the
    // agent returns a root only headers); a non-leader root receives its
    // copy into staging.
    if (bcast)
      return leaders_->broadcastBytes(
          rank == args.root && rank != root_leader ? scratchFor(bytes) : args.recv, bytes);
    Status st;
    if (root_leader != args.root)
      st = leaders_->move(root_leader, args.root, scratchFor(bytes), args.recv, bytes);
    else if (rank == args.root && in_place && bytes)
      std::memcpy(args.recv, scratch_.data(), bytes);
    leaders_->abandon();
    return st;
  }
  leaders_->abandon();
  return endRoutedUnserved(mine, oks, args.op, how);
}

bool AgentSwitchPath::counter(const std::string& name, uint64_t* value) const {
  if (name == "switch:bytes_sent") *value = bytes_sent_;
  else if (name == "switch:last_bytes_sent") *value = last_bytes_sent_;
  else if (name == "switch:chunks") *value = chunks_;
  else if (name == "switch:calls") *value = calls_;
  else if (name == "switch:failed" || name == "fallback:switch-failed") *value = failed_;
  else if (name == "switch:busy" || name == "fallback:switch-busy") *value = busy_;
  else if (name == "switch:joined") *value = 1;
  else if (name == "switch:dead") *value = joined_ ? 0 : 1;
  else if (name == "switch:leader") *value = !leaders_ || leaders_->leader() ? 1 : 0;
  else if (name == "switch:members") *value = uint64_t(leaders_ ? leaders_->nodes() : comm_.size());
  else if (name == "switch:rejoined") *value = rejoined_;
  else if (name == "switch:barriers") *value = barriers_;
  else if (name == "switch:barrier_failed") *value = barrier_failed_;
  else if (name == "switch:barrier_busy") *value = barrier_busy_;
  else if (name == "switch:pipelined") *value = pipelined_;
  else if (name == "switch:streamed") *value = streamed_;
  else if (name == "switch:routed") *value = joined_ && routed_ ? 1 : 0;
  else if (name == "switch:routed_calls") *value = routed_calls_;
  else if (name == "switch:agreements") *value = agreements_;
  else if (name == "switch:one_round_trip") *value = one_trip_;
  else if (name == "switch:recovered") *value = recovered_;
  // Host messages the switch path itself sent outside the node steps: its
  // agreements (one collective each) and recovery questions and answers.
  else if (name == "switch:host_messages")
    *value = agreements_ + (ledger_ ? ledger_->messagesSent() : 0);
  else return false;
  return true;
}

// One agent round trip (a one-element int32 sum: the members' count comes
// back only once every member sent), then the same one-byte outcome
// agreement as an allreduce. The agreement is what keeps a failure safe: a
// rank whose agent call failed cannot know whether the others left, and the
// agreement cannot complete before every rank entered, so once it is done
// the barrier is complete on every rank whatever the agent did. A failure
// then only disables the path (giveUp: same rejoin rules as allreduce).
// With node leaders only the leaders call the agent; the agreement spans
// every rank, so it also releases each node.
Status AgentSwitchPath::barrier(BarrierEnd* how) {
  if (!joined_ || !info_.caps.supports(Dtype::kInt32, Op::kSum))
    return Status(Code::kUnsupported, "switch path cannot serve a barrier");
  if (oneRoundTrip(0)) return barrierOneRoundTrip(how);
  Status mine;
  if (group_) {
    const int32_t one = 1;
    int32_t entered = 0;
    mine = group_->allreduce(Dtype::kInt32, Op::kSum, &one, &entered, 1, timeoutFor(0));
    const int32_t members = leaders_ ? leaders_->nodes() : comm_.size();
    if (mine.ok() && entered != members)
      mine = Status(Code::kInternal, "agent barrier counted " + std::to_string(entered) +
                                         " members, expected " + std::to_string(members));
  }
  std::vector<uint8_t> oks;
  SWITCHAGG_RETURN_IF_ERROR(agree(mine, &oks));
  if (allOnes(oks)) {
    ++barriers_;
    *how = BarrierEnd::kSwitched;
    return Status::Ok();
  }
  if (!anyFailed(oks)) {
    ++barrier_busy_;
    ++busy_;
    *how = BarrierEnd::kBusy;
    return Status::Ok();
  }
  ++barrier_failed_;
  giveUp(mine, firstFailedRank(oks), "barrier", "barrier completed by the agreement");
  *how = BarrierEnd::kFailed;
  return Status::Ok();
}

// One agent round trip: a member that got the count of every member back
// knows that every rank entered (with node leaders, each leader joined the
// agent only after its node's ranks reached it: the node reduce). If this
// member's call failed, another member that got the count proves the same
// (recovery). Only when no member has it - busy or failed - is the barrier
// completed on the host, by the outcome agreement (an allgather every rank
// reaches, so it is a barrier itself).
Status AgentSwitchPath::barrierOneRoundTrip(BarrierEnd* how) {
  Status mine;
  const int32_t one = 1;
  if (leaders_) {
    AllreduceArgs node;
    node.send = &one;
    node.recv = &barrier_sink_;
    node.count = 1;
    node.dtype = Dtype::kInt32;
    node.op = Op::kSum;
    mine = leaders_->reduce(node).status();
  }
  int source = -1;
  if (ledger_) {
    ledger_->begin();
    int32_t entered = 0;
    if (mine.ok())
      mine = group_ ? group_->allreduce(Dtype::kInt32, Op::kSum, &one, &entered, 1, timeoutFor(0))
                    : Status(Code::kAborted, "the switch group was lost in an earlier call");
    const int32_t members = leaders_ ? leaders_->nodes() : comm_.size();
    if (mine.ok() && entered != members)
      mine = Status(Code::kInternal, "agent barrier counted " + std::to_string(entered) +
                                         " members, expected " + std::to_string(members));
  }
  Result<CallOutcome> end = endOneRoundTrip(mine, nullptr, nullptr, 0, &source, "barrier");
  if (!end.ok()) return end.status();
  const CallOutcome outcome = *end;
  if (outcome == CallOutcome::kDone) {
    ++barriers_;
    ++one_trip_;
    *how = BarrierEnd::kSwitched;
    return Status::Ok();
  }
  std::vector<uint8_t> oks;
  SWITCHAGG_RETURN_IF_ERROR(agree(mine, &oks));
  if (outcome == CallOutcome::kBusy) {
    ++barrier_busy_;
    ++busy_;
    *how = BarrierEnd::kBusy;
    return Status::Ok();
  }
  ++barrier_failed_;
  giveUp(mine, firstFailed(mine, source), "barrier", "barrier completed by the agreement");
  *how = BarrierEnd::kFailed;
  return Status::Ok();
}

void AgentSwitchPath::logSummary() const {
  if (comm_.rank() != 0 || !logEnabled(LogLevel::kInfo)) return;
  const std::string routed =
      routed_calls_ ? ", " + std::to_string(routed_calls_) + " routed call(s)" : "";
  SA_INFO("coll",
          "comm %s switch path: %" PRIu64 " calls, %" PRIu64 " bytes sent per %s in %" PRIu64
          " chunks, %" PRIu64 " fallback(s), %" PRIu64 " busy, %" PRIu64 " rejoin(s)%s%s",
          comm_.name().c_str(), calls_, bytes_sent_, leaders_ ? "node leader" : "rank",
          chunks_, failed_, busy_, rejoined_, routed.c_str(),
          joined_ ? "" : ", disabled after a failure");
}

// The figures the cost model takes for the lease's agents: a striped call
// ends with its slowest stripe, so the smallest reduction and link rates
// and the longest turnaround any of them told (0 = unknown stays unknown
// only if no agent told).
agent::wire::Capacity slowestAgent(const std::vector<std::shared_ptr<agent::AggClient>>& clients) {
  agent::wire::Capacity slow;
  auto lowest = [](uint32_t have, uint32_t v) { return v == 0 ? have : have == 0 ? v : std::min(have, v); };
  for (const std::shared_ptr<agent::AggClient>& c : clients) {
    const agent::wire::Capacity& k = c->agent().capacity;
    slow.reduce_mbps = lowest(slow.reduce_mbps, k.reduce_mbps);
    slow.link_mbps = lowest(slow.link_mbps, k.link_mbps);
    slow.turnaround_us = std::max(slow.turnaround_us, k.turnaround_us);
  }
  return slow;
}

// Where a member sits in a tree: the communicator's leaves are the leaf
// agents its ranks' nodes have, in the lease's (the map's) order; `index` is
// this member's leaf among them. *size / *rank become the members at that
// leaf and this member's place there (participants in order: ranks, or
// nodes with leaders). One leaf: a plain group there (leaves = 1).
struct TreePlace {
  uint32_t index = 0, leaves = 0;
};

TreePlace treePlace(const std::vector<JoinHello>& all, const NodeLeaders* leaders, int* size,
                    int* rank) {
  std::vector<uint16_t> leaf_of(static_cast<size_t>(*size));  // per participant
  for (int p = 0; p < *size; ++p)
    leaf_of[size_t(p)] = all[size_t(leaders ? leaders->leaderOf(p) : p)].leaf;
  std::vector<uint16_t> leaves = leaf_of;
  std::sort(leaves.begin(), leaves.end());
  leaves.erase(std::unique(leaves.begin(), leaves.end()), leaves.end());
  TreePlace t;
  t.leaves = uint32_t(leaves.size());
  const uint16_t mine = leaf_of[size_t(*rank)];
  t.index = uint32_t(std::find(leaves.begin(), leaves.end(), mine) - leaves.begin());
  if (t.leaves < 2) return t;
  int here = 0, me = 0;
  for (int p = 0; p < *size; ++p) {
    if (leaf_of[size_t(p)] != mine) continue;
    if (p == *rank) me = here;
    ++here;
  }
  *size = here;
  *rank = me;
  return t;
}

Joined joinGroup(CommGroup& comm, const SwitchLease& lease, bool first, NodeLeaders* leaders) {
  const LogLevel level = first ? LogLevel::kInfo : LogLevel::kDebug;
  // A non-leader opens no connection and agrees to whatever the others saw.
  const bool member = !leaders || leaders->leader();
  // A member opens one connection per agent of the lease (one stripe each);
  // connected means connected to all of them.
  // A tree lease: one connection, to the leaf agent of this rank's node.
  std::vector<std::shared_ptr<agent::AggClient>> clients;
  Status connect_failure;
  if (lease.tree && lease.leaf < 0) connect_failure = Status(Code::kUnsupported, lease.tree_error);
  for (size_t k = 0; member && k < lease.agents.size() && connect_failure.ok(); ++k) {
    if (lease.tree && k != size_t(lease.leaf)) continue;
    Result<std::shared_ptr<agent::AggClient>> c = switchClient(lease, k);
    if (c.ok())
      clients.push_back(std::move(c.value()));
    else
      connect_failure = Status(c.status().code(), lease.agents[k] + ": " + c.status().message());
  }
  JoinHello mine{};
  mine.connected = connect_failure.ok() ? 1 : 0;
  mine.nonce = comm.rank() == 0 ? randomNonce() : 0;
  mine.leaf = lease.tree && lease.leaf >= 0 ? uint16_t(lease.leaf + 1) : 0;
  if (member && connect_failure.ok()) mine.capacity = slowestAgent(clients);
  std::vector<JoinHello> all(size_t(comm.size()));
  if (!comm.allgather(&mine, all.data(), sizeof mine).ok()) return {};
  for (const JoinHello& h : all) {
    if (h.connected) continue;
    const std::string why =
        mine.connected ? "a rank cannot reach the agent" : connect_failure.toString();
    if (first && lease.require) reportRequireFailure(lease, why);
    if (comm.rank() == 0)
      SWITCHAGG_LOG(level, "coll", "comm %s: switch path unavailable: %s", comm.name().c_str(),
                    why.c_str());
    return {};
  }
  const uint64_t group_id = (all[0].nonce & ~uint64_t(0xFFFF)) | (comm.contextId() & 0xFFFF);
  // Every rank computes the same request (the lease's slots come from the
  // agent's HELLO_ACK, the override from the job-wide environment). Half the
  // lease: windows are taken per call, so this lets two communicators reduce
  // at once (say the two halves of a split) before calls are refused busy;
  // the whole lease gained nothing clear for one communicator (8 vs 4 of 8
  // slots, 2 clients on loopback: 1 MiB 263-365 vs 298-385 MB/s, 8 MiB
  // 345-419 vs 264-377 MB/s, inside run-to-run spread).
  // An agent that predates per-call slots reserves at join: half keeps
  // WORLD and one more communicator there, as before.
  // The same id at every agent (ids are per lease, and each agent has its
  // own lease). Joins run agent by agent in the lease's order on every rank.
  // With node leaders the agent sees one member per node, by node index.
  int size = leaders ? leaders->nodes() : comm.size();
  int rank = leaders ? leaders->node() : comm.rank();
  const TreePlace tree = lease.tree ? treePlace(all, leaders, &size, &rank) : TreePlace{};
  // A tree group holds its window at the leaf and the spine for its whole
  // life (no per-call busy): a quarter of the lease, so a few communicators
  // of the job can each have one.
  const uint32_t share = tree.leaves > 1 ? 4 : 2;
  std::vector<std::unique_ptr<agent::AggGroup>> groups;
  Status join_failure;
  for (size_t k = 0; k < clients.size() && join_failure.ok(); ++k) {
    const size_t agent_k = lease.tree ? size_t(lease.leaf) : k;
    const uint32_t window = lease.window_request
                                ? lease.window_request
                                : std::max<uint32_t>(1, clients[k]->agent().max_window / share);
    agent::TreeJoin tj;
    if (tree.leaves > 1) {
      tj.parent_token_hex = lease.tokens[size_t(lease.root)];
      tj.leaf_index = tree.index;
      tj.leaves = tree.leaves;
    }
    Result<std::unique_ptr<agent::AggGroup>> group = clients[k]->join(
        group_id, size, rank, kJoinTimeoutMs, window, tree.leaves > 1 ? &tj : nullptr);
    if (group.ok())
      groups.push_back(std::move(group.value()));
    else
      join_failure =
          Status(group.status().code(), lease.agents[agent_k] + ": " + group.status().message());
  }
  std::unique_ptr<agent::StripedGroup> striped;
  if (member) striped = std::make_unique<agent::StripedGroup>(std::move(clients), std::move(groups));
  // Bit 0: joined; bit 1: the member's agents all route (a non-leader has
  // no agent and does not veto). Routed collectives need every rank's bit 1.
  const bool routes = !member || (join_failure.ok() && striped->routedSupported());
  uint8_t ok = join_failure.ok() ? uint8_t(1 | (routes ? 2 : 0)) : 0;
  std::vector<uint8_t> oks(size_t(comm.size()));
  const bool all_joined =
      comm.allgather(&ok, oks.data(), 1).ok() &&
      std::all_of(oks.begin(), oks.end(), [](uint8_t f) { return (f & 1) != 0; });
  if (!all_joined) {
    const std::string why = ok ? "another rank could not join" : join_failure.toString();
    if (first && lease.require) reportRequireFailure(lease, why);
    if (comm.rank() == 0)
      SWITCHAGG_LOG(level, "coll", "comm %s: switch path unavailable: join failed: %s",
                    comm.name().c_str(), why.c_str());
    return {};  // joined groups are left by their destructors
  }
  const bool all_route =
      std::all_of(oks.begin(), oks.end(), [](uint8_t f) { return (f & 2) != 0; });
  Joined joined{true, all_route, std::move(striped), all[0].capacity, {}};
  if (first && comm.rank() == 0 && !all_route)
    SA_INFO("coll",
            "comm %s: %s: MPI_Reduce, MPI_Reduce_scatter(_block), MPI_Allgather and MPI_Bcast "
            "stay with the previous module",
            comm.name().c_str(),
            tree.leaves > 1 ? "routed calls do not go through a tree"
                            : "the agent does not route calls (it predates them)");
  // The slowest stripe's geometry: the model's window and chunk.
  const agent::GroupInfo slowest = joined.group ? joined.group->slowestInfo() : agent::GroupInfo{};
  if (!leaders) joined.info = slowest;
  else if (!leaders->shareInfo(joined.group ? &slowest : nullptr, &joined.info).ok())
    return {};
  const size_t stripes = lease.tree ? 1 : lease.agents.size();
  // A tree member talks to its leaf only (rank 0's leaf, in the log).
  const std::string where = lease.tree && lease.leaf >= 0 ? lease.agents[size_t(lease.leaf)] : lease.agent;
  const agent::GroupInfo& info = joined.info;
  if (comm.rank() == 0 && tree.leaves > 1)
    SA_INFO("coll", "comm %s: a tree over %u leaf agents and the spine %s", comm.name().c_str(),
            tree.leaves, lease.agents[size_t(lease.root)].c_str());
  if (comm.rank() == 0 && leaders)
    SA_INFO("coll",
            "comm %s: joined switch group %016" PRIx64 " at %s (%zu stripe(s), window %u x %zu "
            "bytes; %d node leaders for %d ranks)",
            comm.name().c_str(), group_id, where.c_str(), stripes, info.window,
            info.slot_bytes, leaders->nodes(), comm.size());
  else if (comm.rank() == 0)
    SA_INFO("coll",
            "comm %s: joined switch group %016" PRIx64 " at %s (%zu stripe(s), window %u x %zu bytes)",
            comm.name().c_str(), group_id, where.c_str(), stripes, info.window,
            info.slot_bytes);
  const agent::wire::Capacity& agreed = joined.capacity;
  if (comm.rank() == 0 && agreed.reduce_mbps > 0)
    SA_INFO("coll",
            "comm %s: the agent advertises %u MB/s reduction, link %u Mbit/s (0 = unknown), "
            "%u us turnaround",
            comm.name().c_str(), agreed.reduce_mbps, agreed.link_mbps, agreed.turnaround_us);
  return joined;
}

}  // namespace

size_t routedVectorBytes(const RoutedArgs& args, int size) {
  switch (args.op) {
    case RoutedOp::kReduce: return args.count * dtypeSize(args.dtype);
    case RoutedOp::kReduceScatter:
    case RoutedOp::kReduceScatterBlock: {
      size_t total = 0;
      for (int r = 0; r < size; ++r) total += args.counts[r];
      return total * dtypeSize(args.dtype);
    }
    case RoutedOp::kAllgather: return size_t(size) * args.count;
    case RoutedOp::kBcast: return args.count;
  }
  return 0;
}

std::unique_ptr<SwitchPath> createSwitchPath(CommGroup& comm) {
  const SwitchLease* lease = switchLease();
  if (!lease) return nullptr;  // no lease: quietly no switch candidate
  const SelectionPolicy& policy = ProcessRuntime::instance().params().policy;
  if (strcasecmp(policy.offload.c_str(), "off") == 0) return nullptr;
  // A forced host algorithm never asks the switch; do not occupy slots.
  Algorithm forced;
  if (parseAlgorithm(policy.forced, &forced) && forced != Algorithm::kSwitch) return nullptr;
  std::unique_ptr<NodeLeaders> leaders = NodeLeaders::create(comm, lease->node_leaders);
  Joined joined = joinGroup(comm, *lease, true, leaders.get());
  if (!joined.ok) return nullptr;
  return std::make_unique<AgentSwitchPath>(comm, *lease, std::move(joined), std::move(leaders));
}

}  // namespace switchagg::coll
