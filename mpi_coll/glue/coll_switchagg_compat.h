/* The seam between the Open MPI releases the glue builds against (4.1 and
 * 5.0; CMake reports which, mpi_coll/CMakeLists.txt). Every difference the
 * glue sees is named here once; the other glue files and the core never
 * test a version themselves.
 *
 *   exported symbols: 4.1 marks a component's with OMPI_MODULE_DECLSPEC,
 *   5.0 dropped it for OMPI_DECLSPEC (default visibility).
 *
 *   communicator id: 4.1's cid is agreed by all ranks; 5.0's local cid
 *   may differ between ranks (the extended 128-bit cid is the agreed one),
 *   so the core's context id (its transport group id) is folded from that.
 *
 *   coll framework version: 4.1 speaks coll 2.0.0, 5.0 coll 2.4.0 (the
 *   component struct and the version macro carry the number; Open MPI
 *   refuses a component of another framework version at load).
 *
 * What did not change between them and is relied on as is: modules are
 * enabled lowest priority first, so at module_enable comm->c_coll holds the
 * functions (and modules) that would run without us, which we save and
 * retain per communicator (coll_switchagg_module.c). */
#ifndef MCA_COLL_SWITCHAGG_COMPAT_H
#define MCA_COLL_SWITCHAGG_COMPAT_H

#include "ompi_config.h"

#include "ompi/mca/coll/coll.h"

#include <stdint.h>

#include "ompi/communicator/communicator.h"

#if OMPI_MAJOR_VERSION >= 5
typedef mca_coll_base_component_2_4_0_t switchagg_coll_component_base_t;
#define SWITCHAGG_COLL_BASE_VERSION MCA_COLL_BASE_VERSION_2_4_0
#define SWITCHAGG_MODULE_DECLSPEC OMPI_DECLSPEC
static inline uint32_t switchagg_comm_context_id(struct ompi_communicator_t* comm) {
  const ompi_comm_extended_cid_t x = ompi_comm_get_extended_cid(comm);
  const uint64_t folded = x.cid_base ^ (x.cid_sub.u64 * UINT64_C(0x9e3779b97f4a7c15));
  return (uint32_t)(folded ^ (folded >> 32));
}
#elif OMPI_MAJOR_VERSION == 4 && OMPI_MINOR_VERSION >= 1
typedef mca_coll_base_component_2_0_0_t switchagg_coll_component_base_t;
#define SWITCHAGG_COLL_BASE_VERSION MCA_COLL_BASE_VERSION_2_0_0
#define SWITCHAGG_MODULE_DECLSPEC OMPI_MODULE_DECLSPEC
static inline uint32_t switchagg_comm_context_id(struct ompi_communicator_t* comm) {
  return ompi_comm_get_cid(comm);
}
#else
#error "switchagg's coll component builds against Open MPI 4.1 or 5.0"
#endif

#endif /* MCA_COLL_SWITCHAGG_COMPAT_H */
