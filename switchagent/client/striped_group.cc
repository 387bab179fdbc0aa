// StripedGroup (data_client.h): one call cut into K stripes, stripe k
// streamed through the group at agent k, all at once. One loop steps every
// stripe (sends what its window allows, never waits) and progresses every
// client's worker, until all results are in, one stripe fails, or the
// deadline passes. It waits as one connection's call does (spins with
// SWITCHAGG_UCX_WAIT=busy; blocking, it sleeps on all K workers' event fds
// at once: ucx::Worker::waitAny).
// The cutting (stripeOf, the routed call per stripe, partial input and
// results) is stripes.cc's, without UCX (fuzz_client drives it).
#include <algorithm>
#include <cstring>

#include "client_internal.h"
#include "switchagg/ucx/thread_gate.h"

namespace switchagg::agent {

StripedGroup::StripedGroup(std::vector<std::shared_ptr<AggClient>> clients,
                           std::vector<std::unique_ptr<AggGroup>> groups)
    : clients_(std::move(clients)), groups_(std::move(groups)) {}

StripedGroup::~StripedGroup() {
  groups_.clear();  // each leaves if still usable, while its client lives
  clients_.clear();
}

bool StripedGroup::supports(Dtype dtype, Op op) const {
  return std::all_of(groups_.begin(), groups_.end(),
                     [&](const std::unique_ptr<AggGroup>& g) { return g->supports(dtype, op); });
}

GroupInfo StripedGroup::slowestInfo() const {
  GroupInfo g = info();
  for (const std::unique_ptr<AggGroup>& s : groups_) {
    g.window = std::min(g.window, s->info().window);
    g.slot_bytes = std::min(g.slot_bytes, s->info().slot_bytes);
  }
  return g;
}

bool StripedGroup::usable() const {
  return std::all_of(groups_.begin(), groups_.end(),
                     [](const std::unique_ptr<AggGroup>& g) { return g->usable(); });
}

const Status& StripedGroup::failure() const {
  if (!failure_.ok()) return failure_;
  for (const std::unique_ptr<AggGroup>& g : groups_)
    if (!g->usable()) return g->failure();
  return groups_.front()->failure();  // Ok
}

ClientCounters StripedGroup::counters() const {
  ClientCounters sum;
  for (const std::unique_ptr<AggGroup>& g : groups_) {
    const ClientCounters& c = g->counters();
    sum.bytes_sent += c.bytes_sent;
    sum.bytes_received += c.bytes_received;
    sum.chunks_sent += c.chunks_sent;
    sum.chunks_received += c.chunks_received;
    sum.allreduces += c.allreduces;
    sum.failures += c.failures;
    sum.busy += c.busy;
    sum.keepalives += c.keepalives;
  }
  return sum;
}

Status StripedGroup::leave(int64_t timeout_ms) {
  Status first;
  for (const std::unique_ptr<AggGroup>& g : groups_) {
    Status st = g->leave(timeout_ms);
    if (first.ok() && !st.ok()) first = st;
  }
  return first;
}

Status StripedGroup::allreduce(Dtype dtype, Op op, const void* send, void* recv, size_t count,
                               int64_t timeout_ms) {
  if (groups_.size() == 1) return groups_[0]->allreduce(dtype, op, send, recv, count, timeout_ms);
  return runToEnd(startCall(dtype, op, send, recv, count), timeout_ms);
}

bool StripedGroup::routedSupported() const {
  return std::all_of(groups_.begin(), groups_.end(),
                     [](const std::unique_ptr<AggGroup>& g) { return g->routedSupported(); });
}

Status StripedGroup::routed(const RoutedCall& call, int64_t timeout_ms) {
  if (groups_.size() == 1) return groups_[0]->routed(call, timeout_ms);
  return runToEnd(startRouted(call), timeout_ms);
}

Status StripedGroup::resetCall(size_t count) {
  routed_out_ = nullptr;
  call_count_ = count;
  running_.assign(groups_.size(), 0);
  done_.assign(groups_.size(), 0);
  call_failed_ = call_busy_ = Status::Ok();
  if (!failure_.ok()) return failure_;
  for (const std::unique_ptr<AggGroup>& g : groups_)
    if (!g->usable()) return g->failure();
  return Status::Ok();
}

Status StripedGroup::startRouted(const RoutedCall& call) {
  const size_t k_total = groups_.size();
  SWITCHAGG_RETURN_IF_ERROR(resetCall(call.total));
  if (!routedSupported()) return Status(Code::kUnsupported, "an agent predates routed calls");
  if (call.kind == RoutedCall::Kind::kReduce && !supports(call.dtype, call.op))
    return Status(Code::kUnsupported, std::string("an agent does not reduce ") +
                                          dtypeName(call.dtype) + "/" + opName(call.op));
  if (call.total == 0) return Status::Ok();
  const size_t esize = dtypeSize(call.dtype);
  const int rank = groups_.front()->info().rank;
  for (const std::unique_ptr<AggGroup>& g : groups_)
    if (g->info().slot_bytes < esize)
      return Status(Code::kUnsupported, "element larger than a slot");
  // Staged on the whole call: one stripe's results may land where another
  // stripe's input still is (reduce-scatter in place).
  uint8_t* out = static_cast<uint8_t*>(call.out);
  if (routedOverlaps(call, rank, esize)) {
    size_t wb = 0, we = 0;
    call.wanted(rank, &wb, &we);
    routed_staging_.resize((we - wb) * esize);
    out = routed_staging_.data();
  }
  for (size_t k = 0; k < k_total && call_failed_.ok(); ++k) {
    const StripeRange r = range(call.total, k);
    if (r.count == 0) continue;
    Status st = groups_[k]->startRouted(stripeRoutedCall(call, rank, r.begin, r.count, esize, out));
    if (st.ok())
      running_[k] = 1;
    else
      call_failed_ = stripeFailed(k, st);
  }
  if (!call_failed_.ok()) return endCall();
  if (out != call.out) routed_out_ = static_cast<uint8_t*>(call.out);
  return Status(Code::kInProgress, "striped routed call running");
}

int64_t StripedGroup::deadline(int64_t bound_ms, int64_t timeout_ms) const {
  int64_t earliest = INT64_MAX;
  for (size_t k = 0; k < groups_.size(); ++k)
    if (running_[k] && !done_[k]) earliest = std::min(earliest, groups_[k]->deadline(bound_ms, timeout_ms));
  return earliest == INT64_MAX ? bound_ms : earliest;
}

Status StripedGroup::runToEnd(Status st, int64_t timeout_ms) {
  const int64_t start = clientNowMs(), bound = start + timeout_ms;
  std::vector<ucx::Worker*> workers;
  for (const std::shared_ptr<AggClient>& c : clients_) workers.push_back(c->worker());
  const auto step = [&] {
    st = stepCall();
    return st.code() != Code::kInProgress;
  };
  while (st.code() == Code::kInProgress) {
    // The bound, or later while an agent says its chunks still wait for
    // other members (WAITING: each stripe's deadline).
    const int64_t now = clientNowMs(), until = std::max(bound, deadline(bound, timeout_ms));
    if (now >= until) return abortCall(now - start);
    // Progress every stripe's worker; blocking waits sleep on all of them
    // at once (and give other threads their turn at the UCX gate).
    const Status w = ucx::Worker::waitAny(workers, step, until - now);
    if (!w.ok() && w.code() != Code::kTimeout) {
      call_failed_ = w;
      return endCall();
    }
  }
  return st;
}

Status StripedGroup::startCall(Dtype dtype, Op op, const void* send, void* recv, size_t count) {
  const size_t k_total = groups_.size();
  SWITCHAGG_RETURN_IF_ERROR(resetCall(count));
  if (!supports(dtype, op))
    return Status(Code::kUnsupported,
                  std::string("an agent does not reduce ") + dtypeName(dtype) + "/" + opName(op));
  if (count == 0) return Status::Ok();
  const size_t esize = dtypeSize(dtype);
  // On the whole buffers: the stripes' pieces could pass one by one.
  SWITCHAGG_RETURN_IF_ERROR(checkBuffers(send, recv, count, esize));
  for (const std::unique_ptr<AggGroup>& g : groups_)
    if (g->info().slot_bytes < esize)
      return Status(Code::kUnsupported, "element larger than a slot");

  // Start every non-empty stripe. The checks above are every start's
  // declines, so a start fails only for a dead group or connection.
  for (size_t k = 0; k < k_total && call_failed_.ok(); ++k) {
    const StripeRange r = range(count, k);
    if (r.count == 0) continue;  // fewer elements than stripes: alike on every rank
    const size_t off = r.begin * esize;
    Status st = groups_[k]->startCall(dtype, op, static_cast<const uint8_t*>(send) + off,
                                      static_cast<uint8_t*>(recv) + off, r.count);
    if (st.ok())
      running_[k] = 1;
    else
      call_failed_ = stripeFailed(k, st);
  }
  if (!call_failed_.ok()) return endCall();
  return Status(Code::kInProgress, "striped allreduce running");
}

Status StripedGroup::stepCall() {
  bool pending = false;
  for (size_t k = 0; k < groups_.size() && call_failed_.ok(); ++k) {
    if (!running_[k] || done_[k]) continue;
    Status st = groups_[k]->stepCall();
    if (st.ok()) {
      done_[k] = 1;
    } else if (st.code() == Code::kBusy) {
      // Refused at this agent for this call only: the other stripes run
      // to their end (nothing left in flight), then the call is busy.
      done_[k] = 1;
      call_busy_ = st;
    } else if (st.code() == Code::kInProgress)
      pending = true;
    else
      call_failed_ = stripeFailed(k, st);
  }
  if (!call_failed_.ok() || !pending) return endCall();
  for (const std::shared_ptr<AggClient>& c : clients_) (void)c->progress();
  return Status(Code::kInProgress, "striped allreduce running");
}

void StripedGroup::setInputReady(size_t elements) {
  for (size_t k = 0; k < groups_.size(); ++k) {
    if (!running_[k] || done_[k]) continue;
    groups_[k]->setInputReady(stripeInputReady(elements, range(call_count_, k)));
  }
}

size_t StripedGroup::resultsReady() {
  std::vector<StripeRange> ranges;
  for (size_t k = 0; k < groups_.size(); ++k) ranges.push_back(range(call_count_, k));
  return stripedResultsReady(call_count_, ranges, running_, done_,
                             [this](size_t k) { return groups_[k]->resultsReady(); });
}

Status StripedGroup::abortCall(int64_t timeout_ms) {
  std::string late;  // the stripes (agents, in the lease's order) still streaming
  std::string named;  // and their labels
  for (size_t k = 0; k < groups_.size(); ++k)
    if (running_[k] && !done_[k]) {
      late += (late.empty() ? "" : ",") + std::to_string(k);
      if (k < labels_.size()) named += "; stripe " + stripeName(k);
    }
  call_failed_ = Status(Code::kTimeout, "striped allreduce: stripe(s) " + late + " of " +
                                            std::to_string(groups_.size()) + " incomplete after " +
                                            std::to_string(timeout_ms) +
                                            " ms (past the call's bound and any extension the "
                                            "agents' WAITING gave)" + named);
  return endCall();
}

std::string StripedGroup::stripeName(size_t k) const {
  return k < labels_.size() && !labels_[k].empty() ? std::to_string(k) + " (" + labels_[k] + ")"
                                                   : std::to_string(k);
}

Status StripedGroup::stripeFailed(size_t k, const Status& st) const {
  if (groups_.size() < 2) return st;
  return Status(st.code(), "stripe " + stripeName(k) + " of " + std::to_string(groups_.size()) +
                               ": " + st.message());
}

Status StripedGroup::endCall() {
  const size_t k_total = groups_.size();
  // Busy and nothing failed: every stripe ended (results or refusal), no
  // result is committed, every group stays usable; the caller redoes the
  // call on the host.
  if (call_failed_.ok() && !call_busy_.ok()) {
    for (size_t k = 0; k < k_total; ++k)
      if (running_[k]) (void)groups_[k]->finishCall(call_busy_);
    running_.assign(k_total, 0);
    return call_busy_;
  }
  // Commit every stripe, or fail every stripe (so all groups are dead, none
  // half used): the caller redoes the whole call from intact input.
  for (size_t k = 0; k < k_total; ++k) {
    if (running_[k])
      (void)groups_[k]->finishCall(call_failed_);
    else if (!call_failed_.ok() && groups_[k]->usable())
      (void)groups_[k]->leave(AggClient::kDrainMs);
  }
  running_.assign(k_total, 0);
  if (!call_failed_.ok() && failure_.ok()) failure_ = call_failed_;
  // A routed call staged for overlapping input and output: commit now.
  if (call_failed_.ok() && routed_out_)
    std::memcpy(routed_out_, routed_staging_.data(), routed_staging_.size());
  routed_out_ = nullptr;
  return call_failed_;
}

}  // namespace switchagg::agent
