#!/usr/bin/env bash
# Lanes (issue 45): several UCX endpoints per peer, whole messages
# round-robin (SWITCHAGG_UCX_LANES), against one, for the host algorithms
# on an emulated star of H hosts x 1 rank, links shaped to RATE Mbit/s
# (scripts/fabric.py). switchagg-bench (float32 sum) with ring and
# Rabenseifner forced, offload off, lanes 1 and 4 interleaved, medians of
# the per-size p50. Writes benchmarks/results/lanes_fabric.md.
#
#   benchmarks/lanes_bench.sh [--build DIR] [--hosts 4] [--rate 200] [--reps 3]
#                             [--min 64K] [--max 8M] [--lanes "1 4"] [--out FILE]
# Theory: the links are one path each (a bridge, no ECMP), so lanes can add
# no path diversity here: what they change is TCP connections per peer
# (one congestion window each) and per-lane state. On RoCE their gain is
# ECMP entropy, which one lane with IB_ROCE_PATH_FACTOR also gives.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build hosts=4 rate=200 reps=3 min=64K max=8M lanes="1 4"
out=$root/benchmarks/results/lanes_fabric.md
source "$root/benchmarks/lib/bench_args.sh"
bench_args lanes_bench 2,14 "build hosts rate reps min max lanes out" "" "$@"
source "$root/benchmarks/lib/bench_env.sh"
bench_setup lanes-bench
fabric_up lnb --hosts "$hosts" --rate "$rate" --subnet 10.97
for rep in $(seq 1 "$reps"); do
  for alg in ring rabenseifner; do
    for l in $lanes; do
      echo "rep $rep: $alg lanes $l" >&2
      fabric_mpirun "$hosts" 1 --mca coll_switchagg_offload off \
        --mca coll_switchagg_allreduce_algorithm "$alg" -x SWITCHAGG_UCX_LANES="$l" \
        "$bin/switchagg-bench" --min "$min" --max "$max" --iters 10 --min-iters 5 --warmup 2 \
        --label "${alg}_l$l" --csv "$work/${alg}_l${l}_rep$rep.csv" >"$work/run.log" ||
        { cat "$work/run.log" >&2; exit 1; }
    done
  done
done
{
  echo "# Lanes 1 vs 4: emulated cluster, $hosts hosts × 1 rank, links of $rate Mbit/s"
  echo
  echo "Command: \`benchmarks/lanes_bench.sh --hosts $hosts --rate $rate --reps $reps --min $min --max $max --lanes \"$lanes\"\`,"
  echo "$(date -u '+%Y-%m-%d %H:%M UTC'), 2 cores, load average at the end $(cut -d' ' -f1-3 /proc/loadavg)."
  echo "Deployment: host algorithms only (offload off), scripts/fabric.py star, UCX over TCP."
  echo "Each cell: median over $reps interleaved runs of switchagg-bench's per-size p50, ms;"
  echo "ratio = 4 lanes / 1 lane (below 1: lanes faster)."
  echo
  cat "$work"/*_rep*.csv | awk -F, "$(cat "$root/benchmarks/lib/stats.awk")"'
    $1 == "label" { next }
    { v[$1 SUBSEP $5] = v[$1 SUBSEP $5] " " $15; sizes[$5] = 1 }
    function ms(name, s) { return median(v[name SUBSEP s]) / 1000 }
    END {
      print "| bytes | ring 1 lane | ring 4 lanes | ratio | rabenseifner 1 lane | rabenseifner 4 lanes | ratio |"
      print "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
      for (i = 1; i <= sortedKeys(sizes, list); i++)
        printf "| %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", human(list[i]),
               ms("ring_l1", list[i]), ms("ring_l4", list[i]), ms("ring_l4", list[i]) / ms("ring_l1", list[i]),
               ms("rabenseifner_l1", list[i]), ms("rabenseifner_l4", list[i]),
               ms("rabenseifner_l4", list[i]) / ms("rabenseifner_l1", list[i])
    }'
  bench_notes
} >"$out.tmp"
mv "$out.tmp" "$out"
echo "lanes_bench: wrote ${out#$root/}" >&2
