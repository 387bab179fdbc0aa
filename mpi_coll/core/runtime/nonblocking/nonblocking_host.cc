// The nonblocking calls' agreement and redo over the communicator's own
// transport (iallreduce.h: thread_without_mpi, host_ready, istream_agree,
// the *_redo_host calls), for a host of the nonblocking engine that has no
// MPI of its own to run them with: the PMPI layer's progress threads
// (nonblocking_engine.h: switchagg_nb_redo_host). The Open MPI glue runs
// them with libnbc instead.
#include <cstring>
#include <string>
#include <vector>

#include "coll_core_internal.h"
#include "dispatch.h"
#include "iallreduce.h"
#include "process_runtime.h"
#include "switchagg/common/log.h"

namespace switchagg::coll {
namespace {

// A redo's end (the switchagg_coll_*_redo_host calls): 0, or -1 after the
// communicator was marked unusable (as after a host algorithm's failure)
// and the cause logged.
int redoOnHost(switchagg_coll_comm& comm, IallreduceCounters& c, const char* what,
               const Status& st) {
  if (st.ok()) return 0;
  comm.state.markBroken();
  ++c.events["error"];
  SA_ERROR("coll",
           "comm %s rank %d: the host redo of a nonblocking switch call (%s) failed: %s; the "
           "request completes with MPI_ERR_OTHER (%s)",
           comm.state.name().c_str(), comm.state.rank(), what, st.toString().c_str(),
           st.code() == Code::kTimeout ? "a step stalled past coll_switchagg_stall_timeout"
                                       : "a peer failed, the result would be wrong");
  return -1;
}

// The routed redo over the transport (iallreduce.h: irouted_redo_host).
Status routedRedo(CommState& state, int routed_op, const void* send, void* recv, size_t count,
                  int dtype, int op, int root) {
  const size_t size = size_t(state.size()), rank = size_t(state.rank());
  auto* out = static_cast<uint8_t*>(recv);
  switch (static_cast<CollKind>(routed_op)) {
    case SWITCHAGG_COLL_ALLGATHER: {  // `count` bytes a rank
      std::vector<uint8_t> mine(count);
      if (count) std::memcpy(mine.data(), send ? send : out + rank * count, count);
      std::memset(out, 0, size * count);
      if (count) std::memcpy(out + rank * count, mine.data(), count);
      return runCheapestHost(state, {nullptr, out, size * count, Dtype::kUint8, Op::kBor});
    }
    case SWITCHAGG_COLL_BCAST:  // `count` bytes from root, in recv
      if (int(rank) != root) std::memset(out, 0, count);
      return runCheapestHost(state, {nullptr, out, count, Dtype::kUint8, Op::kBor});
    case SWITCHAGG_COLL_REDUCE_SCATTER_BLOCK:  // `count` elements a rank
      return runPartOnHost(state, send ? send : out, out, size * count, rank * count, count,
                           static_cast<Dtype>(dtype), static_cast<Op>(op));
    default:
      return Status(Code::kUnsupported, "not a nonblocking routed collective");
  }
}

}  // namespace
}  // namespace switchagg::coll

using switchagg::Code;
using switchagg::Dtype;
using switchagg::Op;
using switchagg::coll::AllreduceArgs;
using switchagg::coll::ProcessRuntime;

// The redo of each kind (switchagg_coll_iredo_host).
namespace {

int iallreduceRedo(switchagg_coll_comm_t* comm, const void* send, void* recv, size_t count,
                   int dtype, int op) {
  const AllreduceArgs args{send, recv, count, static_cast<Dtype>(dtype), static_cast<Op>(op)};
  return switchagg::coll::redoOnHost(*comm, comm->iallreduce, "MPI_Iallreduce",
                                     switchagg::coll::runCheapestHost(comm->state, args));
}

int iroutedRedo(switchagg_coll_comm_t* comm, int kind, const void* send, void* recv,
                size_t count, int dtype, int op, int root) {
  switchagg::coll::IallreduceCounters* c = switchagg::coll::iroutedCounters(*comm, kind);
  if (c == nullptr) return -1;
  return switchagg::coll::redoOnHost(
      *comm, *c, switchagg::coll::collKindName(static_cast<switchagg::coll::CollKind>(kind)),
      switchagg::coll::routedRedo(comm->state, kind, send, recv, count, dtype, op, root));
}

int ibarrierRedo(switchagg_coll_comm_t* comm) {
  int32_t entered = 1;
  const AllreduceArgs args{nullptr, &entered, 1, Dtype::kInt32, Op::kSum};
  switchagg::Status st = switchagg::coll::runCheapestHost(comm->state, args);
  if (st.ok() && entered != comm->state.size())
    st = switchagg::Status(Code::kInternal, std::to_string(entered) + " of " +
                                                std::to_string(comm->state.size()) +
                                                " ranks counted in the barrier's redo");
  return switchagg::coll::redoOnHost(*comm, comm->ibarrier, "MPI_Ibarrier", st);
}

}  // namespace

extern "C" {

void switchagg_coll_thread_without_mpi(void) { ProcessRuntime::markThreadWithoutMpi(); }

int switchagg_coll_host_ready(switchagg_coll_comm_t* comm) {
  return comm->state.hostReady() ? 1 : 0;
}

int switchagg_coll_istream_agree(switchagg_coll_comm_t* comm, int outcome, int* agreed,
                                 int* first_rank) {
  ProcessRuntime::CallScope in_call(comm->state.domain());
  return switchagg::coll::guarded<int>("iallreduce agreement", -1, [&] {
    switchagg::coll::CommState& state = comm->state;
    const uint8_t mine = static_cast<uint8_t>(outcome);
    std::vector<uint8_t> all(size_t(state.size()), 0);
    switchagg::Status st = state.allgather(&mine, all.data(), 1);
    if (!st.ok()) {
      SA_ERROR("coll",
               "comm %s rank %d: the outcome agreement of a nonblocking switch call failed: %s; "
               "the request completes with MPI_ERR_OTHER",
               state.name().c_str(), state.rank(), st.toString().c_str());
      return -1;
    }
    int worst = 0, first = 0;
    for (int r = 0; r < state.size(); ++r)
      if (all[size_t(r)] > worst) {
        worst = all[size_t(r)];
        first = r;
      }
    *agreed = worst;
    *first_rank = first;
    return 0;
  });
}

int switchagg_coll_iredo_host(switchagg_coll_comm_t* comm, int kind, const void* send,
                              void* recv, size_t count, int dtype, int op, int root) {
  ProcessRuntime::CallScope in_call(comm->state.domain());
  return switchagg::coll::guarded<int>("nonblocking redo", -1, [&] {
    if (kind == SWITCHAGG_COLL_BARRIER) return ibarrierRedo(comm);
    if (switchagg_coll_kind_is_routed(kind))
      return iroutedRedo(comm, kind, send, recv, count, dtype, op, root);
    return iallreduceRedo(comm, send, recv, count, dtype, op);
  });
}

}  // extern "C"
