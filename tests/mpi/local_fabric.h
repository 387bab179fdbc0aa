// An in-memory HostComm for unit tests: N ranks as threads of one process,
// messages matched by (source, destination, tag) like the real transport.
// Sends are eager (copied at post), receives complete when a matching
// message exists; a wait that sees nothing for 10 s fails the test instead
// of hanging it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "host_comm.h"

namespace switchagg::coll::testing {

class LocalFabric {
 public:
  using Key = std::tuple<int, int, uint32_t>;  // src, dst, tag

  void put(int src, int dst, uint32_t tag, const void* data, size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& q = boxes_[Key{src, dst, tag}];
    const auto* p = static_cast<const char*>(data);
    q.emplace_back(p, p + bytes);
    ++messages_;
    cv_.notify_all();
  }

  Status take(int src, int dst, uint32_t tag, void* data, size_t bytes) {
    std::unique_lock<std::mutex> lock(mu_);
    const Key key{src, dst, tag};
    auto ready = [&] { return !boxes_[key].empty(); };
    if (!cv_.wait_for(lock, std::chrono::seconds(10), ready))
      return Status(Code::kTimeout, "no message src=" + std::to_string(src) +
                                        " dst=" + std::to_string(dst) +
                                        " tag=" + std::to_string(tag));
    auto& q = boxes_[key];
    if (q.front().size() != bytes)
      return Status(Code::kProtocol, "length mismatch tag=" + std::to_string(tag));
    if (bytes) std::memcpy(data, q.front().data(), bytes);
    q.pop_front();
    return Status::Ok();
  }

  // Messages still undelivered (a correct algorithm leaves none).
  size_t pending() {
    std::lock_guard<std::mutex> lock(mu_);
    size_t n = 0;
    for (auto& [k, q] : boxes_) n += q.size();
    return n;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<Key, std::deque<std::vector<char>>> boxes_;
  size_t messages_ = 0;
};

class LocalComm final : public HostComm {
 public:
  LocalComm(LocalFabric& fabric, int rank, int size) : fabric_(fabric), rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Status postSend(int peer, uint32_t tag, const void* data, size_t bytes, Handle* h) override {
    if (peer < 0 || peer >= size_ || peer == rank_) return Status(Code::kInvalidArgument, "peer");
    if (bytes) fabric_.put(rank_, peer, tag, data, bytes);
    ops_.push_back(Op{});
    *h = ops_.size() - 1;
    return Status::Ok();
  }
  Status postRecv(int peer, uint32_t tag, void* data, size_t bytes, Handle* h) override {
    if (peer < 0 || peer >= size_ || peer == rank_) return Status(Code::kInvalidArgument, "peer");
    ops_.push_back(Op{true, peer, tag, data, bytes});
    *h = ops_.size() - 1;
    return Status::Ok();
  }
  Status wait(Handle h) override {
    Op& op = ops_.at(h);
    if (!op.recv || op.done || op.bytes == 0) {
      op.done = true;
      return Status::Ok();
    }
    op.done = true;
    return fabric_.take(op.peer, rank_, op.tag, op.data, op.bytes);
  }
  // The in-memory fabric has no progress to make: test waits (bounded, as
  // wait does) and reports done.
  Status test(Handle h, bool* done) override {
    *done = true;
    return wait(h);
  }
  Status waitAll() override {
    for (Handle h = 0; h < ops_.size(); ++h) SWITCHAGG_RETURN_IF_ERROR(wait(h));
    ops_.clear();
    return Status::Ok();
  }

 private:
  struct Op {
    bool recv = false;
    int peer = -1;
    uint32_t tag = 0;
    void* data = nullptr;
    size_t bytes = 0;
    bool done = false;
  };
  LocalFabric& fabric_;
  int rank_, size_;
  std::vector<Op> ops_;
};

}  // namespace switchagg::coll::testing
