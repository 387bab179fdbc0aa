// PeerGroupComm: the HostComm the component runs its algorithms over.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "host_comm.h"

namespace switchagg::ucx {
class PeerGroup;
class Request;
}  // namespace switchagg::ucx

namespace switchagg::coll {

// HostComm over a ucx::PeerGroup for one allreduce call. `sequence` (the
// call's number on this communicator) goes into the high tag bits so that
// messages of consecutive calls never match each other, even when several
// lanes deliver them out of order.
//
// Waits have no deadline of MPI's kind (a peer still computing before the
// call is normal), but a wait is never silent: past `stall.warn_ms` it
// logs what it waits for (peer, direction, tag, size, protocol state), and
// past `stall.fail_ms` (> 0) it fails with kTimeout naming the same.
struct StallBounds {
  int64_t warn_ms = 10000;
  int64_t fail_ms = 300000;  // 0: never fail, warn only
};

class PeerGroupComm final : public HostComm {
 public:
  PeerGroupComm(ucx::PeerGroup& group, uint32_t sequence, StallBounds stall = {});
  ~PeerGroupComm() override;
  int rank() const override;
  int size() const override;
  Status postSend(int peer, uint32_t tag, const void* data, size_t bytes, Handle* h) override;
  Status postRecv(int peer, uint32_t tag, void* data, size_t bytes, Handle* h) override;
  Status wait(Handle h) override;
  Status test(Handle h, bool* done) override;
  Status waitAll() override;

 private:
  void track(std::unique_ptr<ucx::Request> request, Handle* h);
  uint32_t wireTag(uint32_t tag) const;
  Status waitBounded(ucx::Request& request);

  ucx::PeerGroup& group_;
  uint32_t sequence_;
  StallBounds stall_;
  std::vector<std::unique_ptr<ucx::Request>> requests_;  // nullptr = finished
};

}  // namespace switchagg::coll
