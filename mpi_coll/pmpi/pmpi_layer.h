// libswitchagg_pmpi.so: switchagg for any MPI library through the MPI
// profiling interface (docs/pmpi.md). The library defines MPI_Allreduce,
// MPI_Barrier, ... and reaches the MPI library's own implementation through
// PMPI_*: that is the "previous module" of the Open MPI component. It drives
// the same core (core/runtime/coll_core.h) as the component does.
//
//   pmpi_runtime.cc      MPI_Init / MPI_Init_thread / MPI_Finalize, the
//                        parameters (environment, PmpiParams), the per-
//                        communicator state (attribute caching), progress
//   pmpi_collectives.cc  the served calls and the diagnostics exports
//   pmpi_nonblocking.cc  MPI_Iallreduce through the switch on the MPICH
//                        family (the layer's progress thread; with
//                        pmpi_requests.cc, pmpi_nonblocking_entries.cc and
//                        pmpi_nonblocking.h)
#pragma once

#include <mpi.h>

#include <atomic>
#include <condition_variable>
#include <thread>

#include "coll_core.h"
#include "nonblocking_engine.h"

namespace switchagg::pmpi {

// One communicator's switchagg state, cached as an attribute on it.
struct CommEntry {
  MPI_Comm comm = MPI_COMM_NULL;  // the user's communicator
  // A private duplicate: the core's allgathers (address exchange, the
  // failure and tuning agreements) run on it, never among the user's calls.
  MPI_Comm priv = MPI_COMM_NULL;
  switchagg_coll_comm_t* core = nullptr;  // nullptr: every call goes to PMPI_*
  // Every allreduce of more than zero elements goes to PMPI_Allreduce
  // (SWITCHAGG_ALLREDUCE_ALGORITHM=previous, more than one rank): decided
  // once here, so such a call is only classified and counted.
  bool allreduce_previous = false;
  // The last datatype and op served on this communicator, as
  // switchagg_mpi_classify mapped them: only predefined handles are
  // served, and those never change meaning, so a loop's calls skip the
  // tables (one thread at a time: not used at MPI_THREAD_MULTIPLE).
  struct Classified {
    MPI_Datatype dtype = MPI_DATATYPE_NULL;
    MPI_Op op = MPI_OP_NULL;
    int sa_dtype = 0, sa_op = 0, flags = 0, scale = 1;
  } classified;
  // Nonblocking calls on the progress thread, in posting order (the core's
  // engine queue; the thread's mutex guards it, the thread pops a call once
  // it ended).
  switchagg_nb_queue_t iqueue{};
  // When the queue last moved (a call posted to an empty queue, a stage
  // reached, a call ended): the bound on the user thread's waits counts
  // from it (steady clock, ns).
  std::atomic<int64_t> moved_ns{0};
  // A call was abandoned past the bound: every later call on the
  // communicator fails (under the thread's mutex).
  bool poisoned = false;
  // The progress thread did not let go of the abandoned call in time:
  // the core state stays allocated (the thread may still be inside it).
  bool stuck = false;
  // Its progress thread (pmpi_nonblocking.cc), from the first nonblocking
  // call it serves until the communicator is freed, and what wakes it.
  std::thread* thread = nullptr;
  std::condition_variable* work = nullptr;
  bool thread_stop = false, thread_exited = false;  // under the thread's mutex
};

// True once the layer is open and usable (MPI initialised, parameters
// accepted, SWITCHAGG_ENABLE not false). Opens it on first use when the
// program initialised MPI in a way the library did not see (Fortran's
// mpi_init_ goes to PMPI_Init in some MPI libraries).
bool active();

// The communicator's state, created (collectively: every rank of `comm`
// reaches this in the same call) on the first served call. nullptr when
// switchagg does not serve `comm` (inter-communicators, the layer off).
CommEntry* entryOf(MPI_Comm comm);
// The state if it exists already (diagnostics: never creates).
CommEntry* existingEntryOf(MPI_Comm comm);
// Below MPI_THREAD_MULTIPLE: one thread at a time in the layer, so its
// per-communicator caches need no lock.
bool oneThreadAtATime();

// Drives the core's transport (UCX workers, agent clients) once, throttled
// by the core: every served call starts with it, as Open MPI's progress
// engine would call the component's callback.
inline void progress() {
  (void)switchagg_coll_progress();
}

// True when a collective handed to the MPI library (a call switchagg
// declines, the layer's own setup of a communicator) must wait progressing
// the core instead of blocking inside the MPI library, whose waits never
// drive switchagg's transport: in a job with a switch path (SWITCHAGG_AGENT
// or SWITCHAGG_LEASE set: a peer recovering a failed switch call asks this
// rank) and wherever host algorithms may run (SWITCHAGG_ALLREDUCE_ALGORITHM
// not `previous`: a member that left a host algorithm, on any
// communicator, may still owe a peer the acknowledgement of a rendezvous
// send). Read from the environment, so alike on every rank: a blocking
// collective does not match a nonblocking one.
bool progressingWaits();
// PMPI_Test until `request` completes, progressing the core in between.
int waitProgressing(MPI_Request* request);
// One pass of the MPI library's own progress engine (a test of a receive
// that never matches); nothing before the layer opened.
void mpiProgressPass();

// Shared by the served calls (pmpi_collectives.cc):
//   failed      the communicator's error handler with MPI_ERR_OTHER (a
//               FAILED answer: never a silently wrong result)
//   sendOrNull  the core's send argument (nullptr: MPI_IN_PLACE)
//   classify    switchagg_mpi_classify through the communicator's last
//               answer: nullptr when switchagg serves the pair, else why not
//   plainBytes  `count` of dt are one run of count * size bytes
//   typeBytes   count * size, 0 for nothing
//   pack / unpack  PMPI_Pack / PMPI_Unpack into / out of a staged image
int failed(MPI_Comm comm);
const void* sendOrNull(const void* sbuf);
const char* classify(CommEntry* e, MPI_Datatype dtype, MPI_Op op, int* sa_dtype, int* sa_op,
                     int* flags, int* scale);
bool plainBytes(MPI_Datatype dt, int count);
size_t typeBytes(MPI_Datatype dt, int count);
int pack(const void* buf, int count, MPI_Datatype dt, void* staged, size_t bytes, MPI_Comm comm);
int unpack(const void* staged, size_t bytes, void* buf, int count, MPI_Datatype dt, MPI_Comm comm);

// MPI_Iallreduce through the switch path under the MPICH family, on the
// layer's own progress thread (pmpi_nonblocking.cc, docs/pmpi.md
// "MPI_Iallreduce"):
//   progressThreadOpen   at open (before any communicator): whether the
//                        thread may run (SWITCHAGG_PROGRESS_THREAD=auto, a
//                        switch path in the job, an MPICH-family library
//                        with MPIX_Grequest_start)
//   progressThreadEnabled  that answer (false: MPI_Iallreduce goes to the
//                        MPI library, as on Open MPI)
//   postIallreduce       queues a call the core routed to the switch; the
//                        user gets a generalized request
//   completedRequest     a generalized request complete at once (a call
//                        the core finished locally)
//   drain                waits until the communicator's queue is empty
//                        (blocking served calls, MPI_Comm_free, finalize),
//                        driving the MPI library meanwhile, then
//                        reapOrphans; bounded by coll_switchagg_stall_timeout
//                        (false: a call was abandoned, the communicator
//                        failed and the error handler was called)
//   reapOrphans          completes the calls MPI_Request_free let go of
//                        once the thread ended them (every MPI_Iallreduce)
//   progressThreadStop   stops the communicator's own progress thread (after
//                        drain, when it is freed): false when the thread did
//                        not end within the bound (left running: the
//                        communicator's state must not be freed)
void progressThreadOpen(bool wanted, int stall_timeout_s);
bool progressThreadEnabled();
// The answering thread (pmpi_answer.cc): in a job with a switch path, drives
// the core's transport from open to close, so this rank answers a peer's
// recovery question while it waits in a call the layer does not serve.
// Needs the core's gate on.
void answeringThreadStart();
void answeringThreadStop();
int postIallreduce(CommEntry* e, const void* send, void* recv, size_t count, int dtype, int op,
                   MPI_Request* request);
int completedRequest(MPI_Request* request);
bool drain(CommEntry* e);
void reapOrphans();
bool progressThreadStop(CommEntry* e);

// A collective handed to the MPI library: its nonblocking form waited for
// with waitProgressing (progressingWaits), else the blocking call.
template <typename Blocking, typename Nonblocking>
int handToMpi(Blocking blocking, Nonblocking nonblocking) {
  if (!progressingWaits()) return blocking();
  MPI_Request request = MPI_REQUEST_NULL;
  const int rc = nonblocking(&request);
  return rc != MPI_SUCCESS ? rc : waitProgressing(&request);
}

}  // namespace switchagg::pmpi
