// ReducePool: a fork-join pool for the agent's reductions. The worker thread
// calls run(n, task); task(0..n-1) execute on the caller plus `threads - 1`
// helpers, and run returns when all are done. Helpers sleep on a condition
// variable between batches (no spinning: the machine is shared).
//
// Fork-join rather than a queue the worker posts to: the UCX worker is
// single-threaded and has no cross-thread wake-up in our transport, so the
// thread that reduces a slot also sends its result, straight after.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace switchagg::agent {

class ReducePool {
 public:
  explicit ReducePool(int threads);  // threads <= 0: hardware concurrency
  ~ReducePool();
  ReducePool(const ReducePool&) = delete;
  ReducePool& operator=(const ReducePool&) = delete;

  int threads() const { return static_cast<int>(helpers_.size()) + 1; }
  // Runs task(i) for every i < n; not re-entrant (one caller thread).
  void run(size_t n, const std::function<void(size_t)>& task);

 private:
  void helperLoop();
  void drain();

  std::vector<std::thread> helpers_;
  std::mutex mu_;
  std::condition_variable wake_, done_;
  const std::function<void(size_t)>* task_ = nullptr;
  size_t next_ = 0, total_ = 0, finished_ = 0;
  unsigned long generation_ = 0;
  bool stop_ = false;
};

}  // namespace switchagg::agent
