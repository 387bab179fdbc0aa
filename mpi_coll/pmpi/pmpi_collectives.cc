// The calls the PMPI layer serves (pmpi_layer.h). Each one: the
// communicator's state (created on its first served call), the core's
// answer, and PMPI_* for a call the core declines, counted as the
// component counts a call it hands to the previous module.
//
// A FAILED answer goes through the communicator's error handler
// (MPI_ERRORS_ARE_FATAL by default), as an error inside the MPI library
// would: a silently wrong result is never an option.
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "iallreduce.h"
#include "pmpi_layer.h"
#include "switchagg_mpi_types.h"

namespace switchagg::pmpi {

int failed(MPI_Comm comm) {
  (void)PMPI_Comm_call_errhandler(comm, MPI_ERR_OTHER);
  return MPI_ERR_OTHER;
}

const void* sendOrNull(const void* sbuf) {
  return sbuf == MPI_IN_PLACE ? nullptr : sbuf;
}

namespace {

// The served state of `comm`, progressed, or nullptr (call PMPI_*).
// A blocking call first waits for the communicator's MPI_Iallreduce calls
// on the progress thread (the switch path runs one call at a time).
switchagg_coll_comm_t* coreOf(MPI_Comm comm) {
  CommEntry* e = entryOf(comm);
  if (e == nullptr || e->core == nullptr) return nullptr;
  // A nonblocking call on it was abandoned past its bound: the error
  // handler, then (if it returns) the MPI library's own call.
  if (!drain(e)) {
    (void)failed(comm);
    return nullptr;
  }
  progress();
  return e->core;
}

// After PMPI_* served a call the core declined: online tuning times it.
int previousDone(MPI_Comm comm, switchagg_coll_comm_t* core, int rc, int kind) {
  if (rc != MPI_SUCCESS) return rc;
  const int tuned = switchagg_coll_kind_is_routed(kind)
                        ? switchagg_coll_routed_previous_done(core, kind)
                        : switchagg_coll_previous_done(core);
  return tuned == 0 ? MPI_SUCCESS : failed(comm);
}

// How a call the core answered with `rc` ends: MPI_SUCCESS when served, the
// error handler's answer when failed; declined, the MPI library runs it
// (handToMpi) and online tuning times it (previousDone).
template <typename Blocking, typename Nonblocking>
int answer(int rc, MPI_Comm comm, switchagg_coll_comm_t* core, int kind, Blocking blocking,
           Nonblocking nonblocking) {
  if (rc == SWITCHAGG_OUTCOME_DONE) return MPI_SUCCESS;
  if (rc == SWITCHAGG_OUTCOME_ERROR) return failed(comm);
  return previousDone(comm, core, handToMpi(blocking, nonblocking), kind);
}

}  // namespace

// switchagg_mpi_classify through the communicator's last answer
// (CommEntry::classified): nullptr when switchagg serves the pair.
const char* classify(CommEntry* e, MPI_Datatype dtype, MPI_Op op, int* sa_dtype, int* sa_op,
                     int* flags, int* scale) {
  CommEntry::Classified& c = e->classified;
  const bool cache = oneThreadAtATime();
  if (cache && c.dtype == dtype && c.op == op && dtype != MPI_DATATYPE_NULL) {
    *sa_dtype = c.sa_dtype;
    *sa_op = c.sa_op;
    *flags = c.flags;
    *scale = c.scale;
    return nullptr;
  }
  const char* why = switchagg_mpi_classify(dtype, op, sa_dtype, sa_op, flags, scale);
  if (why == nullptr && cache) c = {dtype, op, *sa_dtype, *sa_op, *flags, *scale};
  return why;
}

// `count` elements of dt are count * size bytes in one run at the buffer
// (no holes, no offset): true for every predefined type and contiguous
// derived ones.
bool plainBytes(MPI_Datatype dt, int count) {
  if (count == 0) return true;
  int size = 0;
  MPI_Aint lb = 0, extent = 0, true_lb = 0, true_extent = 0;
  if (PMPI_Type_size(dt, &size) != MPI_SUCCESS || PMPI_Type_get_extent(dt, &lb, &extent) ||
      PMPI_Type_get_true_extent(dt, &true_lb, &true_extent))
    return false;
  return lb == 0 && true_lb == 0 && extent == size && true_extent == size;
}

size_t typeBytes(MPI_Datatype dt, int count) {
  int size = 0;
  (void)PMPI_Type_size(dt, &size);
  return count > 0 && size > 0 ? size_t(size) * size_t(count) : 0;
}

int pack(const void* buf, int count, MPI_Datatype dt, void* staged, size_t bytes, MPI_Comm comm) {
  int position = 0;
  return PMPI_Pack(buf, count, dt, staged, static_cast<int>(bytes), &position, comm);
}

int unpack(const void* staged, size_t bytes, void* buf, int count, MPI_Datatype dt, MPI_Comm comm) {
  int position = 0;
  return PMPI_Unpack(staged, static_cast<int>(bytes), &position, buf, count, dt, comm);
}

}  // namespace switchagg::pmpi

using switchagg::pmpi::answer;
using switchagg::pmpi::coreOf;
using switchagg::pmpi::failed;
using switchagg::pmpi::handToMpi;
using switchagg::pmpi::sendOrNull;
using switchagg::pmpi::pack;
using switchagg::pmpi::unpack;

extern "C" {

int MPI_Allreduce(const void* sbuf, void* rbuf, int count, MPI_Datatype dtype, MPI_Op op,
                  MPI_Comm comm) {
  switchagg::pmpi::CommEntry* e = switchagg::pmpi::entryOf(comm);
  if (e == nullptr || e->core == nullptr || count < 0)
    return PMPI_Allreduce(sbuf, rbuf, count, dtype, op, comm);
  // algorithm=previous: nothing of switchagg's runs in this call, so it
  // does not progress the core up front (a clock read and the gate on
  // every call); where a peer may need this rank's transport the call
  // waits progressing it (handToMpi).
  const bool decided = e->allreduce_previous && count > 0;
  if (!decided) {
    if (!switchagg::pmpi::drain(e)) {  // as coreOf
      (void)switchagg::pmpi::failed(comm);
      return PMPI_Allreduce(sbuf, rbuf, count, dtype, op, comm);
    }
    switchagg::pmpi::progress();
  }
  switchagg_coll_comm_t* core = e->core;
  int sa_dtype = 0, sa_op = 0, flags = 0, scale = 1;
  if (const char* why =
          switchagg::pmpi::classify(e, dtype, op, &sa_dtype, &sa_op, &flags, &scale)) {
    switchagg_coll_note_fallback(core, why);
    return handToMpi(
        [&] { return PMPI_Allreduce(sbuf, rbuf, count, dtype, op, comm); },
        [&](MPI_Request* r) { return PMPI_Iallreduce(sbuf, rbuf, count, dtype, op, comm, r); });
  }
  if (decided) {
    // Decided for the communicator: counted as the core counts it, no
    // selection, no online tuning (a forced algorithm is never tuned).
    if (switchagg_coll_allreduce_previous(core, sa_dtype, sa_op) == SWITCHAGG_OUTCOME_ERROR)
      return failed(comm);
    return handToMpi(
        [&] { return PMPI_Allreduce(sbuf, rbuf, count, dtype, op, comm); },
        [&](MPI_Request* r) { return PMPI_Iallreduce(sbuf, rbuf, count, dtype, op, comm, r); });
  }
  const int rc = switchagg_coll_allreduce(core, sendOrNull(sbuf), rbuf,
                                          size_t(count) * size_t(scale), sa_dtype, sa_op, flags);
  return answer(
      rc, comm, core, SWITCHAGG_COLL_ALLREDUCE,
      [&] { return PMPI_Allreduce(sbuf, rbuf, count, dtype, op, comm); },
      [&](MPI_Request* r) { return PMPI_Iallreduce(sbuf, rbuf, count, dtype, op, comm, r); });
}

int MPI_Barrier(MPI_Comm comm) {
  switchagg_coll_comm_t* core = coreOf(comm);
  if (core == nullptr) return PMPI_Barrier(comm);
  const int rc = switchagg_coll_barrier(core);
  if (rc == SWITCHAGG_OUTCOME_DONE) return MPI_SUCCESS;
  if (rc == SWITCHAGG_OUTCOME_ERROR) return failed(comm);
  return handToMpi([&] { return PMPI_Barrier(comm); },
                   [&](MPI_Request* r) { return PMPI_Ibarrier(comm, r); });
}

// MPI_Iallreduce: through the switch path on the layer's progress thread
// where it runs (the MPICH family with a switch path in the job,
// pmpi_nonblocking.cc), else the MPI library's (counted,
// iallreduce:previous:PMPI layer).
int MPI_Iallreduce(const void* sbuf, void* rbuf, int count, MPI_Datatype dtype, MPI_Op op,
                   MPI_Comm comm, MPI_Request* request) {
  switchagg::pmpi::CommEntry* e = switchagg::pmpi::entryOf(comm);
  if (e == nullptr || e->core == nullptr || count < 0)
    return PMPI_Iallreduce(sbuf, rbuf, count, dtype, op, comm, request);
  switchagg::pmpi::progress();
  switchagg::pmpi::reapOrphans();
  switchagg_coll_comm_t* core = e->core;
  int sa_dtype = 0, sa_op = 0, flags = 0, scale = 1;
  const char* why = switchagg::pmpi::classify(e, dtype, op, &sa_dtype, &sa_op, &flags, &scale);
  const size_t n = size_t(count) * size_t(scale);
  // A type the MPI's own reduction gets wrong or aborts on (16-bit floats
  // under MPICH 4.0.2) is not handed to it: a call the switch path does not
  // take runs on a host algorithm now, blocking, after the communicator's
  // queued calls (collective order is the same on every rank, and so is
  // this decision), and its request is complete at once.
  auto previous = [&](const char* note) {
    if (why == nullptr && (flags & SWITCHAGG_COLL_PREVIOUS_DIFFERS) != 0) {
      if (!switchagg::pmpi::drain(e)) return failed(comm);
      switchagg_coll_inote(core, SWITCHAGG_COLL_ALLREDUCE, "host:previous differs");
      const int rc =
          switchagg_coll_allreduce(core, sendOrNull(sbuf), rbuf, n, sa_dtype, sa_op, flags);
      if (rc == SWITCHAGG_OUTCOME_DONE) return switchagg::pmpi::completedRequest(request);
      if (rc == SWITCHAGG_OUTCOME_ERROR) return failed(comm);
    }
    if (note != nullptr) switchagg_coll_inote(core, SWITCHAGG_COLL_ALLREDUCE, note);  // the route noted its own
    return PMPI_Iallreduce(sbuf, rbuf, count, dtype, op, comm, request);
  };
  if (!switchagg::pmpi::progressThreadEnabled()) return previous("previous:PMPI layer");
  if (why != nullptr) {
    switchagg_coll_inote(core, SWITCHAGG_COLL_ALLREDUCE, (std::string("previous:") + why).c_str());
    return PMPI_Iallreduce(sbuf, rbuf, count, dtype, op, comm, request);
  }
  switch (switchagg_coll_iallreduce_route(core, sendOrNull(sbuf), rbuf, n, sa_dtype, sa_op)) {
    case SWITCHAGG_COLL_IROUTE_LOCAL:
      return switchagg::pmpi::completedRequest(request);
    case SWITCHAGG_COLL_IROUTE_SWITCH:
      // The redo and the agreement run over the core's own transport.
      if (switchagg_coll_host_ready(core))
        return switchagg::pmpi::postIallreduce(e, sendOrNull(sbuf), rbuf, n, sa_dtype, sa_op,
                                               request);
      return previous("previous:no host path");
    case SWITCHAGG_COLL_IROUTE_PREVIOUS:
      return previous(nullptr);
    default:
      return failed(comm);
  }
}

int MPI_Reduce(const void* sbuf, void* rbuf, int count, MPI_Datatype dtype, MPI_Op op, int root,
               MPI_Comm comm) {
  switchagg_coll_comm_t* core = coreOf(comm);
  if (core == nullptr || count < 0) return PMPI_Reduce(sbuf, rbuf, count, dtype, op, root, comm);
  int sa_dtype = 0, sa_op = 0, flags = 0, scale = 1, rc = SWITCHAGG_OUTCOME_DECLINED;
  if (const char* why = switchagg_mpi_classify(dtype, op, &sa_dtype, &sa_op, &flags, &scale))
    switchagg_coll_note_routed_fallback(core, SWITCHAGG_COLL_REDUCE, why);
  else
    rc = switchagg_coll_reduce(core, sendOrNull(sbuf), rbuf, size_t(count) * size_t(scale),
                               sa_dtype, sa_op, root, flags);
  return answer(
      rc, comm, core, SWITCHAGG_COLL_REDUCE,
      [&] { return PMPI_Reduce(sbuf, rbuf, count, dtype, op, root, comm); },
      [&](MPI_Request* r) { return PMPI_Ireduce(sbuf, rbuf, count, dtype, op, root, comm, r); });
}

}  // extern "C"

namespace {

// Both reduce-scatters: counts[r] elements for rank r (block: all equal).
int reduceScatterCore(switchagg_coll_comm_t* core, const void* sbuf, void* rbuf, const int* rcounts,
                      int block_count, MPI_Datatype dtype, MPI_Op op, MPI_Comm comm, int kind) {
  int sa_dtype = 0, sa_op = 0, flags = 0, scale = 1, size = 0;
  if (const char* why = switchagg_mpi_classify(dtype, op, &sa_dtype, &sa_op, &flags, &scale)) {
    switchagg_coll_note_routed_fallback(core, kind, why);
    return SWITCHAGG_OUTCOME_DECLINED;
  }
  (void)PMPI_Comm_size(comm, &size);
  std::vector<size_t> counts(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) {
    const int n = rcounts != nullptr ? rcounts[r] : block_count;
    if (n < 0) return SWITCHAGG_OUTCOME_DECLINED;  // the MPI library reports it
    counts[size_t(r)] = size_t(n) * size_t(scale);
  }
  if (kind == SWITCHAGG_COLL_REDUCE_SCATTER_BLOCK) flags |= SWITCHAGG_COLL_BLOCK;
  return switchagg_coll_reduce_scatter(core, sendOrNull(sbuf), rbuf, counts.data(), sa_dtype, sa_op,
                                       flags);
}

// The core's allgather on byte images: the caller's buffers where plain,
// else packed / unpacked through staging. `block`: bytes per rank.
int allgatherCore(switchagg_coll_comm_t* core, const void* sbuf, int scount, MPI_Datatype sdtype,
                  void* rbuf, int rcount, MPI_Datatype rdtype, MPI_Comm comm, size_t block) {
  int size = 0, rank = 0;
  (void)PMPI_Comm_size(comm, &size);
  (void)PMPI_Comm_rank(comm, &rank);
  MPI_Aint lb = 0, extent = 0;
  (void)PMPI_Type_get_extent(rdtype, &lb, &extent);
  const MPI_Aint rstride = extent * rcount;
  const bool plain_recv = switchagg::pmpi::plainBytes(rdtype, rcount);
  std::vector<char> staged_recv, staged_send;
  void* recv_image = rbuf;
  const void* send_image = nullptr;
  if (!plain_recv) {
    staged_recv.resize(size_t(size) * block + 1);
    recv_image = staged_recv.data();
  }
  if (sbuf == MPI_IN_PLACE) {
    if (!plain_recv && pack(static_cast<char*>(rbuf) + rank * rstride, rcount, rdtype,
                            staged_recv.data() + size_t(rank) * block, block, comm))
      return SWITCHAGG_OUTCOME_ERROR;
  } else if (switchagg::pmpi::plainBytes(sdtype, scount)) {
    send_image = sbuf;
  } else {
    staged_send.resize(block + 1);
    if (pack(sbuf, scount, sdtype, staged_send.data(), block, comm)) return SWITCHAGG_OUTCOME_ERROR;
    send_image = staged_send.data();
  }
  int rc = switchagg_coll_allgather(core, send_image, recv_image, block);
  for (int r = 0; rc == SWITCHAGG_OUTCOME_DONE && !plain_recv && r < size; ++r)
    if (unpack(staged_recv.data() + size_t(r) * block, block,
               static_cast<char*>(rbuf) + r * rstride, rcount, rdtype, comm))
      rc = SWITCHAGG_OUTCOME_ERROR;
  return rc;
}

}  // namespace

extern "C" {

int MPI_Reduce_scatter(const void* sbuf, void* rbuf, const int rcounts[], MPI_Datatype dtype,
                       MPI_Op op, MPI_Comm comm) {
  switchagg_coll_comm_t* core = coreOf(comm);
  if (core == nullptr) return PMPI_Reduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm);
  return answer(
      reduceScatterCore(core, sbuf, rbuf, rcounts, 0, dtype, op, comm,
                        SWITCHAGG_COLL_REDUCE_SCATTER),
      comm, core, SWITCHAGG_COLL_REDUCE_SCATTER,
      [&] { return PMPI_Reduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm); },
      [&](MPI_Request* r) {
        return PMPI_Ireduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm, r);
      });
}

int MPI_Reduce_scatter_block(const void* sbuf, void* rbuf, int rcount, MPI_Datatype dtype,
                             MPI_Op op, MPI_Comm comm) {
  switchagg_coll_comm_t* core = coreOf(comm);
  if (core == nullptr) return PMPI_Reduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm);
  return answer(
      reduceScatterCore(core, sbuf, rbuf, nullptr, rcount, dtype, op, comm,
                        SWITCHAGG_COLL_REDUCE_SCATTER_BLOCK),
      comm, core, SWITCHAGG_COLL_REDUCE_SCATTER_BLOCK,
      [&] { return PMPI_Reduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm); },
      [&](MPI_Request* r) {
        return PMPI_Ireduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm, r);
      });
}

int MPI_Allgather(const void* sbuf, int scount, MPI_Datatype sdtype, void* rbuf, int rcount,
                  MPI_Datatype rdtype, MPI_Comm comm) {
  switchagg_coll_comm_t* core = coreOf(comm);
  if (core == nullptr) return PMPI_Allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm);
  // The receive side's block: every rank's signatures match, so every rank
  // sees the same byte count and decides alike.
  const size_t block = switchagg::pmpi::typeBytes(rdtype, rcount);
  int rc = SWITCHAGG_OUTCOME_DECLINED;
  if (block <= size_t(INT_MAX))
    rc = allgatherCore(core, sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, block);
  else
    switchagg_coll_note_routed_fallback(core, SWITCHAGG_COLL_ALLGATHER, "over INT_MAX bytes");
  return answer(
      rc, comm, core, SWITCHAGG_COLL_ALLGATHER,
      [&] { return PMPI_Allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm); },
      [&](MPI_Request* r) {
        return PMPI_Iallgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, r);
      });
}

int MPI_Bcast(void* buf, int count, MPI_Datatype dtype, int root, MPI_Comm comm) {
  switchagg_coll_comm_t* core = coreOf(comm);
  if (core == nullptr) return PMPI_Bcast(buf, count, dtype, root, comm);
  const size_t bytes = switchagg::pmpi::typeBytes(dtype, count);
  int rc = SWITCHAGG_OUTCOME_DECLINED;
  if (bytes > size_t(INT_MAX)) {
    switchagg_coll_note_routed_fallback(core, SWITCHAGG_COLL_BCAST, "over INT_MAX bytes");
  } else if (switchagg::pmpi::plainBytes(dtype, count)) {
    rc = switchagg_coll_bcast(core, buf, bytes, root);
  } else {
    int rank = 0;
    (void)PMPI_Comm_rank(comm, &rank);
    std::vector<char> staged(bytes + 1);
    if (rank == root && pack(buf, count, dtype, staged.data(), bytes, comm)) return failed(comm);
    rc = switchagg_coll_bcast(core, staged.data(), bytes, root);
    if (rc == SWITCHAGG_OUTCOME_DONE && rank != root &&
        unpack(staged.data(), bytes, buf, count, dtype, comm))
      rc = SWITCHAGG_OUTCOME_ERROR;
  }
  return answer(
      rc, comm, core, SWITCHAGG_COLL_BCAST,
      [&] { return PMPI_Bcast(buf, count, dtype, root, comm); },
      [&](MPI_Request* r) { return PMPI_Ibcast(buf, count, dtype, root, comm, r); });
}

// Diagnostics (mpi_coll/include/switchagg/coll/diagnostics.h): the same
// symbols the Open MPI component exports, so the same checkers find them.
__attribute__((visibility("default"))) const char* switchagg_coll_last_algorithm(MPI_Comm comm) {
  switchagg::pmpi::CommEntry* e = switchagg::pmpi::existingEntryOf(comm);
  return e == nullptr || e->core == nullptr ? nullptr : switchagg_coll_last_path(e->core);
}

__attribute__((visibility("default"))) uint64_t switchagg_coll_comm_counter(MPI_Comm comm,
                                                                            const char* name) {
  switchagg::pmpi::CommEntry* e = switchagg::pmpi::existingEntryOf(comm);
  if (e != nullptr) return e->core == nullptr ? UINT64_MAX : switchagg_coll_counter(e->core, name);
  // Set up on its first served call: until then nothing is counted on an
  // intra-communicator the layer serves (the component's module exists
  // from the communicator's creation and counts 0 as well).
  int inter = 0;
  if (!switchagg::pmpi::active() || comm == MPI_COMM_NULL ||
      PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter)
    return UINT64_MAX;
  return 0;
}

}  // extern "C"
