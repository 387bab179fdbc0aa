// The layer's answering thread (docs/pmpi.md "Progress"): in a job with a
// switch path, one thread per process that drives the core's transport
// while the program's threads are elsewhere, so a peer's recovery question
// about a switch call this rank finished is answered even while this rank
// waits in a call the layer does not serve.
//
// Why it is needed: a member that got the agent's result for a call is the
// only source of it for a member that missed it (docs/offload.md
// "Completion", case 4: the asker is answered "as soon as that member
// progresses"). Open MPI calls the component's progress callback from
// inside every MPI call that waits; MPICH gives a library no such hook. A
// rank done with a switch call that then waits in MPI_Recv for the peer
// still recovering the same call never answered it: both waited until
// coll_switchagg_stall_timeout (300 s) ended the peer's call in an error -
// a valid MPI program failed (found as a rare failure of
// mpich_iallreduce_fault_irouted_kill_ppn1_np3: rank 1 done with an
// MPI_Ireduce_scatter_block, blocked in MPI_Recv from rank 0, rank 0
// asking it about that call; reproduced every time by
// mpich_switch_fault_oneshot_handoff_np3).
//
// What it runs: switchagg_coll_progress_idle - the pass Open MPI's progress
// engine makes (each domain's gate taken with a try, its workers and agent
// connections driven), but only while no switchagg work is in flight in the
// process: no core call on any thread (a call that waits lets its domain
// go, and a pass would then interleave with its wait - allowed by the
// gate's rules, as Open MPI's other threads do, but never needed here) and
// no nonblocking call queued (post marks it, finishLocked unmarks it). The
// program outside switchagg is exactly when a peer's question would go
// unanswered. The core's gate is on wherever the thread runs
// (switchagg_coll_enable_gate). It sleeps between passes, from kMinWaitUs
// doubling to kMaxWaitUs while nothing happens (an answer waits at most
// 100 ms; the asker retries from 1 ms doubling to 100 ms), back to
// kMinWaitUs after a pass that did something. Not shorter: with 200 us
// doubling to 10 ms, even with every pass skipped, 8 ranks and 3 agents on
// 2 cores (mpich_switch_tree_fp16_leaders_np8) failed 3 runs of 3 - a
// rank's MPI_Iallreduce stream stalled past the agent's 10 s member
// timeout - where 20 ms doubling to 100 ms passes.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "iallreduce.h"
#include "pmpi_layer.h"

namespace switchagg::pmpi {
namespace {

constexpr int64_t kMinWaitUs = 20000;
constexpr int64_t kMaxWaitUs = 100000;

std::mutex& g_answer_mutex = *new std::mutex;
std::condition_variable& g_answer_wake = *new std::condition_variable;
std::thread* g_answer_thread = nullptr;  // under g_answer_mutex
bool g_answer_stop = false;

void answerLoop() {
  switchagg_coll_thread_without_mpi();
  std::unique_lock<std::mutex> lock(g_answer_mutex);
  int64_t wait_us = kMinWaitUs;
  while (!g_answer_stop) {
    g_answer_wake.wait_for(lock, std::chrono::microseconds(wait_us));
    if (g_answer_stop) break;
    lock.unlock();
    const int events = switchagg_coll_progress_idle();
    lock.lock();
    wait_us = events > 0 ? kMinWaitUs : std::min(2 * wait_us, kMaxWaitUs);
  }
}

}  // namespace

void answeringThreadStart() {
  std::lock_guard<std::mutex> lock(g_answer_mutex);
  if (g_answer_thread != nullptr) return;
  g_answer_stop = false;
  g_answer_thread = new std::thread(answerLoop);
}

void answeringThreadStop() {
  std::thread* thread = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_answer_mutex);
    thread = g_answer_thread;
    g_answer_thread = nullptr;
    g_answer_stop = true;
  }
  if (thread == nullptr) return;
  g_answer_wake.notify_all();
  thread->join();  // a pass never waits: it ends within one worker progress
  delete thread;
}

}  // namespace switchagg::pmpi
