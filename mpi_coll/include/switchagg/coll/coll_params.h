/* The coll parameters: one table, plain C (the Open MPI glue is C, the core
 * and the PMPI layer C++). Each row is a parameter; everything else is made
 * from the rows:
 *
 *   the Open MPI glue  its storage (mca_coll_switchagg_component_t), MCA
 *                      registration (what ompi_info shows), and the values
 *                      it hands the core (glue/coll_switchagg_component.c)
 *   the core           switchagg_coll_params_t (runtime/coll_core.h) and the
 *                      bounds it checks (SWITCHAGG_COLL_MIN_/MAX_<name>)
 *   the PMPI layer     PmpiParams and its SWITCHAGG_* environment table
 *                      (pmpi_params.h), which switchagg-info lists
 *   the docs           `switchagg-info --coll-params` prints the name,
 *                      default and values columns of docs/mca-params.md's
 *                      table; ctest docs_mca_params_table compares them
 *
 * A new parameter is one row here plus its docs (docs/design.md, "Add a coll
 * parameter").
 *
 * Columns of SWITCHAGG_COLL_PARAMS(X), X(NAME, KIND, DEF, MIN, MAX, VALUES,
 * LAYERS, LEVEL, SCOPE, ENV, HELP):
 *   NAME    the name after coll_switchagg_; also the field it fills in every
 *           struct above
 *   KIND    BOOL, INT, STRING, ENUM (one of VALUES), ALGO (auto or a name of
 *           the algorithm registry), INFO (read-only text the glue computes:
 *           mca_coll_switchagg_info_<NAME>() in the component file)
 *   DEF     the default: a number (BOOL, INT), a string (STRING, ENUM, ALGO),
 *           or what the docs say of an INFO row's value
 *   MIN,MAX an INT's range: the PMPI layer rejects values outside it; of the
 *           MCA values the core checks those it validates (stall_timeout,
 *           thread_domains); 0, 0 for other kinds
 *   VALUES  an ENUM's values, "a|b|c" (the MCA enum's order: its first is 0);
 *           a STRING's kind of value for the docs ("path"); else NULL
 *   LAYERS  MCA (Open MPI only), PMPI (PMPI layer only), MCA_PMPI (both
 *           glues, not the core), ALL (both glues and switchagg_coll_params_t)
 *   LEVEL   Open MPI info level (OPAL_INFO_LVL_<LEVEL>)
 *   SCOPE   MCA_BASE_VAR_SCOPE_<SCOPE>: ALL_EQ (every rank must agree), LOCAL,
 *           CONSTANT (INFO rows)
 *   ENV     the PMPI layer's variable, or NULL
 *   HELP    ompi_info's help; the PMPI layer shows "PMPI library: " HELP for a
 *           row of both glues
 * One line per row, however long: a table reads across (and rows that wrap
 * look alike to a reader, and to the duplicate check, line by line). */
#ifndef SWITCHAGG_COLL_PARAMS_H
#define SWITCHAGG_COLL_PARAMS_H

#include <limits.h>

/* clang-format off */
#define SWITCHAGG_COLL_PARAMS(X) \
    X(enable, BOOL, 1, 0, 1, NULL, MCA_PMPI, 2, ALL_EQ, "SWITCHAGG_ENABLE", "Enable the switchagg coll component (MPI_Allreduce via host algorithms over UCX and switch offload); 0 leaves every call to the other components") \
    X(priority, INT, 90, INT_MIN, INT_MAX, NULL, MCA, 6, ALL_EQ, NULL, "Priority of the switchagg coll component (tuned is 30: keep it above to serve MPI_Allreduce)") \
    X(allreduce_algorithm, ALGO, "auto", 0, 0, NULL, ALL, 4, ALL_EQ, "SWITCHAGG_ALLREDUCE_ALGORITHM", "Allreduce algorithm: 'auto' lets the cost model and rules choose per call; a name forces that algorithm first (it may still decline, e.g. switch without a lease, and the next candidate runs).") \
    X(offload, ENUM, "auto", 0, 0, "auto|on|off", ALL, 4, ALL_EQ, "SWITCHAGG_OFFLOAD", "Switch offload of MPI_Allreduce: auto (the cost model decides when a lease is present), on (use the switch whenever it can serve), off (never)") \
    X(rules, STRING, "", 0, 0, "path", ALL, 4, ALL_EQ, "SWITCHAGG_RULES", "Path of a selection rules file (format: docs/selection.md; example: etc/switchagg/selection.rules); rules override the cost model, this component's allreduce_algorithm overrides rules. Empty: no rules") \
    X(verbose, INT, 0, 0, 100, NULL, ALL, 4, LOCAL, "SWITCHAGG_VERBOSE", "Verbosity: 0 errors and warnings only; 1 one line per communicator (setup, first use of each algorithm, fallbacks, a summary when freed); 2 one line per call; 3 transport detail") \
    X(stall_timeout, INT, 300, 0, 1 << 30, NULL, ALL, 5, ALL_EQ, "SWITCHAGG_STALL_TIMEOUT", "Seconds a host-algorithm step may wait without progress before the allreduce fails with an error naming the peer and the message it waited for (a warning naming them comes after min(10, half of it) seconds). A peer that has not reached the call yet is normal MPI behaviour, so keep it above the job's worst load imbalance; 0 = warn only, never fail") \
    X(tune, ENUM, "online", 0, 0, "online|off", ALL, 4, ALL_EQ, "SWITCHAGG_TUNE", "Online tuning of auto's choice: online (each communicator times the candidates the cost model allows a few calls per message-size bucket, the ranks agree on the slowest rank's median, and the fastest is used; a slowdown, a switch fallback or a rejoin measures again), off (the cost model alone). Forced algorithms, offload=on and rules always win") \
    X(tune_file, STRING, "", 0, 0, "path", ALL, 5, LOCAL, "SWITCHAGG_TUNE_FILE", "File where the job's rank 0 writes, at MPI_Finalize, the selection rules online tuning settled on (rules-file format with the measured times; ship it as site rules with coll_switchagg_rules). Empty: not saved") \
    X(progress_thread, ENUM, "auto", 0, 0, "auto|off", PMPI, 5, LOCAL, "SWITCHAGG_PROGRESS_THREAD", "PMPI library on the MPICH family: auto runs MPI_Iallreduce through the switch path on a progress thread of the layer's own when the job has a switch path (docs/pmpi.md); off hands every MPI_Iallreduce to the MPI library") \
    X(thread_domains, INT, 4, 1, 64, NULL, ALL, 5, LOCAL, "SWITCHAGG_THREAD_DOMAINS", "At MPI_THREAD_MULTIPLE: how many thread domains (a UCX worker, its agent connections and their lock each) the process spreads its communicators over (each new one on the least used); collectives on communicators of different domains run at once, on one domain they take turns. 1..64; 1 = one lock for everything. Ignored below MPI_THREAD_MULTIPLE") \
    X(half_uplink, ENUM, "exact", 0, 0, "exact|float32|half", ALL, 5, ALL_EQ, "SWITCHAGG_HALF_UPLINK", "What node leaders on two or more nodes send the agent for a 16-bit float (fp16/bf16) SUM: exact (their fp64 node sums, 4x the 16-bit bytes: the correctly rounded sum, the same bits as one node), float32 (fp32 node sums, 2x the bytes: each within 2^-24 of its node sum, so the result within one 16-bit ulp plus nodes x 2^-24 x sum |x|), half (16-bit node sums, the fewest bytes: a 16-bit rounding per node and per agent addition). Every rank must choose the same: the agent refuses a call whose leaders differ and the call is redone on the host") \
    X(half_floats, INFO, "(what the build found)", 0, 0, NULL, MCA, 4, CONSTANT, NULL, "16-bit float datatypes this build of the component found in the MPI's headers and serves (read-only; Open MPI 5 with the shortfloat extension has MPIX_C_FLOAT16, Open MPI 4.1 none)")
/* clang-format on */

/* SWITCHAGG_COLL_IF_<layer>_<LAYERS>(x): x (commas and all) when a row of LAYERS reaches the
 * layer (MCA: the Open MPI glue, PMPI: the PMPI layer, CORE: the struct the
 * glues hand the core). */
#define SWITCHAGG_COLL_IF_MCA_ALL(...) __VA_ARGS__
#define SWITCHAGG_COLL_IF_MCA_MCA_PMPI(...) __VA_ARGS__
#define SWITCHAGG_COLL_IF_MCA_MCA(...) __VA_ARGS__
#define SWITCHAGG_COLL_IF_MCA_PMPI(...)
#define SWITCHAGG_COLL_IF_PMPI_ALL(...) __VA_ARGS__
#define SWITCHAGG_COLL_IF_PMPI_MCA_PMPI(...) __VA_ARGS__
#define SWITCHAGG_COLL_IF_PMPI_MCA(...)
#define SWITCHAGG_COLL_IF_PMPI_PMPI(...) __VA_ARGS__
#define SWITCHAGG_COLL_IF_CORE_ALL(...) __VA_ARGS__
#define SWITCHAGG_COLL_IF_CORE_MCA_PMPI(...)
#define SWITCHAGG_COLL_IF_CORE_MCA(...)
#define SWITCHAGG_COLL_IF_CORE_PMPI(...)

/* Every row's position: SWITCHAGG_COLL_ROW_<NAME>, and how many rows. */
#define SWITCHAGG_COLL_ROW_(NAME, KIND, DEF, MIN, MAX, VALUES, LAYERS, LEVEL, SCOPE, ENV, HELP) \
  SWITCHAGG_COLL_ROW_##NAME,
enum switchagg_coll_param_row { SWITCHAGG_COLL_PARAMS(SWITCHAGG_COLL_ROW_) SWITCHAGG_COLL_NUM_PARAMS };
#undef SWITCHAGG_COLL_ROW_

/* Every row's range, as constants: SWITCHAGG_COLL_MIN_<NAME>, _MAX_<NAME>. */
#define SWITCHAGG_COLL_BOUNDS_(NAME, KIND, DEF, MIN, MAX, VALUES, LAYERS, LEVEL, SCOPE, ENV, \
                               HELP)                                                        \
  SWITCHAGG_COLL_MIN_##NAME = (MIN), SWITCHAGG_COLL_MAX_##NAME = (MAX),
enum switchagg_coll_param_bounds { SWITCHAGG_COLL_PARAMS(SWITCHAGG_COLL_BOUNDS_) };
#undef SWITCHAGG_COLL_BOUNDS_

/* Every row's default: switchagg_coll_default_<NAME>(), a number for BOOL
 * and INT, the text for the others. */
#define SWITCHAGG_COLL_DEFAULT_TYPE_BOOL int
#define SWITCHAGG_COLL_DEFAULT_TYPE_INT int
#define SWITCHAGG_COLL_DEFAULT_TYPE_STRING const char *
#define SWITCHAGG_COLL_DEFAULT_TYPE_ENUM const char *
#define SWITCHAGG_COLL_DEFAULT_TYPE_ALGO const char *
#define SWITCHAGG_COLL_DEFAULT_TYPE_INFO const char *
#define SWITCHAGG_COLL_DEFAULT_(NAME, KIND, DEF, MIN, MAX, VALUES, LAYERS, LEVEL, SCOPE, ENV, \
                                HELP)                                                        \
  static inline SWITCHAGG_COLL_DEFAULT_TYPE_##KIND switchagg_coll_default_##NAME(void) {      \
    return DEF;                                                                              \
  }
SWITCHAGG_COLL_PARAMS(SWITCHAGG_COLL_DEFAULT_)
#undef SWITCHAGG_COLL_DEFAULT_

/* What the core takes (switchagg_coll_params_t): a number for BOOL and INT,
 * the value's text for the others. */
#define SWITCHAGG_COLL_CORE_TYPE_BOOL int
#define SWITCHAGG_COLL_CORE_TYPE_INT int
#define SWITCHAGG_COLL_CORE_TYPE_STRING const char *
#define SWITCHAGG_COLL_CORE_TYPE_ENUM const char *
#define SWITCHAGG_COLL_CORE_TYPE_ALGO const char *
#define SWITCHAGG_COLL_CORE_TYPE_INFO const char *

#endif /* SWITCHAGG_COLL_PARAMS_H */
