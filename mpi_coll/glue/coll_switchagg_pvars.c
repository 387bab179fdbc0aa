/* MPI_T performance variables: the component's per-communicator counters
 * where MPI tools read an MPI library's own (MPI_T_pvar_*; listed by
 * apps/mpit, switchagg-mpit). Each is a read-only, continuous counter
 * bound to a communicator, named coll_switchagg_<name>, read through the
 * same counters as switchagg_coll_comm_counter() and the verbose summary
 * at communicator free; 0 on a communicator switchagg does not serve. */
#include "coll_switchagg.h"

#include "opal/mca/base/mca_base_pvar.h"

typedef struct {
  const char *name;    /* after coll_switchagg_ */
  const char *counter; /* switchagg_coll_counter() name */
  const char *description;
} switchagg_pvar_t;

static const switchagg_pvar_t switchagg_pvars[] = {
    {"allreduce_switch", "switch",
     "MPI_Allreduce calls on this communicator served through the switch agent"},
    {"allreduce_ring", "ring", "MPI_Allreduce calls served by the ring host algorithm"},
    {"allreduce_recursive_doubling", "recursive_doubling",
     "MPI_Allreduce calls served by the recursive doubling host algorithm"},
    {"allreduce_rabenseifner", "rabenseifner",
     "MPI_Allreduce calls served by the Rabenseifner host algorithm"},
    {"allreduce_hierarchical", "hierarchical",
     "MPI_Allreduce calls served by the hierarchical host algorithm"},
    {"allreduce_local", "local",
     "MPI_Allreduce calls that needed no communication (count 0 or one rank)"},
    {"allreduce_previous", "fallback",
     "MPI_Allreduce calls handed to the previous coll module (any reason: unsupported "
     "datatype or op, selection, a failed switch call redone there)"},
    {"allreduce_switch_failed", "fallback:switch-failed",
     "MPI_Allreduce calls whose switch-path attempt failed (agent gone, lease revoked, "
     "member lost) and that were redone on the host"},
    {"allreduce_switch_busy", "fallback:switch-busy",
     "MPI_Allreduce calls the agent refused as busy (slots or the port's credit in use) and that ran on the host"},
    {"switch_bytes_sent", "switch:bytes_sent",
     "Bytes this rank sent to the switch agent for this communicator's calls"},
    {"host_bytes_sent", "host:bytes_sent",
     "Bytes this rank sent to other ranks in this communicator's host algorithms"},
    {"barrier_switch", "barrier:switch", "MPI_Barrier calls served through the switch agent"},
    {"tune_agreements", "tune:agreements",
     "Agreements of online tuning among the ranks (a choice settled or measured again)"},
};

static int switchagg_pvar_read(const struct mca_base_pvar_t *pvar, void *value, void *obj) {
  const switchagg_pvar_t *p = (const switchagg_pvar_t *)pvar->ctx;
  uint64_t v = switchagg_coll_comm_counter((MPI_Comm)obj, p->counter);
  *(unsigned long long *)value = (UINT64_MAX == v) ? 0ULL : (unsigned long long)v;
  return OPAL_SUCCESS;
}

static int switchagg_pvar_notify(struct mca_base_pvar_t *pvar, mca_base_pvar_event_t event,
                                 void *obj, int *count) {
  (void)pvar;
  (void)obj;
  if (MCA_BASE_PVAR_HANDLE_BIND == event) *count = 1; /* one value per communicator */
  return OPAL_SUCCESS;
}

int mca_coll_switchagg_register_pvars(const mca_base_component_t *component) {
  size_t i;
  for (i = 0; i < sizeof(switchagg_pvars) / sizeof(switchagg_pvars[0]); ++i) {
    int rc = mca_base_component_pvar_register(
        component, switchagg_pvars[i].name, switchagg_pvars[i].description, OPAL_INFO_LVL_4,
        MCA_BASE_PVAR_CLASS_COUNTER, MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, NULL,
        MCA_BASE_VAR_BIND_MPI_COMM, MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS,
        switchagg_pvar_read, NULL, switchagg_pvar_notify, (void *)&switchagg_pvars[i]);
    if (rc < 0) return rc;
  }
  return OPAL_SUCCESS;
}
