// The user's side of the PMPI layer's nonblocking calls (MPICH family,
// docs/pmpi.md "MPI_Iallreduce"): the extended generalized request each
// call returns (MPIX_Grequest_start), whose poll function (MPI_Test,
// MPI_Wait, MPI_*any, MPI_*some, MPI_Testall) and wait function
// (MPI_Waitall) read the flag the progress thread sets and call
// MPI_Grequest_complete on the user's thread; and the bound on every such
// wait: a communicator whose queue has not moved for
// coll_switchagg_stall_timeout abandons its head call with an error naming
// it, and the communicator fails from then on.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include "pmpi_nonblocking.h"

namespace switchagg::pmpi {

#if SWITCHAGG_PMPI_THREAD

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
  switch (job->call.kind) {
    case SWITCHAGG_COLL_BARRIER: return "MPI_Ibarrier";
    case SWITCHAGG_COLL_ALLREDUCE: return "MPI_Iallreduce";
    case SWITCHAGG_COLL_ALLGATHER: return "MPI_Iallgather";
    case SWITCHAGG_COLL_BCAST: return "MPI_Ibcast";
    case SWITCHAGG_COLL_REDUCE_SCATTER_BLOCK: return "MPI_Ireduce_scatter_block";
    default: return "a nonblocking collective";
  }
}

namespace {

const char* stageName(int stage) {
  switch (stage) {
    case SWITCHAGG_NB_QUEUED: return "not started by the progress thread";
    case SWITCHAGG_NB_STREAM:
      return "streaming through the switch path (waiting for the agent's results)";
    case SWITCHAGG_NB_SETTLE:
    case SWITCHAGG_NB_AGREE:
      return "settling its outcome (the agent's answer or the ranks' agreement)";
    case SWITCHAGG_NB_REDO: return "being redone on the host (waiting for the peers)";
  }
  return "?";
}

}  // namespace

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
  // A call queued behind others names the one it waits for (the queue's
  // head) and where that stands.
  const IJob* head = jobOf(switchagg_nb_queue_head(&job->entry->iqueue));
  char behind[128] = "";
  if (head != job)
    std::snprintf(behind, sizeof behind, "queued behind %s #%llu on its communicator, ",
                  callName(head), static_cast<unsigned long long>(head->seq));
  char what[320];
  std::snprintf(what, sizeof what, "%s #%llu (%zu %s), %s%s", callName(job),
                static_cast<unsigned long long>(job->seq), job->call.count,
                switchagg_coll_kind_is_routed(job->call.kind) ? "bytes" : "elements", behind,
                stageName(switchagg_nb_call_stage(&head->call)));
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
  for (CommEntry* e : g_active) {
    const IJob* first = jobOf(switchagg_nb_queue_head(&e->iqueue));
    char one[96];
    std::snprintf(one, sizeof one, "%s%s #%llu stage %d, %zu queued", queues.empty() ? "" : "; ",
                  callName(first), static_cast<unsigned long long>(first->seq),
                  switchagg_nb_call_stage(&first->call), e->iqueue.length - 1);
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


#endif  // SWITCHAGG_PMPI_THREAD

}  // namespace switchagg::pmpi
