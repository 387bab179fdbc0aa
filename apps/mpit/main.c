/* switchagg-mpit: the component's MPI_T performance variables, read the
 * way MPI tools read them (MPI_T_pvar_*), bound to MPI_COMM_WORLD.
 *
 *   switchagg-mpit                      list every coll_switchagg_* variable:
 *                                       name, description, rank 0's value
 *   switchagg-mpit --calls N [--count C] [--op sum|user] [--expect NAME=V|NAME>0]...
 *       reads them, runs N MPI_Allreduce of C floats (MPI_SUM, or a
 *       user-defined sum, which switchagg hands to the previous module),
 *       checks every result, reads them again and prints each variable's
 *       change on rank 0; with --expect, prints PASS when each named
 *       variable changed by exactly V (or by more than 0), else FAIL lines
 *       and exits 1. NAME is without the coll_switchagg_ prefix.
 *   switchagg-mpit --cvar NAME=TEXT
 *       reads the string control variable coll_switchagg_NAME through
 *       MPI_T_cvar_* and prints it; PASS when it contains TEXT (e.g.
 *       half_floats: the 16-bit float types this build serves). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PREFIX "coll_switchagg_"
#define MAX_VARS 64
#define MAX_EXPECT 32

typedef struct {
  int index;
  char name[256];
  char desc[1024];
  MPI_T_pvar_handle handle;
} pvar_t;

static pvar_t vars[MAX_VARS];
static int nvars;
static MPI_T_pvar_session session;

static void usage(FILE *out) {
  fprintf(out,
          "usage: switchagg-mpit [--calls N] [--count C] [--op sum|user] "
          "[--expect NAME=V|NAME>0]... | --cvar NAME=TEXT\n");
}

/* The string control variable PREFIX`name` on rank 0: PASS when its value
 * contains `text`. Returns the exit code. */
static int check_cvar(const char *name, const char *text) {
  char want[300], got[300], desc[1024], value[4096] = ""; /* Open MPI: count 2048 */
  int num = 0, i, found = 0, seen = 0;
  snprintf(want, sizeof want, PREFIX "%s", name);
  MPI_T_cvar_get_num(&num);
  for (i = 0; i < num && !found; ++i) {
    int name_len = sizeof got, desc_len = sizeof desc, verbosity, bind, scope, count = 0;
    MPI_Datatype type;
    MPI_T_enum enumtype;
    MPI_T_cvar_handle handle;
    if (MPI_SUCCESS != MPI_T_cvar_get_info(i, got, &name_len, &verbosity, &type, &enumtype, desc,
                                           &desc_len, &bind, &scope) ||
        strcmp(got, want) != 0 || type != MPI_CHAR)
      continue;
    seen = 1;
    if (MPI_SUCCESS != MPI_T_cvar_handle_alloc(i, NULL, &handle, &count)) break;
    if (count > 0 && (size_t)count <= sizeof value) found = MPI_SUCCESS == MPI_T_cvar_read(handle, value);
    MPI_T_cvar_handle_free(&handle);
  }
  if (!found) {
    printf("FAIL: %s %s\n", seen ? "could not read the MPI_T control variable"
                                  : "no string MPI_T control variable", want);
    return 1;
  }
  printf("%s = %s\n%s %s contains \"%s\"\n", want, value, strstr(value, text) ? "PASS" : "FAIL",
         want, text);
  return strstr(value, text) ? 0 : 1;
}

static int find_vars(MPI_Comm *comm) {
  int num = 0, i;
  if (MPI_T_pvar_get_num(&num) != MPI_SUCCESS) return -1;
  if (MPI_T_pvar_session_create(&session) != MPI_SUCCESS) return -1;
  for (i = 0; i < num && nvars < MAX_VARS; ++i) {
    pvar_t *v = &vars[nvars];
    int name_len = sizeof v->name, desc_len = sizeof v->desc, verbosity, var_class, bind;
    int readonly, continuous, atomic, count = 0;
    MPI_Datatype type;
    MPI_T_enum enumtype;
    if (MPI_T_pvar_get_info(i, v->name, &name_len, &verbosity, &var_class, &type, &enumtype,
                            v->desc, &desc_len, &bind, &readonly, &continuous,
                            &atomic) != MPI_SUCCESS)
      continue;
    if (strncmp(v->name, PREFIX, strlen(PREFIX)) != 0) continue;
    if (bind != MPI_T_BIND_MPI_COMM || type != MPI_UNSIGNED_LONG_LONG ||
        var_class != MPI_T_PVAR_CLASS_COUNTER) {
      fprintf(stderr, "switchagg-mpit: %s is not a per-communicator unsigned long long counter\n",
              v->name);
      return -1;
    }
    if (MPI_T_pvar_handle_alloc(session, i, comm, &v->handle, &count) != MPI_SUCCESS ||
        count != 1) {
      fprintf(stderr, "switchagg-mpit: cannot bind %s to MPI_COMM_WORLD\n", v->name);
      return -1;
    }
    if (!continuous) MPI_T_pvar_start(session, v->handle);
    v->index = i;
    ++nvars;
  }
  return nvars;
}

static int read_all(unsigned long long *values) {
  int i;
  for (i = 0; i < nvars; ++i)
    if (MPI_T_pvar_read(session, vars[i].handle, &values[i]) != MPI_SUCCESS) return -1;
  return 0;
}

static void user_sum(void *in, void *inout, int *len, MPI_Datatype *type) {
  const float *a = (const float *)in;
  float *b = (float *)inout;
  int i;
  (void)type;
  for (i = 0; i < *len; ++i) b[i] += a[i];
}

int main(int argc, char **argv) {
  long calls = 0, count = 1024;
  const char *op_name = "sum", *expect[MAX_EXPECT], *cvar = NULL;
  int nexpect = 0, rank, size, provided, i, rc = 0;
  unsigned long long before[MAX_VARS], after[MAX_VARS];
  MPI_Comm world;

  for (i = 1; i < argc; ++i) {
    const char *a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      return 0;
    } else if (i + 1 < argc && !strcmp(a, "--calls")) {
      calls = strtol(argv[++i], NULL, 10);
    } else if (i + 1 < argc && !strcmp(a, "--count")) {
      count = strtol(argv[++i], NULL, 10);
    } else if (i + 1 < argc && !strcmp(a, "--op")) {
      op_name = argv[++i];
    } else if (i + 1 < argc && !strcmp(a, "--expect") && nexpect < MAX_EXPECT) {
      expect[nexpect++] = argv[++i];
    } else if (i + 1 < argc && !strcmp(a, "--cvar") && strchr(argv[i + 1], '=')) {
      cvar = argv[++i];
    } else {
      fprintf(stderr, "switchagg-mpit: bad argument '%s'\n", a);
      usage(stderr);
      return 2;
    }
  }
  if (calls < 0 || count < 1 || count > (1L << 26) ||
      (strcmp(op_name, "sum") != 0 && strcmp(op_name, "user") != 0) || (nexpect && !calls)) {
    fprintf(stderr, "switchagg-mpit: --calls >= 0, --count 1..2^26, --op sum|user; "
                    "--expect needs --calls\n");
    return 2;
  }

  MPI_Init(&argc, &argv);
  MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (cvar) {
    char name[256];
    const char *eq = strchr(cvar, '=');
    snprintf(name, sizeof name, "%.*s", (int)(eq - cvar), cvar);
    rc = rank == 0 ? check_cvar(name, eq + 1) : 0;
    MPI_T_finalize();
    MPI_Finalize();
    return rc;
  }
  world = MPI_COMM_WORLD;
  if (find_vars(&world) <= 0) {
    if (rank == 0) fprintf(stderr, "switchagg-mpit: no " PREFIX "* performance variable "
                                   "(is the switchagg component loaded?)\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (read_all(before) != 0) MPI_Abort(MPI_COMM_WORLD, 1);

  if (calls == 0) {
    if (rank == 0)
      for (i = 0; i < nvars; ++i)
        printf("%-46s %12llu  %s\n", vars[i].name, before[i], vars[i].desc);
  } else {
    float *send = malloc(sizeof(float) * (size_t)count);
    float *recv = malloc(sizeof(float) * (size_t)count);
    MPI_Op op = MPI_SUM;
    long c, k, bad = 0;
    if (!strcmp(op_name, "user")) MPI_Op_create(user_sum, 1, &op);
    for (c = 0; c < calls; ++c) {
      for (k = 0; k < count; ++k) send[k] = (float)(rank + 1 + (k % 7) + c);
      MPI_Allreduce(send, recv, (int)count, MPI_FLOAT, op, MPI_COMM_WORLD);
      /* sum over ranks of (rank + 1 + k%7 + c): small integers, exact in float */
      for (k = 0; k < count; ++k)
        if (recv[k] != (float)(size * (size + 1) / 2 + size * ((k % 7) + c))) ++bad;
    }
    if (op != MPI_SUM) MPI_Op_free(&op);
    free(send);
    free(recv);
    if (read_all(after) != 0) MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0) {
      printf("%ld MPI_Allreduce of %ld floats (%s): %s\n", calls, count, op_name,
             bad ? "WRONG RESULTS" : "results exact");
      for (i = 0; i < nvars; ++i)
        printf("%-46s %12llu -> %12llu  (+%llu)\n", vars[i].name, before[i], after[i],
               after[i] - before[i]);
      if (bad) rc = 1;
      for (k = 0; k < nexpect; ++k) {
        char want[256];
        const char *sep = strpbrk(expect[k], "=>");
        int found = 0;
        if (sep == NULL || (size_t)(sep - expect[k]) >= sizeof want - strlen(PREFIX) - 1) {
          printf("FAIL bad --expect '%s'\n", expect[k]);
          rc = 1;
          continue;
        }
        snprintf(want, sizeof want, PREFIX "%.*s", (int)(sep - expect[k]), expect[k]);
        for (i = 0; i < nvars; ++i) {
          unsigned long long d = after[i] - before[i];
          if (strcmp(vars[i].name, want) != 0) continue;
          found = 1;
          if ((*sep == '=' && d != strtoull(sep + 1, NULL, 10)) || (*sep == '>' && d == 0)) {
            printf("FAIL %s changed by %llu (want %s)\n", want, d, sep);
            rc = 1;
          }
        }
        if (!found) {
          printf("FAIL no variable %s\n", want);
          rc = 1;
        }
      }
      if (nexpect && rc == 0) printf("PASS mpit\n");
    }
  }
  for (i = 0; i < nvars; ++i) MPI_T_pvar_handle_free(session, &vars[i].handle);
  MPI_T_pvar_session_free(&session);
  MPI_T_finalize();
  MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return rc;
}
