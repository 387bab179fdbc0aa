// What a per-communicator path (the switch path) sees of its communicator:
// who it is and an allgather for agreement among the ranks. CommState
// provides it; the path needs nothing else of the component's state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

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
};

}  // namespace switchagg::coll
