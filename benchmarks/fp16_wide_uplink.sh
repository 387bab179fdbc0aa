#!/usr/bin/env bash
# Wide partials on the node leaders' uplink (issue 46): fp16 SUM through the
# switch path with node leaders on emulated nodes, this build's PMPI library
# with each SWITCHAGG_HALF_UPLINK choice (half: 16-bit partials, float32,
# exact: fp64) and optionally another build's library (--before LIB, e.g.
# main's), side by side in one run, under MPICH 4.0.2: (1) accuracy, benchmarks/fp16_accuracy.cc
# (error in fp16 ulps against the exactly rounded sum, blocking and
# MPI_Iallreduce) at every NP of --np on nodes of --ppn ranks; (2) time and
# uplink bytes, fp16_accuracy --time (the median of K blocking calls, the
# slowest rank's) at --time-count elements, np 8 on nodes of 4, --reps
# repetitions alternating the sides, and the leaders' switch:bytes_sent.
# One node: the agent and every rank on this machine (no shaped link), so
# the time shows the CPU cost of the wider call, not a link's.
#
#   benchmarks/fp16_wide_uplink.sh [--before LIB] [--build DIR] [--np "8 16"]
#                                  [--ppn 4] [--count 65536] [--iters 4]
#                                  [--time-count 1048576] [--reps 5]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build np_list="8 16" ppn=4 count=65536 iters=4 before='' time_count=1048576 reps=5
source "$root/benchmarks/lib/bench_args.sh"
bench_args fp16_wide_uplink 2,17 "build np=np_list ppn count iters before time-count reps" "" "$@"
[[ -z $before || -e $before ]] || { echo "fp16_wide_uplink: --before $before: no such PMPI library" >&2; exit 2; }
sides="half float32 exact"
[[ -n $before ]] && sides="before $sides"
source "$root/benchmarks/lib/bench_env.sh"
bench_setup fp16-wide fp16_wide_uplink_raw
prog=$bin/mpich/fp16_accuracy lib=$build/lib/libswitchagg_pmpi.so
emu=$root/tests/mpi/emulate_nodes.sh
bench_need "$prog" "$bin/switchagg-agent" "$bin/switchagg-ctl"
export SWITCHAGG_UCX_WAIT=blocking
bench_agent fp16-wide f16w
lease=(SWITCHAGG_AGENT="$SWITCHAGG_AGENT" SWITCHAGG_LEASE="$SWITCHAGG_LEASE" SWITCHAGG_MODE="$SWITCHAGG_MODE")
rawf=$raw/one_node.txt
echo "# $(date -u '+%F %H:%M') UTC, load $(cut -d' ' -f1-3 /proc/loadavg), nodes of $ppn" >"$rawf"
run() {  # NP SIDE LABEL ARGS...: false (the log on stderr) if the run failed
  local np=$1 side=$2 label=$3 l=$lib uplink=$2
  shift 3
  [[ $side == before ]] && l=$before uplink=exact
  if ! bench_mpich_run "$np" LD_PRELOAD="$l" SWITCHAGG_HALF_UPLINK="$uplink" SWITCHAGG_OFFLOAD=on SWITCHAGG_VERBOSE=1 \
    SWITCHAGG_ALLREDUCE_ALGORITHM=switch "${lease[@]}" -- "$emu" "$ppn" "$prog" --label "$label" \
    --out "$rawf" "$@" >"$work/run.log" 2>&1; then
    cat "$work/run.log" >&2
    echo "fp16_wide_uplink: $label np $np failed" >&2
    return 1
  fi
  grep -q "node leaders" "$work/run.log" || { cat "$work/run.log" >&2; echo "fp16_wide_uplink: $label: no node leaders" >&2; exit 1; }
}
for np in $np_list; do
  for side in $sides; do
    echo "== np $np $side" >&2
    run "$np" "$side" "leaders_$side" --count "$count" --iters "$iters" || exit 1
    run "$np" "$side" "leaders_iallreduce_$side" --count "$count" --iters "$iters" --nonblocking || exit 1
  done
done
for rep in $(seq 1 "$reps"); do
  for side in $sides; do
    # A run that fails (after printing its time, or not) is noted, not fatal.
    run 8 "$side" "time_$side" --count "$time_count" --time 5 || echo "rep=$rep $side: run failed" >>"$rawf"
    grep '^fp16_time' "$work/run.log" | sed "s/^/rep=$rep /" >>"$rawf"
    grep -o 'switch path: [0-9]* calls, [0-9]* bytes sent per node leader' "$work/run.log" | sed "s/^/rep=$rep $side /" >>"$rawf" || true
  done
done
echo "# load after $(cut -d' ' -f1-3 /proc/loadavg)" >>"$rawf"
cat "$rawf"
