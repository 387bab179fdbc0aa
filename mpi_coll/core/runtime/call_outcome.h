/* How a call ended: one type from the switch path up to the glues; the
 * glues make the MPI error code from it only at their edge. DONE < BUSY <
 * FAILED: an agreement of the ranks' outcomes takes the greatest (the
 * worst). The values travel between members (the outcome agreement's
 * bytes, node messages, recovery answers): never renumber.
 * Plain C: the glues include it through coll_core.h. */
#ifndef SWITCHAGG_COLL_CALL_OUTCOME_H
#define SWITCHAGG_COLL_CALL_OUTCOME_H

enum switchagg_coll_outcome {
  /* Not finished yet (recovery: a call not reached yet). */
  SWITCHAGG_OUTCOME_PENDING = 0,
  /* The result is in place (the agent's, or a copy of it). */
  SWITCHAGG_OUTCOME_DONE = 1,
  /* The agent refused the call for every member: nothing committed, the
   * input intact; redone on the host, the path kept. */
  SWITCHAGG_OUTCOME_BUSY = 2,
  /* No result: nothing committed, the input intact; redone on the host,
   * the path off until it rejoins. */
  SWITCHAGG_OUTCOME_FAILED = 3,
  /* Recovery: asked about a call the member no longer holds. */
  SWITCHAGG_OUTCOME_GONE = 4,
  /* Not tried, nothing sent or touched, alike on every rank: the next
   * candidate serves the call, or the previous coll module. */
  SWITCHAGG_OUTCOME_DECLINED = 5,
  /* The MPI error path (a peer failed mid-algorithm, an agreement could
   * not be made). */
  SWITCHAGG_OUTCOME_ERROR = 6,
  /* Local only, never sent to another member: the nonblocking stream API's
   * "try later" (a blocking switchagg call holds this thread's gate, or a
   * recovery must wait for it; iallreduce.h). */
  SWITCHAGG_OUTCOME_NOT_NOW = 7
};

#ifdef __cplusplus
#include <cstdint>

#include "switchagg/common/status.h"

namespace switchagg::coll {

// The same values, scoped, for the C++ core.
enum class CallOutcome : uint8_t {
  kPending = SWITCHAGG_OUTCOME_PENDING,
  kDone = SWITCHAGG_OUTCOME_DONE,
  kBusy = SWITCHAGG_OUTCOME_BUSY,
  kFailed = SWITCHAGG_OUTCOME_FAILED,
  kGone = SWITCHAGG_OUTCOME_GONE,
  kDeclined = SWITCHAGG_OUTCOME_DECLINED,
  kError = SWITCHAGG_OUTCOME_ERROR,
  kNotNow = SWITCHAGG_OUTCOME_NOT_NOW,
};

inline const char* callOutcomeName(CallOutcome o) {
  switch (o) {
    case CallOutcome::kPending: return "pending";
    case CallOutcome::kDone: return "done";
    case CallOutcome::kBusy: return "busy";
    case CallOutcome::kFailed: return "failed";
    case CallOutcome::kGone: return "gone";
    case CallOutcome::kDeclined: return "declined";
    case CallOutcome::kError: return "error";
    case CallOutcome::kNotNow: return "not now";
  }
  return "?";
}

// A switch-path call's outcome on this member from its Status: done, busy,
// or failed.
inline CallOutcome outcomeOf(const Status& st) {
  return st.ok()                      ? CallOutcome::kDone
         : st.code() == Code::kBusy ? CallOutcome::kBusy
                                      : CallOutcome::kFailed;
}

// The C interface's int, for the glues.
inline int outcomeInt(CallOutcome o) { return static_cast<int>(o); }

}  // namespace switchagg::coll
#endif

#endif /* SWITCHAGG_COLL_CALL_OUTCOME_H */
