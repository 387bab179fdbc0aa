#!/usr/bin/env bash
# Trees on an oversubscribed leaf-spine fabric: scripts/fabric.py
# leaf-spine, R racks x H hosts, host links at RATE Mbit/s, each rack's
# uplink at UPLINK (2:1 oversubscribed by default: 4 x 200 into 400), a
# leaf agent on each leaf switch (its parent: the spine agent) and the
# spine agent on the spine. One rank per host. Paths, interleaved per
# repetition: the tree (one lease over both leaves and the spine), a flat
# single agent (every rank to the spine agent), and the host algorithms
# (ring, rabenseifner, hierarchical). Medians of the repetitions'
# switchagg-bench p50s; bytes on each host's link and on each rack's
# uplink (the leaf switch's port to the spine, both directions) per
# allreduce; the theory next to each ratio. Writes
# benchmarks/results/tree_fabric.md.
#
#   benchmarks/tree_fabric_bench.sh [--build DIR] [--racks 2] [--hosts 4] [--rate 200]
#                                   [--uplink 400] [--reps 3] [--min 1M] [--max 8M] [--out FILE]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build racks=2 hosts=4 rate=200 uplink=400 reps=3 min=1M max=8M
out=$root/benchmarks/results/tree_fabric.md
source "$root/benchmarks/lib/bench_args.sh"
bench_args tree_fabric_bench 2,16 "build racks hosts rate uplink reps min max out" "" "$@"
source "$root/benchmarks/lib/bench_env.sh"
bench_setup tree-bench "$(basename "$out" .md)_raw"
np=$((racks * hosts))
bench_tree tb 10.91
# The tree's lease (leaves + spine) and a flat one at the spine alone.
tree_env=$("$bin/switchagg-ctl" lease create --job tree-bench --slots 16 --ttl 2h \
  --nodes "h[1-$np]" --fabric "$TREE_MAP" | grep '^export ')
flat_env=$("$bin/switchagg-ctl" --agent "unix:$SPINE_SOCKET" lease create --job flat-bench \
  --slots 16 --ttl 2h | grep '^export ')
export SWITCHAGG_SWITCH_WINDOW=16

paths=(
  "tree|tree|--mca coll_switchagg_offload on --mca coll_switchagg_allreduce_algorithm switch --mca coll_switchagg_verbose 1"
  "flat|flat|--mca coll_switchagg_offload on --mca coll_switchagg_allreduce_algorithm switch"
  "ring|none|--mca coll_switchagg_offload off --mca coll_switchagg_allreduce_algorithm ring"
  "rabenseifner|none|--mca coll_switchagg_offload off --mca coll_switchagg_allreduce_algorithm rabenseifner"
  "hierarchical|none|--mca coll_switchagg_offload off --mca coll_switchagg_allreduce_algorithm hierarchical"
)

# run PATH_ENTRY PROGRAM ARGS...: one mpirun of the path with its lease.
run() {
  local entry=$1 rest lease args exports=""
  shift
  rest=${entry#*|}
  lease=${rest%%|*} args=${rest#*|}
  case $lease in tree) exports=$tree_env ;; flat) exports=$flat_env ;; esac
  # shellcheck disable=SC2086
  fabric_mpirun_with "$exports" "$np" 1 $args -x SWITCHAGG_SWITCH_WINDOW "$@"
}

for rep in $(seq 1 "$reps"); do
  for p in "${paths[@]}"; do
    name=${p%%|*}
    echo "rep $rep: $name" >&2
    run "$p" "$bin/switchagg-bench" --min "$min" --max "$max" --iters 10 --min-iters 3 \
      --warmup 2 --label "$name" --csv "$raw/${name}_rep${rep}.csv" >"$work/run.log" ||
      { cat "$work/run.log" >&2; exit 1; }
    [[ $name != tree ]] || grep -q "tree over $racks leaf agents" "$work/run.log" ||
      { cat "$work/run.log" >&2; echo "the tree path did not use the tree" >&2; exit 1; }
  done
done

# Bytes per allreduce: 4 calls of 8 MiB per path; hosts' links (mean, max)
# and the uplinks (mean over racks, each direction), in units of N.
: >"$raw/bytes.txt"
for p in "${paths[@]}"; do
  name=${p%%|*}
  fabric_tx_bytes >"$work/b0"
  fabric_uplink_bytes >"$work/u0"
  run "$p" "$bin/mpi_liveness_check" --sizes 8388608 --iters 4 --warmup 0 >"$work/run.log" ||
    { cat "$work/run.log" >&2; exit 1; }
  fabric_tx_bytes >"$work/b1"
  fabric_uplink_bytes >"$work/u1"
  host=$(fabric_tx_delta "$work/b0" "$work/b1" | awk '{ s += $2; n++; if ($2 > m) m = $2 }
    END { printf "%.2f %.2f", s / n / 4 / 8388608, m / 4 / 8388608 }')
  up=$(paste "$work/u0" "$work/u1" | awk '{ u += $5 - $2; d += $6 - $3; n++ }
    END { printf "%.2f %.2f", u / n / 4 / 8388608, d / n / 4 / 8388608 }')
  echo "$name $host $up" >>"$raw/bytes.txt"
done

summarize() {
  cat "$raw"/*_rep*.csv | awk -F, -v p="$np" -v H="$hosts" -v R="$racks" -v rate="$rate" \
    -v uplink="$uplink" "$(cat "$root/benchmarks/lib/stats.awk")"'
    $1 == "label" { next }
    { key = $1 SUBSEP $5; v[key] = v[key] " " $15; sizes[$5] = 1 }
    END {
      B = rate * 1e6 / 8; U = uplink * 1e6 / 8
      # Link-bound time per allreduce of N bytes (both directions of a link
      # run at once): tree - host links N / B, uplinks N / U; flat - each
      # uplink carries H·N up and down, the host links N; ring - each host
      # link 2(p-1)/p·N, each uplink the same (one ring hop crosses it).
      t_tree = 1 / B; if (1 / U > t_tree) t_tree = 1 / U
      t_flat = 1 / B; if (H / U > t_flat) t_flat = H / U
      ring = 2 * (p - 1) / p
      t_ring = ring / B; if (ring / U > t_ring) t_ring = ring / U
      printf "| bytes | tree ms | flat agent ms | ring ms | rabenseifner ms | hierarchical ms | tree/flat (theory %.2f) | tree/ring (theory %.2f) | tree/best host | link-bound tree ms |\n", t_tree / t_flat, t_tree / t_ring
      printf "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n"
      n = sortedKeys(sizes, list)
      for (i = 1; i <= n; i++) {
        s = list[i]
        tr = median(v["tree" SUBSEP s]) / 1000; fl = median(v["flat" SUBSEP s]) / 1000
        rg = median(v["ring" SUBSEP s]) / 1000; ra = median(v["rabenseifner" SUBSEP s]) / 1000
        hi = median(v["hierarchical" SUBSEP s]) / 1000
        best = rg; if (ra < best) best = ra; if (hi < best) best = hi
        printf "| %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.2f | %.2f | %.2f | %.1f |\n", human(s),
               tr, fl, rg, ra, hi, tr / fl, tr / rg, tr / best, s * t_tree * 1000
      }
    }'
}

{
  echo "# Trees on an oversubscribed leaf-spine fabric"
  echo
  echo "Command: \`benchmarks/tree_fabric_bench.sh --racks $racks --hosts $hosts --rate $rate --uplink $uplink --reps $reps --min $min --max $max\`,"
  echo "$(date -u '+%Y-%m-%d %H:%M UTC'), 2 cores, load average at the end $(cut -d' ' -f1-3 /proc/loadavg)."
  echo "Fabric: \`scripts/fabric.py\` leaf-spine, $racks racks × $hosts hosts, one rank per host, host links"
  echo "$rate Mbit/s, each rack's uplink $uplink Mbit/s ($(awk -v h="$hosts" -v r="$rate" -v u="$uplink" 'BEGIN { printf "%.0f:1", h * r / u }') oversubscribed), a leaf agent per"
  echo "leaf switch (parent: the spine agent), the spine agent on the spine. \`tree\` = one lease"
  echo "over the leaves and the spine; \`flat agent\` = a lease at the spine agent alone (every rank"
  echo "streams to it across its rack's uplink). Each cell is the median over $reps interleaved runs of"
  echo "switchagg-bench's per-size p50 (float32 sum), in ms."
  echo
  echo "Theory (link-bound, both directions of a link at once; B = host link, U = uplink, p ranks,"
  echo "H per rack): the tree puts N on each host link and one partial (N) up and the result down"
  echo "each uplink, so it takes max(N/B, N/U); the flat agent puts H·N on each uplink, max(N/B,"
  echo "H·N/U); the ring 2(p−1)/p·N on each host link and on each uplink (one ring hop per rack"
  echo "boundary), max over both. With 2:1 uplinks the tree is host-link-bound and the flat agent"
  echo "uplink-bound: tree/flat → max(1/B, 1/U) / max(1/B, H/U) and tree/ring → p/(2(p−1)) (the"
  echo "header's theory), less the tree's pipeline fill (a chunk crosses two agents) at small N."
  echo
  summarize
  echo
  echo "Bytes per allreduce of N = 8 MiB, in units of N (4 calls per path): host link mean and max,"
  echo "uplink up and down (mean over racks). Theory: tree 1 / 1 / 1 / 1; flat 1 / 1 / $hosts / $hosts;"
  echo "ring $(awk -v p="$np" 'BEGIN { printf "%.2f", 2 * (p - 1) / p }') on each host link and ≈ the same on each uplink."
  echo
  echo "| path | host mean | host max | uplink up | uplink down |"
  echo "| --- | ---: | ---: | ---: | ---: |"
  awk '{ printf "| %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5 }' "$raw/bytes.txt"
  cat "$root/benchmarks/tree_fabric_notes.md"
} >"$out.tmp"
mv "$out.tmp" "$out"
cat "$out"
