// SendPool: the data plane's send descriptors, reused. A send takes one,
// its completion (a UCX callback, run at the end of a progress round; see
// ucx::Endpoint::amSend with a SendCompletion) gives it back, so once the
// pool holds as many descriptors as sends are ever in flight at once, a
// send allocates nothing and nothing scans the sends to find finished ones.
// One thread (the data plane's) uses a pool; nothing here locks.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "switchagg/agent/wire.h"
#include "switchagg/ucx/transport.h"
#include "slot_pool.h"

namespace switchagg::agent {

// A send in flight and everything it reads.
struct SendDescriptor {
  ucx::Request request;
  wire::Frame frame;                     // control messages own their bytes
  std::shared_ptr<SlotBuffers> buffers;  // results and chunks up read a group's slot
  uint64_t serial = 0;
  uint32_t slot = 0;
  bool result = false;  // a RESULT: its completion is the engine's sendDone
  bool in_flight = false;
  uint64_t to = 0;        // the client it goes to (0: the parent agent)
  int64_t since_ms = 0;   // when it was posted (the stalled-send watch)
};

class SendPool {
 public:
  explicit SendPool(size_t initial) { grow(initial > 0 ? initial : 1); }

  // A free descriptor's index; the pool doubles when every one is in flight.
  uint32_t take() {
    if (free_.empty()) grow(all_.size());
    const uint32_t i = free_.back();
    free_.pop_back();
    all_[i]->in_flight = true;
    return i;
  }
  SendDescriptor& at(uint32_t i) { return *all_[i]; }
  // Back to the pool; what the descriptor kept alive (slot buffers, a
  // frame's body) is released here.
  void give(uint32_t i) {
    SendDescriptor& d = *all_[i];
    d.buffers.reset();
    d.frame.body.clear();  // keeps its capacity for the next control message
    d.result = false;
    d.in_flight = false;
    d.to = 0;
    free_.push_back(i);  // never beyond all_.size(): reserved by grow()
  }
  size_t inFlight() const { return all_.size() - free_.size(); }
  size_t size() const { return all_.size(); }
  // Every descriptor, in flight or not (shutdown).
  template <typename Fn>
  void forEach(Fn&& fn) {
    for (auto& d : all_) fn(*d);
  }

 private:
  void grow(size_t more) {
    const size_t from = all_.size();
    all_.reserve(from + more);
    free_.reserve(from + more);
    for (size_t i = 0; i < more; ++i) {
      all_.push_back(std::make_unique<SendDescriptor>());
      free_.push_back(static_cast<uint32_t>(from + more - 1 - i));
    }
  }

  std::vector<std::unique_ptr<SendDescriptor>> all_;
  std::vector<uint32_t> free_;  // indices into all_
};

}  // namespace switchagg::agent
