#!/usr/bin/env bash
# The switch path where it is meant to win: on an emulated cluster whose
# links, not the CPU, are the bottleneck (scripts/fabric.py: star of H hosts,
# every host link shaped to RATE Mbit/s, the agent on the switch with a link
# of H x RATE). switchagg-bench (float32 sum) per path, interleaved
# repetitions, medians; bytes each host put on its link per allreduce from
# the interface counters; the theory next to each measured ratio. Writes
# benchmarks/results/fabric.md and fabric_*.png.
#
#   benchmarks/fabric_bench.sh [--build DIR] [--configs "4x1@400 4x2@400 8x1@200 8x2@200"]
#                              [--reps 3] [--min 64K] [--max 32M] [--out FILE]
#   a config HOSTSxPPN@MBIT: hosts, ranks per host, host link rate
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build configs="4x1@400 4x2@400 8x1@200 8x2@200" reps=3 min=64K max=32M
out=$root/benchmarks/results/fabric.md
source "$root/benchmarks/lib/bench_args.sh"
bench_args fabric_bench 2,12 "build configs reps min max out" "" "$@"
source "$root/benchmarks/lib/bench_env.sh"
bench_setup fabric-bench "$(basename "$out" .md)_raw"

paths=(
  "switch|--mca coll_switchagg_offload on --mca coll_switchagg_allreduce_algorithm switch"
  "switch_flat|--mca coll_switchagg_offload on --mca coll_switchagg_allreduce_algorithm switch -x SWITCHAGG_SWITCH_LEADERS=off"
  "switch_pipe|--mca coll_switchagg_offload on --mca coll_switchagg_allreduce_algorithm switch -x SWITCHAGG_SWITCH_SEGMENT=1M"
  "ring|--mca coll_switchagg_offload off --mca coll_switchagg_allreduce_algorithm ring"
  "hierarchical|--mca coll_switchagg_offload off --mca coll_switchagg_allreduce_algorithm hierarchical"
  "rabenseifner|--mca coll_switchagg_offload off --mca coll_switchagg_allreduce_algorithm rabenseifner"
  "tuned|--mca coll ^switchagg"
)
export SWITCHAGG_SWITCH_WINDOW=16

cpu_busy() {  # jiffies busy and total since boot
  awk '/^cpu / { t = 0; for (i = 2; i <= NF; i++) t += $i; print t - $5 - $6, t }' /proc/stat
}

run_config() {  # HOSTS PPN MBIT
  local hosts=$1 ppn=$2 mbit=$3 np=$(($1 * $2)) tag=h$1p$2
  fabric_up fb --hosts "$hosts" --rate "$mbit" --subnet 10.90
  fabric_agent_start "$work"
  bench_lease fabric-bench 16
  read -r b0 t0 < <(cpu_busy)
  for rep in $(seq 1 "$reps"); do
    for p in "${paths[@]}"; do
      local name=${p%%|*} args=${p#*|}
      echo "config $tag@$mbit rep $rep: $name" >&2
      # shellcheck disable=SC2086
      fabric_mpirun "$np" "$ppn" $args -x SWITCHAGG_AGENT -x SWITCHAGG_LEASE -x SWITCHAGG_MODE \
        -x SWITCHAGG_SWITCH_WINDOW "$bin/switchagg-bench" --min "$min" --max "$max" \
        --iters 20 --min-iters 3 --warmup 2 --label "$name" \
        --csv "$raw/${tag}_${name}_rep${rep}.csv" >"$work/run.log" ||
        { cat "$work/run.log" >&2; exit 1; }
    done
  done
  read -r b1 t1 < <(cpu_busy)
  echo "$tag cpu_busy_pct $(awk -v b=$((b1 - b0)) -v t=$((t1 - t0)) 'BEGIN { printf "%.0f", 100 * b / t }')" \
    >"$raw/${tag}_cpu.txt"
  # Bytes per host link per allreduce: 4 calls of 8 MiB per path.
  : >"$raw/${tag}_bytes.txt"
  for p in "${paths[@]}"; do
    local name=${p%%|*} args=${p#*|}
    fabric_tx_bytes >"$work/b0"
    # shellcheck disable=SC2086
    fabric_mpirun "$np" "$ppn" $args -x SWITCHAGG_AGENT -x SWITCHAGG_LEASE -x SWITCHAGG_MODE \
      -x SWITCHAGG_SWITCH_WINDOW "$bin/mpi_liveness_check" --sizes 8388608 --iters 4 \
      --warmup 0 >"$work/run.log" || { cat "$work/run.log" >&2; exit 1; }
    fabric_tx_bytes >"$work/b1"
    fabric_tx_delta "$work/b0" "$work/b1" | awk -v name="$name" '{ s += $2; n++ }
      END { printf "%s %.3f\n", name, s / n / 4 / 8388608 }' >>"$raw/${tag}_bytes.txt"
  done
  agent_stop
  fabric_down
}

bench_each_config run_config

summarize() {  # TAG HOSTS PPN MBIT
  local tag=$1 hosts=$2 ppn=$3 mbit=$4
  cat "$raw/${tag}"_*_rep*.csv | awk -F, -v p=$((hosts * ppn)) -v k="$ppn" -v H="$hosts" \
    -v mbit="$mbit" -v bytesfile="$raw/${tag}_bytes.txt" "$(cat "$root/benchmarks/lib/stats.awk")"'
    BEGIN { while ((getline line < bytesfile) > 0) { split(line, f, " "); perN[f[1]] = f[2] } }
    $1 == "label" { next }
    { key = $1 SUBSEP $5; v[key] = v[key] " " $15; sizes[$5] = 1 }
    END {
      B = mbit * 1e6 / 8                       # link bytes per second
      ring_theory = p / (2 * (p - 1))          # switch / ring: N (node leader) vs 2(p-1)/p N per host link
      hier_theory = H / (2 * (H - 1))          # switch / hierarchical: N vs the leader ring, 2(H-1)/H N
      printf "| bytes | switch ms | switch, pipeline 1M ms | switch, no leaders ms | ring ms | hierarchical ms | rabenseifner ms | tuned ms | switch/ring (theory) | switch/hierarchical (theory) | switch/best host | link-bound switch ms (N / B) |\n"
      printf "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n"
      n = sortedKeys(sizes, list)
      for (i = 1; i <= n; i++) {
        s = list[i]
        sw = median(v["switch" SUBSEP s]) / 1000; fl = median(v["switch_flat" SUBSEP s]) / 1000; rg = median(v["ring" SUBSEP s]) / 1000
        hi = median(v["hierarchical" SUBSEP s]) / 1000; ra = median(v["rabenseifner" SUBSEP s]) / 1000
        tu = median(v["tuned" SUBSEP s]) / 1000; np_ = median(v["switch_pipe" SUBSEP s]) / 1000
        best = rg; if (hi < best) best = hi; if (ra < best) best = ra; if (tu < best) best = tu
        printf "| %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.2f (%.2f) | %.2f (%.2f) | %.2f | %.1f |\n", human(s), sw, np_, fl, rg, hi, ra, tu,
               sw / rg, ring_theory, sw / hi, hier_theory, sw / best, s / B * 1000
      }
      printf "\nBytes each host sent on its link per allreduce, in units of N (8 MiB, mean over hosts): "
      sep = ""
      for (a in perN) { printf "%s%s %.2f", sep, a, perN[a]; sep = ", " }
      printf " (theory: switch 1 with node leaders, %d without (switch_flat), ring %.2f, hierarchical %.2f).\n", k, 2 * (p - 1) / p, 2 * (H - 1) / H
    }'
}

{
  echo "# Switch path, agent in the switch: emulated cluster, $configs"
  echo
  echo "Command: \`benchmarks/fabric_bench.sh --configs \"$configs\" --reps $reps --min $min --max $max --out benchmarks/results/$(basename "$out")\`,"
  echo "$(date -u '+%Y-%m-%d %H:%M UTC'), 2 cores, load average at the end $(cut -d' ' -f1-3 /proc/loadavg)."
  echo "Fabric: \`scripts/fabric.py\` star, every host link shaped (htb) to the config's rate both"
  echo "ways, the agent on the switch with a link of hosts x rate (an aggregation engine that takes"
  echo "every port at line rate). UCX over TCP between hosts, loopback inside a host. Each cell is"
  echo "the median over $reps interleaved runs of switchagg-bench's per-size p50, in ms."
  echo
  echo "Theory (per host link of B bytes/s, p ranks, H hosts, k per host): with node leaders the"
  echo "switch path puts N on each host link whatever k is (the host reduces over shared memory"
  echo "first, its leader sends once; \`switch_flat\` = SWITCHAGG_SWITCH_LEADERS=off: every rank"
  echo "sends, k·N), the ring 2(p−1)/p·N (it crosses each host boundary once per direction), the"
  echo "hierarchical algorithm 2(H−1)/H·N (its leaders run a ring). For large N, switch/ring →"
  echo "p/(2(p−1)) (0.67 at 4×1, 0.57 at 4×2) and switch/hierarchical → H/(2(H−1)) (0.67 at 4"
  echo "hosts, 0.57 at 8), plus the in-host reduce and broadcast both pay, unless they overlap the"
  echo "stream (node leaders' pipeline, calls >= 2 MiB; \`switch_pipe\` = SWITCHAGG_SWITCH_SEGMENT=1M; off by default)."
  for c in $configs; do
    bench_config "$c"
    tag=h${hosts}p$ppn
    echo
    echo "## $hosts hosts × $ppn rank(s), $mbit Mbit/s links (CPU busy during the runs: $(awk '{ print $3 }' "$raw/${tag}_cpu.txt")%)"
    echo
    summarize "$tag" "$hosts" "$ppn" "$mbit"
    echo
    echo "![time per allreduce, $hosts hosts x $ppn]($(basename "$out" .md)_$tag.png)"
  done
  # How to read the gaps (written from the 2026-11-30 run; re-check after a new one).
  cat "$root/benchmarks/fabric_gaps.md"
} >"$out.tmp"
mv "$out.tmp" "$out"
if command -v gnuplot >/dev/null; then
  for c in $configs; do
    bench_config "$c"
    tag=h${hosts}p$ppn
    for p in "${paths[@]}"; do
      name=${p%%|*}
      cat "$raw/${tag}_${name}"_rep*.csv | awk -F, "$(cat "$root/benchmarks/lib/stats.awk")"'
        $1 == "label" { next } { v[$5] = v[$5] " " $15; s[$5] = 1 }
        END { n = sortedKeys(s, l); for (i = 1; i <= n; i++) print l[i], median(v[l[i]]) / 1000 }' \
        >"$work/$name.dat"
    done
    gnuplot <<EOF
set terminal png size 900,560 noenhanced
set output "$(dirname "$out")/$(basename "$out" .md)_$tag.png"
set title "allreduce on $hosts emulated hosts x $ppn rank(s), shaped links"
set logscale xy
set xlabel "bytes"; set ylabel "ms (p50, median of $reps)"
set key left top
plot for [n in "switch switch_pipe switch_flat ring hierarchical rabenseifner tuned"] "$work/".n.".dat" using 1:2 with linespoints title n
EOF
  done
fi
cat "$out"
