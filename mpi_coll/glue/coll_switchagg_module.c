/* Module: one per communicator. Saves the previous modules' functions at
 * enable, forwards MPI_Allreduce and MPI_Barrier to the core (the routed
 * collectives: coll_switchagg_routed.c),
 * and hands every call the core does not serve to the previous module - a
 * call never fails because switchagg declined. */
#include "coll_switchagg.h"

#include <stdint.h>
#include <string.h>

#include "iallreduce.h"
#include "opal/util/info.h"
#include "opal/util/proc.h"

#define CONSTRUCT_PREVIOUS_(NAME) \
  m->previous_##NAME = NULL;      \
  m->previous_##NAME##_module = NULL;
static void module_construct(mca_coll_switchagg_module_t *m) {
  m->core = NULL;
  MCA_COLL_SWITCHAGG_PREVIOUS(CONSTRUCT_PREVIOUS_)
  m->comm = NULL;
  memset(&m->iqueue, 0, sizeof m->iqueue);
  m->iprivate = NULL;
  m->icreating_private = false;
  m->inext_active = NULL;
  m->iactive = false;
}

#define RELEASE_PREVIOUS_(NAME)                                                        \
  if (NULL != m->previous_##NAME##_module) OBJ_RELEASE(m->previous_##NAME##_module); \
  m->previous_##NAME##_module = NULL;
static void release_previous(mca_coll_switchagg_module_t *m) {
  MCA_COLL_SWITCHAGG_PREVIOUS(RELEASE_PREVIOUS_)
}

static void module_destruct(mca_coll_switchagg_module_t *m) {
  mca_coll_switchagg_iallreduce_release(m);
  /* Frees the communicator's PeerGroup and its endpoints. */
  if (NULL != m->core) switchagg_coll_comm_destroy(m->core);
  m->core = NULL;
  release_previous(m);
}

OBJ_CLASS_INSTANCE(mca_coll_switchagg_module_t, mca_coll_base_module_t, module_construct,
                   module_destruct);

/* The core's address exchange rides on the previous module's allgather. */
static int previous_allgather(void *ctx, const void *send, void *recv, size_t bytes) {
  mca_coll_switchagg_module_t *m = (mca_coll_switchagg_module_t *)ctx;
  if (bytes > INT32_MAX) return -1;
  return m->previous_allgather(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, m->comm,
                               m->previous_allgather_module) == OMPI_SUCCESS ? 0 : -1;
}

#define SAVE_PREVIOUS_(NAME)                                             \
  m->previous_##NAME = comm->c_coll->coll_##NAME;                        \
  m->previous_##NAME##_module = comm->c_coll->coll_##NAME##_module;      \
  if (NULL != m->previous_##NAME##_module) OBJ_RETAIN(m->previous_##NAME##_module);
static int module_enable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm) {
  mca_coll_switchagg_module_t *m = (mca_coll_switchagg_module_t *)module;
  switchagg_coll_comm_info_t info;

  /* Modules are enabled lowest priority first: c_coll holds what would run
   * without us. Both must exist (basic always provides them). */
  if (NULL == comm->c_coll->coll_allreduce || NULL == comm->c_coll->coll_allgather ||
      NULL == comm->c_coll->coll_barrier)
    return OMPI_ERR_NOT_SUPPORTED;
  m->comm = comm;
  /* Each previous function and its module (retained): what serves a call
   * we do not (coll_switchagg.h, MCA_COLL_SWITCHAGG_PREVIOUS). One may be
   * NULL: comm_query installed our entry anyway (module_enable cannot change
   * the table after the fact), which then reports MPI_ERR_NOT_SUPPORTED. */
  MCA_COLL_SWITCHAGG_PREVIOUS(SAVE_PREVIOUS_)

  info.rank = ompi_comm_rank(comm);
  info.size = ompi_comm_size(comm);
  info.context_id = switchagg_comm_context_id(comm);
  info.name = comm->c_name;
  info.node_name = opal_process_info.nodename;
  info.allgather_ctx = m;
  info.allgather = previous_allgather;
  m->core = switchagg_coll_comm_create(&info);
  /* Without a core every call goes to the previous module. */
  return OMPI_SUCCESS;
}

static int module_disable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm) {
  (void)comm;
  /* Break the reference to the previous modules early so that they are not
   * kept alive by us while the communicator tears down. */
  mca_coll_switchagg_module_t *m = (mca_coll_switchagg_module_t *)module;
  mca_coll_switchagg_iallreduce_release(m);
  if (NULL != m->core) switchagg_coll_comm_destroy(m->core);
  m->core = NULL;
  release_previous(m);
  return OMPI_SUCCESS;
}

bool mca_coll_switchagg_is_private(struct ompi_communicator_t *comm) {
  bool value = false;
  int flag = 0;
  if (NULL == comm->super.s_info) return false;
  /* Open MPI 4.1 takes the key as char *. */
  if (OPAL_SUCCESS !=
      opal_info_get_bool(comm->super.s_info, (char *)MCA_COLL_SWITCHAGG_PRIVATE_KEY, &value, &flag))
    return false;
  return flag && value;
}

mca_coll_base_module_t *mca_coll_switchagg_comm_query(struct ompi_communicator_t *comm,
                                                      int *priority) {
  mca_coll_switchagg_component_t *c = &mca_coll_switchagg_component;
  mca_coll_switchagg_module_t *m;

  /* Same answer on every rank: depends only on parameters (ALL_EQ) and the
   * communicator's kind. Inter-communicators keep their own modules. */
  if (!c->enable || !c->usable || c->priority < 0 || OMPI_COMM_IS_INTER(comm)) return NULL;
  /* Our own private duplicate (MPI_Iallreduce's agreements) stays with the
   * other components. */
  if (mca_coll_switchagg_is_private(comm)) return NULL;
  m = OBJ_NEW(mca_coll_switchagg_module_t);
  if (NULL == m) return NULL;
  *priority = c->priority;
  m->super.coll_module_enable = module_enable;
  m->super.coll_module_disable = module_disable;
  m->super.coll_allreduce = mca_coll_switchagg_allreduce;
  m->super.coll_barrier = mca_coll_switchagg_barrier;
  m->super.coll_iallreduce = mca_coll_switchagg_iallreduce;
  m->super.coll_ibarrier = mca_coll_switchagg_ibarrier;
  m->super.coll_iallgather = mca_coll_switchagg_iallgather;
  m->super.coll_ibcast = mca_coll_switchagg_ibcast;
  m->super.coll_ireduce_scatter_block = mca_coll_switchagg_ireduce_scatter_block;
  m->super.coll_reduce = mca_coll_switchagg_reduce;
  m->super.coll_reduce_scatter = mca_coll_switchagg_reduce_scatter;
  m->super.coll_reduce_scatter_block = mca_coll_switchagg_reduce_scatter_block;
  m->super.coll_allgather = mca_coll_switchagg_allgather;
  m->super.coll_bcast = mca_coll_switchagg_bcast;
  m->super.coll_allreduce_init = mca_coll_switchagg_allreduce_init;
  return &m->super;
}

int mca_coll_switchagg_allreduce(const void *sbuf, void *rbuf, int count,
                                 struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                 struct ompi_communicator_t *comm,
                                 mca_coll_base_module_t *module) {
  mca_coll_switchagg_module_t *m = (mca_coll_switchagg_module_t *)module;
  int sa_dtype = 0, sa_op = 0, flags = 0, scale = 1;
  const char *why = switchagg_mpi_classify(dtype, op, &sa_dtype, &sa_op, &flags, &scale);

  mca_coll_switchagg_iallreduce_drain(m); /* the switch path is one call at a time */
  if (NULL == why && mca_coll_switchagg_device_buffers(sbuf, rbuf)) why = "device memory";
  if (NULL != m->core && NULL == why && count >= 0) {
    int rc = switchagg_coll_allreduce(m->core, MPI_IN_PLACE == sbuf ? NULL : sbuf, rbuf,
                                      (size_t)count * (size_t)scale, sa_dtype, sa_op, flags);
    if ((rc = mca_coll_switchagg_settled(rc)) >= 0) return rc;
    /* Declined: the previous module serves, and online tuning times it. */
    rc = m->previous_allreduce(sbuf, rbuf, count, dtype, op, comm, m->previous_allreduce_module);
    if (OMPI_SUCCESS == rc && 0 != switchagg_coll_previous_done(m->core)) return MPI_ERR_OTHER;
    return rc;
  } else if (NULL != m->core && NULL != why) {
    switchagg_coll_note_fallback(m->core, why);
  }
  return m->previous_allreduce(sbuf, rbuf, count, dtype, op, comm, m->previous_allreduce_module);
}

/* MPI_Allreduce_init (persistent, MPI-4): not served by the core. Every
 * call goes to the previous module (libnbc's persistent schedule), whose
 * request the caller starts and waits on; counted
 * (iallreduce:previous:persistent, the switchagg_coll_comm_counter
 * diagnostic) so that tests see the calls came through. Why not served:
 * docs/openmpi5.md "Persistent collectives". */
int mca_coll_switchagg_allreduce_init(const void *sbuf, void *rbuf, int count,
                                      struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                      struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                      ompi_request_t **request, mca_coll_base_module_t *module) {
  mca_coll_switchagg_module_t *m = (mca_coll_switchagg_module_t *)module;
  if (NULL == m->previous_allreduce_init) return OMPI_ERR_NOT_SUPPORTED;
  if (NULL != m->core) switchagg_coll_inote(m->core, SWITCHAGG_COLL_ALLREDUCE, "previous:persistent");
  return m->previous_allreduce_init(sbuf, rbuf, count, dtype, op, comm, info, request,
                                    m->previous_allreduce_init_module);
}

/* Through the switch path when the core serves it (offload on), else the
 * previous module's barrier. */
int mca_coll_switchagg_barrier(struct ompi_communicator_t *comm, mca_coll_base_module_t *module) {
  mca_coll_switchagg_module_t *m = (mca_coll_switchagg_module_t *)module;
  mca_coll_switchagg_iallreduce_drain(m);
  if (NULL != m->core) {
    int rc = switchagg_coll_barrier(m->core);
    if ((rc = mca_coll_switchagg_settled(rc)) >= 0) return rc;
  }
  return m->previous_barrier(comm, m->previous_barrier_module);
}

/* Diagnostics for tests and switchagg-bench (looked up with dlsym; see
 * mpi_coll/include/switchagg/coll/diagnostics.h). NULL / UINT64_MAX when
 * switchagg does not serve allreduce on `comm`. */
static mca_coll_switchagg_module_t *module_of(MPI_Comm comm) {
  if (NULL == comm || NULL == comm->c_coll ||
      comm->c_coll->coll_allreduce != mca_coll_switchagg_allreduce)
    return NULL;
  return (mca_coll_switchagg_module_t *)comm->c_coll->coll_allreduce_module;
}

SWITCHAGG_MODULE_DECLSPEC const char *switchagg_coll_last_algorithm(MPI_Comm comm) {
  mca_coll_switchagg_module_t *m = module_of(comm);
  return (NULL == m || NULL == m->core) ? NULL : switchagg_coll_last_path(m->core);
}

SWITCHAGG_MODULE_DECLSPEC uint64_t switchagg_coll_comm_counter(MPI_Comm comm, const char *name) {
  mca_coll_switchagg_module_t *m = module_of(comm);
  return (NULL == m || NULL == m->core) ? UINT64_MAX : switchagg_coll_counter(m->core, name);
}
