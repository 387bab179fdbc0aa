#!/usr/bin/env bash
# MPI_Reduce_scatter_block, MPI_Allgather, MPI_Bcast and MPI_Reduce through
# the switch agent (routed calls, issue 18) on an emulated cluster whose
# links are the bottleneck (scripts/fabric.py star, every host link shaped to
# RATE Mbit/s, the agent on the switch), against Open MPI's tuned (component
# excluded) and switchagg's own ring (half of its ring allreduce: the ring
# allreduce is one reduce-scatter phase and one allgather phase of the same
# size); with several ranks per host also the switch with every rank a
# member (SWITCHAGG_SWITCH_LEADERS=off) beside node leaders (the default). switchagg-bench per collective and path, interleaved repetitions,
# medians of the per-size p50; bytes each host put on its link per call from
# the interface counters; the theory next to each ratio. Writes
# benchmarks/results/routed_fabric.md.
#
#   benchmarks/routed_fabric_bench.sh [--build DIR] [--configs "4x1@400 8x1@200"]
#                                     [--colls "reduce_scatter_block allgather bcast reduce"]
#                                     [--reps 3] [--min 64K] [--max 8M] [--dtype float32]
#                                     [--out FILE]
#   a config HOSTSxRANKS@MBIT (RANKS per host; > 1: node leaders)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build configs="4x1@400 8x1@200" reps=3 min=64K max=8M dtype=float32
colls="reduce_scatter_block allgather bcast reduce"
out=$root/benchmarks/results/routed_fabric.md
source "$root/benchmarks/lib/bench_args.sh"
bench_args routed_fabric_bench 2,17 "build configs colls reps min max dtype out" "" "$@"
source "$root/benchmarks/lib/bench_env.sh"
bench_setup routed-fabric-bench "$(basename "$out" .md)_raw"

paths=(
  "switch|--mca coll_switchagg_offload on --mca coll_switchagg_verbose 1"
  "tuned|--mca coll ^switchagg"
)
export SWITCHAGG_SWITCH_WINDOW=16

run_config() {  # HOSTS PPN MBIT
  local hosts=$1 ppn=$2 mbit=$3 tag=h$1x$2
  local np=$((hosts * ppn)) runs=("${paths[@]}")
  ((ppn > 1)) && runs+=("members|--mca coll_switchagg_offload on --mca coll_switchagg_verbose 1 -x SWITCHAGG_SWITCH_LEADERS=off")
  fabric_up rfb --hosts "$hosts" --rate "$mbit" --subnet 10.91
  fabric_agent_start "$work"
  bench_lease routed-bench 16
  local env_args=(-x SWITCHAGG_AGENT -x SWITCHAGG_LEASE -x SWITCHAGG_MODE -x SWITCHAGG_SWITCH_WINDOW)
  for rep in $(seq 1 "$reps"); do
    for coll in $colls; do
      for p in "${runs[@]}"; do
        local name=${p%%|*} args=${p#*|}
        echo "config $tag@$mbit rep $rep: $coll $name" >&2
        # shellcheck disable=SC2086
        fabric_mpirun "$np" "$ppn" $args "${env_args[@]}" "$bin/switchagg-bench" --coll "$coll" \
          --dtype "$dtype" --min "$min" --max "$max" --iters 20 --min-iters 3 --warmup 2 \
          --label "$name" --csv "$raw/${tag}_${coll}_${name}_rep${rep}.csv" >"$work/run.log" ||
          { cat "$work/run.log" >&2; exit 1; }
        # The switch column must really have gone through the agent.
        if [[ $name != tuned ]] && ! grep -q "joined switch group" "$work/run.log"; then
          cat "$work/run.log" >&2; echo "routed_fabric_bench: the switch run did not join" >&2; exit 1
        fi
      done
    done
    echo "config $tag@$mbit rep $rep: allreduce ring" >&2
    fabric_mpirun "$np" "$ppn" --mca coll_switchagg_offload off \
      --mca coll_switchagg_allreduce_algorithm ring "${env_args[@]}" "$bin/switchagg-bench" \
      --dtype "$dtype" --min "$min" --max "$max" --iters 20 --min-iters 3 --warmup 2 \
      --label ring --csv "$raw/${tag}_allreduce_ring_rep${rep}.csv" >"$work/run.log" ||
      { cat "$work/run.log" >&2; exit 1; }
  done
  # Bytes per host link per call at 8 MiB: 8 calls (+ the benchmark's own
  # barriers and result gathers, a few hundred bytes) per collective and path.
  : >"$raw/${tag}_bytes.txt"
  for coll in $colls; do
    for p in "${runs[@]}"; do
      local name=${p%%|*} args=${p#*|}
      fabric_tx_bytes >"$work/b0"
      # shellcheck disable=SC2086
      fabric_mpirun "$np" "$ppn" $args "${env_args[@]}" "$bin/switchagg-bench" --coll "$coll" \
        --dtype "$dtype" --min 8M --max 8M --iters 8 --min-iters 8 --warmup 0 >"$work/run.log" ||
        { cat "$work/run.log" >&2; exit 1; }
      fabric_tx_bytes >"$work/b1"
      # Per host: up = bytes it sent; the root of bcast/reduce is rank 0 = h1.
      fabric_tx_delta "$work/b0" "$work/b1" | awk -v coll="$coll" -v name="$name" '
        { s += $2; n++; if (NR == 1) root = $2; else other += $2 }
        END { printf "%s %s %.3f %.3f %.3f\n", coll, name, s / n / 8 / 8388608, root / 8 / 8388608,
              (n > 1 ? other / (n - 1) : 0) / 8 / 8388608 }' >>"$raw/${tag}_bytes.txt"
    done
  done
  agent_stop
  fabric_down
}

bench_each_config run_config

# theory COLL HOSTS PPN: the link-bound ratio switch / ring-or-tuned for
# large N and what each host sends, as text (P = HOSTS·PPN ranks; with node
# leaders a host is one member).
theory() {
  local coll=$1 h=$2 q=$3
  local p=$((h * q))
  if ((q > 1)); then
    case $coll in
      reduce_scatter_block)
        awk -v p="$p" -v q="$q" 'BEGIN { printf "node leaders: each host sends N once (its node'"'"'s sum) and receives its %d ranks'"'"' blocks, %d/%d·N; every rank a member sends %d·N; the ring over %d ranks puts (p−1)/p·N on each host link (one hop a step leaves the host): switch / ring phase %.2f for floats, the members'"'"' %.2f", q, q, p, q, p, p / (p - 1), q * p / (p - 1) }' ;;
      allgather)
        awk -v p="$p" -v q="$q" 'BEGIN { printf "node leaders: each host sends its %d blocks (%d/%d·N) and receives the %d/%d·N it lacks once; every rank a member receives %d·(p−1)/p·N; the ring (p−1)/p·N each way: switch / ring phase %.2f, the members'"'"' %.2f", q, q, p, p - q, p, q, (p - q) / (p - 1), q }' ;;
      *) echo "node leaders: as for one rank per host, the host's ranks behind one member" ;;
    esac
    return
  fi
  case $coll in
    reduce_scatter_block)
      awk -v p="$p" -v d="$dtype" 'BEGIN {
        if (d ~ /^float/) printf "switch sends N, receives N/p: N/B against the ring'"'"'s (p−1)/p·N/B, so %.2f (float: every member sends its whole vector so the agent can sum in rank order); integers keep their own block: 1.00", p / (p - 1)
        else printf "integers: each member keeps its own block, sends (p−1)/p·N like the ring: 1.00" }' ;;
    allgather)
      echo "switch sends its block N/p, receives the (p−1)/p·N it lacks, as the ring does both ways: 1.00 for large N; one agent round trip instead of p−1 ring steps below" ;;
    bcast)
      echo "switch: the root sends N once, every other host receives N: N/B; tuned's large-message bcast (a pipelined tree) also moves ~N per link but in several hops: ≤ 1" ;;
    reduce)
      echo "switch: every member sends N (floats: the root too, so the agent sums in rank order; integers: the root keeps its own part), the root receives N: N/B; tuned's pipelined reduce chain ~N/B plus hops: ≤ 1" ;;
  esac
}

summarize() {  # TAG HOSTS PPN MBIT COLL
  local tag=$1 hosts=$2 ppn=$3 mbit=$4 coll=$5
  cat "$raw/${tag}_${coll}"_*_rep*.csv "$raw/${tag}_allreduce_ring"_rep*.csv |
    awk -F, -v coll="$coll" -v mbit="$mbit" -v ppn="$ppn" "$(cat "$root/benchmarks/lib/stats.awk")"'
    $1 == "label" { next }
    { key = $1 SUBSEP $5; v[key] = v[key] " " $15; if ($1 != "ring") sizes[$5] = 1 }
    END {
      B = mbit * 1e6 / 8
      m = ppn > 1  # the members column: every rank a member
      printf "| bytes | switch ms |%s tuned ms | switchagg ring, one phase ms | switch / tuned | switch / ring phase |%s link-bound N/B ms |\n",
        m ? " switch, every rank a member ms |" : "", m ? " switch / members |" : ""
      printf "| ---: | ---: |%s ---: | ---: | ---: | ---: |%s ---: |\n", m ? " ---: |" : "", m ? " ---: |" : ""
      n = sortedKeys(sizes, list)
      for (i = 1; i <= n; i++) {
        s = list[i]
        sw = median(v["switch" SUBSEP s]) / 1000; tu = median(v["tuned" SUBSEP s]) / 1000
        rg = median(v["ring" SUBSEP s]) / 2000
        mb = m ? median(v["members" SUBSEP s]) / 1000 : 0
        printf "| %s | %.2f |%s %.2f | %.2f | %.2f | %.2f |%s %.1f |\n", human(s), sw,
          m ? sprintf(" %.2f |", mb) : "", tu, rg, sw / tu, sw / rg, m ? sprintf(" %.2f |", sw / mb) : "",
          s / B * 1000
      }
    }'
  echo
  echo "Bytes each host sent on its link per call (8 MiB, units of N; mean over hosts, then the root h1 and the other hosts):"
  awk -v coll="$coll" '$1 == coll { printf "%s: mean %.2f, root %.2f, others %.2f. ", $2, $3, $4, $5 }' "$raw/${tag}_bytes.txt"
  echo
  echo
  echo "Theory ($hosts hosts × $ppn): $(theory "$coll" "$hosts" "$ppn")."
}

{
  echo "# Routed collectives through the switch: emulated cluster, $configs"
  echo
  echo "Command: \`benchmarks/routed_fabric_bench.sh --configs \"$configs\" --colls \"$colls\" --reps $reps --min $min --max $max --dtype $dtype\`,"
  echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load average at the end $(cut -d' ' -f1-3 /proc/loadavg)."
  echo "Fabric: \`scripts/fabric.py\` star, every host link shaped (htb) to the config's rate both ways,"
  echo "the agent on the switch with a link of hosts × rate; RANKS per host (more than one: node"
  echo "leaders, and a column with every rank a member); UCX over TCP. Each cell is the median over $reps interleaved runs"
  echo "of switchagg-bench's per-size p50 ($dtype; bytes = the whole vector N: the reduce-scatter's"
  echo "input, the allgather's result), in ms. \"switchagg ring, one phase\" is half of switchagg's ring"
  echo "allreduce of the same N, run in the same repetitions: the ring allreduce is exactly a ring"
  echo "reduce-scatter followed by a ring allgather of N."
  for c in $configs; do
    bench_config "$c"
    for coll in $colls; do
      echo
      echo "## $coll, $hosts hosts × $ppn rank(s), $mbit Mbit/s links"
      echo
      summarize "h${hosts}x$ppn" "$hosts" "$ppn" "$mbit" "$coll"
    done
  done
  bench_notes
} >"$out.tmp"
mv "$out.tmp" "$out"
cat "$out"
