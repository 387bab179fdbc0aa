// MPI_Iallreduce through the switch path under the MPICH family
// (docs/pmpi.md "MPI_Iallreduce"): the layer's own progress thread.
//
// MPICH gives a library no progress callback (Open MPI's component steps
// its queue from one), so a posted call moves on a thread of the layer's
// own that never calls MPI. Per communicator a queue, served in posting
// order, one call at a time (as the component's):
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
//   done    -> an atomic flag the user's thread reads.
//
// The user's request is an MPICH extended generalized request
// (MPIX_Grequest_start): its poll function (MPI_Test, MPI_Wait, ...) and
// wait function (MPI_Waitall) read the flag and call MPI_Grequest_complete
// on the user's thread. Nothing the thread does waits for this rank's
// user thread; a blocking switchagg call, MPI_Comm_free and MPI_Finalize
// first wait for the communicator's queue to empty (drain), which the
// thread ends on its own, so no order of calls the program makes can
// leave a call unprogressed.
#include <dlfcn.h>
#include <time.h>

#include <algorithm>
#include <atomic>
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

// One MPI_Iallreduce on the thread.
struct IJob {
  CommEntry* entry = nullptr;
  const void* send = nullptr;  // nullptr: in place
  void* recv = nullptr;
  size_t count = 0;
  int dtype = 0, op = 0;
  MPI_Request request = MPI_REQUEST_NULL;
  enum Stage { kQueued, kStream, kSettle, kRedo } stage = kQueued;
  int outcome = 0;
  int rc = MPI_SUCCESS;           // the request's error code
  std::atomic<bool> done{false};  // set once by the thread, last
  bool completed = false;         // MPI_Grequest_complete called (user thread)
  bool freed = false;  // MPI_Request_free while running (under g_mutex)
};

#if SWITCHAGG_PMPI_THREAD
namespace {

using GrequestStartFn = int (*)(MPI_Grequest_query_function*, MPI_Grequest_free_function*,
                                MPI_Grequest_cancel_function*, MPIX_Grequest_poll_function*,
                                MPIX_Grequest_wait_function*, void*, MPI_Request*);
GrequestStartFn g_grequest_start = nullptr;

std::mutex g_mutex;                     // everything below
std::condition_variable g_work;         // a job was queued, or stop
std::condition_variable g_done;         // a job finished
std::vector<CommEntry*> g_active;       // entries with queued jobs
// Calls the program freed while they ran (MPI_Request_free): ended by the
// thread, completed and deleted by the next user-thread call (reapOrphans).
std::vector<IJob*> g_orphans;
std::atomic<bool> g_have_orphans{false};
// Never destroyed by exit: a process that ends without MPI_Finalize (an
// MPI_Abort, an error exit) must not die in a joinable std::thread's
// destructor. Joined and freed in progressThreadClose.
std::thread* g_thread = nullptr;
bool g_started = false, g_stop = false;
bool g_wanted = false;                  // progressThreadEnabled()

int completeJob(IJob* job) {
  if (job->completed) return MPI_SUCCESS;
  job->completed = true;
  return PMPI_Grequest_complete(job->request);
}

// ---- the thread -----------------------------------------------------------

void finish(IJob* job, int rc) {
  job->rc = rc;
  CommEntry* e = job->entry;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    e->ijobs.pop_front();
    if (e->ijobs.empty()) g_active.erase(std::find(g_active.begin(), g_active.end(), e));
    if (job->freed) {
      g_orphans.push_back(job);
      g_have_orphans.store(true, std::memory_order_release);
    }
    job->done.store(true, std::memory_order_release);
  }
  g_done.notify_all();
}

// The redo of `job` (end() asked for it, or the path declined).
void redo(IJob* job) {
  const int rc = switchagg_coll_iallreduce_redo_host(job->entry->core, job->send, job->recv,
                                                     job->count, job->dtype, job->op);
  finish(job, rc == 0 ? MPI_SUCCESS : MPI_ERR_OTHER);
}

void end(IJob* job, int agreed, int first_rank) {
  if (switchagg_coll_istream_end(job->entry->core, agreed, first_rank) == 0)
    finish(job, MPI_SUCCESS);
  else
    redo(job);
}

// One step of the communicator's head job; true when it moved.
bool advance(IJob* job) {
  switchagg_coll_comm_t* core = job->entry->core;
  int rc = 0;
  switch (job->stage) {
    case IJob::kQueued:
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
            switchagg_coll_iallreduce_note(core, "error");
            finish(job, MPI_ERR_OTHER);
          } else {
            end(job, agreed, first_rank);
          }
          return true;
        }
        case SWITCHAGG_COLL_ISETTLE_NOT_NOW:
          return false;
        default:  // the core logged why
          switchagg_coll_iallreduce_note(core, "error");
          finish(job, MPI_ERR_OTHER);
          return true;
      }
    }
    case IJob::kRedo:
      redo(job);
      return true;
  }
  switch (rc) {
    case SWITCHAGG_COLL_ISTREAM_OUTCOME:
      job->stage = IJob::kSettle;
      return true;
    case SWITCHAGG_COLL_ISTREAM_DECLINED:
      job->stage = IJob::kRedo;
      return true;
    case SWITCHAGG_COLL_ISTREAM_RUNNING: {
      const bool started = job->stage == IJob::kQueued;
      job->stage = IJob::kStream;
      return started;
    }
    default:  // NOT_NOW: another thread holds the core's gate
      return false;
  }
}

// Runs while the layer is open. Idle: asleep on g_work. Busy: steps every
// communicator's head job; when none moved it sleeps from 20 us doubling to
// 1 ms (a new job wakes it at once), so a thread waiting for the agent does
// not take a core from the ranks.
void threadMain() {
  switchagg_coll_thread_without_mpi();
  std::unique_lock<std::mutex> lock(g_mutex);
  int64_t idle_us = 0;
  for (;;) {
    if (g_active.empty()) {
      if (g_stop) return;
      idle_us = 0;
      g_work.wait(lock);
      continue;
    }
    std::vector<IJob*> heads;
    for (CommEntry* e : g_active) heads.push_back(e->ijobs.front());
    lock.unlock();
    bool moved = false;
    for (IJob* job : heads) moved = advance(job) || moved;
    lock.lock();
    if (moved) {
      idle_us = 0;
      continue;
    }
    idle_us = idle_us == 0 ? 20 : std::min<int64_t>(2 * idle_us, 1000);
    g_work.wait_for(lock, std::chrono::microseconds(idle_us));
  }
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

// MPI_Test, MPI_Wait (which calls it in a loop), MPI_Testall, ...
int pollFn(void* state, MPI_Status*) {
  auto* job = static_cast<IJob*>(state);
  if (!job->done.load(std::memory_order_acquire)) return MPI_SUCCESS;
  return completeJob(job);
}

// MPI_Waitall: waits for every job of the array (the thread ends each on its
// own), then completes them.
int waitFn(int count, void** states, double, MPI_Status*) {
  {
    std::unique_lock<std::mutex> lock(g_mutex);
    for (int i = 0; i < count; ++i) {
      auto* job = static_cast<IJob*>(states[i]);
      g_done.wait(lock, [job] { return job->done.load(std::memory_order_acquire); });
    }
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

void progressThreadOpen(bool wanted) {
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

void drain(CommEntry* e) {
  if (!g_wanted) return;
  {
    std::unique_lock<std::mutex> lock(g_mutex);
    while (!e->ijobs.empty()) {
      lock.unlock();
      // The MPI library's own requests move meanwhile (the program may have
      // some a peer waits for); the thread needs nothing from this thread.
      mpiProgressPass();
      lock.lock();
      g_done.wait_for(lock, std::chrono::microseconds(200));
    }
  }
  reapOrphans();
}

void progressThreadClose() {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (!g_started) return;
    g_stop = true;
  }
  g_work.notify_all();
  g_thread->join();
  delete g_thread;
  g_thread = nullptr;
  std::lock_guard<std::mutex> lock(g_mutex);
  g_started = false;
  g_stop = false;
}

int postIallreduce(CommEntry* e, const void* send, void* recv, size_t count, int dtype, int op,
                   MPI_Request* request) {
  auto* job = new IJob;
  job->entry = e;
  job->send = send;
  job->recv = recv;
  job->count = count;
  job->dtype = dtype;
  job->op = op;
  const int rc =
      g_grequest_start(queryFn, freeFn, cancelFn, pollFn, waitFn, job, &job->request);
  if (rc != MPI_SUCCESS) {
    delete job;
    return rc;
  }
  *request = job->request;
  bool queued = false;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (!g_started) {
      g_thread = new std::thread(threadMain);
      g_started = true;
    }
    queued = !e->ijobs.empty();
    if (!queued) g_active.push_back(e);
    e->ijobs.push_back(job);
  }
  g_work.notify_one();
  if (queued) switchagg_coll_iallreduce_note(e->core, "queued");
  return MPI_SUCCESS;
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

#else  // not the MPICH family: no thread, MPI_Iallreduce goes to the library

void progressThreadOpen(bool) {}
bool progressThreadEnabled() { return false; }
void reapOrphans() {}
void drain(CommEntry*) {}
void progressThreadClose() {}
int postIallreduce(CommEntry*, const void*, void*, size_t, int, int, MPI_Request*) {
  return MPI_ERR_INTERN;
}
int completedRequest(MPI_Request*) { return MPI_ERR_INTERN; }

#endif  // SWITCHAGG_PMPI_THREAD

}  // namespace switchagg::pmpi
