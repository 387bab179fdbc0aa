#!/usr/bin/env bash
# cg_history.sh MODE CG -- LAUNCHER...
# Residual histories of the CG mini-application CG (switchagg-cg, 2 OpenMP
# threads per rank) under LAUNCHER (an mpirun command line up to the
# program, with -np N, N >= 3: with 2 ranks every summation order gives the
# same bits, so nothing below could fail there).
#
#   host:ALG[,ALG...]  each forced host algorithm ALG twice: served by ALG,
#                      the two histories bitwise equal; switchagg off twice:
#                      bitwise equal; every run within TOL of the "off" run
#                      with the same iteration count; and at least two of the
#                      runs' histories differ in their bits (the paths add
#                      the ranks' sums in different orders, and the bitwise
#                      comparison sees it: it can fail).
#   switch[:PPN]       switchagg off once, on (LAUNCHER carries the lease
#                      and offload on) twice, PPN ranks per emulated node
#                      (emulate_nodes.sh; default: all on this host's node): both "on" runs served by the
#                      switch and bitwise equal (the agent adds in a fixed
#                      order for a fixed layout), within TOL of "off", same
#                      iteration count.
#
# The dot products reduce 4 part sums per allreduce (--dot-parts 4): with
# one double, every path adds 3 ranks' sums as (r0 + r1) + r2 (the
# recursive-doubling fold, the ring's one non-empty block, the leaders of
# emulated nodes of 2) and this check found one history among all paths at
# np 3; with 4 elements the ring starts each block at a different rank.
#
# TOL: the largest relative difference |a - b| / b allowed between two runs'
# residuals at the same iteration (environment CG_TOL, default 1e-8; CG's
# recurrences amplify a last-bit change slowly on this 24^3 problem: the
# histories measured here differ by at most 1.5e-10 relative: the switch
# adding 4 members in rank order against tuned's (a0 + a1) + (a2 + a3)).
# CG_EXPECT (environment): an extended regular expression every run that
# switchagg served must print (e.g. how many nodes the component saw).
# Prints PASS, or what differed.
set -uo pipefail
mode=$1 cg=$2
shift 3
here=$(cd "$(dirname "$0")" && pwd)
tol=${CG_TOL:-1e-8}
source "$(dirname "$0")/scratch_lib.sh"
scratch_dir cg-history
omp=(-x OMP_NUM_THREADS=2 -x OMP_WAIT_POLICY=passive)
problem=(--n 24 --iters 200 --tol 1e-10 --dot-parts 4)

# run NAME EXPECT MPIRUN_ARGS... [-- PREFIX...]: one CG run, its log in
# NAME.log and its history in NAME.hist; EXPECT the path that served the
# allreduces ("not switchagg" when off). PREFIX wraps the program
# (emulate_nodes.sh).
run() {
  local name=$1 expect=$2
  shift 2
  local args=() prefix=()
  while (($#)) && [[ $1 != -- ]]; do args+=("$1"); shift; done
  (($#)) && { shift; prefix=("$@"); }
  "${launch[@]}" "${args[@]}" "${omp[@]}" "${prefix[@]}" "$cg" "${problem[@]}" \
    >"$work/$name.log" 2>&1 || { cat "$work/$name.log"; fail "run $name failed"; }
  grep '^iter' "$work/$name.log" >"$work/$name.hist"
  grep -q '^converged' "$work/$name.log" || { cat "$work/$name.log"; fail "$name did not converge"; }
  grep -q "served by: $expect\$" "$work/$name.log" ||
    { cat "$work/$name.log"; fail "$name was not served by $expect"; }
  [[ -z ${CG_EXPECT:-} || $expect == "not switchagg" ]] || grep -Eq -- "$CG_EXPECT" "$work/$name.log" ||
    { cat "$work/$name.log"; fail "$name: no line like /$CG_EXPECT/"; }
  echo "$name: $(grep '^converged' "$work/$name.log")"
}

same_bits() {  # A B: the two runs' histories bitwise equal
  cmp -s "$work/$1.hist" "$work/$2.hist" ||
    { diff "$work/$1.hist" "$work/$2.hist" | sed -n 1,10p; fail "$1 and $2: histories differ run to run"; }
  echo "$1 = $2 bitwise ($(wc -l <"$work/$1.hist") iterations)"
}

# close A B: same iteration count, every residual within tol of B's.
close() {
  awk -v tol="$tol" -v a="$1" -v b="$2" '
    FNR == NR { ref[$2] = $4; n++; next }
    { m++; d = $4 - ref[$2]; if (d < 0) d = -d; r = ref[$2] != 0 ? d / ref[$2] : d
      if (!($2 in ref)) { print "FAIL: " a " has iteration " $2 ", " b " not"; bad = 1 }
      else if (r > tol) { print "FAIL: " a " iteration " $2 ": " $4 " vs " ref[$2] " (relative " r ")"; bad = 1 }
      if (r > worst) worst = r }
    END { if (m != n) { print "FAIL: " a " ran " m " iterations, " b " " n; bad = 1 }
          if (!bad) printf "%s within %g of %s: %d iterations, largest relative difference %.3g\n", a, tol, b, m, worst
          exit bad }' "$work/$2.hist" "$work/$1.hist" || fail "$1 is not close to $2"
}

case $mode in
  host:*)
    IFS=, read -ra algorithms <<<"${mode#host:}"
    launch=("$@")
    run off1 "not switchagg" --mca coll_switchagg_enable 0
    run off2 "not switchagg" --mca coll_switchagg_enable 0
    same_bits off1 off2
    runs=(off1)
    for alg in "${algorithms[@]}"; do
      prefix=()
      # Two ranks per emulated node, so the leaders really run across "nodes".
      [[ $alg == hierarchical ]] && prefix=(-- "$here/emulate_nodes.sh" 2)
      for k in 1 2; do
        run "$alg$k" "$alg" --mca coll_switchagg_allreduce_algorithm "$alg" "${prefix[@]}"
      done
      same_bits "${alg}1" "${alg}2"
      close "${alg}1" off1
      runs+=("${alg}1")
    done
    # The comparisons above can fail only if summation order shows in the
    # bits at this np: some two paths must give different histories.
    distinct=$(for r in "${runs[@]}"; do md5sum <"$work/$r.hist"; done | sort -u | wc -l)
    echo "distinct bitwise histories among ${runs[*]}: $distinct"
    [[ $distinct -ge 2 ]] ||
      fail "every path gave the same bits: this np cannot detect a change of summation order"
    ;;
  switch | switch:*)
    launch=("$@")
    prefix=()
    [[ $mode == switch:* ]] && prefix=(-- "$here/emulate_nodes.sh" "${mode#switch:}")
    run off "not switchagg" --mca coll_switchagg_enable 0 "${prefix[@]}"
    run on1 switch "${prefix[@]}"
    run on2 switch "${prefix[@]}"
    same_bits on1 on2
    close on1 off
    ;;
  *) fail "mode must be host:ALG,... or switch[:PPN], got '$mode'" ;;
esac
echo "PASS cg histories ($mode)"
