#include "switchagg/ucx/thread_gate.h"

#include <sched.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

namespace switchagg::ucx {
namespace {

std::atomic<bool> g_enabled{false};
std::mutex g_mutex;
// Threads blocked on g_mutex: a spinning holder lets go only for them.
std::atomic<int> g_waiting{0};
// Wake fds of the threads in poll() without the gate (guarded by g_mutex).
std::vector<int> g_sleepers;
// How deep this thread holds the gate (0: not at all).
thread_local int t_depth = 0;

// This thread's wake fd, created on its first sleep, closed at thread exit.
struct WakeFd {
  int fd = -1;
  ~WakeFd() {
    if (fd >= 0) close(fd);
  }
  int get() {
    if (fd < 0) fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    return fd;
  }
};
thread_local WakeFd t_wake;

void acquire(int depth) {
  if (!g_mutex.try_lock()) {
    g_waiting.fetch_add(1, std::memory_order_relaxed);
    g_mutex.lock();
    g_waiting.fetch_sub(1, std::memory_order_relaxed);
  }
  t_depth = depth;
}

int letGo() {
  const int depth = t_depth;
  t_depth = 0;
  g_mutex.unlock();
  return depth;
}

}  // namespace

void ThreadGate::enable() { g_enabled.store(true, std::memory_order_relaxed); }
bool ThreadGate::enabled() { return g_enabled.load(std::memory_order_relaxed); }

ThreadGate::Hold::Hold() {
  if (!enabled()) return;
  if (t_depth > 0) ++t_depth;
  else acquire(1);
}

ThreadGate::Hold::~Hold() {
  if (!enabled()) return;
  if (--t_depth == 0) g_mutex.unlock();
}

ThreadGate::Release::Release() : depth_(enabled() && t_depth > 0 ? letGo() : 0) {}

ThreadGate::Release::~Release() {
  if (depth_ > 0) acquire(depth_);
}

ThreadGate::TryHold::TryHold() {
  if (!enabled()) {
    held_ = true;
    return;
  }
  if (t_depth > 0) return;  // re-entered from inside a held section
  if (g_mutex.try_lock()) {
    t_depth = 1;
    held_ = locked_ = true;
  }
}

ThreadGate::TryHold::~TryHold() {
  if (!locked_) return;
  t_depth = 0;
  g_mutex.unlock();
}

int ThreadGate::poll(pollfd* fds, int nfds, int timeout_ms) {
  if (!enabled() || t_depth == 0) return ::poll(fds, static_cast<nfds_t>(nfds), timeout_ms);
  const int wake = t_wake.get();
  std::vector<pollfd> all(fds, fds + nfds);
  all.push_back({wake, POLLIN, 0});
  g_sleepers.push_back(wake);
  int n;
  {
    Release released;
    n = ::poll(all.data(), all.size(), timeout_ms);
  }
  g_sleepers.erase(std::find(g_sleepers.begin(), g_sleepers.end(), wake));
  uint64_t drained;
  if (all.back().revents != 0) (void)!read(wake, &drained, sizeof drained);
  for (int i = 0; i < nfds; ++i) fds[i].revents = all[size_t(i)].revents;
  return n;
}

void ThreadGate::yield() {
  // Alone at the gate (one thread, or the others asleep in poll) there is
  // nobody to give a turn to: a sched_yield would only hand the core to
  // other processes (25-35 us per call on a loaded machine, measured).
  if (!enabled() || t_depth == 0 || g_waiting.load(std::memory_order_relaxed) == 0) return;
  Release released;
  sched_yield();
}

void ThreadGate::wakeSleepers() {
  if (!enabled() || t_depth == 0) return;
  const uint64_t one = 1;
  for (int fd : g_sleepers) (void)!write(fd, &one, sizeof one);
}

}  // namespace switchagg::ucx
