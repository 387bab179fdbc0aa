#include "peer_group_comm.h"

#include <chrono>
#include <utility>

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

Status waitSliced(ucx::Worker& worker, ucx::Request& request) {
  const auto spin_until = std::chrono::steady_clock::now() + kSpinBeforeBlock;
  while (!request.done() && std::chrono::steady_clock::now() < spin_until) worker.progress();
  for (;;) {
    Status st = worker.wait(request, kWaitSliceMs);
    if (st.ok()) return request.status();
    if (st.code() != Code::kTimeout) return st;
  }
}

}  // namespace

PeerGroupComm::PeerGroupComm(ucx::PeerGroup& group, uint32_t sequence)
    : group_(group), sequence_(sequence) {}

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
  Status st = waitSliced(group_.worker(), *request);
  if (!st.ok()) return st;
  request.reset();
  return Status::Ok();
}

Status PeerGroupComm::waitAll() {
  for (Handle h = 0; h < requests_.size(); ++h) SWITCHAGG_RETURN_IF_ERROR(wait(h));
  requests_.clear();
  return Status::Ok();
}

}  // namespace switchagg::coll
