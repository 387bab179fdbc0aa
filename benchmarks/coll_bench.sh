#!/usr/bin/env bash
# The coll benchmark: switchagg's MPI_Allreduce (auto and every host
# algorithm forced) against Open MPI's default `tuned` and `han`, side by
# side in ONE run, at np=4 and np=2. Runs are interleaved (rep 1 of every
# path, then rep 2, ...) so machine noise hits all paths alike; each point is
# the median over repetitions. Writes benchmarks/results/coll.md (tables,
# ratios vs tuned, verdict on the target), the raw CSVs and PNG plots.
#
#   benchmarks/coll_bench.sh [--build DIR] [--np "4 2"] [--reps 3]
#                            [--min 8] [--max 64M] [--iters 200] [--switch]
#                            [--out FILE] [--quick]
#
# --switch adds the switch path (needs SWITCHAGG_AGENT/SWITCHAGG_LEASE in the
# environment: a running agent and a lease). --quick: 1 rep, up to 1 MiB.
# Target (issue 3): auto never slower than tuned by >10% at any size, and
# faster at >= 256 KiB.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build np_list="4 2" reps=3 min=8 max=64M iters=200 with_switch=0
out=$root/benchmarks/results/coll.md
source "$root/benchmarks/lib/bench_args.sh"
bench_args coll_bench 2,17 "build np=np_list reps min max iters out" \
  "switch=with_switch=1 quick=reps=1,max=1M" "$@"
build=$(cd "$build" && pwd)
bench=$build/bin/switchagg-bench
[[ -x $bench ]] || { echo "coll_bench: $bench not built" >&2; exit 1; }
[[ -f $build/lib/openmpi/mca_coll_switchagg.so ]] || { echo "coll_bench: component not built in $build" >&2; exit 1; }
outdir=$(dirname "$out")
raw=$outdir/coll_raw
mkdir -p "$raw"
rm -f "$raw"/*.csv

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# mca_base_component_path replaces Open MPI's default list: keep its own
# component directory first.
comp_path="$(ompi_info --path pkglibdir | awk '{print $NF}'):$build/lib/openmpi"

# name | extra mpirun arguments. Every run loads the same component path, so
# the only difference between paths is which coll module serves allreduce.
paths=(
  "auto|--mca coll_switchagg_allreduce_algorithm auto"
  "tuned|--mca coll ^switchagg"
  "han|--mca coll ^switchagg --mca coll_han_priority 100"
  "ring|--mca coll_switchagg_allreduce_algorithm ring"
  "recursive_doubling|--mca coll_switchagg_allreduce_algorithm recursive_doubling"
  "rabenseifner|--mca coll_switchagg_allreduce_algorithm rabenseifner"
  "hierarchical|--mca coll_switchagg_allreduce_algorithm hierarchical"
)
if ((with_switch)); then
  paths+=("switch|--mca coll_switchagg_offload on --mca coll_switchagg_allreduce_algorithm switch -x SWITCHAGG_AGENT -x SWITCHAGG_LEASE -x SWITCHAGG_MODE")
fi

cmdline="benchmarks/coll_bench.sh --np \"$np_list\" --reps $reps --min $min --max $max --iters $iters"
((with_switch)) && cmdline+=" --switch"
started=$(date -u +%FT%TZ)
for rep in $(seq 1 "$reps"); do
  for np in $np_list; do
    for p in "${paths[@]}"; do
      name=${p%%|*} args=${p#*|}
      echo "coll_bench: rep $rep/$reps np=$np $name" >&2
      # shellcheck disable=SC2086
      timeout 900 mpirun -np "$np" --oversubscribe --mca mca_base_component_path "$comp_path" \
        $args "$bench" --min "$min" --max "$max" --iters "$iters" --check \
        --label "$name" --csv "$raw/np${np}_${name}_rep${rep}.csv" \
        >"$raw/np${np}_${name}_rep${rep}.log" 2>&1 ||
        echo "coll_bench: np=$np $name rep $rep FAILED (see $raw/np${np}_${name}_rep${rep}.log)" >&2
    done
  done
done

names=$(for p in "${paths[@]}"; do printf '%s ' "${p%%|*}"; done)
{
  echo "# MPI_Allreduce, switchagg vs Open MPI tuned and han: one node"
  echo
  echo "Produced by \`$cmdline\` (started $started, $(nproc) cores, $(uname -m),"
  echo "Open MPI $(ompi_info --version 2>/dev/null | awk '/Open MPI/ {print $NF; exit}'), git $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?'))."
  echo "float32 sum, every result validated (--check). Latency = median over $reps interleaved"
  echo "repetitions of the per-call median (p50_us: each rank's median call time, averaged"
  echo "over ranks), in us. The machine is shared, so medians, not means. ratio = path / tuned"
  echo "(< 1 is faster)."
  echo "\`auto chose\` is what the component reported for the last call of that size."
  echo
  for np in $np_list; do
    "$root/benchmarks/coll_summary.sh" "$np" "$raw" $names
    "$root/scripts/plot_bench.sh" -o "$outdir" -t "MPI_Allreduce np=$np" "$raw"/np"${np}"_*.csv >/dev/null
    mv "$outdir/allreduce_latency.png" "$outdir/coll_np${np}_latency.png"
    mv "$outdir/allreduce_busbw.png" "$outdir/coll_np${np}_busbw.png"
    echo "Plots: [latency](coll_np${np}_latency.png), [bus bandwidth](coll_np${np}_busbw.png)"
    echo
  done
} >"$out"
echo "coll_bench: wrote $out" >&2
