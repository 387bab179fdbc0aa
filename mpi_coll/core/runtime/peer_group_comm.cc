#include "peer_group_comm.h"

#include <cinttypes>
#include <chrono>
#include <utility>

#include "switchagg/common/log.h"
#include "switchagg/ucx/transport.h"

namespace switchagg::coll {
namespace {

// Waits run in slices so that a peer that is merely late (it is still
// computing before its MPI_Allreduce) never turns into an error, while a
// failed request still ends the wait at once.
constexpr int64_t kWaitSliceMs = 1000;

// Bits of the 32-bit wire tag: 8 for the call sequence, 24 for local tags
// (an algorithm's window plus phase offsets of composite algorithms).
constexpr uint32_t kLocalTagBits = 24;
constexpr uint32_t kLocalTagMask = (1u << kLocalTagBits) - 1;

// Small messages complete within microseconds: poll that long before
// sleeping in the kernel, whose wake-up costs several microseconds per
// step. Bounded, so oversubscribed ranks still yield the core quickly.
constexpr auto kSpinBeforeBlock = std::chrono::microseconds(20);

}  // namespace

Status PeerGroupComm::waitBounded(ucx::Request& request) {
  ucx::Worker& worker = group_.worker();
  const auto start = std::chrono::steady_clock::now();
  const auto spin_until = start + kSpinBeforeBlock;
  while (!request.done() && std::chrono::steady_clock::now() < spin_until) worker.progress();
  int64_t next_warn_ms = stall_.warn_ms;
  for (;;) {
    Status st = worker.wait(request, kWaitSliceMs);
    if (st.ok()) return request.status();
    if (st.code() != Code::kTimeout) return st;
    const int64_t waited_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                  std::chrono::steady_clock::now() - start)
                                  .count();
    if (stall_.fail_ms > 0 && waited_ms >= stall_.fail_ms)
      return Status(Code::kTimeout, "no progress for " + std::to_string(waited_ms / 1000) +
                                        " s (coll_switchagg_stall_timeout) on " +
                                        group_.describePending(request));
    if (next_warn_ms > 0 && waited_ms >= next_warn_ms) {
      SA_WARN("coll", "rank %d has waited %" PRId64 " s in one allreduce step: %s%s",
              group_.rank(), waited_ms / 1000, group_.describePending(request).c_str(),
              stall_.fail_ms > 0 ? "" : " (coll_switchagg_stall_timeout=0: waiting on)");
      next_warn_ms *= 2;
    }
  }
}

PeerGroupComm::PeerGroupComm(ucx::PeerGroup& group, uint32_t sequence, StallBounds stall)
    : group_(group), sequence_(sequence), stall_(stall) {}

PeerGroupComm::~PeerGroupComm() {
  // Only an error path leaves operations in flight (a peer failed and the
  // MPI error handler takes over). UCX may still write into a request it
  // owns, so an unfinished one is leaked on purpose rather than freed.
  for (auto& r : requests_)
    if (r && !r->done()) (void)r.release();
}

int PeerGroupComm::rank() const { return group_.rank(); }
int PeerGroupComm::size() const { return group_.size(); }

uint32_t PeerGroupComm::wireTag(uint32_t tag) const {
  return (sequence_ << kLocalTagBits) | (tag & kLocalTagMask);
}

void PeerGroupComm::track(std::unique_ptr<ucx::Request> request, Handle* h) {
  requests_.push_back(std::move(request));
  *h = requests_.size() - 1;
}

Status PeerGroupComm::postSend(int peer, uint32_t tag, const void* data, size_t bytes,
                               Handle* h) {
  std::unique_ptr<ucx::Request> request;  // stays null for 0 bytes: complete at once
  if (bytes > 0) {
    request = std::make_unique<ucx::Request>();
    SWITCHAGG_RETURN_IF_ERROR(group_.isend(peer, wireTag(tag), data, bytes, *request));
  }
  track(std::move(request), h);
  return Status::Ok();
}

Status PeerGroupComm::postRecv(int peer, uint32_t tag, void* data, size_t bytes, Handle* h) {
  std::unique_ptr<ucx::Request> request;
  if (bytes > 0) {
    request = std::make_unique<ucx::Request>();
    SWITCHAGG_RETURN_IF_ERROR(group_.irecv(peer, wireTag(tag), data, bytes, *request));
  }
  track(std::move(request), h);
  return Status::Ok();
}

Status PeerGroupComm::wait(Handle h) {
  if (h >= requests_.size()) return Status(Code::kInternal, "wait on an unknown handle");
  auto& request = requests_[h];
  if (!request) return Status::Ok();
  Status st = waitBounded(*request);
  if (!st.ok()) return st;
  request.reset();
  return Status::Ok();
}

Status PeerGroupComm::test(Handle h, bool* done) {
  *done = false;
  if (h >= requests_.size()) return Status(Code::kInternal, "test on an unknown handle");
  auto& request = requests_[h];
  if (request && !request->done()) group_.worker().progress();
  if (request && !request->done()) return Status::Ok();
  *done = true;
  Status st = request ? request->status() : Status::Ok();
  request.reset();
  return st;
}

Status PeerGroupComm::waitAll() {
  for (Handle h = 0; h < requests_.size(); ++h) SWITCHAGG_RETURN_IF_ERROR(wait(h));
  requests_.clear();
  return Status::Ok();
}

}  // namespace switchagg::coll
