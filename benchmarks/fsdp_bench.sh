#!/usr/bin/env bash
# The FSDP training proxy's step time (issue 28): switchagg-train --mode
# fsdp (blocking MPI_Allgather before the forward pass, MPI_Reduce_scatter_block
# after the backward pass) against --mode fsdp --overlap (the same calls
# nonblocking: each bucket's MPI_Iallgather prefetched a step ahead, each
# bucket's MPI_Ireduce_scatter_block posted as soon as its gradients are
# final), each with offload on and off, on an emulated cluster (scripts/
# lib_fabric.sh: H hosts x P ranks, links at --rate Mbit/s, the agent on its
# own host; node leaders with P > 1). Ranks run with mpi_yield_when_idle=1
# (an emulated host does not know that all of them share these cores).
# Writes benchmarks/results/fsdp_fabric.md (or --out).
#
#   benchmarks/fsdp_bench.sh [--build DIR] [--hosts 4] [--ppn 2] [--rate 400]
#                            [--reps 3] [--steps 20] [--batch 64]
#                            [--hidden 512,256] [--out FILE]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build hosts=4 ppn=2 rate=400 reps=3 steps=20 batch=64 hidden=512,256 out=
source "$root/benchmarks/lib/bench_args.sh"
bench_args fsdp_bench 2,16 "build hosts ppn rate reps steps batch hidden out" "" "$@"
source "$root/benchmarks/lib/bench_env.sh"
out=${out:-$root/benchmarks/results/fsdp_fabric.md}
bench_setup fsdp-bench
bench_need "$bin/switchagg-train"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 SWITCHAGG_UCX_WAIT=blocking
bench_agent fsdp-bench fsdp --subnet 10.79
np=$((hosts * ppn))
# name|offload|extra switchagg-train option
paths=("blocking-on|on|" "overlap-on|on|--overlap" "blocking-off|off|" "overlap-off|off|--overlap")
declare -A res
for rep in $(seq 1 "$reps"); do
  for p in "${paths[@]}"; do
    IFS='|' read -r name offload extra <<<"$p"
    fabric_mpirun "$np" "$ppn" --mca coll_switchagg_offload "$offload" --mca mpi_yield_when_idle 1 \
      -x SWITCHAGG_AGENT -x SWITCHAGG_LEASE -x SWITCHAGG_MODE -x OMP_NUM_THREADS=1 \
      "$bin/switchagg-train" --steps "$steps" --batch "$batch" --hidden "$hidden" \
      --mode fsdp $extra >"$work/run.txt" 2>&1 || { cat "$work/run.txt" >&2; exit 1; }
    line=$(grep '^time per step:' "$work/run.txt") || { cat "$work/run.txt" >&2; exit 1; }
    # blocking: "T ms, compute C ms, reduce-scatter R ms, allgather G ms";
    # overlapped: "T ms, compute C ms, waiting for collectives W ms".
    if [[ -z $extra ]]; then
      vals=$(sed -E 's/.*: ([0-9.]+) ms, compute ([0-9.]+) ms, reduce-scatter ([0-9.]+) ms, allgather ([0-9.]+) ms.*/\1 \2 \3 \4/' <<<"$line")
    else
      vals=$(sed -E 's/.*: ([0-9.]+) ms, compute ([0-9.]+) ms, waiting for collectives ([0-9.]+) ms.*/\1 \2 \3 0/' <<<"$line")
    fi
    echo "rep=$rep $name: $vals" >&2
    res[$name]+="$vals;"
  done
done
field() { tr ';' '\n' | grep . | awk -v f="$1" '{ print $f }' | bench_median; }
{
  echo "# FSDP training proxy, blocking vs overlapped: emulated cluster, $hosts hosts × $ppn"
  echo
  echo "Measured $(date -u '+%Y-%m-%d %H:%M UTC') on $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "(an emulated cluster: $hosts hosts × $ppn ranks, links shaped to $rate Mbit/s, the agent on"
  echo "its own emulated host; all of it on these cores). Command:"
  echo
  echo '```text'
  echo "benchmarks/fsdp_bench.sh --hosts $hosts --ppn $ppn --rate $rate --reps $reps --steps $steps --batch $batch --hidden $hidden"
  echo '```'
  echo
  echo "switchagg-train --mode fsdp (--overlap), $steps steps, batch $batch per rank, hidden layers"
  echo "$hidden, one OpenMP thread per rank; rank 0's mean per step; medians of $reps interleaved runs."
  echo "Blocking: compute C, then the collectives K = reduce-scatter + allgather, one after"
  echo "the other: T = C + K. Overlapped: T', of which W waiting for the collectives."
  echo
  echo "| offload | blocking T (ms) | C (ms) | K (ms) | overlapped T' (ms) | W (ms) | T' / T | hidden = (C + K − T') / min(C, K) |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
  for o in on off; do
    b=${res[blocking-$o]} v=${res[overlap-$o]}
    t=$(field 1 <<<"$b") c=$(field 2 <<<"$b") k=$(tr ';' '\n' <<<"$b" | grep . | awk '{ print $3 + $4 }' | bench_median)
    t2=$(field 1 <<<"$v") w=$(field 3 <<<"$v")
    echo "| $o | $t | $c | $k | $t2 | $w | $(awk -v a="$t2" -v b="$t" 'BEGIN { printf "%.2f", a / b }') | $(awk -v c="$c" -v k="$k" -v t="$t2" 'BEGIN { m = c < k ? c : k; printf "%.2f", (c + k - t) / m }') |"
  done
  echo
  cat <<'THEORY'
Theory. Overlapped, a step costs max(C, K) plus what cannot overlap: the
first layer's allgather when the prefetch has not finished by the next
forward pass, and the last bucket's reduce-scatter, posted when the
backward pass ends (nothing is left to hide it behind). hidden = 1: all
of min(C, K) disappeared; 0: none. Where the collectives run: with offload
on, MPI_Allgather / MPI_Reduce_scatter_block and their nonblocking forms
go through the switch (with node leaders when ppn > 1: the node steps of
the nonblocking forms posted, never waited for); offload off: Open MPI's
tuned module and libnbc.
The ranks compute with OpenMP on 2 cores shared by every emulated host, so
compute and communication also compete for the same cores here: on a real
cluster the overlap can only be larger.
THEORY
  echo
  echo "Every run (T, C, K parts or W), in run order:"
  echo
  for p in "${paths[@]}"; do
    name=${p%%|*}
    echo "* $name: ${res[$name]}"
  done
} >"$out"
cat "$out"
