// The exchange of final outcomes (docs/offload.md "Completion", safety
// cases 8-11): how a member whose call failed learns, in ceil(log2 p)
// question/answer pairs instead of p - 1, either a result (a member that
// has it) or that every member failed.
//
// Members by index 0..p-1 (the ledger's members). In round k a member
// whose call s failed asks member (i + 2^k) mod p (a dissemination
// pattern, any p):
//
//   member i (round k)                       member j = i + 2^k
//     QUERY{s, round k+1}  ────────────────▶ done with s: done + result
//                                             busy: busy
//                                             not at s yet: pending (asked
//                                               again, 1 ms doubling to 100)
//                                             inside s: answers when s ends
//                                             failed, its rounds < k done
//                                               (or decided): failed + what
//                                               it knows (j .. j+2^k-1, and
//                                               more): one byte per member
//                                             failed, behind: answers when
//                                               it gets there (deferred)
//                          ◀──────────────── ANSWER{s, round k+1, outcome}
//
// After round k member i knows the final outcomes of i .. i+2^(k+1)-1; after
// ceil(log2 p) rounds, of every member: every member failed (or one was
// refused busy). A done answer ends it at once: the result copied
// (recover), or the parts then gathered from every member (gatherInputs).
#include <algorithm>
#include <cstring>

#include "switch_recovery_state.h"
#include "switchagg/common/log.h"

namespace switchagg::coll {

namespace {

int roundsFor(size_t p) {
  int r = 0;
  while ((size_t(1) << r) < p) ++r;
  return r;
}

}  // namespace

int LedgerState::index() const {
  for (size_t i = 0; i < members.size(); ++i)
    if (members[i] == rank) return int(i);
  return -1;
}

bool LedgerState::answerRound(int to, uint64_t s, uint64_t lo, uint64_t hi, int round) {
  const int wire = round + 1;
  CallOutcome o = CallOutcome::kGone;
  const std::vector<uint8_t>* held = nullptr;
  // Decided without a result: every member failed (all of them say so), or
  // one was refused busy.
  const std::vector<uint8_t> all_failed(members.size(), uint8_t(CallOutcome::kFailed));
  if (s > seq) {
    o = CallOutcome::kPending;  // not reached yet: asked again
  } else if (s == seq && outcome == CallOutcome::kPending) {
    return false;  // inside the call: answered when it ends here (done, busy or failed)
  } else if (s == seq && outcome == CallOutcome::kBusy) {
    o = CallOutcome::kBusy;
  } else if (s == seq && outcome == CallOutcome::kFailed) {
    if (final_seq == s) {
      o = final_outcome;
      if (o == CallOutcome::kFailed) held = &all_failed;
    } else if (exchanging && asking == s && rounds_done >= round) {
      o = CallOutcome::kFailed;
      held = &known;
    } else {
      return false;  // its own rounds are behind the asker's
    }
    lo = 0;
    hi = recovery::kAll;
  } else if (s == kept_seq) {
    o = CallOutcome::kDone;
    held = &kept;
  } else if (s == final_seq) {
    o = final_outcome;
    if (o == CallOutcome::kFailed) held = &all_failed;
    lo = 0;
    hi = recovery::kAll;
  }
  sendAnswer(to, s, o, held, lo, hi, wire);
  return true;
}

// Deferred questions this member can answer now; `ended`: its exchange is
// over without a decision (an error), so the rest are told gone.
void LedgerState::flushDeferred(bool ended) {
  std::vector<Deferred> waiting;
  waiting.swap(deferred);
  for (const Deferred& d : waiting) {
    if (answerRound(d.to, d.s, d.lo, d.hi, d.round)) continue;
    if (ended) sendAnswer(d.to, d.s, CallOutcome::kGone, nullptr, 0, 0, d.round + 1);
    else deferred.push_back(d);
  }
}

void LedgerState::decided(CallOutcome o) {
  final_seq = seq;
  final_outcome = o;
}

void LedgerState::onRoundAnswer(const Header& h, const void* data, size_t bytes) {
  const int me = index();
  if (!exchanging || me < 0) return;
  const size_t p = members.size();
  const int partner = members[(size_t(me) + (size_t(1) << rounds_done)) % p];
  if (h.from != partner || h.round != rounds_done + 1) return;  // an earlier round's
  const CallOutcome o = CallOutcome(h.outcome);
  changed = true;
  awaiting = false;
  const uint8_t* in = static_cast<const uint8_t*>(data);
  if (o == CallOutcome::kDone && !gathering) {
    if (bytes != out_bytes) {
      bad_answer = "rank " + std::to_string(h.from) + " answered a " + std::to_string(bytes) +
                   "-byte result, want " + std::to_string(out_bytes);
      return;
    }
    if (bytes) std::memcpy(out, data, bytes);
    have_result = true;
    source = h.from;
  }
  if (o == CallOutcome::kFailed) {
    if (bytes != p) {
      bad_answer = "rank " + std::to_string(h.from) + " answered the outcomes of " +
                   std::to_string(bytes) + " members, want " + std::to_string(p);
      return;
    }
    for (size_t i = 0; i < p; ++i)
      if (known[i] == uint8_t(CallOutcome::kPending)) known[i] = in[i];
  }
  round_outcome = o;
  round_from = h.from;
  round_answered = true;
}

Result<Recovery> LedgerState::exchange(const StallBounds& stall) {
  const int me = index();
  const size_t p = members.size();
  if (me < 0) return Status(Code::kInternal, "switch recovery: this rank is not a member");
  const int rounds = roundsFor(p);
  asking = seq;
  have_result = false;
  source = -1;
  bad_answer.clear();
  known.assign(p, uint8_t(CallOutcome::kPending));
  known[size_t(me)] = uint8_t(CallOutcome::kFailed);
  rounds_done = 0;
  exchanging = true;
  awaiting = false;
  round_answered = false;
  flushDeferred(false);  // questions of round 0 that came early
  Header q = question();
  if (gathering) q.lo = q.hi = 0;  // a done answer says so; the parts come after
  const int64_t start = recovery::nowMs();
  int64_t due = 0, backoff = 1;
  bool warned = false;
  Result<Recovery> result = Status(Code::kInternal, "switch recovery did not run");
  for (;;) {
    if (!bad_answer.empty()) {
      result = Status(Code::kInternal, "switch call " + std::to_string(asking) + ": " + bad_answer);
      break;
    }
    if (have_result) {  // recover: a done member's result copied
      outcome = CallOutcome::kDone;
      result = Recovery{CallOutcome::kDone, source};
      break;
    }
    if (round_answered) {
      round_answered = false;
      const CallOutcome o = round_outcome;
      if (o == CallOutcome::kDone) {  // gatherInputs: some member is done
        result = Recovery{CallOutcome::kDone, round_from};
        break;
      }
      if (o == CallOutcome::kGone) {
        result = Status(Code::kInternal, "switch call " + std::to_string(asking) + ": rank " +
                                             std::to_string(round_from) +
                                             " cannot tell its outcome any more");
        break;
      }
      if (o == CallOutcome::kPending) {
        due = recovery::nowMs() + backoff;
        backoff = std::min<int64_t>(backoff * 2, 100);
      } else {
        if (o == CallOutcome::kFailed) ++rounds_done;
        due = 0;
        backoff = 1;
        flushDeferred(false);
      }
    }
    // Busy anywhere (the agent refused the call for every member): nobody
    // has a result. Every member failed: nobody ever had one.
    const auto busy = std::find(known.begin(), known.end(), uint8_t(CallOutcome::kBusy));
    if (busy != known.end() || round_outcome == CallOutcome::kBusy) {
      decided(CallOutcome::kBusy);
      result = Recovery{CallOutcome::kBusy,
                        busy != known.end() ? members[size_t(busy - known.begin())] : round_from};
      break;
    }
    if (rounds_done >= rounds) {
      if (std::count(known.begin(), known.end(), uint8_t(CallOutcome::kFailed)) != long(p)) {
        result = Status(Code::kInternal, "switch call " + std::to_string(asking) +
                                             ": the exchange ended without every member's outcome");
        break;
      }
      decided(CallOutcome::kFailed);
      result = Recovery{CallOutcome::kFailed, -1};
      break;
    }
    const int partner = members[(size_t(me) + (size_t(1) << rounds_done)) % p];
    if (peerGone(partner)) {  // before the question too: never connect to a dead rank
      if (round_answered || have_result || !bad_answer.empty()) continue;  // it answered first
      result = Status(Code::kPeerFailed,
                      "switch call " + std::to_string(asking) + " failed here and the connection to rank " +
                          std::to_string(partner) + " failed while asking it what became of the call");
      break;
    }
    const int64_t now = recovery::nowMs();
    if (!awaiting && now >= due) {
      q.round = uint8_t(rounds_done + 1);
      Status st = send(partner, recovery::kAmQuery, q, nullptr, 0);
      awaiting = st.ok();
      if (!st.ok()) {  // not sent: asked again after the backoff
        SA_DEBUG("coll", "switch recovery: asking rank %d: %s", partner, st.toString().c_str());
        due = now + backoff;
        backoff = std::min<int64_t>(backoff * 2, 100);
      }
    }
    if (stalled(stall, now - start, {partner}, &warned, &result)) break;
    changed = false;
    (void)worker->waitUntil([this] { return changed; }, 1);
  }
  exchanging = false;
  round_outcome = CallOutcome::kPending;
  // The questions deferred here are answered by the caller once the call's
  // state is final (a copied result kept, a gather's parts folded).
  if (!result.ok()) decided(CallOutcome::kGone);  // later questions: an error, not a guess
  asking = 0;
  return result;
}

}  // namespace switchagg::coll
