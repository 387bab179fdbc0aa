// Who gets a control connection when they are scarce. The Unix socket and
// TCP have separate budgets, so no TCP client, however many, can take the
// capacity the Unix socket (admins, a local Slurm prolog) needs. Inside a
// budget each peer (a TCP source address, a Unix uid) holds at most
// max_per_peer connections. When a budget or a peer's share is full, the
// newcomer is not refused: the oldest connection that is still *reading*
// its request is cut instead (from the same peer, or from the peer holding
// most of the budget). A real client sends its whole request at once and is
// then no longer a candidate, so clients that trickle half a request line
// only ever displace each other. Only when every connection in the budget
// is being served is the newcomer refused (503 overloaded).
//
// Pure bookkeeping, no sockets or clock: the server holds its lock around
// every call, and unit tests drive it directly.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace switchagg::agent {

enum class Listener { kUnix, kTcp };
const char* listenerName(Listener l);  // "unix", "tcp"

struct BudgetLimits {
  int max_unix = 64;     // control.max_unix_connections
  int max_tcp = 64;      // control.max_connections
  int max_per_peer = 8;  // control.max_connections_per_peer
};

class ConnectionBudget {
 public:
  explicit ConnectionBudget(BudgetLimits limits) : limits_(limits) {}

  enum class Why { kAdmitted, kPeerLimit, kBudgetFull };
  struct Decision {
    bool admit = false;
    std::optional<int> evict;  // id of a reading connection to cut first
    Why why = Why::kAdmitted;  // what was full, if anything
  };
  // Connection `id` (unique while open) arrives on `listener` from `peer`.
  // `unlimited_peer` (root on the Unix socket) skips the per-peer share,
  // not the budget. An evicted id is released here: do not release it again.
  Decision arrive(int id, Listener listener, const std::string& peer, bool unlimited_peer,
                  int64_t order);
  // The connection's request is complete: it is being served, not evictable.
  void served(int id);
  // The connection closed (not needed after an eviction).
  void release(int id);

  int open(Listener listener) const;
  int openFrom(Listener listener, const std::string& peer) const;

 private:
  struct Entry {
    Listener listener;
    std::string peer;
    int64_t order;  // arrival order: the oldest reader goes first
    bool reading = true;
  };
  // The oldest reading connection of `listener`, from `peer` if not null.
  std::optional<int> oldestReader(Listener listener, const std::string* peer) const;
  std::string busiestPeer(Listener listener) const;

  const BudgetLimits limits_;
  std::map<int, Entry> entries_;
};

}  // namespace switchagg::agent
