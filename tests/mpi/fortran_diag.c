/* The component's diagnostics for Fortran callers (mpi_fortran_types.f90):
 * the path that served the last MPI_ALLREDUCE on a Fortran communicator,
 * copied blank-padded into `path`; "unloaded" when switchagg does not serve
 * allreduce on it. */
#include <dlfcn.h>
#include <mpi.h>
#include <string.h>

#include "switchagg/coll/diagnostics.h"

void switchagg_last_path_f(const MPI_Fint *fcomm, char *path, const int *len) {
  switchagg_coll_last_algorithm_fn last = (switchagg_coll_last_algorithm_fn)dlsym(
      RTLD_DEFAULT, SWITCHAGG_COLL_LAST_ALGORITHM_SYMBOL);
  const char *name = last ? last(MPI_Comm_f2c(*fcomm)) : NULL;
  size_t n;
  if (!name) name = "unloaded";
  n = strlen(name);
  if (n > (size_t)*len) n = (size_t)*len;
  memset(path, ' ', (size_t)*len);
  memcpy(path, name, n);
}
