// Failure-only recovery of switch-path calls (switch_recovery.h; protocol
// and safety argument: docs/offload.md "Completion").
//
//   member A (its call s failed)              member B (any state)
//   failed(); recover():
//     QUERY{key, s, from A}  ───────────────▶ AM handler -> posted answer:
//                                               s == B's call: its outcome
//                                               s == B's kept call: done + result
//                                               s later than B's call: pending
//                            ◀─────────────── ANSWER{key, s, outcome, from B} [+ result]
//     done from anyone: copy, complete
//     pending: ask again (backoff 1 ms .. 100 ms)
//     all final, none done: busy if anyone busy, else failed
//
// gatherInputs (reductions with a result per member): the question names a
// byte range [lo, hi) of the member's input; a done member answers from its
// kept input, a failed one from its own (still intact) input; the asker
// completes once one member is done and every part is here.
//
// Retirement (a freed communicator's ledger; docs/offload.md safety case
// 7): the ledger stays answerable. A worker keeps up to kRetiredKept of
// them without a word; past that it drops the oldest only once every other
// member said it is past its last call there (its own ledger retired too):
//
//   member A (over the limit)                member B
//     PAST_ASK{key, from A}  ───────────────▶ retired: PAST at once
//                                             live: PAST when it retires
//                            ◀─────────────── PAST{key, from B}
//
// Either message says its sender retired the ledger, so both sides count
// it. A member still asking about the last call has not retired it, so
// the answers it needs stay until it got them.
#include "switch_recovery.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <list>
#include <map>
#include <mutex>
#include <set>

#include "switchagg/common/log.h"
#include "switchagg/ucx/transport.h"

namespace switchagg::coll {
namespace {

constexpr uint16_t kAmQuery = 50, kAmAnswer = 51;  // on the process's shared worker
// Retirement: "I am past my last call of this communicator; are you?" and
// "so am I".
constexpr uint16_t kAmPastAsk = 52, kAmPast = 53;
constexpr uint32_t kMagic = 0x53415243;  // "SARC"
// Retired ledgers a worker keeps without asking; older ones stay until every
// other member is known past them.
constexpr size_t kRetiredKept = 8;

struct Header {
  uint32_t magic;
  uint8_t outcome;  // answers only
  uint8_t pad[3];
  int32_t from;  // communicator rank of the sender
  uint32_t pad2;
  uint64_t key;
  uint64_t seq;
  uint64_t lo, hi;  // questions: the bytes wanted of the kept data (kAll: all of it)
};
constexpr uint64_t kAll = UINT64_MAX;

int64_t nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

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

struct LedgerState {
  ucx::Worker* worker = nullptr;
  uint64_t key = 0;
  int rank = 0;  // communicator rank
  std::vector<int> members;
  std::vector<std::vector<uint8_t>> addresses;
  std::shared_ptr<WorkerLinks> links;  // the worker's endpoints and sends
  uint64_t messages = 0;
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
  std::string bad_answer;  // a part of the wrong size (cannot be decided safely)
  bool have_result = false;
  int source = -1;
  bool changed = false;
  std::map<int, CallOutcome> answers;
  // Retirement (the communicator freed here).
  bool retired = false;
  bool past_asked = false;  // the others were asked whether they are past it
  std::set<int> past;       // members known to have retired it too
  std::set<int> tell_past;  // members that asked while it was live: told on retiring

  // Nobody can ask this member about the communicator again: every other
  // member retired it (or there never was a call to ask about).
  bool everyonePast() const {
    if (seq == 0) return true;
    for (int m : members)
      if (m != rank && past.find(m) == past.end()) return false;
    return true;
  }
  // PAST_ASK (id kAmPastAsk) to every member not known past it, or PAST
  // (kAmPast) to one.
  void sendRetirement(uint16_t id, int to) {
    Header h{};
    h.magic = kMagic;
    h.from = rank;
    h.key = key;
    Status st = send(to, id, h, nullptr, 0);
    if (!st.ok())
      SA_DEBUG("coll", "switch recovery: retirement message to rank %d: %s", to,
               st.toString().c_str());
  }
  void askPast() {
    for (int m : members)
      if (m != rank && past.find(m) == past.end()) sendRetirement(kAmPastAsk, m);
  }

  ucx::Endpoint* endpointTo(int peer, Status* why) {
    if (links->closed) {
      *why = Status(Code::kAborted, "switch recovery shut down");
      return nullptr;
    }
    std::unique_ptr<ucx::Endpoint>& held = links->endpoints[addresses[size_t(peer)]];
    if (held && !held->failed()) return held.get();
    Result<std::unique_ptr<ucx::Endpoint>> ep =
        ucx::Endpoint::connectAddress(*worker, addresses[size_t(peer)]);
    if (!ep.ok()) {
      *why = ep.status();
      return nullptr;
    }
    held = std::move(ep.value());
    return held.get();
  }

  Status send(int peer, uint16_t id, const Header& h, const void* data, size_t bytes) {
    reap();
    Status why;
    ucx::Endpoint* ep = endpointTo(peer, &why);
    if (!ep) return why;
    std::list<OutMessage>& sending = links->sending;
    sending.emplace_back();
    OutMessage& m = sending.back();
    m.header = h;
    if (bytes) m.data.assign(static_cast<const uint8_t*>(data), static_cast<const uint8_t*>(data) + bytes);
    ++messages;
    return ep->amSend(id, &m.header, sizeof m.header, m.data.data(), m.data.size(), m.request);
  }

  void reap() {
    std::list<OutMessage>& sending = links->sending;
    for (auto it = sending.begin(); it != sending.end();)
      it = it->request.done() ? sending.erase(it) : std::next(it);
  }

  // What this member says of call s (the asker's number), with bytes
  // [lo, hi) of what it holds for that call.
  void answer(int to, uint64_t s, uint64_t lo, uint64_t hi) {
    Header h{};
    h.magic = kMagic;
    h.from = rank;
    h.key = key;
    h.seq = s;
    const std::vector<uint8_t>* held = nullptr;
    CallOutcome o;
    if (s > seq) o = CallOutcome::kPending;  // not reached yet
    else if (s == seq && outcome != CallOutcome::kDone) {
      o = outcome;
      if (o == CallOutcome::kFailed) held = &live;
    } else if (s == kept_seq) {
      o = CallOutcome::kDone;
      held = &kept;
    } else {
      o = CallOutcome::kGone;
    }
    const void* data = nullptr;
    size_t bytes = 0;
    if (held) {
      // kAll: all of it. A range past its end sends nothing (the asker
      // names the wrong size).
      if (hi == kAll) {
        data = held->data();
        bytes = held->size();
      } else if (lo <= hi && hi <= held->size()) {
        data = held->data() + lo;
        bytes = size_t(hi - lo);
      }
    }
    h.outcome = uint8_t(o);
    Status st = send(to, kAmAnswer, h, data, bytes);
    if (!st.ok())
      SA_DEBUG("coll", "switch recovery: answer to rank %d about call %llu: %s", to,
               static_cast<unsigned long long>(s), st.toString().c_str());
  }

  void onAnswer(const Header& h, const void* data, size_t bytes) {
    if (asking == 0 || h.seq != asking) return;  // a late answer to an earlier question
    const CallOutcome o = CallOutcome(h.outcome);
    answers[h.from] = o;
    changed = true;
    if (gathering) {
      if (o != CallOutcome::kDone && o != CallOutcome::kFailed) return;
      // A failed member without an input (it never sent one) has no part:
      // nobody can be done then (checked where the gather ends).
      if (o == CallOutcome::kFailed && bytes == 0) return;
      if (bytes != want_hi - want_lo) {
        bad_answer = "rank " + std::to_string(h.from) + " answered " + std::to_string(bytes) +
                     " bytes of its input, want " + std::to_string(want_hi - want_lo);
        return;
      }
      const uint8_t* p = static_cast<const uint8_t*>(data);
      parts[h.from].assign(p, p + bytes);
      if (o == CallOutcome::kDone && source < 0) source = h.from;
      return;
    }
    if (o == CallOutcome::kDone && !have_result && bytes == out_bytes) {
      if (bytes) std::memcpy(out, data, bytes);
      have_result = true;
      source = h.from;
    }
  }

  Result<Recovery> ask(const StallBounds& stall);
  // ask()'s steps: the question; one round over the other members; a
  // gather's missing part; the stall bounds.
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

namespace {

// Ledgers by key (live ones weakly: their communicators own them), the
// last few retired ones of each worker strongly, and the workers whose
// handlers are set. With threads, communicators of different domains
// (ProcessRuntime) reach it at once: `mu` guards these maps, while a
// ledger's own state - and its worker's links, endpoints and sends - is
// only touched by threads holding its communicator's domain: the answers to
// it arrive on that domain's worker (its address is the one the peers
// have), a handler finds only its own worker's ledgers, and a retiring
// ledger pushes out only its own worker's oldest.
struct Registry {
  std::mutex mu;
  std::map<uint64_t, std::weak_ptr<LedgerState>> live;
  std::map<ucx::Worker*, std::deque<std::shared_ptr<LedgerState>>> retired;
  std::map<ucx::Worker*, std::shared_ptr<WorkerLinks>> links;
  std::set<ucx::Worker*> handlers_on;

  std::shared_ptr<WorkerLinks> linksOf(ucx::Worker* worker) {
    std::lock_guard<std::mutex> lock(mu);
    std::shared_ptr<WorkerLinks>& l = links[worker];
    if (!l) l = std::make_shared<WorkerLinks>();
    return l;
  }

  std::shared_ptr<LedgerState> find(ucx::Worker* worker, uint64_t key) {
    std::lock_guard<std::mutex> lock(mu);
    auto it = live.find(key);
    if (it != live.end())
      if (std::shared_ptr<LedgerState> s = it->second.lock())
        return s->worker == worker ? s : nullptr;
    auto mine = retired.find(worker);
    if (mine != retired.end())
      for (const std::shared_ptr<LedgerState>& s : mine->second)
        if (s->key == key) return s;
    return nullptr;
  }

  // Over kRetiredKept, the oldest retired ledgers of `worker` every other
  // member is past are dropped; the others' members are asked (once) and
  // they stay. Sends and drops happen without the lock (they may progress
  // the worker, whose handlers look ledgers up).
  void trim(ucx::Worker* worker) {
    std::vector<std::shared_ptr<LedgerState>> gone, ask;
    {
      std::lock_guard<std::mutex> lock(mu);
      std::deque<std::shared_ptr<LedgerState>>& list = retired[worker];
      size_t over = list.size() > kRetiredKept ? list.size() - kRetiredKept : 0;
      for (auto it = list.begin(); it != list.end() && over > 0; --over) {
        if ((*it)->everyonePast()) {
          gone.push_back(std::move(*it));
          it = list.erase(it);
          continue;
        }
        if (!(*it)->past_asked) {
          (*it)->past_asked = true;
          ask.push_back(*it);
        }
        ++it;
      }
    }
    for (const std::shared_ptr<LedgerState>& s : ask) s->askPast();
  }
};

Registry& registry() {
  static Registry r;
  return r;
}

bool parse(const ucx::AmMessage& m, Header* h) {
  if (m.header_length != sizeof *h) return false;
  std::memcpy(h, m.header, sizeof *h);
  return h->magic == kMagic;
}

void setHandlers(ucx::Worker& worker) {
  Registry& reg = registry();
  {
    std::lock_guard<std::mutex> lock(reg.mu);
    if (!reg.handlers_on.insert(&worker).second) return;
  }
  Status st = worker.setAmHandler(kAmQuery, [&worker](const ucx::AmMessage& m) {
    Header h;
    if (!parse(m, &h)) return;
    const uint64_t key = h.key, seq = h.seq, lo = h.lo, hi = h.hi;
    const int from = h.from;
    // Answered outside the UCX callback (it sends).
    worker.post([&worker, key, seq, from, lo, hi] {
      std::shared_ptr<LedgerState> s = registry().find(&worker, key);
      if (s && from >= 0 && size_t(from) < s->addresses.size()) s->answer(from, seq, lo, hi);
    });
  });
  if (st.ok())
    st = worker.setAmHandler(kAmAnswer, [&worker](const ucx::AmMessage& m) {
      Header h;
      if (!parse(m, &h)) return;
      if (std::shared_ptr<LedgerState> s = registry().find(&worker, h.key))
        s->onAnswer(h, m.data, m.length);
    });
  // PAST_ASK and PAST (retirement): each says its sender retired the
  // ledger. An unknown key: this member dropped it, which it does only once
  // every member is past it, so the asker has (or is being sent) its PAST.
  auto retirement = [&worker](uint16_t id) {
    return [&worker, id](const ucx::AmMessage& m) {
      Header h;
      if (!parse(m, &h)) return;
      const uint64_t key = h.key;
      const int from = h.from;
      worker.post([&worker, key, from, id] {
        std::shared_ptr<LedgerState> s = registry().find(&worker, key);
        if (!s || from < 0 || size_t(from) >= s->addresses.size()) return;
        s->past.insert(from);
        if (id == kAmPastAsk) {
          if (s->retired) s->sendRetirement(kAmPast, from);
          else s->tell_past.insert(from);  // told when it retires here
        }
        s.reset();
        registry().trim(&worker);
      });
    };
  };
  if (st.ok()) st = worker.setAmHandler(kAmPastAsk, retirement(kAmPastAsk));
  if (st.ok()) st = worker.setAmHandler(kAmPast, retirement(kAmPast));
  if (!st.ok()) SA_WARN("coll", "switch recovery handlers: %s", st.toString().c_str());
}

std::string rankList(const std::vector<int>& ranks) {
  std::string s;
  for (int r : ranks) s += (s.empty() ? "" : ", ") + std::to_string(r);
  return s;
}

}  // namespace

CallLedger::CallLedger(ucx::Worker& worker, uint64_t key, int rank, std::vector<int> members,
                       std::vector<std::vector<uint8_t>> addresses)
    : state_(std::make_shared<LedgerState>()) {
  state_->worker = &worker;
  state_->key = key;
  state_->rank = rank;
  state_->members = std::move(members);
  state_->addresses = std::move(addresses);
  Registry& reg = registry();
  state_->links = reg.linksOf(&worker);
  setHandlers(worker);
  std::lock_guard<std::mutex> lock(reg.mu);
  reg.live[key] = state_;
}

CallLedger::~CallLedger() {
  Registry& reg = registry();
  LedgerState& s = *state_;
  ucx::Worker* worker = s.worker;
  // Retired: still answers about its last call (kept), nothing else.
  s.retired = true;
  s.live.clear();
  s.parts.clear();
  s.answers.clear();
  for (int m : s.tell_past) s.sendRetirement(kAmPast, m);
  s.tell_past.clear();
  {
    std::lock_guard<std::mutex> lock(reg.mu);
    reg.live.erase(s.key);
    reg.retired[worker].push_back(std::move(state_));
  }
  reg.trim(worker);
}

uint64_t CallLedger::begin() {
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
}

void CallLedger::busy() { state_->outcome = CallOutcome::kBusy; }
void CallLedger::failed(const void* input, size_t bytes) {
  LedgerState& s = *state_;
  s.outcome = CallOutcome::kFailed;
  const uint8_t* p = static_cast<const uint8_t*>(input);
  if (bytes) s.live.assign(p, p + bytes);
}
uint64_t CallLedger::messagesSent() const { return state_->messages; }
uint64_t CallLedger::seq() const { return state_->seq; }

Result<Recovery> CallLedger::recover(void* out, size_t bytes, const StallBounds& stall) {
  LedgerState& s = *state_;
  s.gathering = false;
  s.out = out;
  s.out_bytes = bytes;
  s.want_lo = 0;
  s.want_hi = kAll;
  Result<Recovery> r = s.ask(stall);
  if (r.ok() && r->outcome == CallOutcome::kDone) {
    s.kept_seq = s.seq;
    s.kept.assign(static_cast<const uint8_t*>(out), static_cast<const uint8_t*>(out) + bytes);
  }
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
  Result<Recovery> r = s.ask(stall);
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
    if (a.at == 0 || now - a.at >= a.backoff) {
      if (a.at != 0) a.backoff = std::min<int64_t>(a.backoff * 2, 100);
      a.at = now;
      Status st = s.send(m, kAmQuery, q, nullptr, 0);
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
            static_cast<long long>(waited / 1000), rankList(open).c_str());
  }
  if (stall.fail_ms > 0 && waited >= stall.fail_ms) {
    *result = Status(Code::kTimeout, "switch call " + std::to_string(s.asking) +
                                         " failed here and no final answer came from rank(s) " +
                                         rankList(open) + " within " +
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
  const int64_t start = nowMs();
  bool warned = false;
  Result<Recovery> result = Status(Code::kInternal, "switch recovery did not run");
  for (;;) {
    const int64_t now = nowMs();
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

void shutdownRecovery(bool worker_alive) {
  Registry& reg = registry();
  // Taken out under the lock, dropped without it (see ~CallLedger).
  std::vector<std::shared_ptr<LedgerState>> states;
  std::vector<std::shared_ptr<WorkerLinks>> links;
  {
    std::lock_guard<std::mutex> lock(reg.mu);
    for (auto& [worker, list] : reg.retired)
      for (std::shared_ptr<LedgerState>& s : list) states.push_back(std::move(s));
    reg.retired.clear();
    reg.live.clear();
    for (auto& [worker, l] : reg.links) links.push_back(std::move(l));
    reg.links.clear();
    reg.handlers_on.clear();
  }
  states.clear();
  for (std::shared_ptr<WorkerLinks>& l : links) {
    // A live ledger still holding them sends nothing from now on.
    l->closed = true;
    if (!worker_alive) {
      // The worker is left to process exit: so are its endpoints and sends.
      for (auto& [address, ep] : l->endpoints) (void)ep.release();
      (void)new std::list<OutMessage>(std::move(l->sending));
    }
    l->endpoints.clear();
    l->sending.clear();
  }
}

}  // namespace switchagg::coll
