#!/usr/bin/env bash
# The tree against Open MPI 5.0 + UCX 1.18, from this Debian 12 host: makes
# (or reuses) the Debian 13 root (scripts/debian13_root.sh), builds inside
# it with -Werror (so the 5.0 build warns about nothing the 4.1 build does
# not) every part that touches MPI or runs in the MPI tests - mpi_coll/,
# switchagent/, apps/, tests/mpi/ and what they link; not the agent's, UCX
# and RoCE unit tests nor benchmarks/ (no MPI in them: 45 % of the build's
# compile time) - runs the chosen MPI tests there with that build's
# own CTest, and checks that ompi_info lists the same coll_switchagg
# parameters on 5.0 as on this host's 4.1.
#
#   run_debian13.sh SRC HOST_BUILD TEST_REGEX [COUNT]
#                   (COUNT: the exact number of tests TEST_REGEX must select)
#   run_debian13.sh --build-only SRC HOST_BUILD   (the root and the build only;
#                                                  benchmarks/ompi5_bench.sh)
set -euo pipefail
build_only=0
[[ ${1:-} == --build-only ]] && build_only=1 && shift && set -- "$@" ""
(($# == 3 || $# == 4)) || {
  echo "usage: $0 SRC HOST_BUILD TEST_REGEX [COUNT] | --build-only SRC HOST_BUILD" >&2
  exit 2
}
src=$1 hostbuild=$2 regex=$3 want=${4:-}
d13=$hostbuild/debian13
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
inroot() { "$src/scripts/debian13_root.sh" --run "$@"; }

"$src/scripts/debian13_root.sh" >/dev/null || fail "could not make the Debian 13 root"

echo "== build in Debian 13 ($d13)"
# -O2 as every build (the same warnings), no debug info: half the compile time.
inroot "cmake -S '$src' -B '$d13' -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO='-O2 -g0 -DNDEBUG' -DCMAKE_CXX_FLAGS_RELWITHDEBINFO='-O2 -g0 -DNDEBUG' \
  -DSWITCHAGG_WERROR=ON -DSWITCHAGG_BUILD_SPANK=OFF >'$d13.configure.log' 2>&1 ||
  { cat '$d13.configure.log'; exit 1; }
  grep -q 'coll component for Open MPI 5\.' '$d13.configure.log' || { echo 'not Open MPI 5'; exit 1; }
  cmake --build '$d13' -j\$(nproc) --target mpi_coll/all switchagent/all apps/all tests/mpi/all \
    >'$d13.build.log' 2>&1 || { tail -50 '$d13.build.log'; exit 1; }" ||
  fail "the tree does not build against Open MPI 5 (logs: $d13.configure.log, $d13.build.log)"
((build_only)) && exit 0

echo "== MPI tests in Debian 13: $regex"
listed=$(inroot "ctest --test-dir '$d13' -N -R '$regex'" | sed -n 's/^Total Tests: //p')
[[ ${listed:-0} -gt 0 ]] || fail "no test in the Debian 13 build matches $regex"
[[ -z $want || $listed == "$want" ]] ||
  fail "the Debian 13 build has $listed tests matching the set; the set names $want"
inroot "ctest --test-dir '$d13' -R '$regex' --output-on-failure --timeout 300" ||
  fail "MPI tests failed on Open MPI 5"

echo "== ompi_info parameters, 4.1 (host) against 5.0 (root)"
params() { grep -o 'parameter "coll_switchagg_[a-z_]*"' | sort -u; }
pkglib=$(ompi_info --path pkglibdir --parsable | sed 's/^path:pkglibdir://')
host=$(OMPI_MCA_mca_base_component_path="$hostbuild/lib/openmpi:$pkglib" \
  ompi_info --param coll switchagg --level 9 | params)
root=$(inroot "P=\$(ompi_info --path pkglibdir --parsable | sed 's/^path:pkglibdir://');
  OMPI_MCA_mca_base_component_path='$d13/lib/openmpi':\$P ompi_info --param coll switchagg --level 9" |
  params)
[[ -n $host ]] || fail "ompi_info on this host lists no coll_switchagg parameter"
[[ $host == "$root" ]] || fail "parameters differ: 4.1: $(echo $host) / 5.0: $(echo $root)"
echo "PASS: $(echo "$root" | wc -l) parameters on both; $listed MPI tests passed on Open MPI 5"
