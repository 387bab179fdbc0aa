// What the opaque switchagg_coll_comm_t of coll_core.h holds, for the
// files that implement its C API (coll_core.cc, iallreduce.cc).
#pragma once

#include "coll_core.h"
#include "comm_state.h"
#include "iallreduce.h"

struct switchagg_coll_comm {
  explicit switchagg_coll_comm(const switchagg_coll_comm_info_t& info) : state(info) {}
  switchagg::coll::CommState state;
  switchagg::coll::IallreduceCounters iallreduce;  // MPI_Iallreduce (iallreduce.h)
};
