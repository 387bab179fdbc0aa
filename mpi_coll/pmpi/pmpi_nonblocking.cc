// MPI_Iallreduce, MPI_Ibarrier, MPI_Iallgather, MPI_Ibcast and
// MPI_Ireduce_scatter_block through the switch path under the MPICH family
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
//   done    -> an atomic flag the user's thread reads (a staged result is
//              unpacked into the caller's buffer there).
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

#include <algorithm>
#include <atomic>
#include <climits>
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

namespace {

// Queues `job` (its call fields set) on its communicator and gives the
// program its generalized request; the job is the thread's from now on.
int post(IJob* job, MPI_Request* request) {
  const int rc =
      g_grequest_start(queryFn, freeFn, cancelFn, pollFn, waitFn, job, &job->request);
  if (rc != MPI_SUCCESS) {
    discard(job);
    return rc;
  }
  *request = job->request;
  CommEntry* e = job->entry;
  (void)PMPI_Comm_size(e->comm, &job->size);
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
