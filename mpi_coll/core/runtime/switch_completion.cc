// One-round-trip completion (switch_recovery.h, docs/offload.md
// "Completion"): the member's ledger, its outcome, recovery after a local
// failure, and the node's one broadcast of [outcome][result].
#include "switch_path_internal.h"

#include <cinttypes>
#include <cstring>

#include "process_runtime.h"
#include "switchagg/common/log.h"

namespace switchagg::coll::switch_detail {

// Members: every rank, or the node leaders. The key is the first join's
// group id (alike on every rank; a rejoin keeps the ledger and its count).
void AgentSwitchPath::makeLedger() {
  const std::vector<std::vector<uint8_t>>& addresses = comm_.workerAddresses();
  // Rail leaders: no member holds a whole result, every call is agreed.
  one_round_trip_ = !lease_.agree_every_call && lease_.keep_bytes > 0 && !addresses.empty() &&
                    !(leaders_ && leaders_->rails() > 1);
  if (!one_round_trip_ || (leaders_ && !leaders_->leader())) return;
  Result<ucx::Worker*> worker = ProcessRuntime::instance().worker(comm_.domain());
  if (!worker.ok()) return;  // cannot be: the host transport runs on it
  std::vector<int> members;
  if (leaders_)
    for (int n = 0; n < leaders_->nodes(); ++n) members.push_back(leaders_->leaderOf(n));
  else
    for (int r = 0; r < comm_.size(); ++r) members.push_back(r);
  ledger_ = std::make_unique<CallLedger>(*worker.value(), info_.group_id, comm_.rank(),
                                         std::move(members), addresses);
  // Every member is alive at the join: the exchange partners' connections
  // are made now (the recovery's, and the host transport's with its
  // failure sentinel), so a partner that dies later is known dead without
  // a connect to it (docs/offload.md "Completion", safety case 12).
  for (int peer : ledger_->exchangePartners()) {
    comm_.watchPeer(peer);
    ledger_->connect(peer);
  }
  ledger_->setPeerProbe([this](int peer) { return comm_.peerFailed(peer); });
}

std::optional<CallOutcome> AgentSwitchPath::settledHere(const Status& mine, const void* kept,
                                                        size_t bytes) {
  if (mine.ok()) {
    ledger_->done(kept, bytes);
    return CallOutcome::kDone;
  }
  if (mine.code() == Code::kBusy) {
    ledger_->busy();
    return CallOutcome::kBusy;
  }
  return std::nullopt;
}

void AgentSwitchPath::logFailedHere(const Status& mine, const char* what) const {
  SA_DEBUG("coll",
           "comm %s rank %d: switch %s call %" PRIu64 " failed here (%s); asking the other members",
           comm_.name().c_str(), comm_.rank(), what, ledger_->seq(), mine.toString().c_str());
}

Result<CallOutcome> AgentSwitchPath::settle(const Status& mine, void* out, size_t bytes,
                                            int* source, const char* what) {
  if (std::optional<CallOutcome> here = settledHere(mine, out, bytes)) return *here;
  ledger_->failed();
  logFailedHere(mine, what);
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

}  // namespace switchagg::coll::switch_detail
