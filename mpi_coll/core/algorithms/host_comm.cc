#include "host_comm.h"

#include <utility>

namespace switchagg::coll {

SubComm::SubComm(HostComm& parent, std::vector<int> members, uint32_t tag_offset)
    : parent_(parent), members_(std::move(members)), tag_offset_(tag_offset) {
  for (size_t i = 0; i < members_.size(); ++i)
    if (members_[i] == parent_.rank()) rank_ = static_cast<int>(i);
}

Status SubComm::postSend(int peer, uint32_t tag, const void* data, size_t bytes, Handle* h) {
  return parent_.postSend(members_.at(static_cast<size_t>(peer)), tag_offset_ + tag, data, bytes,
                          h);
}

Status SubComm::postRecv(int peer, uint32_t tag, void* data, size_t bytes, Handle* h) {
  return parent_.postRecv(members_.at(static_cast<size_t>(peer)), tag_offset_ + tag, data, bytes,
                          h);
}

}  // namespace switchagg::coll
