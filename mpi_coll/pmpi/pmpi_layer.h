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
#pragma once

#include <mpi.h>

#include "coll_core.h"

namespace switchagg::pmpi {

// One communicator's switchagg state, cached as an attribute on it.
struct CommEntry {
  MPI_Comm comm = MPI_COMM_NULL;  // the user's communicator
  // A private duplicate: the core's allgathers (address exchange, the
  // failure and tuning agreements) run on it, never among the user's calls.
  MPI_Comm priv = MPI_COMM_NULL;
  switchagg_coll_comm_t* core = nullptr;  // nullptr: every call goes to PMPI_*
  // switchagg served a call on this communicator since the last call handed
  // to the MPI library here completed. A member that left that call may
  // still owe a peer its transport's progress (the acknowledgement of a
  // rendezvous send the peer waits for), and MPICH's own calls do not drive
  // switchagg's transport: the next call handed to the MPI library runs
  // nonblocking, progressing the core while it waits. Alike on every rank
  // (every rank serves or declines each call alike).
  bool owes_progress = false;
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

// Drives the core's transport (UCX workers, agent clients) once, throttled
// by the core: every served call starts with it, as Open MPI's progress
// engine would call the component's callback.
inline void progress() {
  (void)switchagg_coll_progress();
}

// True in a job with a switch path (SWITCHAGG_AGENT or SWITCHAGG_LEASE
// set): there a peer's recovery of a failed switch call may need this
// rank's transport while this rank waits in the MPI library, so the calls
// handed to PMPI_* run as their nonblocking form, waited for with
// waitProgressing. Elsewhere they do so only on a communicator that owes
// progress (CommEntry::owes_progress), else run as the blocking call.
bool switchJob();
// PMPI_Test until `request` completes, progressing the core in between.
int waitProgressing(MPI_Request* request);

}  // namespace switchagg::pmpi
