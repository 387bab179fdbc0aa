#!/usr/bin/env bash
# Two rails (issue 45): an emulated star whose H hosts each have a link on
# each of 2 switch planes (scripts/fabric.py --rails 2), the agent of rail k
# in plane k's switch (host ar<k>, a link of H x RATE: the agent in the
# switch), the two agents a rail pool of the fabric map. switchagg-bench
# (float32 sum, PPN ranks a host, node leaders) per path, interleaved
# repetitions, medians of the per-size p50: the switch path over both rails
# and over rail 1 alone, with rail leaders (SWITCHAGG_SWITCH_RAIL_LEADERS=on:
# a leader per rail and host, PPN >= 2) against one leader a host, the
# ring, hierarchical and Open MPI's tuned (its
# TCP BTL on both rails' subnets); the bytes each rail carried per call (the
# hosts' interface counters) for the switch runs. Writes
# benchmarks/results/rails_fabric.md.
#
#   benchmarks/rails_bench.sh [--build DIR] [--hosts 4] [--ppn 2] [--rate 400] [--reps 2]
#                             [--min 1M] [--max 8M] [--out FILE]
# Theory (N bytes a rank, B = RATE a rail): with node leaders a host sends
# N per call to the agents, N/2 on each rail with 2 rails: N/(2B); N/B on
# one rail. The ring and hierarchical run over UCX's TCP on both rails
# (UCX 1.13 splits a large message over 2 devices), 2(P−1)/P·N and
# 2(H−1)/H·N a host, each over 2B at best.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build hosts=4 ppn=2 rate=400 reps=2 min=1M max=8M
out=$root/benchmarks/results/rails_fabric.md
source "$root/benchmarks/lib/bench_args.sh"
bench_args rails_bench 2,21 "build hosts ppn rate reps min max out" "" "$@"
source "$root/benchmarks/lib/bench_env.sh"
bench_setup rails-bench "$(basename "$out" .md)_raw" fresh
declare -a apids asocks
trap 'for p in "${apids[@]}"; do AGENT_PID=$p; agent_stop; done; fabric_down; rm -rf "$work"' EXIT
fabric_up rlb --hosts "$hosts" --rate "$rate" --rails 2 --subnet 10.96
for k in 1 2; do
  mkdir -p "$work/a$k"
  FABRIC_AGENT_HOST=ar$k fabric_agent_start "$work/a$k" --set agent.log_level=warn
  apids[$k]=$AGENT_PID asocks[$k]=$AGENT_SOCKET
done
AGENT_PID=
for r in 1 2; do  # map r: a rail pool of rails 1..r
  : >"$work/map$r.toml"
  list=""
  for k in $(seq 1 "$r"); do
    printf '[[agent]]\nname = "rail%s"\ncontrol = "unix:%s"\n\n' "$k" "${asocks[$k]}" >>"$work/map$r.toml"
    list+="${list:+, }\"rail$k\""
  done
  printf '[[pool]]\nname = "rails"\nagents = [%s]\nnodes = "h[1-%s]"\nrails = true\n' \
    "$list" "$hosts" >>"$work/map$r.toml"
done
lease_r() {
  eval "$("$bin/switchagg-ctl" lease create --job "rails-$1" --slots 16 --ttl 2h \
    --nodes "h[1-$hosts]" --fabric "$work/map$1.toml" | grep '^export ')"
}
lease_drop() { "$bin/switchagg-ctl" lease delete --job "rails-$1" --fabric "$work/map$1.toml" >/dev/null; }
# "rail1_tx rail2_tx" summed over the compute hosts.
rail_tx() {
  fabric_py counters "$FABRIC" | /usr/bin/python3 -c '
import json, sys
c = json.load(sys.stdin)
print(*(sum(v["rails"][r]["tx_bytes"] for v in c.values() if "rails" in v) for r in ("1", "2")))'
}
net2=$(awk -F. '{ print $1 "." $2 + 100 }' <<<"10.96")
export SWITCHAGG_SWITCH_WINDOW=16
run() {  # NAME REP [mpirun args]
  local name=$1 rep=$2
  shift 2
  echo "rep $rep: $name" >&2
  local b0 b1
  b0=$(rail_tx)
  fabric_mpirun $((hosts * ppn)) "$ppn" "$@" -x SWITCHAGG_AGENT -x SWITCHAGG_LEASE -x SWITCHAGG_MODE \
    -x SWITCHAGG_SWITCH_WINDOW "$bin/switchagg-bench" --min "$min" --max "$max" \
    --iters 10 --min-iters 5 --warmup 2 --label "$name" \
    --csv "$raw/${name}_rep$rep.csv" >"$work/run.log" || { cat "$work/run.log" >&2; exit 1; }
  b1=$(rail_tx)
  echo "$name $rep $b0 $b1" >>"$raw/rail_bytes.txt"
}
for rep in $(seq 1 "$reps"); do
  run ring "$rep" --mca coll_switchagg_offload off --mca coll_switchagg_allreduce_algorithm ring
  run hierarchical "$rep" --mca coll_switchagg_offload off \
    --mca coll_switchagg_allreduce_algorithm hierarchical
  FABRIC_BTL_IF="10.96.0.0/16,$net2.0.0/16" run tuned "$rep" --mca coll ^switchagg
  for r in 2 1; do
    lease_r "$r"
    run "switch_r$r" "$rep" --mca coll_switchagg_offload on \
      --mca coll_switchagg_allreduce_algorithm switch
    if ((r == 2 && ppn >= 2)); then
      SWITCHAGG_SWITCH_RAIL_LEADERS=on run switch_rl2 "$rep" --mca coll_switchagg_offload on \
        --mca coll_switchagg_allreduce_algorithm switch --mca coll_switchagg_verbose 1 \
        -x SWITCHAGG_SWITCH_RAIL_LEADERS
      # The join must say so (else one leader a host served: no figure).
      grep -q "2 rail leaders on each of $hosts nodes" "$work/run.log" ||
        { cat "$work/run.log" >&2; echo "rails_bench: no rail leaders in switch_rl2" >&2; exit 1; }
    fi
    lease_drop "$r"
  done
done
{
  echo "# Two rails: emulated cluster, $hosts hosts × $ppn ranks, 2 links of $rate Mbit/s a host"
  echo
  echo "Command: \`benchmarks/rails_bench.sh --hosts $hosts --ppn $ppn --rate $rate --reps $reps --min $min --max $max\`,"
  echo "$(date -u '+%Y-%m-%d %H:%M UTC'), 2 cores, load average at the end $(cut -d' ' -f1-3 /proc/loadavg)."
  echo "Deployment: **the agent in the switch, one per rail** (scripts/fabric.py star with"
  echo "\`--rails 2\`: each host has a link on each of 2 switch planes, shaped to $rate Mbit/s both"
  echo "ways; the agent of rail k on host ar<k> behind a link of $hosts × $rate Mbit/s in plane k;"
  echo "the two agents a rail pool of the fabric map, so stripe k of every call crosses rail k)."
  echo "Each cell: median over $reps interleaved runs of switchagg-bench's per-size p50, ms."
  echo "switch 2 rails / 1 rail: the switch path forced, node leaders (one member a host), the"
  echo "lease on both rails' agents or on rail 1's only. Open MPI tuned with its TCP BTL on both"
  echo "rails' subnets. Theory per host for large N: switch N/(2B) on 2 rails, N/B on one."
  echo "Rail leaders (SWITCHAGG_SWITCH_RAIL_LEADERS=on, PPN ≥ 2): a leader per rail and host, each"
  echo "streaming its stripe, against one leader a host driving both rails; the same bytes per"
  echo "rail, so the link theory is the same N/(2B); what differs is one process or two per host."
  echo
  cat "$raw"/*_rep*.csv | awk -F, -v H="$hosts" -v P=$((hosts * ppn)) -v mbit="$rate" \
    "$(cat "$root/benchmarks/lib/stats.awk")"'
    $1 == "label" { next }
    { key = $1 SUBSEP $5; v[key] = v[key] " " $15; sizes[$5] = 1 }
    END {
      B = mbit * 1e6 / 8
      print "| bytes | switch 2 rails ms | N/(2B) ms | 2-rail / bound | switch 1 rail ms | N/B ms | 1 rail / 2 rails | rail leaders ms | rail leaders / one leader | ring ms | hierarchical ms | tuned ms | switch 2 rails / ring |"
      print "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
      n = sortedKeys(sizes, list)
      for (i = 1; i <= n; i++) {
        s = list[i]
        s2 = median(v["switch_r2" SUBSEP s]) / 1000; s1 = median(v["switch_r1" SUBSEP s]) / 1000
        rg = median(v["ring" SUBSEP s]) / 1000
        rl = ("switch_rl2" SUBSEP s) in v ? median(v["switch_rl2" SUBSEP s]) / 1000 : 0
        printf "| %s | %.1f | %.1f | %.2f | %.1f | %.1f | %.2f | %s | %s | %.1f | %.1f | %.1f | %.2f |\n",
               human(s), s2, s / (2 * B) * 1000, s2 / (s / (2 * B) * 1000), s1, s / B * 1000,
               s1 / s2, rl ? sprintf("%.1f", rl) : "—", rl ? sprintf("%.2f", rl / s2) : "—", rg,
               median(v["hierarchical" SUBSEP s]) / 1000,
               median(v["tuned" SUBSEP s]) / 1000, s2 / rg
      }
    }'
  echo
  echo "Bytes the $hosts hosts put on each rail during each run (interface counters, all sizes and"
  echo "iterations of the run; rail 1, rail 2, rail 2's share):"
  echo
  echo "| run | rep | rail 1 MB | rail 2 MB | rail 2 share |"
  echo "| --- | ---: | ---: | ---: | ---: |"
  awk '{ a = $5 - $3; b = $6 - $4
         printf "| %s | %d | %.1f | %.1f | %.3f |\n", $1, $2, a / 1e6, b / 1e6, (a + b) ? b / (a + b) : 0 }' \
    "$raw/rail_bytes.txt"
  bench_notes
} >"$out.tmp"
mv "$out.tmp" "$out"
echo "rails_bench: wrote ${out#$root/}" >&2
