#!/usr/bin/env bash
# Credits at the agent's port under incast (issue 45): an emulated star of
# M hosts x 1 rank and one reducer host r1 whose link runs at a compute
# host's rate (scripts/fabric.py --reducers 1), the switch's port toward r1
# a shallow queue (--agent-queue Q: pfifo limit Q packets, what arrives past
# it is dropped). All M members stream every call into that one port: an
# M:1 incast. The agent on r1 runs once per credit bound
# (data.inflight_bytes; 0 = no bound) and switchagg-bench (float32 sum, the
# switch path forced) measures the call; per run the members' TCP
# retransmits (their /proc/net/snmp), the packets the port's queue dropped
# (tc -s), the agent's inflight_granted_max / inflight_held_max and the
# calls redone on the host (must be 0). The ring over the same hosts is the
# host-path reference (it does not cross r1's port). Bounds in alternating
# order rep by rep; medians of the per-size p50. Writes
# benchmarks/results/incast_credits.md.
#
#   benchmarks/incast_bench.sh [--build DIR] [--members "4 8"] [--rate 400] [--queue 32]
#       [--bounds "0 4194304 1048576 262144 131072"] [--reps 3] [--min 1M] [--max 4M] [--out FILE]
# Theory (N bytes a rank, M members, B = RATE): every byte of every member
# crosses r1's port, so a call takes at least M·N/B (results leave r1 on
# the other direction of its link, in parallel). The ring needs
# 2(M−1)/M·N/B. Lease 16 slots: each call's window is 8 slots of 256 KiB,
# M x 8 x 256 KiB in flight (16 MiB at M = 8) unless the bound cuts it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build members="4 8" rate=400 queue=32 bounds="0 4194304 1048576 262144 131072" reps=3
min=1M max=4M
out=$root/benchmarks/results/incast_credits.md
source "$root/benchmarks/lib/bench_args.sh"
bench_args incast_bench 2,23 "build members rate queue bounds reps min max out" "" "$@"
source "$root/benchmarks/lib/bench_env.sh"
bench_setup incast-bench "$(basename "$out" .md)_raw" fresh

# Retransmitted TCP segments of h1..hM so far.
retransmits() {
  # shellcheck disable=SC2046
  fabric_retransmits $(seq -f 'h%g' 1 "$1") || exit 1
}
# Packets r1's switch port dropped so far.
port_dropped() {
  fabric_py counters "$FABRIC" | /usr/bin/python3 -c '
import json, sys
q = json.load(sys.stdin).get("r1", {}).get("port_queue")
if not q or q.get("limit") is None:
    sys.exit("incast_bench: r1 has no shallow port queue")
print(q["dropped"])'
}
# "granted_max held_max bytes_in" from the running agent's counters.
agent_counters() {
  "$bin/switchagg-ctl" --agent "unix:$AGENT_SOCKET" --json status | /usr/bin/python3 -c '
import json, sys
c = json.load(sys.stdin)["counters"]
print(c["inflight_granted_max"], c["inflight_held_max"], c["bytes_in"])'
}

run_bench() {  # LABEL M [mpirun args]
  local label=$1 m=$2
  shift 2
  fabric_mpirun "$m" 1 "$@" "$bin/switchagg-bench" --min "$min" --max "$max" \
    --iters 8 --min-iters 5 --warmup 2 --label "$label" \
    --csv "$raw/$label.csv" >"$work/run.log" 2>&1 || { cat "$work/run.log" >&2; exit 1; }
}
# One credit bound: a fresh agent, a lease, the forced switch path.
run_bound() {  # M BOUND REP
  local m=$1 bound=$2 rep=$3 r0 d0 r1 d1 host
  echo "members $m, bound $bound, rep $rep" >&2
  mkdir -p "$work/a"
  FABRIC_AGENT_HOST=r1 fabric_agent_start "$work/a" --set agent.log_level=warn \
    --set "data.inflight_bytes=$bound"
  eval "$("$bin/switchagg-ctl" --agent "unix:$AGENT_SOCKET" lease create --job "incast-$m-$bound-$rep" \
    --slots 16 --ttl 2h | grep '^export ')"
  r0=$(retransmits "$m") d0=$(port_dropped)
  run_bench "m${m}_b${bound}_rep$rep" "$m" --mca coll_switchagg_offload on \
    --mca coll_switchagg_allreduce_algorithm switch --mca coll_switchagg_verbose 1 \
    -x SWITCHAGG_AGENT -x SWITCHAGG_LEASE
  r1=$(retransmits "$m") d1=$(port_dropped)
  # A call the switch did not serve would make the row a host figure.
  host=$(grep -c -E 'redone on the host|fallback:' "$work/run.log" || true)
  echo "$m $bound $rep $((r1 - r0)) $((d1 - d0)) $(agent_counters) $host" >>"$raw/wire.txt"
  agent_stop
}

for m in $members; do
  ((m >= 2 && m <= 16)) || { echo "incast_bench: --members must be 2..16" >&2; exit 2; }
  fabric_up ib --hosts "$m" --rate "$rate" --reducers 1 --agent-queue "$queue" --subnet 10.97
  for rep in $(seq 1 "$reps"); do
    if ((rep % 2)); then order=$bounds; else order=$(printf '%s\n' $bounds | tac | xargs); fi
    r0=$(retransmits "$m")
    run_bench "m${m}_ring_rep$rep" "$m" --mca coll_switchagg_offload off \
      --mca coll_switchagg_allreduce_algorithm ring
    echo "$m ring $rep $(($(retransmits "$m") - r0))" >>"$raw/ring.txt"
    for bound in $order; do run_bound "$m" "$bound" "$rep"; done
  done
  fabric_down
  FABRIC=
done

{
  echo "# Credits at the agent's port under incast: emulated cluster, M hosts × 1 rank, one reducer host, a $queue-packet port queue"
  echo
  echo "Command: \`benchmarks/incast_bench.sh --members \"$members\" --rate $rate --queue $queue --bounds \"$bounds\" --reps $reps --min $min --max $max\`,"
  echo "$(date -u '+%Y-%m-%d %H:%M UTC'), 2 cores, load average at the end $(cut -d' ' -f1-3 /proc/loadavg)."
  echo "Deployment: **a reducer host** (scripts/fabric.py star, M hosts and reducer host r1, every"
  echo "link shaped to $rate Mbit/s both ways; the switch's port toward r1 a pfifo of $queue packets,"
  echo "\`--agent-queue $queue\`). The switch path forced (every rank a member, lease 16 slots: a"
  echo "window of 8 slots of 256 KiB unless the credit cuts it). bound = the agent's"
  echo "\`data.inflight_bytes\` (0: no bound). Each time: median over $reps interleaved runs of"
  echo "switchagg-bench's per-size p50, ms. Theory: M·N/B into r1's port."
  echo
  cat "$raw"/*.csv | awk -F, -v mbit="$rate" "$(cat "$root/benchmarks/lib/stats.awk")"'
    $1 == "label" { next }
    {
      split($1, f, "_"); m = substr(f[1], 2); side = f[2]
      key = m SUBSEP side SUBSEP $5; v[key] = v[key] " " $15; sizes[$5] = 1; ms[m] = 1
      if (side != "ring") sides[m] = sides[m] " " substr(side, 2)
    }
    END {
      B = mbit * 1e6 / 8
      n = sortedKeys(sizes, list)
      nm = sortedKeys(ms, mlist)
      for (j = 1; j <= nm; j++) {
        m = mlist[j]
        delete seen; nb = 0
        k = split(sides[m], bs, " ")
        for (i = 1; i <= k; i++) if (!(bs[i] in seen)) { seen[bs[i]] = 1; bl[++nb] = bs[i] }
        for (i = 1; i <= nb; i++) for (x = i + 1; x <= nb; x++) if (bl[x] + 0 < bl[i] + 0) { t = bl[i]; bl[i] = bl[x]; bl[x] = t }
        printf "\n**M = %d members** (theory M·N/B; ratio = time / the unbounded run)\n\n| bytes | M·N/B ms | ring ms", m
        for (i = 1; i <= nb; i++) printf " | bound %s ms | ratio", bl[i] == 0 ? "none" : human(bl[i])
        printf " |\n| ---: | ---: | ---:"
        for (i = 1; i <= nb; i++) printf " | ---: | ---:"
        printf " |\n"
        for (i = 1; i <= n; i++) {
          s = list[i]
          base = median(v[m SUBSEP "b0" SUBSEP s]) / 1000
          printf "| %s | %.0f | %.1f", human(s), m * s / B * 1000, median(v[m SUBSEP "ring" SUBSEP s]) / 1000
          for (x = 1; x <= nb; x++) {
            t = median(v[m SUBSEP "b" bl[x] SUBSEP s]) / 1000
            printf " | %.1f | %s", t, (base > 0 ? sprintf("%.2f", t / base) : "—")
          }
          printf " |\n"
        }
      }
    }'
  echo
  echo "Per run (all sizes and iterations of the run): the members' TCP retransmitted segments,"
  echo "the packets r1's port dropped, the agent's most credit granted / held at once, the bytes it"
  echo "received, and the calls the members redid on the host (a non-zero there would make the run"
  echo "a host figure). Ring runs: retransmits only (they do not cross r1's port)."
  echo
  echo "| M | bound | rep | retransmits | port drops | granted max | held max | agent bytes in | on host |"
  echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
  sort -k1,1n -k2,2n -k3,3n "$raw/wire.txt" |
    awk '{ printf "| %d | %s | %d | %d | %d | %d | %d | %.1f MB | %d |\n", $1, $2 == 0 ? "none" : $2, $3, $4, $5, $6, $7, $8 / 1e6, $9 }'
  echo
  echo "| M | ring rep | retransmits |"
  echo "| ---: | ---: | ---: |"
  sort -k1,1n -k3,3n "$raw/ring.txt" | awk '{ printf "| %d | %d | %d |\n", $1, $3, $4 }'
  bench_notes
} >"$out.tmp"
mv "$out.tmp" "$out"
echo "incast_bench: wrote ${out#$root/}" >&2
