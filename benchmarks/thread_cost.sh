#!/usr/bin/env bash
# What serving MPI_THREAD_MULTIPLE (issue 17) costs single-threaded jobs:
# switchagg-bench small-message latency with a component built before the
# change (--before DIR: a build tree of the older commit) and with this
# build's, interleaved run by run, median of the per-run p50 latencies,
# ratio after/before. Also the same build at MPI_THREAD_MULTIPLE (the
# thread gate on, one thread). Busy waits by default: with blocking waits
# every size costs a kernel wake-up (~30 us here under load, bimodal run to
# run), which hides anything smaller. Writes benchmarks/results/thread_cost.md.
#
#   benchmarks/thread_cost.sh --before DIR [--build DIR] [--np 2] [--reps 7]
#                             [--algorithm recursive_doubling] [--iters 2000]
#                             [--wait busy|blocking] [--what "TEXT"] [--out FILE]
# --what says what DIR is (default: "before issue 17").
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build before="" np=2 reps=7 iters=2000 algorithm=recursive_doubling wait=busy
what="before issue 17"
out=$root/benchmarks/results/thread_cost.md
source "$root/benchmarks/lib/bench_args.sh"
bench_args thread_cost 2,14 "before build np reps iters algorithm wait what out" "" "$@"
[[ -f $before/lib/openmpi/mca_coll_switchagg.so ]] ||
  { echo "thread_cost: --before DIR must hold lib/openmpi/mca_coll_switchagg.so" >&2; exit 2; }
build=$(cd "$build" && pwd) before=$(cd "$before" && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 SWITCHAGG_UCX_WAIT=$wait
ompi=$(ompi_info --path pkglibdir --parsable | sed 's/^path:pkglibdir://')
raw=$(mktemp)
trap 'rm -f "$raw"' EXIT
# run LABEL COMPONENT_DIR [BENCH OPTIONS...]: one run, "LABEL bytes p50" rows.
run() {
  local label=$1 dir=$2
  shift 2
  mpirun --oversubscribe --bind-to none -np "$np" --mca btl self,vader \
    --mca mca_base_component_path "$dir/lib/openmpi:$ompi" -x SWITCHAGG_UCX_WAIT \
    --mca coll_switchagg_allreduce_algorithm "$algorithm" "$build/bin/switchagg-bench" \
    --min 8 --max 4096 --iters "$iters" --csv - "$@" |
    awk -F, -v l="$label" 'NR > 1 { print l, $5, $15 }' >>"$raw"
}
for ((r = 1; r <= reps; r++)); do
  run before "$before"
  run after "$build"
  run multiple "$build" --thread-multiple
done
{
  echo "# Single-threaded cost of serving MPI_THREAD_MULTIPLE: one node, np $np, $wait waits, against $what"
  echo
  echo "Command: \`benchmarks/thread_cost.sh --before DIR --np $np --reps $reps --iters $iters"
  echo "--algorithm $algorithm --wait $wait --what \"$what\"\`, $(date -u '+%Y-%m-%d %H:%M UTC'), 2 cores shared with other"
  echo "jobs (load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)), ob1 + vader."
  echo
  echo "switchagg-bench p50 latency (µs, median of $reps interleaved runs) with the"
  echo "component $what (DIR) and after, both at MPI_THREAD_SINGLE (the"
  echo "thread locks off: one flag test per call), and after at MPI_THREAD_MULTIPLE"
  echo "with one thread (the locks on: a mutex per call, released around waits)."
  echo
  echo "| bytes | before | after | after/before | MULTIPLE, 1 thread | MULTIPLE/before |"
  echo "| ---: | ---: | ---: | ---: | ---: | ---: |"
  awk "$(cat "$root/benchmarks/lib/stats.awk")"'
    { v[$1, $2] = v[$1, $2] " " $3; sizes[$2] = 1 }
    END {
      n = sortedKeys(sizes, list)
      for (i = 1; i <= n; i++) {
        b = median(v["before", list[i]]); a = median(v["after", list[i]])
        m = median(v["multiple", list[i]])
        printf "| %d | %.2f | %.2f | %.2f | %.2f | %.2f |\n", list[i], b, a, a / b, m, m / b
      }
    }' "$raw"
} >"$out"
cat "$out"
