// MPI_Ibarrier, MPI_Iallgather, MPI_Ibcast and MPI_Ireduce_scatter_block
// under the MPICH family (MPI_Iallreduce: pmpi_collectives.cc). Each: the
// core's route as the component's (docs/offload.md "MPI_Iallreduce"), then
// the progress thread (pmpi_nonblocking.cc), or the MPI library's own
// (counted <op>:previous:<reason>).
#include <climits>
#include <string>

#include "pmpi_nonblocking.h"
#include "switchagg_mpi_types.h"

#if SWITCHAGG_PMPI_THREAD

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
int routedDecision(CommEntry* e, int kind, int route) {
  switch (route) {
    case SWITCHAGG_COLL_IROUTE_LOCAL:  // counted local; the library's trivial copy
    case SWITCHAGG_COLL_IROUTE_PREVIOUS: return 0;
    case SWITCHAGG_COLL_IROUTE_SWITCH: break;
    default: return switchagg::pmpi::failed(e->comm);
  }
  if (switchagg_coll_host_ready(e->core)) return 1;
  switchagg_coll_inote(e->core, kind, "previous:no host path");
  return 0;
}

// A routed call's fields (the images set by the caller).
IJob* routedJob(CommEntry* e, int kind, int root) {
  auto* job = new IJob(e, kind);
  job->call.root = root;
  return job;
}

// A routed entry point's front: the thread's communicator state, or
// nullptr (the MPI library's call, counted when the layer is on).
CommEntry* routedEntry(MPI_Comm comm, int routed_op) {
  CommEntry* e = threadEntry(comm);
  if (e != nullptr && !switchagg::pmpi::progressThreadEnabled()) {
    switchagg_coll_inote(e->core, routed_op, "previous:PMPI layer");
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
    switchagg_coll_inote(e->core, SWITCHAGG_COLL_BARRIER, "previous:PMPI layer");
    return PMPI_Ibarrier(comm, request);
  }
  const int route = switchagg_coll_ibarrier_route(e->core);
  if (route == SWITCHAGG_COLL_IROUTE_LOCAL) return switchagg::pmpi::completedRequest(request);
  const int rc = routedDecision(e, SWITCHAGG_COLL_BARRIER, route);
  if (rc != 1) return rc == 0 ? PMPI_Ibarrier(comm, request) : rc;
  auto* job = new IJob(e, SWITCHAGG_COLL_BARRIER);
  int flags = 0, scale = 1;
  (void)switchagg_mpi_classify(MPI_INT32_T, MPI_SUM, &job->call.dtype, &job->call.op, &flags,
                               &scale);
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
    switchagg_coll_inote(e->core, kOp, "previous:over INT_MAX bytes");
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
  job->call.count = block;
  job->call.recv = rbuf;
  int staged = MPI_SUCCESS;
  if (!switchagg::pmpi::plainBytes(rdtype, rcount)) {
    job->staged_recv.resize(size_t(size) * block + 1);
    job->call.recv = job->staged_recv.data();
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
    job->call.send = nullptr;
  } else if (switchagg::pmpi::plainBytes(sdtype, scount)) {
    job->call.send = sbuf;
  } else {
    job->staged_send.resize(block + 1);
    staged = switchagg::pmpi::pack(sbuf, scount, sdtype, job->staged_send.data(), block, comm);
    job->call.send = job->staged_send.data();
  }
  if (staged != MPI_SUCCESS) {  // nothing queued: the call fails here
    switchagg_coll_inote(e->core, kOp, "error");
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
    switchagg_coll_inote(e->core, kOp, "previous:over INT_MAX bytes");
  else
    rc = routedDecision(e, kOp, switchagg_coll_irouted_route(e->core, kOp, bytes, 0, 0, root));
  if (rc != 1) return rc == 0 ? PMPI_Ibcast(buf, count, dtype, root, comm, request) : rc;
  IJob* job = routedJob(e, kOp, root);
  job->call.count = bytes;
  job->call.recv = buf;
  if (!switchagg::pmpi::plainBytes(dtype, count)) {
    int rank = 0;
    (void)PMPI_Comm_rank(comm, &rank);
    job->staged_recv.resize(bytes + 1);
    job->call.recv = job->staged_recv.data();
    job->user_buf = static_cast<char*>(buf);
    job->user_count = count;
    (void)PMPI_Type_dup(dtype, &job->user_dtype);
    job->blocks = 1;
    job->block_bytes = bytes;
    if (rank == root &&
        switchagg::pmpi::pack(buf, count, dtype, job->staged_recv.data(), bytes, comm) !=
            MPI_SUCCESS) {
      switchagg_coll_inote(e->core, kOp, "error");
      switchagg::pmpi::discard(job);
      return switchagg::pmpi::failed(comm);
    }
  }
  return switchagg::pmpi::post(job, request);
}

int MPI_Ireduce_scatter_block(const void* sbuf, void* rbuf, int rcount, MPI_Datatype dtype,
                              MPI_Op op, MPI_Comm comm, MPI_Request* request) {
  const int kOp = SWITCHAGG_COLL_REDUCE_SCATTER_BLOCK;
  if (rcount < 0) return PMPI_Ireduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm, request);
  CommEntry* e = routedEntry(comm, kOp);  // nullptr: not queued here (no progress thread)
  CommEntry* served = e != nullptr ? e : threadEntry(comm);
  if (served == nullptr)
    return PMPI_Ireduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm, request);
  int sa_dtype = 0, sa_op = 0, flags = 0, scale = 1, rc = 0;
  // Predefined datatypes and ops only (no staging), as MPI_Iallreduce.
  const char* why = switchagg_mpi_classify(dtype, op, &sa_dtype, &sa_op, &flags, &scale);
  // A type MPICH's own reduction aborts on or gets wrong is not handed to
  // it: a call the switch path does not take here runs now, blocking,
  // through this layer's MPI_Reduce_scatter_block (after the
  // communicator's queued calls; on a host allreduce when the switch does
  // not serve it there either), and its request is complete at once. Every
  // rank decides alike (dtype, op and the core's route).
  auto previous = [&]() {
    if (why != nullptr || (flags & SWITCHAGG_COLL_PREVIOUS_WRONG) == 0)
      return PMPI_Ireduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm, request);
    switchagg_coll_inote(served->core, kOp, "host:previous wrong");
    const int blocking = MPI_Reduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm);
    return blocking == MPI_SUCCESS ? switchagg::pmpi::completedRequest(request) : blocking;
  };
  if (e == nullptr) return previous();
  if (why != nullptr)
    switchagg_coll_inote(e->core, kOp, (std::string("previous:") + why).c_str());
  else
    rc = routedDecision(e, kOp,
                        switchagg_coll_irouted_route(e->core, kOp, size_t(rcount) * size_t(scale),
                                                     sa_dtype, sa_op, 0));
  if (rc != 1) return rc == 0 ? previous() : rc;
  IJob* job = routedJob(e, kOp, 0);
  job->call.send = switchagg::pmpi::sendOrNull(sbuf);
  job->call.recv = rbuf;
  job->call.count = size_t(rcount) * size_t(scale);
  job->call.dtype = sa_dtype;
  job->call.op = sa_op;
  return switchagg::pmpi::post(job, request);
}

}  // extern "C"

#endif  // SWITCHAGG_PMPI_THREAD
