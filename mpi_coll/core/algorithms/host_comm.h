// HostComm: everything a host allreduce algorithm sees of the world - its
// rank, the group size, and tagged nonblocking point-to-point with waits.
// Algorithms are written against this interface only (like gloo's Context),
// so the same code runs over a ucx::PeerGroup in the component, over a
// subset of ranks inside the hierarchical algorithm (SubComm), and over an
// in-memory fabric in unit tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "switchagg/common/status.h"

namespace switchagg::coll {

// Local tags an algorithm may use: [0, kAlgorithmTagSpace). Composite
// algorithms give each phase its own window of this size (see SubComm).
constexpr uint32_t kAlgorithmTagSpace = 1u << 20;

class HostComm {
 public:
  using Handle = size_t;
  virtual ~HostComm() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Post a send/receive. Buffers stay untouched by the caller until the
  // handle is waited for. A message is matched by (peer, tag) and must be
  // received with exactly the length it was sent with. Zero-length messages
  // complete at once and never travel (both sides know the length).
  virtual Status postSend(int peer, uint32_t tag, const void* data, size_t bytes, Handle* h) = 0;
  virtual Status postRecv(int peer, uint32_t tag, void* data, size_t bytes, Handle* h) = 0;
  // Waits for one posted operation. Waits are unbounded like MPI's (a slow
  // peer is normal), but a failed peer ends them with kPeerFailed.
  virtual Status wait(Handle h) = 0;
  // Progresses the transport once, never waits: *done tells whether the
  // operation finished (then as wait() would have returned, and the handle
  // is spent). For a caller that interleaves host messages with other work.
  virtual Status test(Handle h, bool* done) = 0;
  // Waits for every operation posted so far and forgets them.
  virtual Status waitAll() = 0;
};

// A view of some ranks of a parent HostComm: rank i here is members[i]
// there, and tags are shifted by `tag_offset` so phases never collide.
class SubComm final : public HostComm {
 public:
  SubComm(HostComm& parent, std::vector<int> members, uint32_t tag_offset);
  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(members_.size()); }
  Status postSend(int peer, uint32_t tag, const void* data, size_t bytes, Handle* h) override;
  Status postRecv(int peer, uint32_t tag, void* data, size_t bytes, Handle* h) override;
  Status wait(Handle h) override { return parent_.wait(h); }
  Status test(Handle h, bool* done) override { return parent_.test(h, done); }
  Status waitAll() override { return parent_.waitAll(); }

 private:
  HostComm& parent_;
  std::vector<int> members_;
  uint32_t tag_offset_;
  int rank_ = -1;  // -1: the parent's rank is not a member
};

}  // namespace switchagg::coll
