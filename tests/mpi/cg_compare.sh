#!/usr/bin/env bash
# cg_compare.sh EXPECT CG -- LAUNCHER...
# Runs the CG mini-application CG (switchagg-cg, 2 OpenMP threads per rank,
# MPI_THREAD_FUNNELED) twice with LAUNCHER (an mpirun command line up to the
# program): switchagg off (coll_switchagg_enable 0), then on. Passes when
# both converge with bitwise-equal residual histories (2 ranks: every path
# adds the two partial sums alike) and the "on" run's allreduces were served
# by EXPECT. Prints PASS, or the histories' difference.
set -uo pipefail
expect=$1 cg=$2
shift 3
source "$(dirname "$0")/scratch_lib.sh"
scratch_dir cg-test
args=(-x OMP_NUM_THREADS=2 -x OMP_WAIT_POLICY=passive "$cg" --n 24 --iters 200)

"$@" --mca coll_switchagg_enable 0 "${args[@]}" >"$work/off.log" 2>&1 ||
  { cat "$work/off.log"; fail "the run without switchagg failed"; }
"$@" "${args[@]}" >"$work/on.log" 2>&1 || { cat "$work/on.log"; fail "the run with switchagg failed"; }
cat "$work/off.log" "$work/on.log"
grep '^iter' "$work/off.log" >"$work/off.hist"
grep '^iter' "$work/on.log" >"$work/on.hist"
grep -q '^converged' "$work/off.log" || fail "no convergence without switchagg"
grep -q 'served by: not switchagg' "$work/off.log" || fail "switchagg served the 'off' run"
grep -q "served by: $expect\$" "$work/on.log" || fail "the 'on' run was not served by $expect"
cmp -s "$work/off.hist" "$work/on.hist" ||
  { diff "$work/off.hist" "$work/on.hist" | sed -n 1,10p; fail "residual histories differ"; }
echo "PASS residual histories of $(wc -l <"$work/on.hist") iterations bitwise equal, on: $expect"
