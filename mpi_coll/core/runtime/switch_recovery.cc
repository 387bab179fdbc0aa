// Failure-only recovery of switch-path calls (switch_recovery.h; protocol
// and safety argument: docs/offload.md "Completion"). A member whose call s
// failed first runs the exchange (switch_recovery_exchange.cc): ceil(log2 p)
// questions find a member that has the result, or that every member failed
// (or one was refused busy). A gather that found a done member then asks
// every member for its part (the loop below):
//
//   member A (its call s failed)              member B (any state)
//     QUERY{key, s, [lo, hi), from A} ──────▶ AM handler -> posted answer:
//                                               s == B's call: its outcome
//                                                 (failed: its input's part)
//                                               s == B's kept call: done +
//                                                 its kept input's part
//                                               s later than B's call: pending
//                            ◀─────────────── ANSWER{key, s, outcome, from B} [+ part]
//     pending: ask again (backoff 1 ms .. 100 ms)
//     once one is done and every part is here: fold, complete
//
// Messages, answers and retirement: switch_recovery_links.cc.
#include "switch_recovery.h"

#include <algorithm>
#include <cstring>

#include "switch_recovery_state.h"
#include "switchagg/common/log.h"

namespace switchagg::coll {

using recovery::Header;
using recovery::kAll;
using recovery::kMagic;

CallLedger::CallLedger(ucx::Worker& worker, uint64_t key, int rank, std::vector<int> members,
                       std::vector<std::vector<uint8_t>> addresses)
    : state_(std::make_shared<LedgerState>()) {
  state_->worker = &worker;
  state_->key = key;
  state_->rank = rank;
  state_->members = std::move(members);
  state_->addresses = std::move(addresses);
  state_->links = recovery::linksOf(&worker);
  recovery::setHandlers(worker);
  recovery::registerLedger(state_);
}

CallLedger::~CallLedger() {
  LedgerState& s = *state_;
  s.peer_failed = nullptr;  // its communicator is going
  // Retired: still answers about its last call (kept or decided), nothing
  // else.
  s.flushDeferred(true);
  s.retired = true;
  s.live.clear();
  s.parts.clear();
  s.answers.clear();
  for (int m : s.tell_past) s.sendRetirement(recovery::kAmPast, m);
  s.tell_past.clear();
  recovery::retireLedger(std::move(state_));
}

uint64_t CallLedger::begin() {
  state_->flushDeferred(true);  // questions about the call before: answerable now
  state_->outcome = CallOutcome::kPending;
  state_->live.clear();
  return ++state_->seq;
}

void CallLedger::done(const void* result, size_t bytes) {
  LedgerState& s = *state_;
  s.outcome = CallOutcome::kDone;
  s.kept_seq = s.seq;
  s.kept.resize(bytes);
  if (bytes) std::memcpy(s.kept.data(), result, bytes);
  s.flushDeferred(false);  // questions that came while the call ran here
}

void CallLedger::busy() {
  state_->outcome = CallOutcome::kBusy;
  state_->decided(CallOutcome::kBusy);
  state_->flushDeferred(false);
}
void CallLedger::failed(const void* input, size_t bytes) {
  LedgerState& s = *state_;
  s.outcome = CallOutcome::kFailed;
  const uint8_t* p = static_cast<const uint8_t*>(input);
  if (bytes) s.live.assign(p, p + bytes);
}
uint64_t CallLedger::messagesSent() const {
  return state_->messages.load(std::memory_order_relaxed);
}
std::vector<int> CallLedger::exchangePartners() const {
  const LedgerState& s = *state_;
  const int me = s.index();
  const size_t p = s.members.size();
  std::vector<int> out;
  if (me < 0) return out;
  for (size_t step = 1; step < p; step *= 2)
    for (size_t m : {(size_t(me) + step) % p, (size_t(me) + p - step) % p})
      if (std::find(out.begin(), out.end(), s.members[m]) == out.end() && s.members[m] != s.rank)
        out.push_back(s.members[m]);
  return out;
}
void CallLedger::setPeerProbe(std::function<bool(int)> peer_failed) {
  state_->peer_failed = std::move(peer_failed);
}
void CallLedger::connect(int peer) {
  Status why;
  if (!state_->endpointTo(peer, &why))
    SA_DEBUG("coll", "switch recovery: connecting rank %d: %s", peer, why.toString().c_str());
}
uint64_t CallLedger::seq() const { return state_->seq; }

Result<Recovery> CallLedger::recover(void* out, size_t bytes, const StallBounds& stall) {
  LedgerState& s = *state_;
  s.gathering = false;
  s.out = out;
  s.out_bytes = bytes;
  s.want_lo = 0;
  s.want_hi = kAll;
  recovery::testKillAtRecovery(s.rank, s.seq);
  Result<Recovery> r = recovery::askAllForced() ? s.ask(stall) : s.exchange(stall);
  if (r.ok() && r->outcome == CallOutcome::kDone) {
    s.kept_seq = s.seq;
    s.kept.assign(static_cast<const uint8_t*>(out), static_cast<const uint8_t*>(out) + bytes);
  }
  s.flushDeferred(true);
  return r;
}

Result<Recovery> CallLedger::gatherInputs(size_t lo, size_t hi,
                                          std::vector<std::vector<uint8_t>>* parts,
                                          const StallBounds& stall) {
  LedgerState& s = *state_;
  if (lo > hi || (hi > lo && hi > s.live.size()))
    return Status(Code::kInternal, "switch recovery: bytes " + std::to_string(lo) + ".." +
                                       std::to_string(hi) + " of a " +
                                       std::to_string(s.live.size()) + "-byte input");
  s.gathering = true;
  s.want_lo = lo;
  s.want_hi = hi;
  s.parts.clear();
  s.bad_answer.clear();
  recovery::testKillAtRecovery(s.rank, s.seq);
  // The exchange first: it ends the call in log2 p questions when nobody
  // is done (or when no part is wanted); the parts then come from every
  // member.
  Result<Recovery> r = recovery::askAllForced() ? s.ask(stall) : s.exchange(stall);
  if (!recovery::askAllForced() && r.ok() && r->outcome == CallOutcome::kDone && hi > lo)
    r = s.ask(stall);
  else if (r.ok() && r->outcome == CallOutcome::kDone)
    s.outcome = CallOutcome::kDone;
  if (!r.ok()) s.decided(CallOutcome::kGone);
  s.gathering = false;
  if (r.ok() && r->outcome == CallOutcome::kDone) {
    parts->clear();
    if (hi > lo)
      for (int m : s.members)
        parts->push_back(m == s.rank ? std::vector<uint8_t>(s.live.begin() + long(lo),
                                                            s.live.begin() + long(hi))
                                     : std::move(s.parts[m]));
    // Done: what this member holds for the call is its input, as a done
    // member's (others may gather from it).
    s.kept_seq = s.seq;
    s.kept = std::move(s.live);
    s.live.clear();
  }
  s.parts.clear();
  s.flushDeferred(true);
  return r;
}

Header LedgerState::question() const {
  const LedgerState& s = *this;
  Header q{};
  q.magic = kMagic;
  q.from = s.rank;
  q.key = s.key;
  q.seq = s.asking;
  q.lo = s.want_lo;
  q.hi = s.want_hi;
  return q;
}

// Every other member's answer so far (a member that no longer holds the
// outcome: the error); one without a final answer asked again when its
// backoff is up.
Status LedgerState::askRound(const Header& q, int64_t now, std::map<int, Asked>* asked,
                             Round* round) {
  LedgerState& s = *this;
  for (int m : s.members) {
    if (m == s.rank) continue;
    auto it = s.answers.find(m);
    const CallOutcome o = it == s.answers.end() ? CallOutcome::kPending : it->second;
    if (o == CallOutcome::kGone) {
      return Status(Code::kInternal,
                    "switch call " + std::to_string(s.asking) + ": rank " +
                        std::to_string(m) + " no longer holds its outcome");
    }
    if (o == CallOutcome::kBusy && !round->busy) {
      round->busy = true;
      round->busy_from = m;
    }
    if (o == CallOutcome::kDone) round->done = true;
    if (o != CallOutcome::kPending) continue;
    round->open.push_back(m);
    Asked& a = (*asked)[m];
    if (s.peerGone(m)) {  // the peer died: it can never answer (and is not connected to)
      auto late = s.answers.find(m);
      if (late != s.answers.end() && late->second != CallOutcome::kPending)
        continue;  // its last answer came after all: taken next round
      return Status(Code::kPeerFailed, "switch call " + std::to_string(s.asking) +
                                           " failed here and the connection to rank " +
                                           std::to_string(m) + " failed while asking it");
    }
    if (a.at == 0 || now - a.at >= a.backoff) {
      if (a.at != 0) a.backoff = std::min<int64_t>(a.backoff * 2, 100);
      a.at = now;
      Status st = s.send(m, recovery::kAmQuery, q, nullptr, 0);
      if (!st.ok())
        SA_DEBUG("coll", "switch recovery: asking rank %d: %s", m, st.toString().c_str());
    }
  }
  return Status::Ok();
}

// A gather that is done: every other member's part is here.
Status LedgerState::missingPart() const {
  const LedgerState& s = *this;
  for (int m : s.members)
    if (m != s.rank && s.parts.find(m) == s.parts.end()) {
      // A member without an input although another is done: the agent
      // completed a call it lacked a contribution to (cannot happen).
      return Status(Code::kInternal, "switch call " + std::to_string(s.asking) + ": rank " +
                                         std::to_string(m) +
                                         " failed without its input while rank " +
                                         std::to_string(s.source) + " is done");
    }
  return Status::Ok();
}

// No final answer from `open` after `waited` ms: warned once, and past the
// bound the timeout (true, in *result).
bool LedgerState::stalled(const StallBounds& stall, int64_t waited, const std::vector<int>& open,
                          bool* warned, Result<Recovery>* result) const {
  const LedgerState& s = *this;
  if (!*warned && stall.warn_ms > 0 && waited >= stall.warn_ms) {
    *warned = true;
    SA_WARN("coll",
            "rank %d: switch call %llu failed here; no final answer for %lld s from rank(s) %s "
            "(a rank that never calls MPI again cannot answer)",
            s.rank, static_cast<unsigned long long>(s.asking),
            static_cast<long long>(waited / 1000), recovery::rankList(open).c_str());
  }
  if (stall.fail_ms > 0 && waited >= stall.fail_ms) {
    *result = Status(Code::kTimeout, "switch call " + std::to_string(s.asking) +
                                         " failed here and no final answer came from rank(s) " +
                                         recovery::rankList(open) + " within " +
                                         std::to_string(stall.fail_ms / 1000) + " s");
    return true;
  }
  return false;
}

// The question loop of recover and gatherInputs.
Result<Recovery> LedgerState::ask(const StallBounds& stall) {
  LedgerState& s = *this;
  s.asking = s.seq;
  s.have_result = false;
  s.source = -1;
  s.answers.clear();
  const bool want_parts = s.gathering && s.want_hi > s.want_lo;
  std::map<int, Asked> asked;
  const Header q = question();
  const int64_t start = recovery::nowMs();
  bool warned = false;
  Result<Recovery> result = Status(Code::kInternal, "switch recovery did not run");
  for (;;) {
    const int64_t now = recovery::nowMs();
    Round round;
    Status gone = askRound(q, now, &asked, &round);
    if (!gone.ok()) {
      result = gone;
      s.asking = 0;
      return result;
    }
    if (!s.bad_answer.empty()) {
      result = Status(Code::kInternal, "switch call " + std::to_string(s.asking) + ": " + s.bad_answer);
      break;
    }
    // Done: the result copied (recover), one member done (a gather that
    // wants nothing), or one done and every part here (a gather).
    if (s.have_result || (s.gathering && round.done && (!want_parts || round.open.empty()))) {
      if (want_parts) {
        Status missing = missingPart();
        if (!missing.ok()) {
          result = missing;
          s.asking = 0;
          return result;
        }
      }
      s.outcome = CallOutcome::kDone;
      result = Recovery{CallOutcome::kDone, s.source};
      break;
    }
    if (round.open.empty()) {
      // Every other member is final and none has the result.
      if (round.busy) result = Recovery{CallOutcome::kBusy, round.busy_from};
      else result = Recovery{CallOutcome::kFailed, -1};
      break;
    }
    if (stalled(stall, now - start, round.open, &warned, &result)) break;
    s.changed = false;
    (void)s.worker->waitUntil([&s] { return s.changed; }, 1);
  }
  s.asking = 0;
  return result;
}

}  // namespace switchagg::coll
