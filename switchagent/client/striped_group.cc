// StripedGroup (data_client.h): one call cut into K stripes, stripe k
// streamed through the group at agent k, all at once. One loop steps every
// stripe (sends what its window allows, never waits) and progresses every
// client's worker, until all results are in, one stripe fails, or the
// deadline passes. The loop spins (as SWITCHAGG_UCX_WAIT=busy does, whatever
// the wait mode): one thread cannot sleep on K workers' event fds at once.
//
//   count 10, K 3:  stripe 0 = [0,4)  stripe 1 = [4,7)  stripe 2 = [7,10)
//   count 2,  K 3:  stripe 0 = [0,1)  stripe 1 = [1,2)  stripe 2 = empty (skipped)
#include <algorithm>

#include "client_internal.h"
#include "switchagg/ucx/thread_gate.h"

namespace switchagg::agent {

StripeRange stripeOf(size_t count, size_t k, size_t stripes) {
  if (stripes == 0 || k >= stripes) return {count, 0};
  const size_t base = count / stripes, extra = count % stripes;
  return {k * base + std::min(k, extra), base + (k < extra ? 1 : 0)};
}

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
  Status st = startCall(dtype, op, send, recv, count);
  const int64_t deadline = clientNowMs() + timeout_ms;
  for (uint32_t spin = 1; st.code() == Code::kInProgress; ++spin) {
    st = stepCall();
    if (st.code() != Code::kInProgress) break;
    // As Worker::waitUntil spins (SWITCHAGG_UCX_WAIT=busy): the clock every
    // 16th round, and other threads' turn at the gate (MPI_THREAD_MULTIPLE:
    // a thread waiting for its peers must not stop another thread's
    // operation, which those peers may need first).
    if ((spin & 15) != 0) continue;
    if (clientNowMs() >= deadline) return abortCall(timeout_ms);
    ucx::ThreadGate::yield();
  }
  return st;
}

Status StripedGroup::startCall(Dtype dtype, Op op, const void* send, void* recv, size_t count) {
  const size_t k_total = groups_.size();
  call_count_ = count;
  running_.assign(k_total, 0);
  done_.assign(k_total, 0);
  call_failed_ = call_busy_ = Status::Ok();
  if (!failure_.ok()) return failure_;
  for (const std::unique_ptr<AggGroup>& g : groups_)
    if (!g->usable()) return g->failure();
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
    const StripeRange r = stripeOf(count, k, k_total);
    if (r.count == 0) continue;  // fewer elements than stripes: alike on every rank
    const size_t off = r.begin * esize;
    Status st = groups_[k]->startCall(dtype, op, static_cast<const uint8_t*>(send) + off,
                                      static_cast<uint8_t*>(recv) + off, r.count);
    if (st.ok())
      running_[k] = 1;
    else
      call_failed_ = st;
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
      call_failed_ = st;
  }
  if (!call_failed_.ok() || !pending) return endCall();
  for (const std::shared_ptr<AggClient>& c : clients_) (void)c->progress();
  return Status(Code::kInProgress, "striped allreduce running");
}

void StripedGroup::setInputReady(size_t elements) {
  for (size_t k = 0; k < groups_.size(); ++k) {
    if (!running_[k] || done_[k]) continue;
    const StripeRange r = stripeOf(call_count_, k, groups_.size());
    groups_[k]->setInputReady(elements <= r.begin ? 0 : std::min(elements - r.begin, r.count));
  }
}

size_t StripedGroup::resultsReady() {
  for (size_t k = 0; k < groups_.size(); ++k) {
    const StripeRange r = stripeOf(call_count_, k, groups_.size());
    if (r.count == 0 || (running_[k] && done_[k])) continue;
    return r.begin + (running_[k] ? groups_[k]->resultsReady() : 0);
  }
  return call_count_;
}

Status StripedGroup::abortCall(int64_t timeout_ms) {
  std::string late;  // the stripes (agents, in the lease's order) still streaming
  for (size_t k = 0; k < groups_.size(); ++k)
    if (running_[k] && !done_[k]) late += (late.empty() ? "" : ",") + std::to_string(k);
  call_failed_ = Status(Code::kTimeout, "striped allreduce: stripe(s) " + late + " of " +
                                            std::to_string(groups_.size()) + " incomplete after " +
                                            std::to_string(timeout_ms) + " ms");
  return endCall();
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
  return call_failed_;
}

}  // namespace switchagg::agent
