/* Component: MCA parameters, open/close, and the per-process checks.
 *
 * The parameters are the rows of the coll parameter table
 * (switchagg/coll/coll_params.h, docs/mca-params.md): each is registered
 * here from its row (name, kind, default, values, level, scope, help) and
 * handed to the core at open (switchagg_coll_params_t). Enum parameters are
 * MCA enums: Open MPI itself rejects a value outside the list with a message
 * that lists the valid ones. A rules file that cannot be read, or a value
 * the core rejects, disables the component with one error line (jobs still
 * run, on the previous module). */
#include "coll_switchagg.h"

#include <stdio.h>
#include <string.h>

#include "opal/mca/base/mca_base_var.h"
#include "opal/mca/base/mca_base_var_enum.h"
#include "opal/runtime/opal_progress.h"
#include "switchagg/common/version.h"

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
    /* The parameters get their defaults from the table at register. */
    .usable = true,
};

/* An ENUM's or ALGO's values, as Open MPI's enum list takes them. */
typedef struct enum_list {
  mca_base_var_enum_value_t v[16];
  char text[256];
} enum_list_t;
static enum_list_t enum_lists[SWITCHAGG_COLL_NUM_PARAMS];

/* "a|b|c": value 0 is a, 1 is b, ... */
static void split_values(const char *values, enum_list_t *list) {
  size_t len = strlen(values);
  char *p = list->text;
  int n = 0;
  if (len >= sizeof list->text) len = sizeof list->text - 1;
  memcpy(list->text, values, len);
  list->text[len] = '\0';
  while (n < 15) {
    char *bar = strchr(p, '|');
    list->v[n].value = n;
    list->v[n].string = p;
    ++n;
    if (NULL == bar) break;
    *bar = '\0';
    p = bar + 1;
  }
  list->v[n].value = 0;
  list->v[n].string = NULL;
}

/* The core's algorithm registry, auto first. */
static void algorithm_values(enum_list_t *list) {
  int n = 0;
  const char *name;
  while (n < 15 && (name = switchagg_coll_algorithm_choice(n)) != NULL) {
    list->v[n].value = n;
    list->v[n].string = name;
    ++n;
  }
  list->v[n].value = 0;
  list->v[n].string = NULL;
}

static int index_of(const enum_list_t *list, const char *name) {
  for (int i = 0; NULL != list->v[i].string; ++i)
    if (0 == strcmp(list->v[i].string, name)) return i;
  return 0;
}

static const char *name_at(const enum_list_t *list, int index) {
  for (int i = 0; NULL != list->v[i].string; ++i)
    if (i == index) return list->v[i].string;
  return NULL;
}

static const mca_base_component_t *component_version(void) {
  return &mca_coll_switchagg_component.super.collm_version;
}

/* One row's registration, by its kind. A plain variable that cannot be
 * registered keeps its default; an enum that cannot be fails registration. */
static int register_plain(const char *name, const char *help, mca_base_var_type_t type, int flags,
                          int level, int scope, void *storage) {
  (void)mca_base_component_var_register(component_version(), name, help, type, NULL, 0, flags,
                                        level, scope, storage);
  return OPAL_SUCCESS;
}

static int register_BOOL(int row, const char *name, const char *help, int level, int scope,
                         const char *values, int def, bool *storage) {
  (void)row;
  (void)values;
  *storage = def != 0;
  return register_plain(name, help, MCA_BASE_VAR_TYPE_BOOL, 0, level, scope, storage);
}

static int register_INT(int row, const char *name, const char *help, int level, int scope,
                        const char *values, int def, int *storage) {
  (void)row;
  (void)values;
  *storage = def;
  return register_plain(name, help, MCA_BASE_VAR_TYPE_INT, 0, level, scope, storage);
}

static int register_STRING(int row, const char *name, const char *help, int level, int scope,
                           const char *values, const char *def, char **storage) {
  (void)row;
  (void)values;
  *storage = '\0' == def[0] ? NULL : (char *)def;
  return register_plain(name, help, MCA_BASE_VAR_TYPE_STRING, 0, level, scope, storage);
}

/* Read-only: what this build found, so MPI_T and ompi_info show it. */
static int register_INFO(int row, const char *name, const char *help, int level, int scope,
                         const char *values, const char *value, char **storage) {
  (void)row;
  (void)values;
  *storage = (char *)value;
  return register_plain(name, help, MCA_BASE_VAR_TYPE_STRING, MCA_BASE_VAR_FLAG_DEFAULT_ONLY,
                        level, scope, storage);
}

static int register_enum_list(const char *name, const char *help, int level, int scope,
                              const enum_list_t *list, int *storage) {
  char enum_name[128];
  mca_base_var_enum_t *enumerator = NULL;
  int rc;
  snprintf(enum_name, sizeof enum_name, "coll_switchagg_%s", name);
  rc = mca_base_var_enum_create(enum_name, list->v, &enumerator);
  if (OPAL_SUCCESS != rc) return rc;
  rc = mca_base_component_var_register(component_version(), name, help, MCA_BASE_VAR_TYPE_INT,
                                       enumerator, 0, 0, level, scope, storage);
  OBJ_RELEASE(enumerator);
  return rc < 0 ? rc : OPAL_SUCCESS;
}

static int register_ENUM(int row, const char *name, const char *help, int level, int scope,
                         const char *values, const char *def, int *storage) {
  split_values(values, &enum_lists[row]);
  *storage = index_of(&enum_lists[row], def);
  return register_enum_list(name, help, level, scope, &enum_lists[row], storage);
}

/* The values and their help come from the core's algorithm registry. */
static int register_ALGO(int row, const char *name, const char *help, int level, int scope,
                         const char *values, const char *def, int *storage) {
  static char full_help[2048];
  (void)values;
  algorithm_values(&enum_lists[row]);
  *storage = index_of(&enum_lists[row], def);
  snprintf(full_help, sizeof full_help, "%s %s", help, switchagg_coll_algorithm_help());
  return register_enum_list(name, full_help, level, scope, &enum_lists[row], storage);
}

/* An INFO row's value: mca_coll_switchagg_info_<name>(). */
static const char *mca_coll_switchagg_info_half_floats(void) { return switchagg_mpi_half_floats(); }

#define REGISTER_DEFAULT_BOOL(NAME, DEF) DEF
#define REGISTER_DEFAULT_INT(NAME, DEF) DEF
#define REGISTER_DEFAULT_STRING(NAME, DEF) DEF
#define REGISTER_DEFAULT_ENUM(NAME, DEF) DEF
#define REGISTER_DEFAULT_ALGO(NAME, DEF) DEF
#define REGISTER_DEFAULT_INFO(NAME, DEF) mca_coll_switchagg_info_##NAME()
#define REGISTER_ROW_(NAME, KIND, DEF, MIN, MAX, VALUES, LAYERS, LEVEL, SCOPE, ENV, HELP)  \
  SWITCHAGG_COLL_IF_MCA_##LAYERS(                                                           \
      rc = register_##KIND(SWITCHAGG_COLL_ROW_##NAME, #NAME, HELP, OPAL_INFO_LVL_##LEVEL,   \
                           MCA_BASE_VAR_SCOPE_##SCOPE, VALUES,                              \
                           REGISTER_DEFAULT_##KIND(NAME, DEF), &c->NAME);                   \
      if (OPAL_SUCCESS != rc) return rc;)

static int switchagg_register(void) {
  mca_coll_switchagg_component_t *c = &mca_coll_switchagg_component;
  int rc;
  SWITCHAGG_COLL_PARAMS(REGISTER_ROW_)
  return mca_coll_switchagg_register_pvars(component_version());
}

/* The core's value of a row of the MCA storage. */
#define CORE_VALUE_BOOL(NAME) c->NAME
#define CORE_VALUE_INT(NAME) c->NAME
#define CORE_VALUE_STRING(NAME) c->NAME
#define CORE_VALUE_ENUM(NAME) name_at(&enum_lists[SWITCHAGG_COLL_ROW_##NAME], c->NAME)
#define CORE_VALUE_ALGO(NAME) switchagg_coll_algorithm_choice(c->NAME)
#define CORE_VALUE_(NAME, KIND, DEF, MIN, MAX, VALUES, LAYERS, LEVEL, SCOPE, ENV, HELP) \
  SWITCHAGG_COLL_IF_CORE_##LAYERS(params.NAME = CORE_VALUE_##KIND(NAME);)

/* opal_progress returns void in Open MPI 4.1 and the event count in 5.0. */
static void mpi_progress(void) { (void)opal_progress(); }

static int switchagg_open(void) {
  mca_coll_switchagg_component_t *c = &mca_coll_switchagg_component;
  switchagg_coll_params_t params;
  SWITCHAGG_COLL_PARAMS(CORE_VALUE_)
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
