// What a per-communicator path (the switch path) sees of its communicator:
// who it is, an allgather for agreement among the ranks, and for node
// leaders the node layout and the host transport. CommState provides it;
// the path needs nothing else of the component's state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "host_algorithms.h"
#include "switchagg/common/status.h"

namespace switchagg::coll {

class CommGroup {
 public:
  virtual ~CommGroup() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual uint32_t contextId() const = 0;
  virtual const std::string& name() const = 0;
  // Collective: `bytes` from every rank into recv (size * bytes) in rank
  // order, over the previous coll module.
  virtual Status allgather(const void* send, void* recv, size_t bytes) = 0;
  // Which node each rank is on (one node for all when unknown).
  virtual const NodeLayout& layout() const = 0;
  // The host transport for one call (point-to-point among the ranks; the
  // same number of calls on every rank), or nullptr when there is none.
  virtual std::unique_ptr<HostComm> hostComm() { return nullptr; }
  // Every rank's UCX worker address (the host transport's), for messages
  // outside any call (switch-path recovery); empty when there is none.
  virtual const std::vector<std::vector<uint8_t>>& workerAddresses() const {
    static const std::vector<std::vector<uint8_t>> none;
    return none;
  }
  // The host transport's view of one rank's liveness, for waits outside
  // the transport's calls (switch-path recovery): watchPeer makes its
  // connections now (collective in spirit: every rank watches its
  // partners at the same step), peerFailed says whether it is known dead.
  // Without a host transport: nothing, and never.
  virtual void watchPeer(int /*peer*/) {}
  virtual bool peerFailed(int /*peer*/) const { return false; }
  // The thread domain whose worker and agent connections this group uses
  // (ProcessRuntime::takeDomain; 0 without threads).
  virtual int domain() const { return 0; }
};

}  // namespace switchagg::coll
