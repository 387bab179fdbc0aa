// MPI_Iallreduce, MPI_Ibarrier, MPI_Iallgather, MPI_Ibcast and
// MPI_Ireduce_scatter_block through the switch path under the MPICH family
// (docs/pmpi.md "MPI_Iallreduce"): the layer's own progress threads.
//
// MPICH gives a library no progress callback (Open MPI's component steps
// its queue from one), so a posted call moves on a thread of the layer's
// own that never calls MPI, one per communicator. Per communicator a
// queue, served in posting order, one call at a time (as the component's):
//
//   QUEUED  -> the core's stream starts (switchagg_coll_istream_start)
//   STREAM  -> stepped until this rank's outcome
//   SETTLE  -> one agent round trip settles it (the same answer on every
//              rank), else the outcome agreement over the communicator's
//              own transport (switchagg_coll_istream_agree: every rank's
//              outcome, the worst and the lowest rank with it)
//   REDO    -> anyone busy or failed, or the path declined alike on every
//              rank: the host algorithm the cost model rates fastest, from
//              the intact input, over the same transport
//   done    -> an atomic flag the user's thread reads (a staged result is
//              unpacked into the caller's buffer there).
//
// The user's request is an MPICH extended generalized request
// (MPIX_Grequest_start): its poll function (MPI_Test, MPI_Wait, MPI_*any,
// MPI_*some, MPI_Testall) and wait function (MPI_Waitall, before MPICH
// moves the array's other requests) read the flag and call
// MPI_Grequest_complete on the user's thread. Nothing the thread does waits
// for this rank's user thread; a blocking switchagg call, MPI_Comm_free and
// MPI_Finalize first wait for the communicator's queue to empty (drain),
// which the thread ends on its own, so no order of calls the program makes
// can leave a call unprogressed. Every wait on the user's thread (the wait
// function, drain) drives the MPI library's progress while it waits: a peer
// may need one of this rank's MPI requests before it posts the call this
// rank waits for (docs/pmpi.md "Completion calls that never make
// progress"). And every such wait is bounded: a communicator whose queue
// has not moved for coll_switchagg_stall_timeout abandons its head call
// with an error naming it (abandon), and the communicator fails from then
// on (poisoned).
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "iallreduce.h"
#include "pmpi_layer.h"
#include "switchagg_mpi_types.h"

// The thread needs MPICH's extended generalized requests: built for the
// MPICH family only (on Open MPI the component serves MPI_Iallreduce, and
// the layer over Open MPI hands it to the library).
#if defined(MPICH_VERSION) && !defined(OPEN_MPI)
#define SWITCHAGG_PMPI_THREAD 1
#else
#define SWITCHAGG_PMPI_THREAD 0
#endif

namespace switchagg::pmpi {

// One nonblocking call on the thread: what the core streams (byte images
// for the routed kinds), and where a staged result goes once served.
struct IJob {
  enum Kind { kAllreduce, kBarrier, kRouted } kind = kAllreduce;
  CommEntry* entry = nullptr;
  MPI_Comm comm = MPI_COMM_NULL;  // the user's (pack / unpack)
  int routed_op = -1, root = 0;   // kRouted: SWITCHAGG_COLL_ALLGATHER, ...
  const void* send = nullptr;     // nullptr: in place
  void* recv = nullptr;
  size_t count = 0;
  int dtype = 0, op = 0;
  int size = 1;                   // the communicator's
  int32_t one = 1, entered = 0;   // kBarrier: a one-int32 sum of ones
  // Routed calls whose datatypes are not one plain run of bytes: packed
  // when posted, unpacked into the caller's buffer (`blocks` of
  // `block_bytes`, `stride` apart) once served, on the program's thread.
  std::vector<char> staged_send, staged_recv;
  char* user_buf = nullptr;
  int user_count = 0, blocks = 0;
  // A duplicate of the caller's datatype: MPI lets the program free its
  // own while the call is pending (freed at completion).
  MPI_Datatype user_dtype = MPI_DATATYPE_NULL;
  MPI_Aint stride = 0;
  size_t block_bytes = 0;
  MPI_Request request = MPI_REQUEST_NULL;
  enum Stage { kQueued, kStream, kSettle, kRedo };
  std::atomic<Stage> stage{kQueued};  // the thread's; read for messages
  int outcome = 0;
  uint64_t seq = 0;               // this process's posting order, from 1
  int rc = MPI_SUCCESS;           // the request's error code (under g_mutex once posted)
  std::atomic<bool> done{false};  // set once by the thread, last
  bool completed = false;         // MPI_Grequest_complete called (user thread)
  bool freed = false;  // MPI_Request_free while running (under g_mutex)
  // Past the bound (under g_mutex): the user's wait gave up on it with an
  // error; the thread drops it and fails its communicator's later calls.
  bool abandoned = false;
  bool warned = false;  // the half-bound warning printed (user thread)
};

#if SWITCHAGG_PMPI_THREAD
namespace {

using GrequestStartFn = int (*)(MPI_Grequest_query_function*, MPI_Grequest_free_function*,
                                MPI_Grequest_cancel_function*, MPIX_Grequest_poll_function*,
                                MPIX_Grequest_wait_function*, void*, MPI_Request*);
GrequestStartFn g_grequest_start = nullptr;

// Allocated once and never destroyed: a process that ends without
// MPI_Finalize (an MPI_Abort, an error exit), or one whose thread was left
// running past its bound, must not destroy a mutex or a condition variable
// a thread still uses.
std::mutex& g_mutex = *new std::mutex;  // everything below, and the entries' queues
std::condition_variable& g_done = *new std::condition_variable;  // a job finished, a thread ended
std::vector<CommEntry*>& g_active = *new std::vector<CommEntry*>;  // entries with queued jobs
// Calls the program freed while they ran (MPI_Request_free): ended by the
// thread, completed and deleted by the next user-thread call (reapOrphans).
std::vector<IJob*>& g_orphans = *new std::vector<IJob*>;
std::atomic<bool> g_have_orphans{false};
bool g_wanted = false;                  // progressThreadEnabled()
int g_stall_s = 300;                    // coll_switchagg_stall_timeout (0: unbounded)
int g_world_rank = 0;
uint64_t g_next_seq = 0;                // under g_mutex
// SWITCHAGG_TEST_STALL_IJOB=RANK:N (tests only): on world rank RANK the
// thread never moves the N-th call posted (docs/pmpi.md, the fault test of
// the bound).
uint64_t g_test_stall_seq = 0;

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The communicator's queue moved: its waits' bound counts from now.
void moved(CommEntry* e) { e->moved_ns.store(nowNs(), std::memory_order_relaxed); }

// A job that was never queued (posting failed): its datatype duplicate too.
void discard(IJob* job) {
  if (job->user_dtype != MPI_DATATYPE_NULL) (void)PMPI_Type_free(&job->user_dtype);
  delete job;
}

// On the program's thread, once the thread ended the call: a staged
// result into the caller's buffer, then MPI_Grequest_complete.
int completeJob(IJob* job) {
  if (job->completed) return MPI_SUCCESS;
  job->completed = true;
  for (int b = 0; job->rc == MPI_SUCCESS && b < job->blocks; ++b)
    if (unpack(job->staged_recv.data() + size_t(b) * job->block_bytes, job->block_bytes,
               job->user_buf + b * job->stride, job->user_count, job->user_dtype,
               job->comm) != MPI_SUCCESS)
      job->rc = MPI_ERR_OTHER;
  if (job->user_dtype != MPI_DATATYPE_NULL) (void)PMPI_Type_free(&job->user_dtype);
  return PMPI_Grequest_complete(job->request);
}

// ---- the thread -----------------------------------------------------------

// Ends the communicator's head call `job` (g_mutex held).
void finishLocked(IJob* job, int rc) {
  CommEntry* e = job->entry;
  if (!job->abandoned) job->rc = rc;
  e->ijobs.pop_front();
  moved(e);
  if (e->ijobs.empty()) g_active.erase(std::find(g_active.begin(), g_active.end(), e));
  // An abandoned call the core had started streaming: the core may still
  // write into it (a result arriving for its stream) until the
  // communicator is destroyed, so it is never deleted (a leak on an error
  // path, not a use after free; its request was completed already).
  if (job->abandoned && job->stage.load(std::memory_order_relaxed) != IJob::kQueued) {
    job->done.store(true, std::memory_order_release);
    return;
  }
  if (job->freed) {
    g_orphans.push_back(job);
    g_have_orphans.store(true, std::memory_order_release);
  }
  job->done.store(true, std::memory_order_release);
}

void finish(IJob* job, int rc) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    finishLocked(job, rc);
  }
  g_done.notify_all();
}

// Counts `what` on the call's own counters (iallreduce:*, ibarrier:*, ...).
void note(IJob* job, const char* what) {
  switchagg_coll_comm_t* core = job->entry->core;
  if (job->kind == IJob::kBarrier) switchagg_coll_ibarrier_note(core, what);
  else if (job->kind == IJob::kRouted) switchagg_coll_irouted_note(core, job->routed_op, what);
  else switchagg_coll_iallreduce_note(core, what);
}

// A served or redone MPI_Ibarrier counted every rank (as the component's).
int barrierChecked(IJob* job) {
  if (job->kind != IJob::kBarrier || job->entered == job->size) return MPI_SUCCESS;
  std::fprintf(stderr,
               "switchagg[pmpi] error: MPI_Ibarrier through the switch counted %d of %d ranks; "
               "the request completes with MPI_ERR_OTHER\n",
               int(job->entered), job->size);
  return MPI_ERR_OTHER;
}

// The redo of `job` (end() asked for it, or the path declined).
void redo(IJob* job) {
  switchagg_coll_comm_t* core = job->entry->core;
  int rc = -1;
  switch (job->kind) {
    case IJob::kAllreduce:
      rc = switchagg_coll_iallreduce_redo_host(core, job->send, job->recv, job->count, job->dtype,
                                               job->op);
      break;
    case IJob::kBarrier:
      rc = switchagg_coll_ibarrier_redo_host(core);
      break;
    case IJob::kRouted:
      rc = switchagg_coll_irouted_redo_host(core, job->routed_op, job->send, job->recv, job->count,
                                            job->dtype, job->op, job->root);
      break;
  }
  // The barrier's redo checked its own count.
  finish(job, rc == 0 ? MPI_SUCCESS : MPI_ERR_OTHER);
}

void end(IJob* job, int agreed, int first_rank) {
  if (switchagg_coll_istream_end(job->entry->core, agreed, first_rank) == 0)
    finish(job, barrierChecked(job));
  else
    redo(job);
}

// One step of the communicator's head job; true when it moved.
bool advance(IJob* job) {
  switchagg_coll_comm_t* core = job->entry->core;
  int rc = 0;
  switch (job->stage) {
    case IJob::kQueued:
      if (job->kind == IJob::kRouted)
        rc = switchagg_coll_istream_start_routed(core, job->routed_op, job->send, job->recv,
                                                 job->count, job->dtype, job->op, job->root,
                                                 &job->outcome);
      else if (job->kind == IJob::kBarrier)
        rc = switchagg_coll_istream_start(core, &job->one, &job->entered, 1, job->dtype, job->op,
                                          1, &job->outcome);
      else
        rc = switchagg_coll_istream_start(core, job->send, job->recv, job->count, job->dtype,
                                          job->op, 0, &job->outcome);
      break;
    case IJob::kStream:
      rc = switchagg_coll_istream_step(core, &job->outcome);
      break;
    case IJob::kSettle: {
      int agreed = 0;
      switch (switchagg_coll_istream_settle(core, job->outcome, &agreed)) {
        case SWITCHAGG_COLL_ISETTLE_SETTLED:
          end(job, agreed, -1);
          return true;
        case SWITCHAGG_COLL_ISETTLE_AGREE: {
          int first_rank = 0;
          if (switchagg_coll_istream_agree(core, job->outcome, &agreed, &first_rank) != 0) {
            note(job, "error");
            finish(job, MPI_ERR_OTHER);
          } else {
            end(job, agreed, first_rank);
          }
          return true;
        }
        case SWITCHAGG_COLL_ISETTLE_NOT_NOW:
          return false;
        default:  // the core logged why
          note(job, "error");
          finish(job, MPI_ERR_OTHER);
          return true;
      }
    }
    case IJob::kRedo:
      redo(job);
      return true;
  }
  // A stage reached: the queue moved (the bound counts from here).
  switch (rc) {
    case SWITCHAGG_COLL_ISTREAM_OUTCOME:
      job->stage = IJob::kSettle;
      moved(job->entry);
      return true;
    case SWITCHAGG_COLL_ISTREAM_DECLINED:
      job->stage = IJob::kRedo;
      moved(job->entry);
      return true;
    case SWITCHAGG_COLL_ISTREAM_RUNNING: {
      const bool started = job->stage == IJob::kQueued;
      job->stage = IJob::kStream;
      if (started) moved(job->entry);
      return started;
    }
    default:  // NOT_NOW: another thread holds the core's gate
      return false;
  }
}

// A communicator whose head call was abandoned (g_mutex held): that call
// and every one queued behind it end with MPI_ERR_OTHER (the core's state
// for the communicator is no longer known to match the peers').
void failQueueLocked(CommEntry* e) {
  const size_t later = e->ijobs.size() - 1;
  e->poisoned = true;
  while (!e->ijobs.empty()) finishLocked(e->ijobs.front(), MPI_ERR_OTHER);
  if (later > 0)
    std::fprintf(stderr,
                 "switchagg[pmpi] error: rank %d: %zu nonblocking call(s) queued behind the "
                 "abandoned one complete with MPI_ERR_OTHER\n",
                 g_world_rank, later);
}

// One thread per communicator with nonblocking calls, from its first call
// until the communicator is freed: a call's failure path (recovery, the
// outcome agreement, the host redo) waits for the peers of its own
// communicator only, and a thread shared by communicators would hold
// every other one's calls meanwhile - while a peer's thread, inside
// another communicator's failure path, waits for those (docs/pmpi.md,
// safety argument, case 6). Idle: asleep on the entry's condition
// variable. Busy: steps the head call; when it did not move, sleeps from
// 20 us doubling to 1 ms (a new call wakes it at once), so a thread
// waiting for the agent does not take a core from the ranks.
void entryLoop(CommEntry* e) {
  switchagg_coll_thread_without_mpi();
  std::unique_lock<std::mutex> lock(g_mutex);
  int64_t idle_us = 0;
  for (;;) {
    if (e->ijobs.empty()) {
      if (e->thread_stop) return;
      idle_us = 0;
      e->work->wait(lock);
      continue;
    }
    IJob* head = e->ijobs.front();
    if (head->abandoned) {
      failQueueLocked(e);
      g_done.notify_all();
      continue;
    }
    const bool stalled = head->seq == g_test_stall_seq;
    lock.unlock();
    // (The job may be gone once advance returns: finished, freed, reaped.)
    const bool moved = !stalled && advance(head);
    lock.lock();
    if (moved) {
      idle_us = 0;
      continue;
    }
    idle_us = idle_us == 0 ? 20 : std::min<int64_t>(2 * idle_us, 1000);
    e->work->wait_for(lock, std::chrono::microseconds(idle_us));
  }
}

void entryThreadMain(CommEntry* e) {
  entryLoop(e);
  std::lock_guard<std::mutex> lock(g_mutex);
  e->thread_exited = true;
  g_done.notify_all();
}

// ---- the generalized request's callbacks (the user's thread) --------------

int queryFn(void* state, MPI_Status* status) {
  auto* job = static_cast<IJob*>(state);
  (void)PMPI_Status_set_elements(status, MPI_BYTE, 0);
  (void)PMPI_Status_set_cancelled(status, 0);
  status->MPI_SOURCE = MPI_UNDEFINED;
  status->MPI_TAG = MPI_UNDEFINED;
  status->MPI_ERROR = job->rc;
  return job->rc;
}

// MPI_Wait/MPI_Test's end, or MPI_Request_free. MPICH releases a
// generalized request's handle on MPI_Request_free whatever this returns,
// and calls this at once: a call still running (erroneous for a collective,
// MPI 3.1 section 5.12, but not to crash on) stays with the thread, which
// ends it (the buffers the program gave stay in use until then); the next
// call into the layer completes and deletes it (reapOrphans).
int freeFn(void* state) {
  auto* job = static_cast<IJob*>(state);
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (!job->done.load(std::memory_order_acquire)) {
      job->freed = true;
      return MPI_SUCCESS;
    }
  }
  delete job;
  return MPI_SUCCESS;
}

// A collective cannot be cancelled (MPICH refuses it for its own): an error
// until it completed, then no effect.
int cancelFn(void*, int complete) {
  return complete ? MPI_SUCCESS : MPI_ERR_REQUEST;
}

const char* callName(const IJob* job) {
  if (job->kind == IJob::kBarrier) return "MPI_Ibarrier";
  if (job->kind == IJob::kAllreduce) return "MPI_Iallreduce";
  switch (job->routed_op) {
    case SWITCHAGG_COLL_ALLGATHER: return "MPI_Iallgather";
    case SWITCHAGG_COLL_BCAST: return "MPI_Ibcast";
    case SWITCHAGG_COLL_REDUCE_SCATTER_BLOCK: return "MPI_Ireduce_scatter_block";
    default: return "a nonblocking collective";
  }
}

const char* stageName(IJob::Stage stage) {
  switch (stage) {
    case IJob::kQueued: return "not started by the progress thread";
    case IJob::kStream: return "streaming through the switch path (waiting for the agent's results)";
    case IJob::kSettle: return "settling its outcome (the agent's answer or the ranks' agreement)";
    case IJob::kRedo: return "being redone on the host (waiting for the peers)";
  }
  return "?";
}

// The bound on a wait for `job` (g_mutex held, the user's thread): how long
// its communicator's queue has not moved. Past half of
// coll_switchagg_stall_timeout one warning; past all of it the call is
// abandoned (the thread drops it and fails its communicator's later
// calls) and true is returned: the caller completes it with its error.
bool overBoundLocked(IJob* job) {
  if (g_stall_s <= 0 || job->done.load(std::memory_order_acquire)) return job->abandoned;
  if (job->abandoned) return true;
  const double idle_s =
      double(nowNs() - job->entry->moved_ns.load(std::memory_order_relaxed)) / 1e9;
  if (idle_s < std::min(10.0, g_stall_s / 2.0) || (job->warned && idle_s < g_stall_s))
    return false;
  const bool head = !job->entry->ijobs.empty() && job->entry->ijobs.front() == job;
  char what[320];
  std::snprintf(what, sizeof what, "%s #%llu (%zu %s%s), %s", callName(job),
                static_cast<unsigned long long>(job->seq), job->count,
                job->kind == IJob::kRouted ? "bytes" : "elements",
                head ? "" : ", queued behind earlier calls on its communicator",
                stageName(head ? job->stage.load(std::memory_order_relaxed) : IJob::kQueued));
  if (idle_s >= g_stall_s) {
    std::fprintf(stderr,
                 "switchagg[pmpi] error: rank %d: %s: no progress for %d s "
                 "(coll_switchagg_stall_timeout); the request completes with MPI_ERR_OTHER "
                 "and its communicator fails from now on\n",
                 g_world_rank, what, g_stall_s);
    job->abandoned = true;
    job->rc = MPI_ERR_OTHER;
    job->entry->poisoned = true;  // no call queues behind it from now on
    job->entry->work->notify_all();
    return true;
  }
  job->warned = true;
  // What the threads hold: each queue's head and length.
  std::string queues;
  for (const CommEntry* e : g_active) {
    char one[96];
    std::snprintf(one, sizeof one, "%s%s #%llu stage %d, %zu queued", queues.empty() ? "" : "; ",
                  callName(e->ijobs.front()),
                  static_cast<unsigned long long>(e->ijobs.front()->seq),
                  int(e->ijobs.front()->stage.load(std::memory_order_relaxed)),
                  e->ijobs.size() - 1);
    queues += one;
  }
  std::fprintf(stderr,
               "switchagg[pmpi] warning: rank %d: still waiting after %.0f s for %s "
               "(coll_switchagg_stall_timeout %d s); the progress threads' queues: %s\n",
               g_world_rank, idle_s, what, g_stall_s, queues.c_str());
  return false;
}

// MPI_Test, MPI_Wait (which calls it in a loop), MPI_Testany, MPI_Waitany,
// MPI_Testsome, MPI_Waitsome, MPI_Testall: never blocks. MPICH 4.0's
// MPI_Wait on a generalized request spins on this function alone, without
// a pass of its own progress engine: a call not done yet gives the MPI
// library one pass here (a peer may need one of this rank's MPI requests
// before it posts the call this rank waits for).
int pollFn(void* state, MPI_Status*) {
  auto* job = static_cast<IJob*>(state);
  if (!job->done.load(std::memory_order_acquire)) {
    bool over = false;
    {
      std::lock_guard<std::mutex> lock(g_mutex);
      over = overBoundLocked(job);
    }
    if (over) return completeJob(job);  // with its error, outside the lock
    mpiProgressPass();
    if (!job->done.load(std::memory_order_acquire)) return MPI_SUCCESS;
  }
  return completeJob(job);
}

// MPI_Waitall (MPICH 4.0 calls it with one request at a time, for every
// generalized request of the array, before it moves the array's other
// requests, and requires the request complete on return): waits for every
// job of the array, driving the MPI library's progress in between - the
// peers this rank's call waits for may be waiting for one of this rank's
// own MPI requests first (the hang of MPICH's nonblocking3 test,
// docs/pmpi.md) - then completes them. Bounded as pollFn.
int waitFn(int count, void** states, double, MPI_Status*) {
  int64_t nap_us = 10;
  for (int i = 0; i < count;) {
    auto* job = static_cast<IJob*>(states[i]);
    {
      std::unique_lock<std::mutex> lock(g_mutex);
      if (job->done.load(std::memory_order_acquire) || overBoundLocked(job)) {
        ++i;
        continue;
      }
      g_done.wait_for(lock, std::chrono::microseconds(nap_us));
      if (job->done.load(std::memory_order_acquire)) continue;
    }
    mpiProgressPass();
    nap_us = std::min<int64_t>(2 * nap_us, 1000);
  }
  int rc = MPI_SUCCESS;
  for (int i = 0; i < count; ++i) {
    const int one = completeJob(static_cast<IJob*>(states[i]));
    if (rc == MPI_SUCCESS) rc = one;
  }
  return rc;
}

}  // namespace

// ---- the layer's side (pmpi_layer.h) --------------------------------------

void progressThreadOpen(bool wanted, int stall_timeout_s) {
  g_stall_s = stall_timeout_s;
  (void)PMPI_Comm_rank(MPI_COMM_WORLD, &g_world_rank);
  if (const char* v = std::getenv("SWITCHAGG_TEST_STALL_IJOB")) {
    int rank = -1;
    unsigned long long n = 0;
    if (std::sscanf(v, "%d:%llu", &rank, &n) == 2 && rank == g_world_rank) g_test_stall_seq = n;
  }
  // Looked up, not linked: an MPICH-ABI library without the extension (or
  // one that renames it) loads the layer all the same, without the thread.
  g_grequest_start =
      reinterpret_cast<GrequestStartFn>(dlsym(RTLD_DEFAULT, "PMPIX_Grequest_start"));
  if (g_grequest_start == nullptr)
    g_grequest_start = reinterpret_cast<GrequestStartFn>(dlsym(RTLD_DEFAULT, "MPIX_Grequest_start"));
  g_wanted = wanted && g_grequest_start != nullptr;
}

bool progressThreadEnabled() { return g_wanted; }

void reapOrphans() {
  if (!g_have_orphans.load(std::memory_order_acquire)) return;
  std::vector<IJob*> orphans;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    orphans.swap(g_orphans);
    g_have_orphans.store(false, std::memory_order_relaxed);
  }
  for (IJob* job : orphans) {
    (void)completeJob(job);  // MPICH frees the request object; free_fn ran already
    delete job;
  }
}

bool drain(CommEntry* e) {
  if (!g_wanted) return true;
  bool poisoned = false;
  {
    std::unique_lock<std::mutex> lock(g_mutex);
    int64_t abandoned_at = 0;
    while (!e->ijobs.empty()) {
      // Bounded as the request's own wait: the head abandoned past the
      // bound; the thread then fails the queue. A thread that does not let
      // go of it within another bound is stuck inside the core: the
      // communicator's core state is left to it (never freed).
      IJob* head = e->ijobs.front();
      if (overBoundLocked(head)) {
        if (abandoned_at == 0) abandoned_at = nowNs();
        if (double(nowNs() - abandoned_at) / 1e9 >= g_stall_s) {
          std::fprintf(stderr,
                       "switchagg[pmpi] error: rank %d: the progress thread did not let go of "
                       "%s #%llu within %d s; its communicator's switchagg state is left to it\n",
                       g_world_rank, callName(head), static_cast<unsigned long long>(head->seq),
                       g_stall_s);
          e->stuck = true;
          e->poisoned = true;
          break;
        }
      }
      lock.unlock();
      // The MPI library's own requests move meanwhile (the program may have
      // some a peer waits for); the thread needs nothing from this thread.
      mpiProgressPass();
      lock.lock();
      g_done.wait_for(lock, std::chrono::microseconds(200));
    }
    poisoned = e->poisoned;
  }
  reapOrphans();
  return !poisoned;
}

bool progressThreadStop(CommEntry* e) {
  std::thread* thread = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    thread = e->thread;
    if (thread == nullptr) return true;
    e->thread_stop = true;
  }
  e->work->notify_all();
  bool exited = false;
  {
    // drain emptied the queue, so the thread ends at once, unless it is
    // stuck inside a call drain gave up on.
    std::unique_lock<std::mutex> lock(g_mutex);
    auto ended = [e] { return e->thread_exited; };
    if (g_stall_s <= 0) {
      g_done.wait(lock, ended);
      exited = true;
    } else {
      exited = g_done.wait_for(lock, std::chrono::seconds(g_stall_s), ended);
    }
  }
  if (!exited) {
    std::fprintf(stderr,
                 "switchagg[pmpi] error: rank %d: a progress thread did not stop within %d s "
                 "(coll_switchagg_stall_timeout); left running with its communicator's state\n",
                 g_world_rank, g_stall_s);
    thread->detach();  // the std::thread object, the entry and the core state are leaked
    return false;
  }
  thread->join();
  delete thread;
  delete e->work;
  e->thread = nullptr;
  e->work = nullptr;
  return true;
}

namespace {

// Queues `job` (its call fields set) on its communicator and gives the
// program its generalized request; the job is the thread's from now on.
int post(IJob* job, MPI_Request* request) {
  CommEntry* e = job->entry;
  bool poisoned = false;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    poisoned = e->poisoned;
  }
  if (poisoned) {  // an earlier call was abandoned: fails as MPI would
    std::fprintf(stderr,
                 "switchagg[pmpi] error: rank %d: %s on a communicator whose earlier "
                 "nonblocking call was abandoned; MPI_ERR_OTHER\n",
                 g_world_rank, callName(job));
    discard(job);
    *request = MPI_REQUEST_NULL;
    return failed(e->comm);
  }
  const int rc =
      g_grequest_start(queryFn, freeFn, cancelFn, pollFn, waitFn, job, &job->request);
  if (rc != MPI_SUCCESS) {
    discard(job);
    return rc;
  }
  *request = job->request;
  (void)PMPI_Comm_size(e->comm, &job->size);
  bool queued = false;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    poisoned = e->poisoned;  // abandoned since the check above
    if (!poisoned) {
      if (e->thread == nullptr) {
        e->work = new std::condition_variable;
        e->thread = new std::thread(entryThreadMain, e);
      }
      job->seq = ++g_next_seq;
      queued = !e->ijobs.empty();
      if (!queued) {
        g_active.push_back(e);
        moved(e);
      }
      e->ijobs.push_back(job);
    } else {
      job->rc = MPI_ERR_OTHER;
      job->done.store(true, std::memory_order_release);
    }
  }
  if (poisoned) return completeJob(job);  // the request ends with its error
  e->work->notify_one();
  if (queued) note(job, "queued");
  return MPI_SUCCESS;
}

}  // namespace

int postIallreduce(CommEntry* e, const void* send, void* recv, size_t count, int dtype, int op,
                   MPI_Request* request) {
  auto* job = new IJob;
  job->entry = e;
  job->comm = e->comm;
  job->send = send;
  job->recv = recv;
  job->count = count;
  job->dtype = dtype;
  job->op = op;
  return post(job, request);
}

int completedRequest(MPI_Request* request) {
  auto* job = new IJob;
  job->done.store(true);
  const int rc = g_grequest_start(queryFn, freeFn, cancelFn, pollFn, waitFn, job, &job->request);
  if (rc != MPI_SUCCESS) {
    delete job;
    return rc;
  }
  *request = job->request;
  return completeJob(job);
}

}  // namespace switchagg::pmpi

// ---- MPI_Ibarrier, MPI_Iallgather, MPI_Ibcast, MPI_Ireduce_scatter_block --
// (MPICH family; MPI_Iallreduce: pmpi_collectives.cc). Each: the core's
// route as the component's (docs/offload.md "MPI_Iallreduce"), then the
// thread, or the MPI library's own (counted <op>:previous:<reason>).

namespace {

using switchagg::pmpi::CommEntry;
using switchagg::pmpi::IJob;

// The communicator's state when the thread may serve `comm`, else nullptr.
CommEntry* threadEntry(MPI_Comm comm) {
  CommEntry* e = switchagg::pmpi::entryOf(comm);
  if (e == nullptr || e->core == nullptr) return nullptr;
  switchagg::pmpi::progress();
  switchagg::pmpi::reapOrphans();
  return e;
}

// 1: queue the call; 0: the MPI library's (counted); an MPI error.
// `route` is the core's answer; the thread's redo needs the communicator's
// own transport.
int routedDecision(CommEntry* e, int routed_op, int route) {
  switch (route) {
    case SWITCHAGG_COLL_IROUTE_LOCAL:  // counted local; the library's trivial copy
    case SWITCHAGG_COLL_IROUTE_PREVIOUS: return 0;
    case SWITCHAGG_COLL_IROUTE_SWITCH: break;
    default: return switchagg::pmpi::failed(e->comm);
  }
  if (switchagg_coll_host_ready(e->core)) return 1;
  if (routed_op < 0) switchagg_coll_ibarrier_note(e->core, "previous:no host path");
  else switchagg_coll_irouted_note(e->core, routed_op, "previous:no host path");
  return 0;
}

// A routed call's fields (the images set by the caller).
IJob* routedJob(CommEntry* e, int routed_op, int root) {
  auto* job = new IJob;
  job->kind = IJob::kRouted;
  job->entry = e;
  job->comm = e->comm;
  job->routed_op = routed_op;
  job->root = root;
  return job;
}

// A routed entry point's front: the thread's communicator state, or
// nullptr (the MPI library's call, counted when the layer is on).
CommEntry* routedEntry(MPI_Comm comm, int routed_op) {
  CommEntry* e = threadEntry(comm);
  if (e != nullptr && !switchagg::pmpi::progressThreadEnabled()) {
    switchagg_coll_irouted_note(e->core, routed_op, "previous:PMPI layer");
    return nullptr;
  }
  return e;
}

}  // namespace

extern "C" {

int MPI_Ibarrier(MPI_Comm comm, MPI_Request* request) {
  CommEntry* e = threadEntry(comm);
  if (e == nullptr) return PMPI_Ibarrier(comm, request);
  if (!switchagg::pmpi::progressThreadEnabled()) {
    switchagg_coll_ibarrier_note(e->core, "previous:PMPI layer");
    return PMPI_Ibarrier(comm, request);
  }
  const int route = switchagg_coll_ibarrier_route(e->core);
  if (route == SWITCHAGG_COLL_IROUTE_LOCAL) return switchagg::pmpi::completedRequest(request);
  const int rc = routedDecision(e, -1, route);
  if (rc != 1) return rc == 0 ? PMPI_Ibarrier(comm, request) : rc;
  auto* job = new IJob;
  job->kind = IJob::kBarrier;
  job->entry = e;
  job->comm = comm;
  int flags = 0, scale = 1;
  (void)switchagg_mpi_classify(MPI_INT32_T, MPI_SUM, &job->dtype, &job->op, &flags, &scale);
  return switchagg::pmpi::post(job, request);
}

int MPI_Iallgather(const void* sbuf, int scount, MPI_Datatype sdtype, void* rbuf, int rcount,
                   MPI_Datatype rdtype, MPI_Comm comm, MPI_Request* request) {
  const int kOp = SWITCHAGG_COLL_ALLGATHER;
  CommEntry* e = routedEntry(comm, kOp);
  if (e == nullptr || rcount < 0)
    return PMPI_Iallgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, request);
  // The receive side's block: every rank's signatures match, so every rank
  // sees the same byte count and decides alike.
  const size_t block = switchagg::pmpi::typeBytes(rdtype, rcount);
  int rc = 0;
  if (block > size_t(INT_MAX))  // MPI_Pack's limit
    switchagg_coll_irouted_note(e->core, kOp, "previous:over INT_MAX bytes");
  else
    rc = routedDecision(e, kOp, switchagg_coll_irouted_route(e->core, kOp, block, 0, 0, 0));
  if (rc != 1)
    return rc == 0 ? PMPI_Iallgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, request)
                   : rc;
  IJob* job = routedJob(e, kOp, 0);
  int size = 1, rank = 0;
  (void)PMPI_Comm_size(comm, &size);
  (void)PMPI_Comm_rank(comm, &rank);
  MPI_Aint lb = 0, extent = 0;
  (void)PMPI_Type_get_extent(rdtype, &lb, &extent);
  const bool in_place = sbuf == MPI_IN_PLACE;
  job->count = block;
  job->recv = rbuf;
  int staged = MPI_SUCCESS;
  if (!switchagg::pmpi::plainBytes(rdtype, rcount)) {
    job->staged_recv.resize(size_t(size) * block + 1);
    job->recv = job->staged_recv.data();
    job->user_buf = static_cast<char*>(rbuf);
    job->user_count = rcount;
    (void)PMPI_Type_dup(rdtype, &job->user_dtype);
    job->stride = extent * rcount;
    job->blocks = size;
    job->block_bytes = block;
    if (in_place)
      staged = switchagg::pmpi::pack(static_cast<char*>(rbuf) + rank * job->stride, rcount, rdtype,
                                     job->staged_recv.data() + size_t(rank) * block, block, comm);
  }
  if (in_place) {
    job->send = nullptr;
  } else if (switchagg::pmpi::plainBytes(sdtype, scount)) {
    job->send = sbuf;
  } else {
    job->staged_send.resize(block + 1);
    staged = switchagg::pmpi::pack(sbuf, scount, sdtype, job->staged_send.data(), block, comm);
    job->send = job->staged_send.data();
  }
  if (staged != MPI_SUCCESS) {  // nothing queued: the call fails here
    switchagg_coll_irouted_note(e->core, kOp, "error");
    switchagg::pmpi::discard(job);
    return switchagg::pmpi::failed(comm);
  }
  return switchagg::pmpi::post(job, request);
}

int MPI_Ibcast(void* buf, int count, MPI_Datatype dtype, int root, MPI_Comm comm,
               MPI_Request* request) {
  const int kOp = SWITCHAGG_COLL_BCAST;
  CommEntry* e = routedEntry(comm, kOp);
  if (e == nullptr || count < 0) return PMPI_Ibcast(buf, count, dtype, root, comm, request);
  const size_t bytes = switchagg::pmpi::typeBytes(dtype, count);
  int rc = 0;
  if (bytes > size_t(INT_MAX))
    switchagg_coll_irouted_note(e->core, kOp, "previous:over INT_MAX bytes");
  else
    rc = routedDecision(e, kOp, switchagg_coll_irouted_route(e->core, kOp, bytes, 0, 0, root));
  if (rc != 1) return rc == 0 ? PMPI_Ibcast(buf, count, dtype, root, comm, request) : rc;
  IJob* job = routedJob(e, kOp, root);
  job->count = bytes;
  job->recv = buf;
  if (!switchagg::pmpi::plainBytes(dtype, count)) {
    int rank = 0;
    (void)PMPI_Comm_rank(comm, &rank);
    job->staged_recv.resize(bytes + 1);
    job->recv = job->staged_recv.data();
    job->user_buf = static_cast<char*>(buf);
    job->user_count = count;
    (void)PMPI_Type_dup(dtype, &job->user_dtype);
    job->blocks = 1;
    job->block_bytes = bytes;
    if (rank == root &&
        switchagg::pmpi::pack(buf, count, dtype, job->staged_recv.data(), bytes, comm) !=
            MPI_SUCCESS) {
      switchagg_coll_irouted_note(e->core, kOp, "error");
      switchagg::pmpi::discard(job);
      return switchagg::pmpi::failed(comm);
    }
  }
  return switchagg::pmpi::post(job, request);
}

int MPI_Ireduce_scatter_block(const void* sbuf, void* rbuf, int rcount, MPI_Datatype dtype,
                              MPI_Op op, MPI_Comm comm, MPI_Request* request) {
  const int kOp = SWITCHAGG_COLL_REDUCE_SCATTER_BLOCK;
  CommEntry* e = routedEntry(comm, kOp);
  if (e == nullptr || rcount < 0)
    return PMPI_Ireduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm, request);
  int sa_dtype = 0, sa_op = 0, flags = 0, scale = 1, rc = 0;
  // Predefined datatypes and ops only (no staging), as MPI_Iallreduce.
  if (const char* why = switchagg_mpi_classify(dtype, op, &sa_dtype, &sa_op, &flags, &scale))
    switchagg_coll_irouted_note(e->core, kOp, (std::string("previous:") + why).c_str());
  else
    rc = routedDecision(e, kOp,
                        switchagg_coll_irouted_route(e->core, kOp, size_t(rcount) * size_t(scale),
                                                     sa_dtype, sa_op, 0));
  if (rc != 1)
    return rc == 0 ? PMPI_Ireduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm, request)
                   : rc;
  IJob* job = routedJob(e, kOp, 0);
  job->send = switchagg::pmpi::sendOrNull(sbuf);
  job->recv = rbuf;
  job->count = size_t(rcount) * size_t(scale);
  job->dtype = sa_dtype;
  job->op = sa_op;
  return switchagg::pmpi::post(job, request);
}

}  // extern "C"

namespace switchagg::pmpi {

#else  // not the MPICH family: no thread, MPI_Iallreduce goes to the library

void progressThreadOpen(bool, int) {}
bool progressThreadEnabled() { return false; }
void reapOrphans() {}
bool drain(CommEntry*) { return true; }
bool progressThreadStop(CommEntry*) { return true; }
int postIallreduce(CommEntry*, const void*, void*, size_t, int, int, MPI_Request*) {
  return MPI_ERR_INTERN;
}
int completedRequest(MPI_Request*) { return MPI_ERR_INTERN; }

#endif  // SWITCHAGG_PMPI_THREAD

}  // namespace switchagg::pmpi
