// The process-wide part of the component: parameters from the MCA glue and
// the UCX context + workers every communicator's PeerGroup runs on.
// Created lazily (ompi_info and jobs that never allreduce pay nothing),
// destroyed at component close.
//
// Threads (MPI_THREAD_MULTIPLE): enableThreads() turns on ucx::ThreadGate
// and the process gets coll_switchagg_thread_domains domains
// (docs/mca-params.md "Thread levels"). A domain is a UCX worker, the agent connections made for it and
// their lock; a communicator runs on the domain with the fewest live
// communicators when it was created (takeDomain), every
// entry point of the core runs inside CallScope, which holds that domain,
// and lets it go whenever it waits (UCX waits, the previous module's
// allgather: CommState::allgather). Collectives on communicators of
// different domains thus run at once with nothing shared but this object's
// few fields (each guarded on its own); communicators of one domain take
// turns. Single-threaded jobs have one domain, leave the gate off and pay one
// flag test per call.
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "peer_group_comm.h"
#include "switchagg/ucx/thread_gate.h"
#include "selector.h"
#include "switchagg/coll/coll_params.h"
#include "switchagg/common/status.h"

namespace switchagg::ucx {
class Context;
class Worker;
}  // namespace switchagg::ucx

namespace switchagg::coll {

// This process's node: SWITCHAGG_NODE_NAME when set (tests place ranks on
// emulated nodes of one machine with it), else `mpi_name` (Open MPI's name
// of the node), else the host name up to its first dot.
std::string processNodeName(const char* mpi_name);

// coll_switchagg_half_uplink: what node leaders on >= 2 nodes send the
// agent for a 16-bit float SUM (docs/offload.md "Wide partials on the
// leaders' uplink").
enum class HalfUplink { kExact, kFloat32, kHalf };

struct ComponentParams {
  SelectionPolicy policy;
  std::string rules_path;
  int verbose = 0;
  StallBounds stall;  // coll_switchagg_stall_timeout
  bool tune_online = true;  // coll_switchagg_tune=online|off
  std::string tune_file;    // coll_switchagg_tune_file: written at close by job rank 0
  HalfUplink half_uplink = HalfUplink::kExact;  // coll_switchagg_half_uplink
  // coll_switchagg_thread_domains (with threads only)
  int thread_domains = switchagg_coll_default_thread_domains();
};

// Whether this process is the job's rank 0 (or the launcher does not say):
// for what one process of the job should print or write.
bool isJobRankZero();

class ProcessRuntime {
 public:
  static ProcessRuntime& instance();

  // Component open: checks the parameters and loads the rules file.
  Status open(const ComponentParams& params);
  // Component close: frees the worker/context unless communicators still
  // use them (then they are left to process exit).
  void close();

  const ComponentParams& params() const { return params_; }
  const Selector& selector() const { return selector_; }

  // Domains (see above): 1 unless threads are on.
  static constexpr int kMaxDomains = SWITCHAGG_COLL_MAX_thread_domains;  // the table's bound
  int domains() const;
  // A new communicator's domain, counting it live: the domain with the
  // fewest live communicators (the lowest of equals), so that while a
  // process has no more communicators than domains no two share one. Ranks
  // need not agree on it (each sends to the address its peers gave, on
  // whatever domain they chose). releaseDomain when it is freed.
  int takeDomain();
  void releaseDomain(int domain);
  // Communicators taken and not yet released, over every domain.
  int liveComms();
  ucx::ThreadGate::Domain& gate(int domain) { return domains_[size_t(domain)].gate; }

  // A domain's worker, created on first use (by a thread holding the domain);
  // an error is remembered so a broken UCX setup is reported once, not on
  // every communicator.
  Result<ucx::Worker*> worker(int domain);


  // Several threads will use the core: before any worker exists.
  // `mpi_threads`: because the program runs at MPI_THREAD_MULTIPLE
  // (mpiThreads(), an input of the selection: docs/selection.md "Threads");
  // false: only a glue's own thread beside the program's (the PMPI layer's
  // progress thread), which changes no decision.
  static void enableThreads(bool mpi_threads);
  static bool mpiThreads();
  // A glue's own progress thread (the PMPI layer's, docs/pmpi.md
  // "MPI_Iallreduce") marks itself once: on it the core never calls MPI.
  // Its waits skip the MPI progress hook, and CommState::allgather (the
  // agreements) runs over the communicator's own transport instead of the
  // glue's allgather. Requires enableThreads() (two threads use the core).
  static void markThreadWithoutMpi();
  static bool threadWithoutMpi();

  // Open MPI's progress engine calls this (switchagg_coll_progress) while
  // the process is in other components: it drives every domain's worker and
  // the workers registered on it below, unless a switchagg call is running
  // on this thread (the call drives them itself; UCX is not re-entrant) or,
  // with threads, another thread holds that domain (it drives them) or this
  // thread does (inside one of its waits: the domain's own wait drives it).
  // Runs the workers at most every kProgressIntervalUs: Open MPI calls it
  // thousands of times during another component's long call, and a UCX
  // worker with TCP endpoints costs a poll each time (measured: a settled
  // `auto` 4 MiB allreduce on Open MPI's module 25-60 % slower than the
  // forced previous module). What it drives - answers to other members'
  // recovery questions, background sends - waits at most that long.
  // only_idle (a glue's own thread, switchagg_coll_progress_idle): a domain
  // is driven only while no switchagg work is in flight in the process (no
  // CallScope on any thread, nothing marked busy), checked with the
  // domain held: such a pass never interleaves with a call's or a queued
  // nonblocking call's use of the domain.
  int progress(bool only_idle = false);
  static constexpr int64_t kProgressIntervalUs = 20;
  // Work in flight outside any call (a glue's queued nonblocking calls):
  // counted with the calls running, for progress(only_idle).
  static void markBusy(int delta) { s_busy.fetch_add(delta, std::memory_order_acq_rel); }
  // Turns the counting on (switchagg_coll_enable_idle_progress, at open,
  // before any call): until then CallScope costs no shared atomic.
  static void trackBusy() { s_track_busy.store(true, std::memory_order_release); }
  // Switchagg calls running on this thread (CallScope depth): a progress
  // callback that would step the switch path stays out while it is > 0.
  int inCall() const { return t_in_call; }
  // Marks a switchagg call on `domain` and holds that domain: progress() stays
  // out of it (with threads, through the domain's lock).
  class CallScope {
   public:
    // `domain` < 0: holds none (a communicator's creation touches no domain).
    explicit CallScope(int domain) : counted_(s_track_busy.load(std::memory_order_acquire)) {
      if (counted_) s_busy.fetch_add(1, std::memory_order_acq_rel);  // before the domain: see progress()
      if (domain >= 0) hold_.emplace(instance().gate(domain));
      ++t_in_call;
    }
    ~CallScope() {
      --t_in_call;
      if (counted_) s_busy.fetch_sub(1, std::memory_order_acq_rel);
    }
    CallScope(const CallScope&) = delete;
    CallScope& operator=(const CallScope&) = delete;

   private:
    bool counted_;
    std::optional<ucx::ThreadGate::Hold> hold_;
  };
  // Inside a switchagg call, while it waits in the previous module (the
  // allgathers of setup, of the switch path's outcome, of online tuning):
  // progress() may drive our workers again. A peer can be waiting on this
  // process's transport (a rendezvous send of the call before, whose
  // completion needs our acknowledgement), and while we wait for that peer
  // in the allgather, only Open MPI's progress loop runs here.
  class OpenForProgress {
   public:
    OpenForProgress() : saved_(t_in_call) { t_in_call = 0; }
    ~OpenForProgress() { t_in_call = saved_; }
    OpenForProgress(const OpenForProgress&) = delete;
    OpenForProgress& operator=(const OpenForProgress&) = delete;

   private:
    int saved_;
  };
  // Other workers a domain owns (the switch path's agent clients): `fn`
  // progresses one and returns its event count. Keyed by `owner`; called
  // holding the domain.
  void addProgress(int domain, const void* owner, std::function<int()> fn);
  void removeProgress(int domain, const void* owner);

  // Rules a communicator learnt online (tune-file text); kept until close,
  // when the job's rank 0 writes them to coll_switchagg_tune_file.
  void addTuned(const std::string& rules_text);

 private:
  ProcessRuntime() = default;
  void writeTuneFile();
  Result<ucx::Context*> context();
  // Switchagg calls running on this thread (CallScope depth).
  static thread_local int t_in_call;
  // CallScopes on every thread plus markBusy's count (CallScopes counted
  // only once trackBusy ran).
  static std::atomic<int> s_busy;
  static std::atomic<bool> s_track_busy;
  struct Domain {
    ucx::ThreadGate::Domain gate;
    // Under `gate`:
    std::unique_ptr<ucx::Worker> worker;
    Status worker_error;
    int64_t last_progress_us = 0;  // progress()'s last run (steady clock)
    std::vector<std::pair<const void*, std::function<int()>>> extra_progress;
    // A worker or an extra progress function exists: until then progress()
    // has nothing to drive here (a job whose calls all go to the previous
    // module never reads the clock for it).
    std::atomic<bool> has_progress{false};
  };
  ComponentParams params_;
  Selector selector_;
  std::mutex context_mutex_;  // context_, context_error_
  std::unique_ptr<ucx::Context> context_;
  Status context_error_;
  std::array<Domain, kMaxDomains> domains_;
  std::mutex domain_count_mutex_;
  std::array<int, kMaxDomains> comms_in_domain_{};  // live communicators per domain
  std::mutex tuned_mutex_;
  std::string tuned_;
};

}  // namespace switchagg::coll
