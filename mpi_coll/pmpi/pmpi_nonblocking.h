// The PMPI layer's nonblocking calls under the MPICH family (docs/pmpi.md
// "MPI_Iallreduce"), shared by its three files:
//
//   pmpi_nonblocking.cc          the per-communicator progress threads,
//                                which run the core's nonblocking engine
//                                (nonblocking_engine.h) as its host
//   pmpi_requests.cc             the user's generalized requests (poll,
//                                wait, free) and the bound on their waits
//   pmpi_nonblocking_entries.cc  MPI_Ibarrier, MPI_Iallgather, MPI_Ibcast,
//                                MPI_Ireduce_scatter_block
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <vector>

#include "iallreduce.h"
#include "nonblocking_engine.h"
#include "pmpi_layer.h"

// The thread needs MPICH's extended generalized requests: built for the
// MPICH family only (on Open MPI the component serves MPI_Iallreduce, and
// the layer over Open MPI hands it to the library).
#if defined(MPICH_VERSION) && !defined(OPEN_MPI)
#define SWITCHAGG_PMPI_THREAD 1
#else
#define SWITCHAGG_PMPI_THREAD 0
#endif

namespace switchagg::pmpi {

// One nonblocking call on the thread: the engine's call (what the core
// streams: byte images for the routed kinds), and where a staged result
// goes once served.
struct IJob {
  switchagg_nb_call_t call{};
  CommEntry* entry = nullptr;
  MPI_Comm comm = MPI_COMM_NULL;  // the user's (pack / unpack)
  int size = 1;                   // the communicator's
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
  uint64_t seq = 0;               // this process's posting order, from 1
  int rc = MPI_SUCCESS;           // the request's error code (under g_mutex once posted)
  std::atomic<bool> done{false};  // set once by the thread, last
  bool completed = false;         // MPI_Grequest_complete called (user thread)
  bool freed = false;  // MPI_Request_free while running (under g_mutex)
  // Past the bound (under g_mutex): the user's wait gave up on it with an
  // error; the thread drops it and fails its communicator's later calls.
  bool abandoned = false;
  bool warned = false;  // the half-bound warning printed (user thread)

  // A call of `kind` (switchagg_coll_kind) on the entry's communicator.
  IJob(CommEntry* e, int kind);
};

// The job a queued engine call belongs to.
inline IJob* jobOf(switchagg_nb_call_t* call) { return static_cast<IJob*>(call->owner); }

#if SWITCHAGG_PMPI_THREAD

using GrequestStartFn = int (*)(MPI_Grequest_query_function*, MPI_Grequest_free_function*,
                                MPI_Grequest_cancel_function*, MPIX_Grequest_poll_function*,
                                MPIX_Grequest_wait_function*, void*, MPI_Request*);
extern GrequestStartFn g_grequest_start;

// Allocated once and never destroyed: a process that ends without
// MPI_Finalize (an MPI_Abort, an error exit), or one whose thread was left
// running past its bound, must not destroy a mutex or a condition variable
// a thread still uses.
extern std::mutex& g_mutex;  // everything below, and the entries' queues
extern std::condition_variable& g_done;  // a job finished, a thread ended
extern std::vector<CommEntry*>& g_active;  // entries with queued jobs
extern int g_stall_s;     // coll_switchagg_stall_timeout (0: unbounded)
extern int g_world_rank;

int64_t nowNs();
// A job that was never queued (posting failed): its datatype duplicate too.
void discard(IJob* job);
// On the program's thread, once the thread ended the call: a staged
// result into the caller's buffer, then MPI_Grequest_complete.
int completeJob(IJob* job);
// "MPI_Iallreduce", ... (messages).
const char* callName(const IJob* job);
// The bound on a wait for `job` (g_mutex held, the user's thread): true
// once the call was abandoned (pmpi_requests.cc).
bool overBoundLocked(IJob* job);
// The generalized request's callbacks (pmpi_requests.cc).
int queryFn(void* state, MPI_Status* status);
int freeFn(void* state);
int cancelFn(void* state, int complete);
int pollFn(void* state, MPI_Status* status);
int waitFn(int count, void** states, double timeout, MPI_Status* status);
// Queues `job` (its call fields set) on its communicator and gives the
// program its generalized request; the job is the thread's from now on.
int post(IJob* job, MPI_Request* request);

#endif  // SWITCHAGG_PMPI_THREAD

}  // namespace switchagg::pmpi
