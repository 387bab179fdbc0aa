// What the opaque switchagg_coll_comm_t of coll_core.h holds, for the
// files that implement its C API (coll_core.cc, iallreduce.cc,
// nonblocking/nonblocking_host.cc).
#pragma once

#include <exception>

#include "coll_core.h"
#include "comm_state.h"
#include "iallreduce.h"
#include "switchagg/common/log.h"

namespace switchagg::coll {

// Runs `body` of a C entry point; an escaping exception is logged (naming
// `where`) and turned into `on_error`: nothing throws into Open MPI's C.
template <typename T, typename F>
T guarded(const char* where, T on_error, F&& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    SA_ERROR("coll", "%s: unexpected exception: %s", where, e.what());
  } catch (...) {
    SA_ERROR("coll", "%s: unexpected exception", where);
  }
  return on_error;
}

}  // namespace switchagg::coll

struct switchagg_coll_comm {
  explicit switchagg_coll_comm(const switchagg_coll_comm_info_t& info) : state(info) {}
  switchagg::coll::CommState state;
  switchagg::coll::IallreduceCounters iallreduce;  // MPI_Iallreduce (iallreduce.h)
  switchagg::coll::IallreduceCounters ibarrier;    // MPI_Ibarrier, the same stream
  switchagg::coll::IallreduceCounters iallgather;  // MPI_Iallgather, a routed stream
  switchagg::coll::IallreduceCounters ibcast;      // MPI_Ibcast, a routed stream
  switchagg::coll::IallreduceCounters ireduce_scatter_block;  // MPI_Ireduce_scatter_block
  // The running stream's counters (one of the above: set when it started).
  switchagg::coll::IallreduceCounters* istream = &iallreduce;
  double istream_agree_start_us = 0;  // when its outcome agreement began (0: none)
};

namespace switchagg::coll {

// MPI_Iallgather / MPI_Ibcast / MPI_Ireduce_scatter_block: the routed op's
// counters, null for another op.
inline IallreduceCounters* iroutedCounters(switchagg_coll_comm& comm, int routed_op) {
  if (routed_op == int(SWITCHAGG_COLL_ALLGATHER)) return &comm.iallgather;
  if (routed_op == int(SWITCHAGG_COLL_BCAST)) return &comm.ibcast;
  if (routed_op == int(SWITCHAGG_COLL_REDUCE_SCATTER_BLOCK)) return &comm.ireduce_scatter_block;
  return nullptr;
}

// A nonblocking call's counters by its kind (switchagg_coll_kind): the
// routed ones above, MPI_Ibarrier's, MPI_Iallreduce's; null for another.
inline IallreduceCounters* icounters(switchagg_coll_comm& comm, int kind) {
  if (kind == int(SWITCHAGG_COLL_ALLREDUCE)) return &comm.iallreduce;
  if (kind == int(SWITCHAGG_COLL_BARRIER)) return &comm.ibarrier;
  return iroutedCounters(comm, kind);
}

}  // namespace switchagg::coll
