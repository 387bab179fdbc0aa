#!/bin/sh
# test_env_script.sh BUILD_DIR ENV_SCRIPT PROGRAM
# The documented user path: an install prefix with the component and the
# shipped env script; after sourcing it, a plain `mpirun` (no MCA flags)
# loads the component and it serves the program's allreduces.
set -eu
build=$1 env_script=$2 program=$3
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
mkdir -p "$prefix/lib/openmpi" "$prefix/etc/switchagg" "$prefix/bin"
cp "$build/lib/openmpi/mca_coll_switchagg.so" "$prefix/lib/openmpi/"
cp "$env_script" "$prefix/etc/switchagg/switchagg-env.sh"
unset OMPI_MCA_mca_base_component_path SWITCHAGG_PREFIX || true
# bash: the script finds its prefix from its own path.
out=$(bash -c ". '$prefix/etc/switchagg/switchagg-env.sh' &&
  mpirun --oversubscribe -np 3 '$program' --expect auto --quick --counts 1,1001" 2>&1)
echo "$out"
echo "$out" | grep -q "^PASS np=3" || { echo "test_env_script: program did not pass" >&2; exit 1; }
# plain sh: SWITCHAGG_PREFIX tells it.
out=$(SWITCHAGG_PREFIX="$prefix" sh -c ". '$prefix/etc/switchagg/switchagg-env.sh' &&
  echo \"\$OMPI_MCA_mca_base_component_path\"")
echo "$out" | grep -q "^$prefix/lib/openmpi:" || { echo "test_env_script: sh path wrong: $out" >&2; exit 1; }
echo "env script OK"
