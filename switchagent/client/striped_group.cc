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
#include <cstring>

#include "client_internal.h"
#include "switchagg/ucx/thread_gate.h"

namespace switchagg::agent {

StripeRange stripeOf(size_t count, size_t k, size_t stripes) {
  if (stripes == 0 || k >= stripes) return {count, 0};
  const size_t base = count / stripes, extra = count % stripes;
  return {k * base + std::min(k, extra), base + (k < extra ? 1 : 0)};
}

bool stripesWeighted(const std::vector<uint32_t>& weights) {
  return weights.size() <= kMaxWeightedStripes &&
         std::none_of(weights.begin(), weights.end(), [](uint32_t w) { return w == 0; }) &&
         std::any_of(weights.begin(), weights.end(), [&](uint32_t w) { return w != weights[0]; });
}

StripeRange stripeOf(size_t count, size_t k, const std::vector<uint32_t>& weights) {
  const size_t stripes = weights.size();
  if (!stripesWeighted(weights) || k >= stripes) return stripeOf(count, k, stripes);
  uint64_t before = 0, total = 0;
  for (size_t i = 0; i < stripes; ++i) (i < k ? before : total) += weights[i];
  total += before;
  // count · sum fits 128 bits (count < 2^64, sum < 2^36).
  __extension__ typedef unsigned __int128 Wide;
  auto cut = [&](uint64_t sum) { return size_t(Wide(count) * sum / total); };
  const size_t begin = cut(before), end = cut(before + weights[k]);
  return {begin, end - begin};
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

// Stripe k of a routed call over [S, S + n) of the vector: the same call
// on that range (input piece, wanted bounds and output cut to it).
static RoutedCall stripeCall(const RoutedCall& call, int rank, size_t S, size_t n, size_t esize,
                             uint8_t* out) {
  RoutedCall sc;
  sc.kind = call.kind;
  sc.dtype = call.dtype;
  sc.op = call.op;
  sc.total = n;
  const auto* in = static_cast<const uint8_t*>(call.in);
  if (call.kind == RoutedCall::Kind::kReduce) {
    sc.in = in + S * esize;
  } else {
    const size_t lo = std::max(call.in_begin, S), hi = std::min(call.in_end, S + n);
    if (lo < hi) {
      sc.in = in + (lo - call.in_begin) * esize;
      sc.in_begin = lo - S;
      sc.in_end = hi - S;
    }
  }
  auto clip = [&](size_t x) { return std::min(std::max(x, S), S + n) - S; };
  for (size_t b : call.want) sc.want.push_back(clip(b));
  for (size_t b : call.leaf_want) sc.leaf_want.push_back(clip(b));
  size_t wb = 0, we = 0;
  call.wanted(rank, &wb, &we);
  if (clip(wb) < clip(we)) sc.out = out + (clip(wb) + S - wb) * esize;
  return sc;
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
    Status st = groups_[k]->startRouted(stripeCall(call, rank, r.begin, r.count, esize, out));
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
  for (uint32_t spin = 1; st.code() == Code::kInProgress; ++spin) {
    st = stepCall();
    if (st.code() != Code::kInProgress) break;
    // As Worker::waitUntil spins (SWITCHAGG_UCX_WAIT=busy): the clock every
    // 16th round, and other threads' turn at the gate (MPI_THREAD_MULTIPLE:
    // a thread waiting for its peers must not stop another thread's
    // operation, which those peers may need first).
    if ((spin & 15) != 0) continue;
    const int64_t now = clientNowMs();
    if (now >= bound && now >= deadline(bound, timeout_ms)) return abortCall(now - start);
    ucx::ThreadGate::yield();
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
    const StripeRange r = range(call_count_, k);
    groups_[k]->setInputReady(elements <= r.begin ? 0 : std::min(elements - r.begin, r.count));
  }
}

size_t StripedGroup::resultsReady() {
  for (size_t k = 0; k < groups_.size(); ++k) {
    const StripeRange r = range(call_count_, k);
    if (r.count == 0 || (running_[k] && done_[k])) continue;
    return r.begin + (running_[k] ? groups_[k]->resultsReady() : 0);
  }
  return call_count_;
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
