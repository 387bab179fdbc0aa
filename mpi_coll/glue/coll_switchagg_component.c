/* Component: MCA parameters, open/close, and the per-process checks.
 *
 *   coll_switchagg_enable               bool, default 1
 *   coll_switchagg_priority             int, default 90 (above tuned's 30)
 *   coll_switchagg_allreduce_algorithm  auto|ring|recursive_doubling|...
 *   coll_switchagg_offload              auto|on|off
 *   coll_switchagg_rules                path of a selection rules file
 *   coll_switchagg_verbose              0; 1 per communicator; 2+ per call
 *   coll_switchagg_stall_timeout        seconds a host step may wait (300; 0 = warn only)
 *   coll_switchagg_tune                 online|off: measure candidates, pick the fastest
 *   coll_switchagg_tune_file            where the job's rank 0 saves what was learnt
 *   coll_switchagg_thread_domains       MPI_THREAD_MULTIPLE: UCX workers with a lock each (4)
 *
 * Enum parameters are MCA enums: Open MPI itself rejects a value outside the
 * list with a message that lists the valid ones. A rules file that cannot
 * be read disables the component with one error line (jobs still run, on
 * the previous module). docs/mca-params.md documents all of them. */
#include "coll_switchagg.h"

#include <stdio.h>

#include "opal/mca/base/mca_base_var.h"
#include "opal/mca/base/mca_base_var_enum.h"
#include "opal/runtime/opal_progress.h"
#include "switchagg/common/version.h"

static const mca_base_var_enum_value_t offload_values[] = {
    {0, "auto"}, {1, "on"}, {2, "off"}, {0, NULL}};
static const mca_base_var_enum_value_t tune_values[] = {{0, "online"}, {1, "off"}, {0, NULL}};

static int switchagg_register(void);
static int switchagg_open(void);
static int switchagg_close(void);
static int switchagg_init_query(bool enable_progress_threads, bool enable_mpi_threads);
static int switchagg_progress(void) { return switchagg_coll_progress(); }

mca_coll_switchagg_component_t mca_coll_switchagg_component = {
    .super = {
        .collm_version = {
            SWITCHAGG_COLL_BASE_VERSION,
            .mca_component_name = "switchagg",
            MCA_BASE_MAKE_VERSION(component, SWITCHAGG_VERSION_MAJOR, SWITCHAGG_VERSION_MINOR,
                                  SWITCHAGG_VERSION_PATCH),
            .mca_open_component = switchagg_open,
            .mca_close_component = switchagg_close,
            .mca_register_component_params = switchagg_register,
        },
        .collm_data = {MCA_BASE_METADATA_PARAM_CHECKPOINT},
        .collm_init_query = switchagg_init_query,
        .collm_comm_query = mca_coll_switchagg_comm_query,
    },
    .enable = true,
    .priority = 90,
    .algorithm = 0,
    .offload = 0,
    .rules = NULL,
    .verbose = 0,
    .stall_timeout = 300,
    .tune = 0,
    .tune_file = NULL,
    .thread_domains = 4,
    .usable = true,
};

static int register_enum(const char *name, const char *help, const char *enum_name,
                         const mca_base_var_enum_value_t *values, int *storage) {
  mca_base_var_enum_t *enumerator = NULL;
  int rc = mca_base_var_enum_create(enum_name, values, &enumerator);
  if (OPAL_SUCCESS != rc) return rc;
  rc = mca_base_component_var_register(&mca_coll_switchagg_component.super.collm_version, name,
                                       help, MCA_BASE_VAR_TYPE_INT, enumerator, 0, 0,
                                       OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_ALL_EQ, storage);
  OBJ_RELEASE(enumerator);
  return rc < 0 ? rc : OPAL_SUCCESS;
}

static int register_algorithm(void) {
  /* The values come from the core's algorithm registry (auto first). */
  static mca_base_var_enum_value_t values[16];
  static char help[2048];
  int n = 0;
  const char *name;
  while (n < 15 && (name = switchagg_coll_algorithm_choice(n)) != NULL) {
    values[n].value = n;
    values[n].string = name;
    ++n;
  }
  values[n].value = 0;
  values[n].string = NULL;
  snprintf(help, sizeof help,
           "Allreduce algorithm: 'auto' lets the cost model and rules choose per call; a name "
           "forces that algorithm first (it may still decline, e.g. switch without a lease, "
           "and the next candidate runs). %s",
           switchagg_coll_algorithm_help());
  return register_enum("allreduce_algorithm", help, "coll_switchagg_allreduce_algorithm", values,
                       &mca_coll_switchagg_component.algorithm);
}

static int switchagg_register(void) {
  mca_coll_switchagg_component_t *c = &mca_coll_switchagg_component;
  const mca_base_component_t *v = &c->super.collm_version;
  int rc;

  (void)mca_base_component_var_register(
      v, "enable", "Enable the switchagg coll component (MPI_Allreduce via host algorithms "
                   "over UCX and switch offload); 0 leaves every call to the other components",
      MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_2, MCA_BASE_VAR_SCOPE_ALL_EQ, &c->enable);
  (void)mca_base_component_var_register(
      v, "priority", "Priority of the switchagg coll component (tuned is 30: keep it above to "
                     "serve MPI_Allreduce)",
      MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_ALL_EQ, &c->priority);
  rc = register_algorithm();
  if (OPAL_SUCCESS != rc) return rc;
  rc = register_enum("offload",
                     "Switch offload of MPI_Allreduce: auto (the cost model decides when a lease "
                     "is present), on (use the switch whenever it can serve), off (never)",
                     "coll_switchagg_offload", offload_values, &c->offload);
  if (OPAL_SUCCESS != rc) return rc;
  (void)mca_base_component_var_register(
      v, "rules", "Path of a selection rules file (format: docs/selection.md; example: "
                  "etc/switchagg/selection.rules); rules override the cost model, this "
                  "component's allreduce_algorithm overrides rules. Empty: no rules",
      MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_ALL_EQ,
      &c->rules);
  (void)mca_base_component_var_register(
      v, "verbose", "Verbosity: 0 errors and warnings only; 1 one line per communicator (setup, "
                    "first use of each algorithm, fallbacks, a summary when freed); 2 one line "
                    "per call; 3 transport detail",
      MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_LOCAL, &c->verbose);
  (void)mca_base_component_var_register(
      v, "stall_timeout",
      "Seconds a host-algorithm step may wait without progress before the allreduce fails "
      "with an error naming the peer and the message it waited for (a warning naming them "
      "comes after min(10, half of it) seconds). A peer that has not reached the call yet is "
      "normal MPI behaviour, so keep it above the job's worst load imbalance; 0 = warn only, "
      "never fail",
      MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL_EQ,
      &c->stall_timeout);
  rc = register_enum("tune",
                     "Online tuning of auto's choice: online (each communicator times the "
                     "candidates the cost model allows a few calls per message-size bucket, the "
                     "ranks agree on the slowest rank's median, and the fastest is used; a "
                     "slowdown, a switch fallback or a rejoin measures again), off (the cost "
                     "model alone). Forced algorithms, offload=on and rules always win",
                     "coll_switchagg_tune", tune_values, &c->tune);
  if (OPAL_SUCCESS != rc) return rc;
  (void)mca_base_component_var_register(
      v, "tune_file", "File where the job's rank 0 writes, at MPI_Finalize, the selection rules "
                      "online tuning settled on (rules-file format with the measured times; "
                      "ship it as site rules with coll_switchagg_rules). Empty: not saved",
      MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_LOCAL,
      &c->tune_file);
  (void)mca_base_component_var_register(
      v, "thread_domains",
      "At MPI_THREAD_MULTIPLE: how many thread domains (a UCX worker, its agent connections and "
      "their lock each) the process spreads its communicators over (each new one on the least used); "
      "collectives on communicators of different domains run at once, on one domain they take "
      "turns. 1..64; 1 = one lock for everything. Ignored below MPI_THREAD_MULTIPLE",
      MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_LOCAL,
      &c->thread_domains);
  /* Read-only, so MPI_T and ompi_info show what this build maps. */
  c->half_floats = (char*)switchagg_mpi_half_floats();
  (void)mca_base_component_var_register(
      v, "half_floats",
      "16-bit float datatypes this build of the component found in the MPI's headers and "
      "serves (read-only; Open MPI 5 with the shortfloat extension has MPIX_C_FLOAT16, "
      "Open MPI 4.1 none)",
      MCA_BASE_VAR_TYPE_STRING, NULL, 0, MCA_BASE_VAR_FLAG_DEFAULT_ONLY, OPAL_INFO_LVL_4,
      MCA_BASE_VAR_SCOPE_CONSTANT, &c->half_floats);
  return mca_coll_switchagg_register_pvars(v);
}

/* opal_progress returns void in Open MPI 4.1 and the event count in 5.0. */
static void mpi_progress(void) { (void)opal_progress(); }

static int switchagg_open(void) {
  mca_coll_switchagg_component_t *c = &mca_coll_switchagg_component;
  switchagg_coll_params_t params;
  params.algorithm = switchagg_coll_algorithm_choice(c->algorithm);
  params.offload = (c->offload >= 0 && c->offload <= 2) ? offload_values[c->offload].string : NULL;
  params.rules = c->rules;
  params.verbose = c->verbose;
  params.stall_timeout = c->stall_timeout;
  params.tune = (c->tune >= 0 && c->tune <= 1) ? tune_values[c->tune].string : NULL;
  params.tune_file = c->tune_file;
  params.thread_domains = c->thread_domains;
  /* A rejected value leaves the component loaded but unusable, so that the
   * job runs on the other components after the one error line. */
  c->usable = (0 == switchagg_coll_open(&params));
  /* Our UCX workers make progress while the process waits in other
   * components (as pml/ucx and coll/ucc register theirs): a peer may still
   * need this process's transport after it left a switchagg call. Low
   * priority: Open MPI runs it on every 8th progress round. */
  if (c->usable && OPAL_SUCCESS == opal_progress_register_lp(switchagg_progress))
    c->progress_registered = true;
  /* And the reverse: while a switchagg call waits, Open MPI's progress runs
   * (as in any MPI call that blocks), so a nonblocking collective pending on
   * another communicator - libnbc's or ours - moves on: a peer may have to
   * finish it before it can join the call we wait in. */
  if (c->usable) switchagg_coll_set_mpi_progress(mpi_progress);
  return OMPI_SUCCESS;
}

static int switchagg_close(void) {
  mca_coll_switchagg_component_t *c = &mca_coll_switchagg_component;
  if (c->progress_registered) {
    (void)opal_progress_unregister(switchagg_progress);
    c->progress_registered = false;
  }
  switchagg_coll_set_mpi_progress(NULL);
  mca_coll_switchagg_iallreduce_close();
  switchagg_coll_close();
  return OMPI_SUCCESS;
}

static int switchagg_init_query(bool enable_progress_threads, bool enable_mpi_threads) {
  (void)enable_progress_threads;
  /* MPI_THREAD_MULTIPLE: threads may run collectives on different
   * communicators at once; the core spreads communicators over thread
   * domains, each with its own worker and lock. */
  if (enable_mpi_threads) {
    switchagg_coll_enable_threads();
    if (mca_coll_switchagg_component.verbose > 0)
      fprintf(stderr,
              "switchagg[coll] info: MPI_THREAD_MULTIPLE: communicators spread over %d thread "
              "domains (a UCX worker and a lock each; coll_switchagg_thread_domains)\n",
              mca_coll_switchagg_component.thread_domains);
  }
  return OMPI_SUCCESS;
}
