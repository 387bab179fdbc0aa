// ThreadGate: several threads of one process sharing this library's objects
// (workers, endpoints, peer groups, an agent client's worker).
//
// Off by default, and then every member below is one relaxed atomic load:
// single-threaded processes (and the agent, which never turns it on) pay
// nothing else. On (enable(), once, before the first Worker is created -
// e.g. when MPI was initialised with MPI_THREAD_MULTIPLE), objects are
// grouped in domains: a Domain is the lock of one set of objects that only
// ever touch each other (a worker, the peer groups and agent connections
// made on it). Callers hold a domain (Hold) around anything that touches its
// objects; threads holding different domains run at once, threads on one
// domain take turns. There is no lock above the domains.
//
// A thread holds at most one domain at a time for itself: Hold on another
// domain lets the first go for the scope (so no two threads can wait for each
// other's domains), except TryHold, which a progress callback uses to drive
// another domain's objects from inside a wait: it never blocks, and inside it
// nothing lets go (Release, poll and yield keep both domains held).
//
// The holder never keeps its domain while it waits: Worker::waitUntil lets
// it go while it sleeps in the kernel or spins (a thread waiting for its
// peers must not stop another thread's operation, which those peers may
// need first), and callers wrap their own blocking calls outside this
// library in Release. A thread that makes progress on a domain wakes every
// thread sleeping without it (their requests may have completed in that
// progress), so no completion is left unnoticed until a sleeper's timeout.
#pragma once

#include <poll.h>

#include <atomic>
#include <mutex>
#include <vector>

namespace switchagg::ucx {

struct DomainOps;

class ThreadGate {
 public:
  static void enable();
  static bool enabled();

  // One lock and the threads sleeping without it (see above).
  class Domain {
   public:
    Domain() = default;
    Domain(const Domain&) = delete;
    Domain& operator=(const Domain&) = delete;

   private:
    friend struct DomainOps;
    std::mutex mutex_;
    std::atomic<int> waiting_{0};  // threads blocked on mutex_
    std::vector<int> sleepers_;    // wake fds of threads in poll() (under mutex_)
  };
  // The domain of users that name none (one-domain processes, tests).
  static Domain& defaultDomain();
  // At most how many threads held a domain of their own at the same time
  // since enable() (a domain held nested inside another is not counted):
  // 1 means the threads took turns throughout.
  static int peakHeld();
  // How many threads hold a domain of their own right now (same counting).
  static int heldNow();

  // Holds `domain` for the scope (re-entrant on one thread; no-op when off).
  class Hold {
   public:
    Hold() : Hold(defaultDomain()) {}
    explicit Hold(Domain& domain);
    ~Hold();
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;

   private:
    bool active_ = false;
    Domain* outer_ = nullptr;  // the domain let go for the scope (then depth)
    Domain* kept_domain_ = nullptr;  // or, inside a nested TryHold, kept
    int outer_depth_ = 0;
  };
  // Lets the thread's domain go for the scope if it holds one (no-op
  // otherwise, and inside a TryHold on a second domain): around a call that
  // may block on other processes.
  class Release {
   public:
    Release();
    ~Release();
    Release(const Release&) = delete;
    Release& operator=(const Release&) = delete;

   private:
    Domain* domain_ = nullptr;
    int depth_ = 0;
  };
  // For a progress callback: holds `domain` only if it is free now and this
  // thread holds no domain, or with `nest` no other one than a different
  // domain (held() false: do nothing). When off, held() is true (the caller
  // keeps its own re-entry guard). `nest` is for work that never waits
  // (progressing a worker from inside another domain's wait); it holds
  // both domains till the end of the scope.
  class TryHold {
   public:
    TryHold() : TryHold(defaultDomain()) {}
    explicit TryHold(Domain& domain, bool nest = false);
    ~TryHold();
    TryHold(const TryHold&) = delete;
    TryHold& operator=(const TryHold&) = delete;
    bool held() const { return held_; }

   private:
    bool held_ = false;
    Domain* domain_ = nullptr;  // locked here
    Domain* outer_ = nullptr;
    int outer_depth_ = 0;
  };

  // For the library's wait loop: poll(2) on `fds`, without the thread's
  // domain if it holds one; returns early when another thread made progress
  // on that domain (then > 0 with every revents of `fds` zero).
  static int poll(pollfd* fds, int nfds, int timeout_ms);
  // Gives threads blocked on this thread's domain a turn (spin loops); no-op
  // when off or when none is waiting.
  static void yield();
  // Called after progress that saw events: wakes the threads in poll() on
  // this thread's domain.
  static void wakeSleepers();
};

}  // namespace switchagg::ucx
