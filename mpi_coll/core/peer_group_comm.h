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
class PeerGroupComm final : public HostComm {
 public:
  PeerGroupComm(ucx::PeerGroup& group, uint32_t sequence);
  ~PeerGroupComm() override;
  int rank() const override;
  int size() const override;
  Status postSend(int peer, uint32_t tag, const void* data, size_t bytes, Handle* h) override;
  Status postRecv(int peer, uint32_t tag, void* data, size_t bytes, Handle* h) override;
  Status wait(Handle h) override;
  Status waitAll() override;

 private:
  void track(std::unique_ptr<ucx::Request> request, Handle* h);
  uint32_t wireTag(uint32_t tag) const;

  ucx::PeerGroup& group_;
  uint32_t sequence_;
  std::vector<std::unique_ptr<ucx::Request>> requests_;  // nullptr = finished
};

}  // namespace switchagg::coll
