// One-round-trip completion of switch-path calls (docs/offload.md
// "Completion"): a member that received every result chunk of a call from
// the agent(s) completes the call at once; nothing goes between hosts. A
// member whose call failed (its connection died, the agent died after
// sending some members their results, a timeout) learns from the other
// members what became of the call, in ceil(log2 p) rounds of an exchange
// in which each member passes on the final outcomes it knows (a
// dissemination pattern: 2 p log2 p messages when every member failed,
// where asking every member took 2 p (p - 1)):
//
//   some member has the result  -> it copies it (kDone), the call completes
//                                  with the same bits everywhere;
//   some member was refused busy -> nobody has a result (the agent refuses a
//                                  call for all its members or none): every
//                                  rank redoes it on the host, path kept;
//   every member failed          -> nobody has a result and every rank
//                                  learns so: every rank redoes it on the
//                                  host and the path goes off, alike.
//
// Reductions whose result differs per member (MPI_Reduce, the
// reduce-scatters) keep each member's *input* instead of its result: a
// member whose call failed while another's is done gathers the part it
// needs of every member's input (a done member's kept copy, a failed one's
// own intact input) and folds them in member order with the agent's kernel
// (reduceMany), which gives the agent's bits (gatherInputs).
//
// What makes this safe (the argument in full: docs/offload.md):
//  * a member's outcome of a call, once done, busy or failed, never changes
//    except failed -> done by copying a done member's result;
//  * a member keeps its last done result (at most keep_bytes) until its next
//    call completes through the agent, which needs every member's
//    contribution to that next call, so the copy outlives every question;
//  * a member concludes "nobody has it" only when it knows every member's
//    own final "failed" (each passed on unchanged by the exchange), and a
//    member that got the agent's result never says failed: so nobody can
//    hold a result then, and every member decides alike.
//
// Questions and answers are active messages on the process's shared UCX
// worker, answered inside its progress - from the progress callback Open
// MPI calls in any MPI call, from the component's own waits and from a
// member that is recovering itself. A CallLedger's state outlives its
// communicator: a worker keeps its last few freed ones, and older ones
// until every other member said it freed that communicator too, so a peer
// still recovering a call of a freed communicator always gets its answer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "call_outcome.h"
#include "peer_group_comm.h"
#include "switchagg/common/status.h"

namespace switchagg::ucx {
class Worker;
}

namespace switchagg::coll {

// What one member knows of one call: CallOutcome (call_outcome.h), kPending
// to kGone; the order matters on the wire.

struct Recovery {
  CallOutcome outcome = CallOutcome::kFailed;  // kDone, kBusy or kFailed
  int source = -1;  // the member (communicator rank) that gave the result or said busy
};

struct LedgerState;

class CallLedger {
 public:
  // `key`: unique per communicator per job and the same on every member
  // (the group id of the first join); `members`: the communicator ranks of
  // the agent's members (every rank, or the node leaders), `rank` among
  // them; `addresses`: every communicator rank's worker address.
  CallLedger(ucx::Worker& worker, uint64_t key, int rank, std::vector<int> members,
             std::vector<std::vector<uint8_t>> addresses);
  ~CallLedger();  // the state retires: answered until every member retired it
  CallLedger(const CallLedger&) = delete;
  CallLedger& operator=(const CallLedger&) = delete;

  // A new call: its number (the same on every member), state pending.
  uint64_t begin();
  // The call's end as the agent told this member. done: the result (bytes
  // <= the keep limit; barrier: 0) is kept for peers; for a reduction
  // with a result per member (gatherInputs), this member's input instead.
  void done(const void* result, size_t bytes);
  void busy();
  // failed: for gatherInputs, `input` (intact until the call ends) is
  // copied so that other members can gather from it.
  void failed(const void* input = nullptr, size_t bytes = 0);
  // After failed(): the exchange, until a member that has the result is
  // found (copied into out, `bytes`), one is known busy, or all are known
  // failed. Bounded by `stall` (warns past warn_ms naming who has not
  // answered, fails past fail_ms); kGone from a member, or a member whose
  // connection failed, is an error (it cannot be decided safely).
  Result<Recovery> recover(void* out, size_t bytes, const StallBounds& stall);

  // After failed(input): the exchange, then, once it found a done member,
  // asks every other member for bytes [lo, hi) of its input to this call.
  // kDone once some member is done and every member's part is here: `parts` holds them in member order (this member's from
  // its own input). lo == hi (nothing wanted: a reduce's non-root): kDone
  // as soon as one member is done. Else as recover(): kBusy, kFailed when
  // every member is final and none done; bounded by `stall`.
  Result<Recovery> gatherInputs(size_t lo, size_t hi, std::vector<std::vector<uint8_t>>* parts,
                                const StallBounds& stall);

  // The members this one asks in the exchange and those that ask it
  // (communicator ranks, each once, not itself): the ones whose death it
  // must notice while it waits on them, or they on it.
  std::vector<int> exchangePartners() const;
  // Where a member's death is known beside this ledger's own connections
  // (the communicator's host transport, whose failure sentinel watches the
  // partners: docs/offload.md safety case 12). Cleared by the destructor.
  void setPeerProbe(std::function<bool(int)> peer_failed);
  // Makes this worker's recovery connection to `peer` now (else made by
  // the first question): while every member is alive, so no question ever
  // opens a connection to a rank that died (UCX 1.13 can abort the process
  // whose connect a dead rank refuses).
  void connect(int peer);

  uint64_t messagesSent() const;  // questions and answers this member sent
  uint64_t seq() const;

 private:
  std::shared_ptr<LedgerState> state_;
};

// Drops every ledger (retired too) and its endpoints; at component close.
// `worker_alive` false: the worker is being leaked, so are the endpoints.
void shutdownRecovery(bool worker_alive);

}  // namespace switchagg::coll
