#!/usr/bin/env bash
# python_fsdp_compare.sh PYTHON SCRIPT -- LAUNCHER...
# Runs apps/python/train_step.py (SCRIPT) three times with LAUNCHER (an
# mpirun command line up to the program): --mode allreduce, --mode fsdp and
# --mode fsdp --overlap. Passes when every run finishes, the fsdp runs say
# they sharded (overlapped for the last) and their reduce-scatters and
# allgathers were counted (blocking: the counters of the calls the
# component saw), and the three loss curves agree step by step (the same
# arithmetic; sums in other orders differ in the last bits only: 1e-5
# relative). Prints PASS, or what differed.
set -uo pipefail
python=$1 script=$2
shift 3
source "$(dirname "$0")/scratch_lib.sh"
scratch_dir pyfsdp-test
run() {  # NAME ARGS...
  local name=$1
  shift
  "${launcher[@]}" "$python" "$script" --steps 6 "$@" >"$work/$name.log" 2>&1 ||
    { cat "$work/$name.log"; fail "train_step.py $* failed"; }
  grep -q '^final loss: ' "$work/$name.log" || { cat "$work/$name.log"; fail "$name: no final loss"; }
  sed -nE 's/^step +([0-9]+) +loss ([0-9.]+).*/\1 \2/p' "$work/$name.log" >"$work/$name.curve"
  [[ $(wc -l <"$work/$name.curve") -eq 6 ]] || { cat "$work/$name.log"; fail "$name: not 6 steps"; }
}
launcher=("$@")
run allreduce
run fsdp --mode fsdp
run overlap --mode fsdp --overlap
cat "$work/fsdp.log" "$work/overlap.log"
grep -q '^mode fsdp: ' "$work/fsdp.log" || fail "the fsdp run did not shard"
grep -q '^mode fsdp (overlapped): ' "$work/overlap.log" || fail "the --overlap run was not overlapped"
grep -Eq 'reduce_scatter_block:(switch|previous)=[1-9]' "$work/fsdp.log" &&
  grep -Eq 'allgather:(switch|previous)=[1-9]' "$work/fsdp.log" ||
  fail "the fsdp run's reduce-scatters and allgathers were not counted by switchagg"
for other in fsdp overlap; do
  paste -d' ' "$work/allreduce.curve" "$work/$other.curve" | awk -v label="$other" '
    { d = $2 - $4; if (d < 0) d = -d; r = d / $2; if (r > worst) worst = r }
    END { printf "allreduce vs %s: largest relative difference %.3g\n", label, worst
          exit !(worst <= 1e-5) }' || fail "the $other loss curve differs from the allreduce one"
done
echo "PASS: allreduce, fsdp and fsdp --overlap loss curves agree over 6 steps"
