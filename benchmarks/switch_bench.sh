#!/usr/bin/env bash
# The switch-path benchmark (issue 5): switchagg-bench with the allreduce
# served by the switch agent vs the best host algorithm (cost model, offload
# off) vs the ring vs Open MPI tuned, 8 B - 64 MiB, side by side in ONE run
# (interleaved repetitions, medians of the per-size p50), with a private
# agent on this machine. Writes benchmarks/results/switch.md (+ raw CSVs and
# an optional PNG through scripts/plot_bench.sh when gnuplot exists).
#
#   benchmarks/switch_bench.sh [--build DIR] [--np "4"] [--reps 2] [--max 64M]
#                              [--iters 100] [--out FILE]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build-h5 np_list="4" reps=2 max=64M iters=100
out=$root/benchmarks/results/switch.md
source "$root/benchmarks/lib/bench_args.sh"
bench_args switch_bench 2,10 "build np=np_list reps max iters out" "" "$@"
build=$(cd "$build" && pwd)
bin=$build/bin
raw=$(dirname "$out")/switch_raw
mkdir -p "$raw"
rm -f "$raw"/*.csv
work=$(mktemp -d /tmp/switchagg-switch-bench.XXXXXX)
source "$root/scripts/lib_agent.sh"
trap 'agent_stop; rm -rf "$work"' EXIT
agent_start "$root/config/agent.toml" "$work" --set agent.log_level=warn
eval "$("$bin/switchagg-ctl" --agent "unix:$AGENT_SOCKET" lease create --job switch-bench \
  --slots 8 --ttl 2h | grep '^export ')"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 SWITCHAGG_UCX_WAIT=blocking
export SWITCHAGG_SWITCH_WINDOW=8   # one communicator: the whole lease
comp_path="$(ompi_info --path pkglibdir --parsable | sed 's/^path:pkglibdir://'):$build/lib/openmpi"
paths=(
  "switch|--mca coll_switchagg_offload on --mca coll_switchagg_allreduce_algorithm switch"
  "host-best|--mca coll_switchagg_offload off --mca coll_switchagg_allreduce_algorithm auto"
  "ring|--mca coll_switchagg_offload off --mca coll_switchagg_allreduce_algorithm ring"
  "tuned|--mca coll ^switchagg"
)
for np in $np_list; do
  for rep in $(seq 1 "$reps"); do
    for p in "${paths[@]}"; do
      name=${p%%|*} args=${p#*|}
      echo "np=$np rep=$rep $name" >&2
      # shellcheck disable=SC2086
      mpirun --oversubscribe --bind-to none --mca btl self,vader \
        --mca mca_base_component_path "$comp_path" -np "$np" $args \
        -x SWITCHAGG_AGENT -x SWITCHAGG_LEASE -x SWITCHAGG_MODE -x SWITCHAGG_UCX_WAIT \
        -x SWITCHAGG_SWITCH_WINDOW "$bin/switchagg-bench" --min 8 --max "$max" \
        --iters "$iters" --min-iters 3 --warmup 3 --label "$name" \
        --csv "$raw/np${np}_${name}_rep${rep}.csv" >/dev/null 2>"$work/err.txt" ||
        { cat "$work/err.txt" >&2; exit 1; }
    done
  done
done
metrics=$("$bin/switchagg-ctl" --agent "unix:$AGENT_SOCKET" metrics)

# Medians over repetitions of each size's p50 -> one table per np.
summarize() {  # NP
  cat "$raw"/np"$1"_*.csv | awk -F, -v np="$1" "$(cat "$root/benchmarks/lib/stats.awk")"'
    $1 == "label" { next }
    { key = $1 SUBSEP $5; v[key] = v[key] " " $15; sizes[$5] = 1; alg[key] = $13 }
    END {
      printf "| bytes | switch us | host-best us (alg) | ring us | tuned us | switch/host-best | switch/tuned | bytes sent per rank: switch / ring |\n"
      printf "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n"
      n = sortedKeys(sizes, list)
      for (i = 1; i <= n; i++) {
        s = list[i]
        sw = median(v["switch" SUBSEP s]); hb = median(v["host-best" SUBSEP s])
        rg = median(v["ring" SUBSEP s]); tu = median(v["tuned" SUBSEP s])
        printf "| %s | %.1f | %.1f (%s) | %.1f | %.1f | %.2f | %.2f | %s / %s |\n", human(s), sw, hb,
               alg["host-best" SUBSEP s], rg, tu, sw / hb, sw / tu, human(s), human(int(2 * (np - 1) / np * s))
      }
    }'
}

{
  echo "# Switch path vs host paths and Open MPI tuned: one node"
  echo
  echo "Reproduce: \`benchmarks/switch_bench.sh --build $(basename "$build") --np \"$np_list\" --reps $reps --max $max\`"
  echo "($(date -u +%Y-%m-%d), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the end;"
  echo "float32 sum; each cell = median over $reps interleaved runs of the per-size p50; the agent"
  echo "runs on the same 2 cores as the ranks, over UCX shm/TCP loopback, lease of 8 slots x 256 KiB.)"
  for np in $np_list; do
    echo
    echo "## np=$np"
    echo
    summarize "$np"
  done
  echo
  echo "Bytes per rank: the switch path sends exactly N payload bytes per rank per call"
  echo "(asserted by tests/mpi/test_switch_check: counter switch:bytes_sent grows by N),"
  echo "the ring 2(p-1)/p*N (model; its reduce-scatter + allgather halves)."
  echo
  echo "Agent metrics after the run:"
  echo
  echo '```'
  grep -E '^switchagg_(bytes_in_total|bytes_out_total|chunks_reduced_total|groups_created_total|groups_aborted_total) ' <<<"$metrics"
  echo '```'
} >"$out.tmp"
mv "$out.tmp" "$out"
if command -v gnuplot >/dev/null; then
  "$root/scripts/plot_bench.sh" -o "$(dirname "$out")/switch_plots" \
    -t "MPI_Allreduce np=$np_list: switch vs host vs tuned" "$raw"/*.csv >&2
fi
echo "wrote $out" >&2
