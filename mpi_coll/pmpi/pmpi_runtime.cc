// The PMPI layer's process and communicator lifecycle (pmpi_layer.h).
//
// Open: in MPI_Init / MPI_Init_thread after the MPI library's own, or on
// the first served call when MPI was initialised without us seeing it.
// Close: in MPI_Finalize before the MPI library's own: every communicator's
// state is deleted first (MPI_Comm_delete_attr runs the delete callback),
// while PMPI_* still works, then the core closes.
//
// Progress. Open MPI calls the component's progress callback from its
// progress engine, i.e. from inside every MPI call that waits. A PMPI
// library has no such hook, so the core's transport is driven where the
// library runs: at the start of every served call (pmpi::progress), inside
// the core's own waits (its allgathers run here as PMPI_Iallgather +
// PMPI_Test + progress loops, so a peer's rendezvous or recovery question
// is answered while this rank waits for it) and in MPI_Finalize; in a job
// with a switch path also on the answering thread (pmpi_answer.cc), so a
// rank blocked in a call the library does not serve (MPI_Recv, MPI_Wait on
// a point-to-point request, ...) still answers its peers' recovery
// questions: docs/pmpi.md "Progress".
#include <dlfcn.h>
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "pmpi_layer.h"
#include "switchagg/agent/job_environment.h"
#include "switchagg/coll/pmpi_params.h"

namespace switchagg::pmpi {
namespace {

enum class State { kUnopened, kActive, kOff, kClosed };

std::atomic<State> g_state{State::kUnopened};
std::mutex g_mutex;                 // g_entries, g_next_cid, opening
std::vector<CommEntry*> g_entries;  // live states, creation order
uint32_t g_next_cid = 1;
int g_keyval = MPI_KEYVAL_INVALID;
// A duplicate of MPI_COMM_SELF nobody sends on, and a receive posted on it
// that never completes: testing it is one full pass of the MPI library's
// progress engine (MPICH's MPI_Test progresses every pending operation,
// collective schedules included; its MPI_Iprobe only the channel).
MPI_Comm g_progress_comm = MPI_COMM_NULL;
MPI_Request g_progress_request = MPI_REQUEST_NULL;
int g_progress_sink = 0;

void mpiProgress() {
  int flag = 0;
  if (g_progress_request != MPI_REQUEST_NULL)
    (void)PMPI_Test(&g_progress_request, &flag, MPI_STATUS_IGNORE);
}
coll::PmpiParams g_params;
// A communicator's progress thread was left running past its bound: the
// core is not closed under it at finalize.
bool g_left_running = false;
bool g_progressing_waits = false;  // progressingWaits()
// The last communicator looked up and its state (one thread at a time:
// not used at MPI_THREAD_MULTIPLE): saves the attribute lookup on the
// calls of a loop. Cleared when that state is deleted.
bool g_cache_ok = false;
MPI_Comm g_cached_comm = MPI_COMM_NULL;
CommEntry* g_cached_entry = nullptr;

void removeEntry(CommEntry* e) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_entries.erase(std::remove(g_entries.begin(), g_entries.end(), e), g_entries.end());
}

// The attribute's delete callback: MPI_Comm_free, MPI_Comm_delete_attr and
// MPI_Finalize (our own, for every communicator still alive).
int deleteEntry(MPI_Comm, int, void* attribute, void*) {
  auto* e = static_cast<CommEntry*>(attribute);
  // MPI lets a communicator be freed with calls pending: they end first.
  drain(e);
  if (!progressThreadStop(e)) e->stuck = true;
  if (g_cached_entry == e) {
    g_cached_comm = MPI_COMM_NULL;
    g_cached_entry = nullptr;
  }
  removeEntry(e);
  // drain gave up on a progress thread stuck inside this communicator's
  // core state, or it did not stop: left to it (a leak, not a use after
  // free), and the core stays open at finalize (g_left_running).
  if (e->stuck) {
    g_left_running = true;
    if (e->priv != MPI_COMM_NULL) (void)PMPI_Comm_free(&e->priv);
    return MPI_SUCCESS;
  }
  if (e->core != nullptr) switchagg_coll_comm_destroy(e->core);
  if (e->priv != MPI_COMM_NULL) (void)PMPI_Comm_free(&e->priv);
  delete e;
  return MPI_SUCCESS;
}

// The core's allgather (address exchange, agreements) on the private
// duplicate, progressing the core's transport while it waits: a peer this
// rank waits for may itself wait for this rank's transport. Bounded by the
// stall timeout (0: unbounded, as the host algorithms' steps).
int allgatherOnPrivate(void* ctx, const void* send, void* recv, size_t bytes) {
  auto* e = static_cast<CommEntry*>(ctx);
  if (bytes > static_cast<size_t>(INT_MAX)) return -1;
  MPI_Request request = MPI_REQUEST_NULL;
  if (PMPI_Iallgather(send, static_cast<int>(bytes), MPI_BYTE, recv, static_cast<int>(bytes),
                      MPI_BYTE, e->priv, &request) != MPI_SUCCESS)
    return -1;
  const auto start = std::chrono::steady_clock::now();
  for (int done = 0;;) {
    if (PMPI_Test(&request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) return -1;
    if (done) return 0;
    progress();
    const int limit = g_params.stall_timeout;
    if (limit > 0 && std::chrono::steady_clock::now() - start > std::chrono::seconds(limit)) {
      int rank = -1;
      (void)PMPI_Comm_rank(e->comm, &rank);
      std::fprintf(stderr,
                   "switchagg[pmpi] error: rank %d waited %d s (coll_switchagg_stall_timeout) for "
                   "the other ranks in the switchagg allgather of %zu bytes; giving up\n",
                   rank, limit, bytes);
      return -1;
    }
  }
}

const char* threadLevelName(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE:
      return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED:
      return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED:
      return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE:
      return "MPI_THREAD_MULTIPLE";
    default:
      return "unknown thread level";
  }
}

// The MPI library's version string's first line ("MPICH Version: 4.0.2").
std::string libraryVersion() {
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  if (PMPI_Get_library_version(version, &length) != MPI_SUCCESS) return "an unknown MPI library";
  std::string text(version, static_cast<size_t>(std::max(0, length)));
  text = text.substr(0, text.find('\n'));
  std::replace(text.begin(), text.end(), '\t', ' ');
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.pop_back();
  return text;
}

// Under g_mutex, MPI initialised: reads the parameters, opens the core.
State openLocked() {
  coll::PmpiParams params;
  Status st = coll::pmpiParamsTable().applyEnvironment(params);
  if (!st.ok()) {
    std::fprintf(stderr,
                 "switchagg[pmpi] error: %s; switchagg disabled (every call goes to the "
                 "MPI library)\n",
                 st.message().c_str());
    return State::kOff;
  }
  g_params = params;
  if (!params.enable) return State::kOff;
  g_progressing_waits = g_params.allreduce_algorithm != "previous";
  const agent::JobEnvironment job = agent::jobEnvironment();
  if (!job.agents.empty() || !job.tokens.empty()) g_progressing_waits = true;
  // The core's part of the table's rows (layer ALL): a number, or the text.
  switchagg_coll_params_t p{};
#define PMPI_CORE_VALUE_INT(NAME) g_params.NAME
#define PMPI_CORE_VALUE_BOOL(NAME) g_params.NAME
#define PMPI_CORE_VALUE_STRING(NAME) g_params.NAME.c_str()
#define PMPI_CORE_VALUE_ENUM PMPI_CORE_VALUE_STRING
#define PMPI_CORE_VALUE_ALGO PMPI_CORE_VALUE_STRING
#define PMPI_CORE_VALUE_(NAME, KIND, DEF, MIN, MAX, VALUES, LAYERS, LEVEL, SCOPE, ENV, HELP) \
  SWITCHAGG_COLL_IF_CORE_##LAYERS(p.NAME = PMPI_CORE_VALUE_##KIND(NAME);)
  SWITCHAGG_COLL_PARAMS(PMPI_CORE_VALUE_)
#undef PMPI_CORE_VALUE_
  if (switchagg_coll_open(&p) != 0) return State::kOff;  // the core printed why
  int level = MPI_THREAD_SINGLE;
  (void)PMPI_Query_thread(&level);
  // The progress thread (MPICH family) uses the core beside the user's
  // threads: the core's gate on, whatever the thread level.
  // The job has a switch path: the progress thread may run, and the
  // answering thread (pmpi_answer.cc) does - a peer may ask this rank about
  // a switch call.
  const bool answering = g_params.progress_thread == "auto" &&
                         (!job.agents.empty() || !job.tokens.empty());
  progressThreadOpen(answering, g_params.stall_timeout);
  if (level == MPI_THREAD_MULTIPLE) switchagg_coll_enable_threads();
  else if (progressThreadEnabled() || answering) switchagg_coll_enable_gate();
  g_cache_ok = level != MPI_THREAD_MULTIPLE;
  if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, deleteEntry, &g_keyval, nullptr) !=
      MPI_SUCCESS) {
    std::fprintf(stderr,
                 "switchagg[pmpi] error: MPI_Comm_create_keyval failed; switchagg "
                 "disabled\n");
    switchagg_coll_close();
    return State::kOff;
  }
  // While a switchagg call waits, the MPI library's own progress runs (as in
  // any MPI call that blocks): a nonblocking collective pending on another
  // communicator, which a peer may need before it joins our call, moves on.
  // MPICH exports no progress function; an MPI_Iprobe that can never match
  // (a private duplicate of MPI_COMM_SELF) is one pass of its engine.
  if (PMPI_Comm_dup(MPI_COMM_SELF, &g_progress_comm) == MPI_SUCCESS &&
      PMPI_Irecv(&g_progress_sink, 1, MPI_INT, MPI_ANY_SOURCE, 0, g_progress_comm,
                 &g_progress_request) == MPI_SUCCESS)
    switchagg_coll_set_mpi_progress(mpiProgress);
  if (answering) {
    switchagg_coll_enable_idle_progress();  // before any call
    answeringThreadStart();
  }
  int rank = 0;
  (void)PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (g_params.verbose > 0 && rank == 0)
    std::fprintf(stderr,
                 "switchagg[pmpi] info: PMPI layer active (" SWITCHAGG_PMPI_NAME
                 ") over %s, "
                 "%s, MPI_Iallreduce %s\n",
                 libraryVersion().c_str(), threadLevelName(level),
                 progressThreadEnabled() ? "through the layer's progress thread"
                                         : "to the MPI library");
  return State::kActive;
}

void open() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_state.load() != State::kUnopened) return;
  g_state.store(openLocked());
}

void close() {
  if (g_state.load() != State::kActive) {
    g_state.store(State::kClosed);
    return;
  }
  progress();
  answeringThreadStop();  // before any communicator's state goes
  std::vector<CommEntry*> alive;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    alive = g_entries;
  }
  // Runs deleteEntry for each (which unlinks it, drains its queue and stops
  // its progress thread).
  for (CommEntry* e : alive) (void)PMPI_Comm_delete_attr(e->comm, g_keyval);
  (void)PMPI_Comm_free_keyval(&g_keyval);
  reapOrphans();
  g_state.store(State::kClosed);
  switchagg_coll_set_mpi_progress(nullptr);
  if (g_progress_request != MPI_REQUEST_NULL) {
    (void)PMPI_Cancel(&g_progress_request);
    (void)PMPI_Wait(&g_progress_request, MPI_STATUS_IGNORE);
  }
  if (g_progress_comm != MPI_COMM_NULL) (void)PMPI_Comm_free(&g_progress_comm);
  if (!g_left_running) switchagg_coll_close();
}

CommEntry* createEntry(MPI_Comm comm) {
  auto* e = new CommEntry;
  e->comm = comm;
  int inter = 0;
  (void)PMPI_Comm_test_inter(comm, &inter);
  // Inter-communicators stay with the MPI library (as the component).
  // Collectives on the user's communicator, handed to the MPI library as
  // any declined call (a peer may still wait for this rank's transport).
  if (!inter &&
      handToMpi([&] { return PMPI_Comm_dup(comm, &e->priv); },
                [&](MPI_Request* r) { return PMPI_Comm_idup(comm, &e->priv, r); }) == MPI_SUCCESS) {
    // The core's communicator id: the same on every rank (the largest of
    // the ranks' next ids), unique among this process's communicators.
    uint32_t mine = 0, agreed = 0;
    {
      std::lock_guard<std::mutex> lock(g_mutex);
      mine = g_next_cid++;
    }
    if (handToMpi([&] { return PMPI_Allreduce(&mine, &agreed, 1, MPI_UINT32_T, MPI_MAX, e->priv); },
                  [&](MPI_Request* r) {
                    return PMPI_Iallreduce(&mine, &agreed, 1, MPI_UINT32_T, MPI_MAX, e->priv, r);
                  }) == MPI_SUCCESS) {
      {
        std::lock_guard<std::mutex> lock(g_mutex);
        g_next_cid = std::max(g_next_cid, agreed + 1);
      }
      char name[MPI_MAX_OBJECT_NAME] = {};
      int length = 0;
      (void)PMPI_Comm_get_name(comm, name, &length);
      switchagg_coll_comm_info_t info{};
      (void)PMPI_Comm_rank(comm, &info.rank);
      (void)PMPI_Comm_size(comm, &info.size);
      info.context_id = agreed;
      info.name = name;
      info.node_name = nullptr;  // SWITCHAGG_NODE_NAME, else the host name
      info.allgather_ctx = e;
      info.allgather = allgatherOnPrivate;
      e->core = switchagg_coll_comm_create(&info);
      e->allreduce_previous =
          e->core != nullptr && info.size > 1 && switchagg_coll_allreduce_forced_previous() != 0;
    }
  }
  if (PMPI_Comm_set_attr(comm, g_keyval, e) != MPI_SUCCESS) {
    deleteEntry(comm, g_keyval, e, nullptr);
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(g_mutex);
  g_entries.push_back(e);
  return e;
}

}  // namespace

bool oneThreadAtATime() {
  return g_cache_ok;
}

void mpiProgressPass() { mpiProgress(); }

bool progressingWaits() {
  return g_progressing_waits;
}

int waitProgressing(MPI_Request* request) {
  for (int done = 0;;) {
    const int rc = PMPI_Test(request, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS || done) return rc;
    progress();
  }
}

bool active() {
  State s = g_state.load(std::memory_order_acquire);
  if (s == State::kUnopened) {
    int initialized = 0, finalized = 0;
    (void)PMPI_Initialized(&initialized);
    (void)PMPI_Finalized(&finalized);
    if (!initialized || finalized) return false;
    open();
    s = g_state.load();
  }
  return s == State::kActive;
}

CommEntry* existingEntryOf(MPI_Comm comm) {
  if (g_state.load(std::memory_order_acquire) != State::kActive || comm == MPI_COMM_NULL)
    return nullptr;
  if (g_cache_ok && comm == g_cached_comm) return g_cached_entry;
  void* value = nullptr;
  int found = 0;
  if (PMPI_Comm_get_attr(comm, g_keyval, &value, &found) != MPI_SUCCESS || !found) return nullptr;
  if (g_cache_ok) {
    g_cached_comm = comm;
    g_cached_entry = static_cast<CommEntry*>(value);
  }
  return static_cast<CommEntry*>(value);
}

CommEntry* entryOf(MPI_Comm comm) {
  if (!active() || comm == MPI_COMM_NULL) return nullptr;
  if (CommEntry* e = existingEntryOf(comm)) return e;
  return createEntry(comm);
}

}  // namespace switchagg::pmpi

// ---- the MPI entry points of the lifecycle ------------------------------

extern "C" {

int MPI_Init(int* argc, char*** argv) {
  const int rc = PMPI_Init(argc, argv);
  if (rc == MPI_SUCCESS) (void)switchagg::pmpi::active();
  return rc;
}

int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  const int rc = PMPI_Init_thread(argc, argv, required, provided);
  if (rc == MPI_SUCCESS) (void)switchagg::pmpi::active();
  return rc;
}

int MPI_Finalize(void) {
  switchagg::pmpi::close();
  return PMPI_Finalize();
}

}  // extern "C"
