#include "connection_budget.h"

namespace switchagg::agent {

const char* listenerName(Listener l) { return l == Listener::kUnix ? "unix" : "tcp"; }

ConnectionBudget::Decision ConnectionBudget::arrive(int id, Listener listener,
                                                    const std::string& peer, bool unlimited_peer,
                                                    int64_t order) {
  Decision d;
  const int budget = listener == Listener::kUnix ? limits_.max_unix : limits_.max_tcp;
  if (!unlimited_peer && openFrom(listener, peer) >= limits_.max_per_peer) {
    d.why = Why::kPeerLimit;
    d.evict = oldestReader(listener, &peer);
  } else if (open(listener) >= budget) {
    d.why = Why::kBudgetFull;
    std::string busiest = busiestPeer(listener);
    d.evict = oldestReader(listener, &busiest);
    if (!d.evict) d.evict = oldestReader(listener, nullptr);
  }
  if (d.why != Why::kAdmitted && !d.evict) return d;  // everyone is being served: refuse
  if (d.evict) entries_.erase(*d.evict);
  entries_[id] = Entry{listener, peer, order, true};
  d.admit = true;
  return d;
}

void ConnectionBudget::served(int id) {
  auto it = entries_.find(id);
  if (it != entries_.end()) it->second.reading = false;
}

void ConnectionBudget::release(int id) { entries_.erase(id); }

int ConnectionBudget::open(Listener listener) const {
  int n = 0;
  for (const auto& [id, e] : entries_) n += e.listener == listener;
  return n;
}

int ConnectionBudget::openFrom(Listener listener, const std::string& peer) const {
  int n = 0;
  for (const auto& [id, e] : entries_) n += e.listener == listener && e.peer == peer;
  return n;
}

std::optional<int> ConnectionBudget::oldestReader(Listener listener,
                                                  const std::string* peer) const {
  std::optional<int> best;
  int64_t best_order = 0;
  for (const auto& [id, e] : entries_) {
    if (e.listener != listener || !e.reading || (peer != nullptr && e.peer != *peer)) continue;
    if (!best || e.order < best_order) {
      best = id;
      best_order = e.order;
    }
  }
  return best;
}

std::string ConnectionBudget::busiestPeer(Listener listener) const {
  std::map<std::string, int> count;
  std::string busiest;
  int most = 0;
  for (const auto& [id, e] : entries_) {
    if (e.listener != listener) continue;
    int n = ++count[e.peer];
    if (n > most) {
      most = n;
      busiest = e.peer;
    }
  }
  return busiest;
}

}  // namespace switchagg::agent
