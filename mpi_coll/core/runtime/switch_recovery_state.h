// Inside the recovery of switch-path calls (switch_recovery.h; protocol and
// safety argument: docs/offload.md "Completion"): the wire header, a
// ledger's state and the links its worker shares. Four files use it:
//   switch_recovery.cc           the ledger's calls and the ask-everyone loop
//   switch_recovery_exchange.cc  the O(log p) exchange of final outcomes
//   switch_recovery_links.cc     sends, answers, handlers, retirement
//   switch_recovery_faults.cc    the test fault points
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "switch_recovery.h"
#include "switchagg/ucx/transport.h"

namespace switchagg::coll {
namespace recovery {

constexpr uint16_t kAmQuery = 50, kAmAnswer = 51;  // on the process's shared worker
// Retirement: "I am past my last call of this communicator; are you?" and
// "so am I".
constexpr uint16_t kAmPastAsk = 52, kAmPast = 53;
constexpr uint32_t kMagic = 0x53415243;  // "SARC"
// Retired ledgers a worker keeps without asking; older ones stay until every
// other member is known past them.
constexpr size_t kRetiredKept = 8;
constexpr uint64_t kAll = UINT64_MAX;

struct Header {
  uint32_t magic;
  uint8_t outcome;  // answers only
  // Exchange questions and their answers: the asker's round + 1 (0: a
  // question to every member, as gatherInputs asks for parts).
  uint8_t round;
  uint8_t pad[2];
  int32_t from;  // communicator rank of the sender
  uint32_t pad2;
  uint64_t key;
  uint64_t seq;
  uint64_t lo, hi;  // questions: the bytes wanted of the kept data (kAll: all of it)
};

struct OutMessage {
  Header header{};
  std::vector<uint8_t> data;
  ucx::Request request;
};

// What the ledgers of one worker share: one endpoint per peer worker, made
// on first use and kept (a retirement message at a communicator's free then
// rarely waits for a new connection's wireup, which needs the peer to
// progress and which the worker flush of every host transport's close would
// wait out), and the messages in flight, whose buffers live until UCX is
// done with them whichever ledger sent them. Touched only by threads
// holding the worker's domain.
struct WorkerLinks {
  bool closed = false;  // shutdownRecovery ran
  std::map<std::vector<uint8_t>, std::unique_ptr<ucx::Endpoint>> endpoints;
  std::list<OutMessage> sending;
};

int64_t nowMs();
std::string rankList(const std::vector<int>& ranks);
std::shared_ptr<WorkerLinks> linksOf(ucx::Worker* worker);
void registerLedger(const std::shared_ptr<LedgerState>& state);
void retireLedger(std::shared_ptr<LedgerState> state);
void setHandlers(ucx::Worker& worker);
// Test-only: SWITCHAGG_TEST_RECOVERY_ASK_ALL=1 recovers by asking every
// member (the protocol before the exchange), so a benchmark or a test can
// compare both in one build (test_hooks.h).
bool askAllForced();
// Test-only: SWITCHAGG_TEST_RECOVERY_KILL=RANK:CALL kills communicator rank
// RANK as its recovery of call CALL starts (test_hooks.h).
void testKillAtRecovery(int rank, uint64_t call);
// Test-only: SWITCHAGG_TEST_RECOVERY_KILL_ASKED=RANK:CALL kills communicator
// rank RANK as it takes a question about call CALL, before it answers.
void testKillWhenAsked(int rank, uint64_t call);

}  // namespace recovery

struct LedgerState {
  using Header = recovery::Header;
  ucx::Worker* worker = nullptr;
  uint64_t key = 0;
  int rank = 0;  // communicator rank
  std::vector<int> members;
  std::vector<std::vector<uint8_t>> addresses;
  std::shared_ptr<recovery::WorkerLinks> links;  // the worker's endpoints and sends
  // The communicator's host transport's word on a member (its failure
  // sentinel watches the exchange partners from the join on:
  // docs/offload.md safety case 12); unset once the communicator is gone.
  std::function<bool(int)> peer_failed;
  // Written where answers are sent (the PMPI layer's answering thread too),
  // read by the counters' readers outside any call: atomic, relaxed.
  std::atomic<uint64_t> messages{0};
  // This member's calls.
  uint64_t seq = 0;
  CallOutcome outcome = CallOutcome::kDone;  // of call `seq` (0: none yet)
  uint64_t kept_seq = 0;
  std::vector<uint8_t> kept;
  std::vector<uint8_t> live;  // call `seq`'s input while it failed here (gatherInputs)
  // The call being recovered (asking != 0).
  uint64_t asking = 0;
  void* out = nullptr;  // recover: the result's copy goes here
  size_t out_bytes = 0;
  bool gathering = false;  // gatherInputs: parts of every member's input
  uint64_t want_lo = 0, want_hi = 0;
  std::map<int, std::vector<uint8_t>> parts;
  std::string bad_answer;  // an answer of the wrong size (cannot be decided safely)
  bool have_result = false;
  int source = -1;
  bool changed = false;
  std::map<int, CallOutcome> answers;

  // The exchange (switch_recovery_exchange.cc) of call `seq`: what this
  // member knows of each member's final outcome (by member index;
  // kPending: not known), how many rounds it completed, the questions it
  // cannot answer yet (their round is ahead of its own), and the answer of
  // the round it is in.
  struct Deferred {
    int to;
    uint64_t s;
    int round;
    uint64_t lo, hi;
  };
  bool exchanging = false;
  int rounds_done = 0;
  std::vector<uint8_t> known;
  std::vector<Deferred> deferred;
  bool awaiting = false;  // the round's question is out, no answer yet
  bool round_answered = false;
  CallOutcome round_outcome = CallOutcome::kPending;
  int round_from = -1;
  // Once decided without a result (busy or every member failed): the
  // decision of call final_seq, answered to every later question about it
  // whatever this member does next.
  uint64_t final_seq = 0;
  CallOutcome final_outcome = CallOutcome::kPending;

  // Retirement (the communicator freed here).
  bool retired = false;
  bool past_asked = false;  // the others were asked whether they are past it
  std::set<int> past;       // members known to have retired it too
  std::set<int> tell_past;  // members that asked while it was live: told on retiring

  // switch_recovery_links.cc
  bool everyonePast() const;
  void sendRetirement(uint16_t id, int to);
  void askPast();
  ucx::Endpoint* endpointTo(int peer, Status* why);
  // This worker's endpoint to peer failed, or the host transport knows the
  // peer failed (it died or left).
  bool linkFailed(int peer) const;
  // linkFailed, after taking in what already arrived (an answer the peer
  // sent before it died counts): true when the peer can no longer answer.
  bool peerGone(int peer);
  Status send(int peer, uint16_t id, const Header& h, const void* data, size_t bytes);
  void reap();
  void answer(int to, uint64_t s, uint64_t lo, uint64_t hi, int round);
  // One answer: outcome o of call s with bytes [lo, hi) of *held (kAll:
  // all of it; none past its end), echoing the question's round.
  void sendAnswer(int to, uint64_t s, CallOutcome o, const std::vector<uint8_t>* held,
                  uint64_t lo, uint64_t hi, int round);
  void onAnswer(const Header& h, const void* data, size_t bytes);

  // switch_recovery_exchange.cc
  int index() const;  // this member's index in members
  Result<Recovery> exchange(const StallBounds& stall);
  // Answers an exchange question of round `round` (0-based) about call s;
  // false: not yet (its round is ahead of this member's).
  bool answerRound(int to, uint64_t s, uint64_t lo, uint64_t hi, int round);
  void onRoundAnswer(const Header& h, const void* data, size_t bytes);
  void flushDeferred(bool ended);
  void decided(CallOutcome o);

  // switch_recovery.cc: the question loop that asks every member.
  Result<Recovery> ask(const StallBounds& stall);
  struct Asked {
    int64_t at = 0, backoff = 1;
  };
  struct Round {
    std::vector<int> open;  // members without a final answer
    bool busy = false, done = false;
    int busy_from = -1;
  };
  Header question() const;
  Status askRound(const Header& q, int64_t now, std::map<int, Asked>* asked, Round* round);
  Status missingPart() const;
  bool stalled(const StallBounds& stall, int64_t waited, const std::vector<int>& open,
               bool* warned, Result<Recovery>* result) const;
};

}  // namespace switchagg::coll
