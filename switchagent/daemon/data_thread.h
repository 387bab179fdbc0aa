// DataThread: one data-plane thread of the agent. It owns a UCX worker, the
// listener on its address, an AggregationEngine with its own ReducePool and
// the clients that connected to that listener; a DataPlane runs
// data.plane_threads of them on one UCX context (data_plane.h).
//
// A lease has a home thread (homeThread: its token hashed); the control
// plane hands a lease's jobs the home thread's address, so every member of
// every group of a lease lands on one thread and each engine stays
// single-threaded. Thread 0 listens on data.listen and serves every lease
// (fabric maps, hand-set addresses, agents of one thread); a thread above 0
// refuses a lease that is not its own as an unknown token. With
// data.threads_per_job = T > 1 a lease is served by T threads (its home and
// the T - 1 after it, wrapping): its jobs get their T addresses and stripe
// every call over them, one stripe (one group) per thread.
// docs/agent-protocol.md "Data-plane threads" has the safety argument.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "data_plane_view.h"
#include "slot_pool.h"
#include "switchagg/agent/lease_token.h"
#include "switchagg/common/status.h"

namespace switchagg {
namespace ucx {
class Context;
}
namespace agent {

class LeaseTable;

// What every thread of one DataPlane shares; outlives the threads.
struct DataThreadShared {
  const DataPlaneConfig& config;
  std::string parent_address;  // "" = a root
  LeaseTable& leases;
  ucx::Context& context;
  // Slot memory of all threads together: data.slot_memory bounds the sum.
  MemoryAccount memory = std::make_shared<std::atomic<size_t>>(0);
  int count = 1;           // data.plane_threads
  int spread = 1;          // threads per lease (data.threads_per_job, at most count)
  int reduce_threads = 1;  // each thread's ReducePool
};

// The thread (0..threads-1) that serves a lease's groups.
int homeThread(const LeaseToken& token, int threads);
// True if thread `index` serves the lease's groups: thread 0 serves every
// lease; thread k > 0 the leases whose home is k or one of the spread - 1
// threads before it (wrapping modulo `threads`).
bool leaseServedBy(const LeaseToken& token, int index, int threads, int spread);

struct EngineConfig;
// Arms the test-only fault point SWITCHAGG_AGENT_TEST_FAULT in `ec` (its
// fields test_*; data_thread_fault.cc); a bad value is an error naming it.
Status armTestFault(EngineConfig& ec);

class DataThread {
 public:
  // Creates the worker, engine and listener on the caller's thread (a bad
  // listen address fails here); start() runs the loop on its own thread.
  static Result<std::unique_ptr<DataThread>> create(const DataThreadShared& shared, int index,
                                                    const std::string& listen);
  ~DataThread();  // aborts live groups (ABORT "agent shutting down"), stops, closes
  DataThread(const DataThread&) = delete;
  DataThread& operator=(const DataThread&) = delete;

  void start();
  void stop();                         // asks the loop to end (joined by the destructor)
  const std::string& address() const;  // "host:port" actually listening
  DataPlaneCounters counters() const;  // thread-safe snapshot of this thread's engine
  // CPU time this thread has used, ns (its thread clock; 0 before start).
  uint64_t busyNs() const;
  // Thread-safe: abort every group of the lease (within ~50 ms).
  void revokeLease(const LeaseToken& token, const std::string& reason);

  struct Impl;

 private:
  explicit DataThread(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace agent
}  // namespace switchagg
