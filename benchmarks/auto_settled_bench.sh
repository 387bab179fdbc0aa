#!/usr/bin/env bash
# What a settled `auto` costs per call (issue: auto, once settled, must be
# within noise of the path it settled on). One node, np 4, a lease present,
# float64 allreduce of --bytes (default 4 MiB), --iters timed calls after a
# warm-up of at least 32 (online tuning settles in it); interleaved runs:
#   previous   coll_switchagg_allreduce_algorithm=previous (Open MPI's module
#              through the component, no tuning: the reference)
#   auto-off   offload=off, tuning online (host candidates only)
#   auto       offload=auto, tuning online (the switch a candidate too)
# Per run: the p50 and the path the run settled on (the component's
# last-algorithm diagnostic) and the bytes switchagg sent per timed call
# (> 0 when a timed call ran one of switchagg's own paths: tuning explored
# again). The ratio to `previous` counts only runs that settled on previous.
# Writes --out (default benchmarks/results/auto_settled.md).
#
#   benchmarks/auto_settled_bench.sh [--build DIR] [--reps 5] [--iters 200]
#                                    [--bytes 4M] [--out FILE]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build reps=5 iters=200 bytes=4M out=$root/benchmarks/results/auto_settled.md
source "$root/benchmarks/lib/bench_args.sh"
bench_args auto_settled_bench 2,17 "build reps iters bytes out" "" "$@"
source "$root/benchmarks/lib/bench_env.sh"
bench_setup auto-settled
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 SWITCHAGG_SWITCH_WINDOW=16
agent_start "$root/config/agent.toml" "$work" >/dev/null
bench_lease auto-settled 16
variants="previous auto-off auto"
args_for() {
  case $1 in
    previous) echo "--mca coll_switchagg_allreduce_algorithm previous" ;;
    auto-off) echo "--mca coll_switchagg_offload off" ;;
    auto) echo "--mca coll_switchagg_offload auto" ;;
  esac
}
rows=$work/rows
: >"$rows"
for rep in $(seq 1 "$reps"); do
  for v in $variants; do
    echo "rep $rep: $v" >&2
    # shellcheck disable=SC2046
    mpirun -np 4 --oversubscribe --bind-to none --mca btl self,vader \
      --mca mca_base_component_path "$comp_path" $(args_for "$v") \
      -x SWITCHAGG_AGENT -x SWITCHAGG_LEASE -x SWITCHAGG_MODE -x SWITCHAGG_SWITCH_WINDOW \
      -x SWITCHAGG_UCX_WAIT=blocking "$bin/switchagg-bench" --dtype float64 --min "$bytes" \
      --max "$bytes" --iters "$iters" --warmup 40 --min-warmup 32 --label "$v" \
      --csv "$work/$v.$rep.csv" >"$work/run.log" 2>&1 || { cat "$work/run.log" >&2; exit 1; }
    # label,...,algorithm(13),check,p50_us(15),bytes_sent_per_rank(16)
    awk -F, -v rep="$rep" 'NR == 2 { print rep, $1, $15, $13, $16 }' "$work/$v.$rep.csv" >>"$rows"
  done
done
load=$(cut -d' ' -f1-3 /proc/loadavg)
{
  echo "# A settled \`auto\` against the path it settled on"
  echo
  echo "Measured $(date -u '+%Y-%m-%d %H:%M') UTC on 2 cores, load $load; one node, np 4, a lease"
  echo "present, float64 sum of $bytes, $iters timed calls after a warm-up of >= 32. Command:"
  echo "\`benchmarks/auto_settled_bench.sh --reps $reps --iters $iters --bytes $bytes\`"
  echo
  echo "| rep | variant | p50 µs | settled on | switchagg bytes per timed call |"
  echo "| ---: | --- | ---: | --- | ---: |"
  awk '{ printf "| %s | %s | %.1f | %s | %s |\n", $1, $2, $3, $4, $5 }' "$rows"
  echo
  awk '$2 == "previous" { ref[$1] = $3 }
       $2 != "previous" && $4 == "previous" && $5 == 0 { r[$2] = r[$2] " " sprintf("%.2f", $3 / ref[$1]); n[$2]++ }
       $2 != "previous" && ($4 != "previous" || $5 != 0) { other[$2]++ }
       END { for (v in n) printf "%s settled on previous, p50 / previous in the same rep: %s\n", v, r[v]
             for (v in other) printf "%s runs that settled elsewhere or explored again in the timed calls: %d\n", v, other[v] }' "$rows" |
    sort | sed 's/^/* /'
  echo
  echo "Theory: a settled bucket's per-call work is a table lookup and two clock reads, so a run"
  echo "that settled on previous should time as the forced previous module. Runs that settled"
  echo "elsewhere are the tuner's choice under noise (its samples are synchronised calls), not a"
  echo "per-call cost."
} >"$out"
cat "$out"
agent_stop
