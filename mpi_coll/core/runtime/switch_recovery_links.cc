// The recovery's messages (switch_recovery_state.h): endpoints and sends on
// the process's shared worker, the answers a member gives, the handlers,
// the registry of ledgers, and retirement (a freed communicator's ledger;
// docs/offload.md safety case 7): the ledger stays answerable. A worker
// keeps up to kRetiredKept of them without a word; past that it drops the
// oldest only once every other member said it is past its last call there
// (its own ledger retired too):
//
//   member A (over the limit)                member B
//     PAST_ASK{key, from A}  ───────────────▶ retired: PAST at once
//                                             live: PAST when it retires
//                            ◀─────────────── PAST{key, from B}
//
// Either message says its sender retired the ledger, so both sides count
// it. A member still asking about the last call has not retired it, so
// the answers it needs stay until it got them.
#include <chrono>
#include <cstring>
#include <deque>
#include <mutex>

#include "switch_recovery_state.h"
#include "switchagg/common/log.h"

namespace switchagg::coll {

using recovery::Header;
using recovery::kAll;
using recovery::kMagic;

bool LedgerState::everyonePast() const {
  if (seq == 0) return true;
  for (int m : members)
    if (m != rank && past.find(m) == past.end()) return false;
  return true;
}

// PAST_ASK (id kAmPastAsk) to every member not known past it, or PAST
// (kAmPast) to one.
void LedgerState::sendRetirement(uint16_t id, int to) {
  Header h{};
  h.magic = kMagic;
  h.from = rank;
  h.key = key;
  Status st = send(to, id, h, nullptr, 0);
  if (!st.ok())
    SA_DEBUG("coll", "switch recovery: retirement message to rank %d: %s", to,
             st.toString().c_str());
}

void LedgerState::askPast() {
  for (int m : members)
    if (m != rank && past.find(m) == past.end()) sendRetirement(recovery::kAmPastAsk, m);
}

ucx::Endpoint* LedgerState::endpointTo(int peer, Status* why) {
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

bool LedgerState::linkFailed(int peer) const {
  if (links->closed) return true;
  auto it = links->endpoints.find(addresses[size_t(peer)]);
  if (it != links->endpoints.end() && it->second && it->second->failed()) return true;
  return peer_failed && peer_failed(peer);
}

bool LedgerState::peerGone(int peer) {
  if (!linkFailed(peer)) return false;
  // An answer it sent before it died may be on the data path still,
  // behind the sentinel's news: taken first.
  (void)worker->waitUntil([] { return false; }, 0);
  return true;
}

Status LedgerState::send(int peer, uint16_t id, const Header& h, const void* data, size_t bytes) {
  reap();
  Status why;
  ucx::Endpoint* ep = endpointTo(peer, &why);
  if (!ep) return why;
  std::list<recovery::OutMessage>& sending = links->sending;
  sending.emplace_back();
  recovery::OutMessage& m = sending.back();
  m.header = h;
  if (bytes)
    m.data.assign(static_cast<const uint8_t*>(data), static_cast<const uint8_t*>(data) + bytes);
  messages.fetch_add(1, std::memory_order_relaxed);
  return ep->amSend(id, &m.header, sizeof m.header, m.data.data(), m.data.size(), m.request);
}

void LedgerState::reap() {
  std::list<recovery::OutMessage>& sending = links->sending;
  for (auto it = sending.begin(); it != sending.end();)
    it = it->request.done() ? sending.erase(it) : std::next(it);
}

void LedgerState::sendAnswer(int to, uint64_t s, CallOutcome o, const std::vector<uint8_t>* held,
                             uint64_t lo, uint64_t hi, int round) {
  Header h{};
  h.magic = kMagic;
  h.from = rank;
  h.key = key;
  h.seq = s;
  h.round = uint8_t(round);
  h.outcome = uint8_t(o);
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
  Status st = send(to, recovery::kAmAnswer, h, data, bytes);
  if (!st.ok())
    SA_DEBUG("coll", "switch recovery: answer to rank %d about call %llu: %s", to,
             static_cast<unsigned long long>(s), st.toString().c_str());
}

// What this member says of call s (the asker's number), with bytes
// [lo, hi) of what it holds for that call. An exchange question (round >
// 0) waits while this member's own exchange is behind it.
void LedgerState::answer(int to, uint64_t s, uint64_t lo, uint64_t hi, int round) {
  recovery::testKillWhenAsked(rank, s);
  if (round > 0) {
    if (answerRound(to, s, lo, hi, round - 1)) return;
    for (const Deferred& d : deferred)  // asked again: still one answer
      if (d.to == to && d.s == s && d.round == round - 1) return;
    deferred.push_back({to, s, round - 1, lo, hi});
    return;
  }
  const std::vector<uint8_t>* held = nullptr;
  CallOutcome o;
  if (s > seq) o = CallOutcome::kPending;  // not reached yet
  else if (s == seq && outcome != CallOutcome::kDone) {
    o = outcome;
    if (o == CallOutcome::kFailed) held = &live;
  } else if (s == kept_seq) {
    o = CallOutcome::kDone;
    held = &kept;
  } else if (s == final_seq) {
    o = final_outcome;  // decided without a result: nobody has one
  } else {
    o = CallOutcome::kGone;
  }
  sendAnswer(to, s, o, held, lo, hi, 0);
}

void LedgerState::onAnswer(const Header& h, const void* data, size_t bytes) {
  if (asking == 0 || h.seq != asking) return;  // a late answer to an earlier question
  if (h.round > 0) {
    onRoundAnswer(h, data, bytes);
    return;
  }
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

namespace recovery {
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

}  // namespace

int64_t nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string rankList(const std::vector<int>& ranks) {
  std::string s;
  for (int r : ranks) s += (s.empty() ? "" : ", ") + std::to_string(r);
  return s;
}

std::shared_ptr<WorkerLinks> linksOf(ucx::Worker* worker) {
  Registry& reg = registry();
  std::lock_guard<std::mutex> lock(reg.mu);
  std::shared_ptr<WorkerLinks>& l = reg.links[worker];
  if (!l) l = std::make_shared<WorkerLinks>();
  return l;
}

void registerLedger(const std::shared_ptr<LedgerState>& state) {
  Registry& reg = registry();
  std::lock_guard<std::mutex> lock(reg.mu);
  reg.live[state->key] = state;
}

void retireLedger(std::shared_ptr<LedgerState> state) {
  Registry& reg = registry();
  ucx::Worker* worker = state->worker;
  {
    std::lock_guard<std::mutex> lock(reg.mu);
    reg.live.erase(state->key);
    reg.retired[worker].push_back(std::move(state));
  }
  reg.trim(worker);
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
    const int from = h.from, round = h.round;
    // Answered outside the UCX callback (it sends).
    worker.post([&worker, key, seq, from, lo, hi, round] {
      std::shared_ptr<LedgerState> s = registry().find(&worker, key);
      if (s && from >= 0 && size_t(from) < s->addresses.size()) s->answer(from, seq, lo, hi, round);
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

}  // namespace recovery

void shutdownRecovery(bool worker_alive) {
  recovery::Registry& reg = recovery::registry();
  // Taken out under the lock, dropped without it (see ~CallLedger).
  std::vector<std::shared_ptr<LedgerState>> states;
  std::vector<std::shared_ptr<recovery::WorkerLinks>> links;
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
  for (std::shared_ptr<recovery::WorkerLinks>& l : links) {
    // A live ledger still holding them sends nothing from now on.
    l->closed = true;
    if (!worker_alive) {
      // The worker is left to process exit: so are its endpoints and sends.
      for (auto& [address, ep] : l->endpoints) (void)ep.release();
      (void)new std::list<recovery::OutMessage>(std::move(l->sending));
    }
    l->endpoints.clear();
    l->sending.clear();
  }
}

}  // namespace switchagg::coll
