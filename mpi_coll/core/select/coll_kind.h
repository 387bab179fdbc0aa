/* The kind of collective: one enum for the glues (C), the core and the
 * selector (C++). The routed collectives (docs/offload.md "Routed
 * collectives") come first, so that their values index the per-kind
 * arrays (counters, tuners) below SWITCHAGG_COLL_NUM_ROUTED;
 * reduce_scatter_block is reduce_scatter with equal counts, counted apart.
 * The values are what the C interface passes (coll_core.h, iallreduce.h,
 * nonblocking_engine.h). Plain C. */
#ifndef SWITCHAGG_COLL_KIND_H
#define SWITCHAGG_COLL_KIND_H

enum switchagg_coll_kind {
  /* routed */
  SWITCHAGG_COLL_REDUCE = 0, SWITCHAGG_COLL_REDUCE_SCATTER = 1,
  SWITCHAGG_COLL_REDUCE_SCATTER_BLOCK = 2, SWITCHAGG_COLL_ALLGATHER = 3, SWITCHAGG_COLL_BCAST = 4,
  /* not routed; a barrier on the switch is a one-int32 sum of ones */
  SWITCHAGG_COLL_ALLREDUCE = 5, SWITCHAGG_COLL_BARRIER = 6
};
/* The routed kinds are those below it. */
#define SWITCHAGG_COLL_NUM_ROUTED 5

static inline int switchagg_coll_kind_is_routed(int kind) {
  return kind >= 0 && kind < SWITCHAGG_COLL_NUM_ROUTED;
}

#ifdef __cplusplus
#include <cstddef>

namespace switchagg::coll {

using CollKind = switchagg_coll_kind;
inline constexpr size_t kNumRoutedKinds = SWITCHAGG_COLL_NUM_ROUTED;
// "reduce", "reduce_scatter", "reduce_scatter_block", "allgather", "bcast",
// "allreduce", "barrier": the prefix of its counters (reduce:switch, ...).
const char* collKindName(CollKind kind);

}  // namespace switchagg::coll
#endif

#endif /* SWITCHAGG_COLL_KIND_H */
