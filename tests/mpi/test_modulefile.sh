#!/bin/bash
# test_modulefile.sh BUILD_DIR MODULEFILE CHECK_PROGRAM
# The documented environment-modules path (docs/admin.md, "Make Open MPI
# load the component", 2.): the shipped modulefile installed as
# switchagg/<version> on MODULEPATH with its `prefix` line set, loaded with
# Debian's environment-modules. Asserts the environment it sets (prefix,
# PATH, LD_LIBRARY_PATH, the component path with Open MPI's own directory,
# which must be this machine's `ompi_info --path pkglibdir`), then that a
# plain `mpirun` (no MCA flags) runs switchagg-bench from the prefix's bin
# with the component choosing its algorithms, and that the component serves
# a program's allreduces (mpi_allreduce_check --expect auto).
set -euo pipefail
build=$1 modulefile=$2 program=$3
init=/usr/share/modules/init/bash
[[ -r $init ]] || { echo "test_modulefile: $init missing (apt-get install environment-modules)" >&2; exit 1; }
fail() { echo "test_modulefile: FAIL $*" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/opt/switchagg
mkdir -p "$prefix/lib/openmpi" "$prefix/bin" "$work/modules/switchagg"
cp "$build/lib/openmpi/mca_coll_switchagg.so" "$prefix/lib/openmpi/"
cp "$build/bin/switchagg-bench" "$prefix/bin/"
# What the admin does: set the prefix line, nothing else.
grep -q '^set prefix ' "$modulefile" || fail "the modulefile has no 'set prefix' line"
sed "s|^set prefix .*|set prefix $prefix|" "$modulefile" >"$work/modules/switchagg/0.1"

unset OMPI_MCA_mca_base_component_path SWITCHAGG_PREFIX MODULEPATH LOADEDMODULES || true
# shellcheck disable=SC1090
. "$init"
module use "$work/modules"
module load switchagg 2>"$work/load.err" || fail "module load: $(cat "$work/load.err")"
[[ ! -s $work/load.err ]] || fail "module load said: $(cat "$work/load.err")"
[[ :${LOADEDMODULES:-}: == *:switchagg/0.1:* ]] || fail "switchagg/0.1 not loaded: LOADEDMODULES=${LOADEDMODULES:-}"

ompi=$(ompi_info --path pkglibdir --parsable | sed 's/^path:pkglibdir://')
[[ -d $ompi ]] || fail "ompi_info gave no pkglibdir: '$ompi'"
[[ ${SWITCHAGG_PREFIX:-} == "$prefix" ]] || fail "SWITCHAGG_PREFIX=${SWITCHAGG_PREFIX:-} (want $prefix)"
[[ $PATH == "$prefix/bin:"* ]] || fail "PATH does not start with $prefix/bin: $PATH"
[[ ${LD_LIBRARY_PATH:-} == "$prefix/lib"* ]] || fail "LD_LIBRARY_PATH does not start with $prefix/lib: ${LD_LIBRARY_PATH:-}"
want="$prefix/lib/openmpi:$ompi"
[[ ${OMPI_MCA_mca_base_component_path:-} == "$want" ]] ||
  fail "OMPI_MCA_mca_base_component_path=${OMPI_MCA_mca_base_component_path:-} (want $want: the modulefile's ompi_components line is not this Open MPI's)"
[[ $(command -v switchagg-bench) == "$prefix/bin/switchagg-bench" ]] ||
  fail "switchagg-bench resolves to $(command -v switchagg-bench), not the prefix's"
echo "module load: SWITCHAGG_PREFIX, PATH, LD_LIBRARY_PATH and the component path ($want) set"

ompi_info --param coll switchagg --level 9 | grep 'parameter "coll_switchagg_enable"' >/dev/null ||
  fail "ompi_info does not see the component after module load"

out=$(mpirun --oversubscribe -np 2 switchagg-bench --check --max 64K 2>&1) ||
  fail "switchagg-bench --check failed: $out"
echo "$out"
# Its algorithm column comes from the component ("n/a" when it is not loaded).
rows=$(echo "$out" | grep -E '^ +[0-9]+ ' || true)
[[ -n $rows ]] || fail "switchagg-bench printed no result rows"
if echo "$rows" | grep -w 'n/a' >/dev/null; then fail "switchagg-bench ran without the component (algorithm n/a)"; fi
out=$(mpirun --oversubscribe -np 2 "$program" --expect auto --quick --counts 1,1001 2>&1) ||
  fail "$program failed: $out"
echo "$out"
echo "$out" | grep "^PASS np=2" >/dev/null || fail "the program did not pass"

module unload switchagg
[[ -z ${SWITCHAGG_PREFIX:-} && -z ${OMPI_MCA_mca_base_component_path:-} && $PATH != *"$prefix/bin"* ]] ||
  fail "module unload left the environment set"
echo "modulefile OK"
