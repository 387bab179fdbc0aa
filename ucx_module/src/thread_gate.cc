#include "switchagg/ucx/thread_gate.h"

#include <sched.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>

namespace switchagg::ucx {
namespace {

std::atomic<bool> g_enabled{false};
// Domains held right now, and the most ever held at once (peakHeld()).
std::atomic<int> g_held{0}, g_peak{0};
// The domain this thread holds for itself (nullptr: none), how deep, and
// whether it took it with TryHold while holding another one (then it lets
// neither go until that TryHold ends).
thread_local ThreadGate::Domain* t_domain = nullptr;
thread_local int t_depth = 0;
thread_local bool t_nested = false;

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

void countHeld(int delta) {
  const int now = g_held.fetch_add(delta, std::memory_order_relaxed) + delta;
  int peak = g_peak.load(std::memory_order_relaxed);
  while (now > peak && !g_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

}  // namespace

// Members of Domain are private to the class; these reach them.
struct DomainOps {
  // `counted`: a thread's own hold, counted for peakHeld(); a second
  // domain held inside one (nested) is not, so the peak counts threads.
  static void lock(ThreadGate::Domain& l, bool counted = true) {
    if (!l.mutex_.try_lock()) {
      l.waiting_.fetch_add(1, std::memory_order_relaxed);
      l.mutex_.lock();
      l.waiting_.fetch_sub(1, std::memory_order_relaxed);
    }
    if (counted) countHeld(1);
  }
  static bool tryLock(ThreadGate::Domain& l, bool counted) {
    if (!l.mutex_.try_lock()) return false;
    if (counted) countHeld(1);
    return true;
  }
  static void unlock(ThreadGate::Domain& l, bool counted = true) {
    if (counted) countHeld(-1);
    l.mutex_.unlock();
  }
  static int waiting(ThreadGate::Domain& l) { return l.waiting_.load(std::memory_order_relaxed); }
  static std::vector<int>& sleepers(ThreadGate::Domain& l) { return l.sleepers_; }
};

namespace {

void acquire(ThreadGate::Domain& domain, int depth) {
  DomainOps::lock(domain);
  t_domain = &domain;
  t_depth = depth;
}

// Lets this thread's domain go; returns how deep it was held.
int letGo() {
  ThreadGate::Domain* domain = t_domain;
  const int depth = t_depth;
  t_domain = nullptr;
  t_depth = 0;
  DomainOps::unlock(*domain);
  return depth;
}

}  // namespace

void ThreadGate::enable() { g_enabled.store(true, std::memory_order_relaxed); }
bool ThreadGate::enabled() { return g_enabled.load(std::memory_order_relaxed); }

ThreadGate::Domain& ThreadGate::defaultDomain() {
  static Domain domain;
  return domain;
}

int ThreadGate::peakHeld() { return g_peak.load(std::memory_order_relaxed); }
int ThreadGate::heldNow() { return g_held.load(std::memory_order_relaxed); }

ThreadGate::Hold::Hold(Domain& domain) {
  if (!enabled()) return;
  active_ = true;
  if (t_domain == &domain) {
    ++t_depth;
    return;
  }
  // Never two domains held while blocking for one: the first goes for the
  // scope. Inside a nested TryHold nothing may go (its caller does not
  // expect it); no caller holds a third domain there, but should one, it
  // blocks holding two and gets the bookkeeping back intact.
  if (t_nested) {
    kept_domain_ = t_domain;
    outer_depth_ = t_depth;
    DomainOps::lock(domain, /*counted=*/false);
    t_domain = &domain;
    t_depth = 1;
    return;
  }
  if (t_domain != nullptr) {
    outer_ = t_domain;
    outer_depth_ = letGo();
  }
  acquire(domain, 1);
}

ThreadGate::Hold::~Hold() {
  if (!active_) return;
  if (--t_depth > 0) return;
  if (kept_domain_ != nullptr) {
    Domain* domain = t_domain;
    t_domain = kept_domain_;
    t_depth = outer_depth_;
    DomainOps::unlock(*domain, /*counted=*/false);
    return;
  }
  (void)letGo();
  if (outer_ != nullptr) acquire(*outer_, outer_depth_);
}

ThreadGate::Release::Release() {
  if (!enabled() || t_domain == nullptr || t_nested) return;
  domain_ = t_domain;
  depth_ = letGo();
}

ThreadGate::Release::~Release() {
  if (depth_ > 0) acquire(*domain_, depth_);
}

ThreadGate::TryHold::TryHold(Domain& domain, bool nest) {
  if (!enabled()) {
    held_ = true;
    return;
  }
  if (t_domain == &domain) return;  // re-entered from inside a held section
  if (t_domain != nullptr && !nest) return;
  if (t_nested) return;  // at most two: the thread's own and one nested
  if (!DomainOps::tryLock(domain, /*counted=*/t_domain == nullptr)) return;
  held_ = true;
  domain_ = &domain;
  outer_ = t_domain;
  outer_depth_ = t_depth;
  t_domain = &domain;
  t_depth = 1;
  t_nested = outer_ != nullptr;
}

ThreadGate::TryHold::~TryHold() {
  if (domain_ == nullptr) return;
  t_domain = outer_;
  t_depth = outer_depth_;
  t_nested = false;  // a TryHold never starts inside a nested one
  DomainOps::unlock(*domain_, /*counted=*/outer_ == nullptr);
}

int ThreadGate::poll(pollfd* fds, int nfds, int timeout_ms) {
  // Inside a TryHold on a second domain nothing lets go: a plain, bounded
  // sleep (the caller's timeout) holding both.
  if (!enabled() || t_domain == nullptr || t_nested)
    return ::poll(fds, static_cast<nfds_t>(nfds), timeout_ms);
  Domain& domain = *t_domain;
  const int wake = t_wake.get();
  std::vector<pollfd> all(fds, fds + nfds);
  all.push_back({wake, POLLIN, 0});
  std::vector<int>& sleepers = DomainOps::sleepers(domain);
  sleepers.push_back(wake);
  int n;
  {
    Release released;
    n = ::poll(all.data(), all.size(), timeout_ms);
  }
  sleepers.erase(std::find(sleepers.begin(), sleepers.end(), wake));
  uint64_t drained;
  if (all.back().revents != 0) (void)!read(wake, &drained, sizeof drained);
  for (int i = 0; i < nfds; ++i) fds[i].revents = all[size_t(i)].revents;
  return n;
}

void ThreadGate::yield() {
  // Alone at the domain (one thread, or the others asleep in poll) there is
  // nobody to give a turn to: a sched_yield would only hand the core to
  // other processes (25-35 us per call on a loaded machine, measured).
  if (!enabled() || t_domain == nullptr || t_nested || DomainOps::waiting(*t_domain) == 0) return;
  Release released;
  sched_yield();
}

void ThreadGate::wakeSleepers() {
  if (!enabled() || t_domain == nullptr) return;
  const uint64_t one = 1;
  for (int fd : DomainOps::sleepers(*t_domain)) (void)!write(fd, &one, sizeof one);
}

}  // namespace switchagg::ucx
