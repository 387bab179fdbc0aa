#!/usr/bin/env bash
# mpich_fortran.sh MPIEXEC LIBRARY PROGRAM: PROGRAM (dot_product.f90 built
# with mpifort.mpich) at np 3 on plain MPICH, then with LIBRARY preloaded
# and ring forced: the same printed answers, and all three MPI_ALLREDUCEs
# served by ring (the freed-communicator summary).
set -uo pipefail
mpiexec=$1 lib=$2 prog=$3
plain=$(timeout 60 "$mpiexec" -n 3 "$prog" 2>&1) || { echo "$plain"; echo "FAIL: plain run"; exit 1; }
with=$(timeout 60 "$mpiexec" -n 3 -genv LD_PRELOAD "$lib" -genv SWITCHAGG_ALLREDUCE_ALGORITHM ring \
  -genv SWITCHAGG_VERBOSE 1 -genv SWITCHAGG_UCX_WAIT blocking "$prog" 2>&1) ||
  { echo "$with"; echo "FAIL: run with the library"; exit 1; }
echo "$with"
want=$(grep '^ *dot = ' <<<"$plain")
got=$(grep '^ *dot = ' <<<"$with")
[[ -n $want && $got == "$want" ]] || { echo "FAIL: answers differ: plain '$want', switchagg '$got'"; exit 1; }
grep -q "PMPI layer active .* over MPICH" <<<"$with" || { echo "FAIL: no PMPI layer line"; exit 1; }
grep -q "comm MPI_COMM_WORLD freed: allreduce calls: ring=3" <<<"$with" ||
  { echo "FAIL: the three MPI_ALLREDUCEs were not all served by ring"; exit 1; }
echo "PASS: same answers as plain MPICH ($want), 3 calls served by ring"
