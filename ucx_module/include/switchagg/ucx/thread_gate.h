// ThreadGate: several threads of one process sharing this library's objects
// (workers, endpoints, peer groups, an agent client's worker).
//
// Off by default, and then every member below is one relaxed atomic load:
// single-threaded processes (and the agent, which never turns it on) pay
// nothing else. On (enable(), once, before the first Worker is created -
// e.g. when MPI was initialised with MPI_THREAD_MULTIPLE), one process-wide
// lock serialises every use of the library: callers hold it (Hold) around
// anything that touches a Worker or what is built on it.
//
// The holder never keeps it while it waits: Worker::waitUntil lets it go
// while it sleeps in the kernel or spins (a thread waiting for its peers
// must not stop another thread's operation, which those peers may need
// first), and callers wrap their own blocking calls outside this library
// in Release. A thread that makes progress with the gate wakes every thread
// sleeping without it (their requests may have completed in that progress),
// so no completion is left unnoticed until a sleeper's timeout.
#pragma once

#include <poll.h>

namespace switchagg::ucx {

class ThreadGate {
 public:
  static void enable();
  static bool enabled();

  // Holds the gate for the scope (re-entrant on one thread; no-op when off).
  class Hold {
   public:
    Hold();
    ~Hold();
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;
  };
  // Lets the gate go for the scope if this thread holds it (no-op
  // otherwise): around a call that may block on other processes.
  class Release {
   public:
    Release();
    ~Release();
    Release(const Release&) = delete;
    Release& operator=(const Release&) = delete;

   private:
    int depth_;
  };
  // For a progress callback: holds the gate only if it is free now and
  // this thread does not already hold it (held() false: do nothing). When
  // off, held() is true (the caller keeps its own re-entry guard).
  class TryHold {
   public:
    TryHold();
    ~TryHold();
    TryHold(const TryHold&) = delete;
    TryHold& operator=(const TryHold&) = delete;
    bool held() const { return held_; }

   private:
    bool held_ = false;
    bool locked_ = false;
  };

  // For the library's wait loop: poll(2) on `fds`, without the gate if this
  // thread holds it; returns early when another thread made progress
  // (then > 0 with every revents of `fds` zero).
  static int poll(pollfd* fds, int nfds, int timeout_ms);
  // Gives threads blocked on the gate a turn (spin loops); no-op when off
  // or when none is waiting.
  static void yield();
  // Called after progress that saw events: wakes the threads in poll().
  static void wakeSleepers();
};

}  // namespace switchagg::ucx
