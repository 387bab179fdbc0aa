#include "reduce_pool.h"

namespace switchagg::agent {

ReducePool::ReducePool(int threads) {
  if (threads <= 0) threads = static_cast<int>(std::thread::hardware_concurrency());
  if (threads <= 0) threads = 1;
  for (int i = 1; i < threads; ++i) helpers_.emplace_back([this] { helperLoop(); });
}

ReducePool::~ReducePool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : helpers_) t.join();
}

// Takes tasks until none are left; called with the lock NOT held.
void ReducePool::drain() {
  for (;;) {
    size_t i;
    const std::function<void(size_t)>* task;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (next_ >= total_) return;
      i = next_++;
      task = task_;
    }
    (*task)(i);
    bool last;
    {
      std::lock_guard<std::mutex> lock(mu_);
      last = ++finished_ == total_;
    }
    if (last) done_.notify_all();
  }
}

void ReducePool::helperLoop() {
  unsigned long seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    drain();
  }
}

void ReducePool::run(size_t n, const std::function<void(size_t)>& task) {
  if (n == 0) return;
  if (n == 1 || helpers_.empty()) {
    for (size_t i = 0; i < n; ++i) task(i);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    task_ = &task;
    next_ = 0;
    total_ = n;
    finished_ = 0;
    ++generation_;
  }
  wake_.notify_all();
  drain();
  std::unique_lock<std::mutex> lock(mu_);
  done_.wait(lock, [&] { return finished_ == total_; });
  task_ = nullptr;
}

}  // namespace switchagg::agent
