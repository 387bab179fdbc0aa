/* Open MPI coll component "switchagg": types shared by the glue files.
 * The glue is C because Open MPI's internal headers are not C++-clean; the
 * work happens in the C++ core behind core/runtime/coll_core.h. */
#ifndef MCA_COLL_SWITCHAGG_H
#define MCA_COLL_SWITCHAGG_H

#include "ompi_config.h"

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/coll.h"

#include "coll_switchagg_compat.h"

#include "coll_core.h"
#include "nonblocking_engine.h"
#include "switchagg_mpi_types.h"

BEGIN_C_DECLS

#define MCA_COLL_SWITCHAGG_TYPE_BOOL bool
#define MCA_COLL_SWITCHAGG_TYPE_INT int
#define MCA_COLL_SWITCHAGG_TYPE_ENUM int
#define MCA_COLL_SWITCHAGG_TYPE_ALGO int
#define MCA_COLL_SWITCHAGG_TYPE_STRING char *
#define MCA_COLL_SWITCHAGG_TYPE_INFO char *
#define MCA_COLL_SWITCHAGG_FIELD_(NAME, KIND, DEF, MIN, MAX, VALUES, LAYERS, LEVEL, SCOPE, ENV, \
                                  HELP)                                                        \
  SWITCHAGG_COLL_IF_MCA_##LAYERS(MCA_COLL_SWITCHAGG_TYPE_##KIND NAME;)

typedef struct mca_coll_switchagg_component_t {
  switchagg_coll_component_base_t super;
  /* MCA parameters: one field per row of the coll parameter table of layer
   * MCA (switchagg/coll/coll_params.h), named as the parameter; storage
   * registered with the MCA variable system. An ENUM or ALGO holds the
   * index of its value (the enum's value). */
  SWITCHAGG_COLL_PARAMS(MCA_COLL_SWITCHAGG_FIELD_)
  bool progress_registered;
  /* False when the parameters were rejected at open: comm_query then
   * declines every communicator. */
  bool usable;
} mca_coll_switchagg_component_t;

SWITCHAGG_MODULE_DECLSPEC extern mca_coll_switchagg_component_t mca_coll_switchagg_component;

/* The previous modules' functions a module keeps, one line each: X(name)
 * gives the fields previous_<name> (c_coll->coll_<name> when we were
 * enabled: what would serve the call without us) and
 * previous_<name>_module (retained while kept; NULL when no module below us
 * has one: the entry point then reports OMPI_ERR_NOT_SUPPORTED, as Open MPI
 * would). allreduce, allgather and barrier are always there (basic has
 * them; module_enable declines otherwise); MPI_Allreduce_init (MPI-4
 * persistent; MPIX_ on 4.1) always goes to the previous module (counted;
 * docs/openmpi5.md). module_construct, module_enable and release_previous
 * (coll_switchagg_module.c) walk this list. */
#define MCA_COLL_SWITCHAGG_PREVIOUS(X)                                                    \
  X(allreduce) X(allgather) X(barrier) X(reduce) X(reduce_scatter)                        \
  X(reduce_scatter_block) X(bcast) X(iallreduce) X(ibarrier) X(iallgather) X(ibcast)      \
  X(ireduce_scatter_block) X(allreduce_init)
#define MCA_COLL_SWITCHAGG_PREVIOUS_FIELDS_(NAME)      \
  mca_coll_base_module_##NAME##_fn_t previous_##NAME; \
  mca_coll_base_module_t *previous_##NAME##_module;

typedef struct mca_coll_switchagg_module_t {
  mca_coll_base_module_t super;
  switchagg_coll_comm_t* core;
  MCA_COLL_SWITCHAGG_PREVIOUS(MCA_COLL_SWITCHAGG_PREVIOUS_FIELDS_)
  struct ompi_communicator_t* comm;
  /* MPI_Iallreduce and the other nonblocking calls routed to the switch
   * (coll_switchagg_iallreduce.c, coll_switchagg_nbc.c): the calls queued
   * for the switch (head first), a private duplicate of comm for the
   * agreements and redos started from progress, and the link in the list of
   * modules with queued calls. */
  switchagg_nb_queue_t iqueue; /* the core engine's (coll_switchagg_nbc.c) */
  struct ompi_communicator_t* iprivate;
  /* While iprivate is made: every call on this communicator is Open MPI's
   * own (its cid agreement, posted from any thread's progress), never routed. */
  bool icreating_private;
  struct mca_coll_switchagg_module_t* inext_active;
  bool iactive;
} mca_coll_switchagg_module_t;

OBJ_CLASS_DECLARATION(mca_coll_switchagg_module_t);

/* coll_switchagg_pvars.c: the MPI_T performance variables (at register). */
int mca_coll_switchagg_register_pvars(const mca_base_component_t* component);
/* coll_switchagg_module.c: a counter of the communicator (diagnostics.h). */
SWITCHAGG_MODULE_DECLSPEC uint64_t switchagg_coll_comm_counter(MPI_Comm comm, const char* name);

/* coll_switchagg_module.c */
mca_coll_base_module_t* mca_coll_switchagg_comm_query(struct ompi_communicator_t* comm,
                                                      int* priority);
int mca_coll_switchagg_allreduce(const void* sbuf, void* rbuf, int count,
                                 struct ompi_datatype_t* dtype, struct ompi_op_t* op,
                                 struct ompi_communicator_t* comm, mca_coll_base_module_t* module);

/* coll_switchagg_iallreduce.c */
int mca_coll_switchagg_iallreduce(const void* sbuf, void* rbuf, int count,
                                  struct ompi_datatype_t* dtype, struct ompi_op_t* op,
                                  struct ompi_communicator_t* comm, ompi_request_t** request,
                                  mca_coll_base_module_t* module);
int mca_coll_switchagg_ibarrier(struct ompi_communicator_t* comm, ompi_request_t** request,
                                mca_coll_base_module_t* module);
int mca_coll_switchagg_iallgather(const void* sbuf, int scount, struct ompi_datatype_t* sdtype,
                                  void* rbuf, int rcount, struct ompi_datatype_t* rdtype,
                                  struct ompi_communicator_t* comm, ompi_request_t** request,
                                  mca_coll_base_module_t* module);
int mca_coll_switchagg_ibcast(void* buff, int count, struct ompi_datatype_t* datatype, int root,
                              struct ompi_communicator_t* comm, ompi_request_t** request,
                              mca_coll_base_module_t* module);
int mca_coll_switchagg_ireduce_scatter_block(const void* sbuf, void* rbuf, int rcount,
                                             struct ompi_datatype_t* dtype, struct ompi_op_t* op,
                                             struct ompi_communicator_t* comm,
                                             ompi_request_t** request,
                                             mca_coll_base_module_t* module);

/* coll_switchagg_buffers.c: byte images of allgather's and bcast's buffers.
 * plain_bytes: `count` elements of dt are one run of count * size bytes at
 * the buffer; pack / unpack: MPI_Pack / MPI_Unpack to / from `bytes`
 * staged bytes. */
bool mca_coll_switchagg_plain_bytes(struct ompi_datatype_t* dt, int count);
size_t mca_coll_switchagg_type_bytes(struct ompi_datatype_t* dt, int count);
ptrdiff_t mca_coll_switchagg_type_extent(struct ompi_datatype_t* dt);
int mca_coll_switchagg_pack(const void* buf, int count, struct ompi_datatype_t* dt, void* staged,
                            size_t bytes, struct ompi_communicator_t* comm);
int mca_coll_switchagg_unpack(const void* staged, size_t bytes, void* buf, int count,
                              struct ompi_datatype_t* dt, struct ompi_communicator_t* comm);
/* MPI_Allreduce_init: handed to the previous module, counted as the
 * communicator's "iallreduce:previous:persistent". */
int mca_coll_switchagg_allreduce_init(const void* sbuf, void* rbuf, int count,
                                      struct ompi_datatype_t* dtype, struct ompi_op_t* op,
                                      struct ompi_communicator_t* comm, struct ompi_info_t* info,
                                      ompi_request_t** request, mca_coll_base_module_t* module);
/* Completes the module's queued MPI_Iallreduce calls (before a blocking
 * call that may use the switch path on the same communicator). */
void mca_coll_switchagg_iallreduce_drain(mca_coll_switchagg_module_t* m);
/* Module teardown: frees the private communicator. */
void mca_coll_switchagg_iallreduce_release(mca_coll_switchagg_module_t* m);
/* Our private duplicates carry this info key (set before Open MPI selects
 * their coll modules, whichever thread's progress activates them):
 * comm_query declines them. */
#define MCA_COLL_SWITCHAGG_PRIVATE_KEY "switchagg_private"
bool mca_coll_switchagg_is_private(struct ompi_communicator_t* comm);

/* coll_switchagg_buffers.c: true when Open MPI (built CUDA-aware) handed us
 * device memory: the send buffer, or the receive buffer when there is none
 * (NULL, MPI_IN_PLACE). The host kernels must never read it; every
 * operation declines it. */
bool mca_coll_switchagg_device_buffers(const void* sbuf, void* rbuf);
/* Unregisters the iallreduce progress callback (component close). */
void mca_coll_switchagg_iallreduce_close(void);

int mca_coll_switchagg_barrier(struct ompi_communicator_t* comm, mca_coll_base_module_t* module);

/* coll_switchagg_routed.c: the routed collectives (docs/offload.md). */
int mca_coll_switchagg_reduce(const void* sbuf, void* rbuf, int count,
                              struct ompi_datatype_t* dtype, struct ompi_op_t* op, int root,
                              struct ompi_communicator_t* comm, mca_coll_base_module_t* module);
int mca_coll_switchagg_reduce_scatter(const void* sbuf, void* rbuf, const int* rcounts,
                                      struct ompi_datatype_t* dtype, struct ompi_op_t* op,
                                      struct ompi_communicator_t* comm,
                                      mca_coll_base_module_t* module);
int mca_coll_switchagg_reduce_scatter_block(const void* sbuf, void* rbuf, int rcount,
                                            struct ompi_datatype_t* dtype, struct ompi_op_t* op,
                                            struct ompi_communicator_t* comm,
                                            mca_coll_base_module_t* module);
int mca_coll_switchagg_allgather(const void* sbuf, int scount, struct ompi_datatype_t* sdtype,
                                 void* rbuf, int rcount, struct ompi_datatype_t* rdtype,
                                 struct ompi_communicator_t* comm, mca_coll_base_module_t* module);
int mca_coll_switchagg_bcast(void* buff, int count, struct ompi_datatype_t* datatype, int root,
                             struct ompi_communicator_t* comm, mca_coll_base_module_t* module);

/* The MPI code of a blocking call the core settled: served, or failed (the
 * core logged why; MPI's error handler decides, fatal by default: a silently
 * wrong result is never an option). -1: declined, the previous module serves
 * it. */
static inline int mca_coll_switchagg_settled(int outcome) {
  if (SWITCHAGG_OUTCOME_DONE == outcome) return OMPI_SUCCESS;
  if (SWITCHAGG_OUTCOME_ERROR == outcome) return MPI_ERR_OTHER;
  return -1;
}

/* The datatype/op mapping: switchagg_mpi_classify (mpi_coll/shared). */

END_C_DECLS

#endif /* MCA_COLL_SWITCHAGG_H */
