// MPI_Iallreduce, MPI_Ibarrier, MPI_Iallgather, MPI_Ibcast and
// MPI_Ireduce_scatter_block through the switch path under the MPICH family
// (docs/pmpi.md "MPI_Iallreduce"): the layer's own progress threads.
//
// MPICH gives a library no progress callback (Open MPI's component steps
// its queue from one), so a posted call moves on a thread of the layer's
// own that never calls MPI, one per communicator. Per communicator a
// queue, served in posting order, one call at a time (as the component's):
// the core's nonblocking engine (nonblocking_engine.h) runs each call
// through QUEUED -> STREAM -> SETTLE -> (agreement) -> (REDO) -> done, with
// this thread as its host: the outcome agreement
// (switchagg_coll_istream_agree) and the redo (the host algorithm the cost
// model rates fastest, from the intact input) run over the communicator's
// own transport and end before they return; done is an atomic flag the
// user's thread reads (a staged result is unpacked into the caller's
// buffer there).
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
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "pmpi_nonblocking.h"
#include "switchagg/coll/coll_params.h"

namespace switchagg::pmpi {

IJob::IJob(CommEntry* e, int kind)
    : entry(e), comm(e != nullptr ? e->comm : MPI_COMM_NULL) {
  switchagg_nb_call_init(&call, e != nullptr ? e->core : nullptr, this, kind);
}

#if SWITCHAGG_PMPI_THREAD

GrequestStartFn g_grequest_start = nullptr;
std::mutex& g_mutex = *new std::mutex;
std::condition_variable& g_done = *new std::condition_variable;
std::vector<CommEntry*>& g_active = *new std::vector<CommEntry*>;
int g_stall_s = switchagg_coll_default_stall_timeout();  // until progressThreadOpen
int g_world_rank = 0;

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void discard(IJob* job) {
  if (job->user_dtype != MPI_DATATYPE_NULL) (void)PMPI_Type_free(&job->user_dtype);
  delete job;
}

namespace {

// Calls the program freed while they ran (MPI_Request_free): ended by the
// thread, completed and deleted by the next user-thread call (reapOrphans).
std::vector<IJob*>& g_orphans = *new std::vector<IJob*>;
std::atomic<bool> g_have_orphans{false};
bool g_wanted = false;                  // progressThreadEnabled()
uint64_t g_next_seq = 0;                // under g_mutex
// SWITCHAGG_TEST_STALL_IJOB=RANK:N (tests only): on world rank RANK the
// thread never moves the N-th call posted (docs/pmpi.md, the fault test of
// the bound).
uint64_t g_test_stall_seq = 0;

// The communicator's queue moved: its waits' bound counts from now.
void moved(CommEntry* e) { e->moved_ns.store(nowNs(), std::memory_order_relaxed); }

// ---- the thread -----------------------------------------------------------

// Ends the communicator's head call `job` (g_mutex held).
void finishLocked(IJob* job, int rc) {
  CommEntry* e = job->entry;
  if (!job->abandoned) job->rc = rc;
  switchagg_nb_queue_pop(&e->iqueue);
  switchagg_coll_mark_busy(-1);  // marked in post: the answering thread may drive again
  moved(e);
  if (switchagg_nb_queue_head(&e->iqueue) == nullptr)
    g_active.erase(std::find(g_active.begin(), g_active.end(), e));
  // An abandoned call the core had started streaming: the core may still
  // write into it (a result arriving for its stream) until the
  // communicator is destroyed, so it is never deleted (a leak on an error
  // path, not a use after free; its request was completed already).
  if (job->abandoned && switchagg_nb_call_stage(&job->call) != SWITCHAGG_NB_QUEUED) {
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

// The engine's host (nonblocking_engine.h): on this thread, which never
// calls MPI, the agreement and the redo run over the communicator's own
// transport and end before they return.
int agreeOnTransport(switchagg_nb_call_t* call, int outcome, int* agreed, int* first_rank) {
  return switchagg_coll_istream_agree(call->core, outcome, agreed, first_rank) == 0
             ? SWITCHAGG_NB_DONE
             : SWITCHAGG_NB_ERROR;
}

int neverPending(switchagg_nb_call_t*, int*, int*) { return SWITCHAGG_NB_ERROR; }

// A served or redone MPI_Ibarrier counted every rank (as the component's;
// the barrier's redo checks its own count); the core counted a failed redo.
void completeCall(switchagg_nb_call_t* call, int end) {
  IJob* job = jobOf(call);
  int rc = MPI_SUCCESS;
  if (end == SWITCHAGG_NB_FAILED || end == SWITCHAGG_NB_REDO_FAILED) {
    rc = MPI_ERR_OTHER;
  } else if (end == SWITCHAGG_NB_SERVED && call->kind == SWITCHAGG_COLL_BARRIER &&
             call->entered != job->size) {
    std::fprintf(stderr,
                 "switchagg[pmpi] error: MPI_Ibarrier through the switch counted %d of %d "
                 "ranks; the request completes with MPI_ERR_OTHER\n",
                 int(call->entered), job->size);
    rc = MPI_ERR_OTHER;
  }
  finish(job, rc);
}

// A stage reached: the queue moved (the bound counts from here).
void stageMoved(switchagg_nb_call_t* call) { moved(jobOf(call)->entry); }

const switchagg_nb_host_t kThreadHost = {agreeOnTransport, switchagg_nb_redo_host, neverPending,
                                         completeCall, stageMoved};

// A communicator whose head call was abandoned (g_mutex held): that call
// and every one queued behind it end with MPI_ERR_OTHER (the core's state
// for the communicator is no longer known to match the peers').
void failQueueLocked(CommEntry* e) {
  const size_t later = e->iqueue.length - 1;
  e->poisoned = true;
  while (switchagg_nb_call_t* head = switchagg_nb_queue_head(&e->iqueue))
    finishLocked(jobOf(head), MPI_ERR_OTHER);
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
    switchagg_nb_call_t* call = switchagg_nb_queue_head(&e->iqueue);
    if (call == nullptr) {
      if (e->thread_stop) return;
      idle_us = 0;
      e->work->wait(lock);
      continue;
    }
    IJob* head = jobOf(call);
    if (head->abandoned) {
      failQueueLocked(e);
      g_done.notify_all();
      continue;
    }
    const bool stalled = head->seq == g_test_stall_seq;
    lock.unlock();
    // (The job may be gone once advance returns: finished, freed, reaped.)
    const bool moved = !stalled && switchagg_nb_step(call, &kThreadHost) != 0;
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
    while (switchagg_nb_call_t* call = switchagg_nb_queue_head(&e->iqueue)) {
      // Bounded as the request's own wait: the head abandoned past the
      // bound; the thread then fails the queue. A thread that does not let
      // go of it within another bound is stuck inside the core: the
      // communicator's core state is left to it (never freed).
      IJob* head = jobOf(call);
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
      // In flight from here to finishLocked: the answering thread stays out
      // of the core meanwhile (pmpi_answer.cc).
      switchagg_coll_mark_busy(1);
      queued = switchagg_nb_queue_push(&e->iqueue, &job->call) == 0;
      if (!queued) {
        g_active.push_back(e);
        moved(e);
      }
    } else {
      job->rc = MPI_ERR_OTHER;
      job->done.store(true, std::memory_order_release);
    }
  }
  if (poisoned) return completeJob(job);  // the request ends with its error
  e->work->notify_one();
  if (queued) switchagg_nb_note(&job->call, "queued");
  return MPI_SUCCESS;
}

int postIallreduce(CommEntry* e, const void* send, void* recv, size_t count, int dtype, int op,
                   MPI_Request* request) {
  auto* job = new IJob(e, SWITCHAGG_COLL_ALLREDUCE);
  job->call.send = send;
  job->call.recv = recv;
  job->call.count = count;
  job->call.dtype = dtype;
  job->call.op = op;
  return post(job, request);
}

int completedRequest(MPI_Request* request) {
  auto* job = new IJob(nullptr, SWITCHAGG_COLL_ALLREDUCE);
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
