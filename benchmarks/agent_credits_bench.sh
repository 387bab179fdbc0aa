#!/usr/bin/env bash
# Credits at the agent's port (data.inflight_bytes): the call time of one
# group of MEMBERS members (agent_client_bench, float32 SUM, each asking for
# a window of 8 chunks of 256 KiB) under each bound, side by side in one run
# over TCP loopback (one node: the agent a process beside the members).
# Sides alternate their order rep by rep; per run the median over members
# of each member's median call time; medians over reps. Also the agent's
# inflight_granted_max / inflight_held_max of the run (its counters).
# Writes benchmarks/results/agent_credits.md.
#
#   benchmarks/agent_credits_bench.sh [--build DIR] [--members 8]
#       [--sizes "1048576 8388608"] [--iters 20] [--reps 3]
#       [--bounds "0 4194304 1048576"] [--out FILE]
# DIR: a build tree with bin/switchagg-agent, bin/switchagg-ctl and
# bin/agent_client_bench (default: build). Bound 0 = no bound.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build members=8 sizes="1048576 8388608" iters=20 reps=3 bounds="0 4194304 1048576"
out=$root/benchmarks/results/agent_credits.md
for lib in bench_args bench_agent bench_env; do source "$root/benchmarks/lib/$lib.sh"; done
bench_args agent_credits_bench 2,16 "build members sizes iters reps bounds out" "" "$@"
build=$(cd "$build" && pwd)
bench_need "$build"/bin/{switchagg-agent,switchagg-ctl,agent_client_bench}
bench_agent_tmp agent_credits_bench

# One run: prints "bound bytes window median_us granted_max held_max".
run() {  # $1 bound, $2 bytes, $3 rep
  local pids=() line addr token r
  BENCH_AGENT_ARGS="--set data.inflight_bytes=$1" bench_start_agent "$build/bin/switchagg-agent" "$tmp"
  line=$("$build/bin/switchagg-ctl" --agent "unix:$tmp/agent.sock" lease create \
    --job "c$3-$1-$2" --slots 8)
  addr=$(sed -n 's/.*SWITCHAGG_AGENT=\([^ ]*\).*/\1/p' <<<"$line")
  token=$(sed -n 's/.*SWITCHAGG_LEASE=\([0-9a-f]*\).*/\1/p' <<<"$line")
  for r in $(seq 0 $((members - 1))); do
    "$build/bin/agent_client_bench" --agent "$addr" --token "$token" --group 1 --size "$members" \
      --rank "$r" --bytes "$2" --iters "$iters" --warmup 3 --window 8 >"$tmp/m$r.out" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || { echo "agent_credits_bench: a member failed (bound $1, $2 bytes)" >&2; exit 1; }; done
  "$build/bin/switchagg-ctl" --agent "unix:$tmp/agent.sock" --json status >"$tmp/status.json"
  bench_stop_agent
  python3 - "$1" "$2" "$tmp" "$members" <<'PY'
import json, re, statistics, sys
bound, b, tmp, m = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
meds, window = [], 0
for r in range(m):
    t = open(f"{tmp}/m{r}.out").read()
    meds.append(float(re.search(r"median_us=([0-9.]+)", t).group(1)))
    window = int(re.search(r"window=(\d+)", t).group(1))
c = json.load(open(f"{tmp}/status.json"))["counters"]
print(bound, b, window, f"{statistics.median(meds):.0f}", c["inflight_granted_max"], c["inflight_held_max"])
PY
}

raw=$tmp/raw.txt
: >"$raw"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for rep in $(seq "$reps"); do
  # Odd reps run the bounds in the order given, even ones reversed.
  if ((rep % 2)); then order=$bounds; else order=$(printf '%s\n' $bounds | tac | xargs); fi
  for b in $sizes; do for bound in $order; do
    echo "agent_credits_bench: rep $rep, $b bytes, bound $bound" >&2
    run "$bound" "$b" "$rep" >>"$raw"
  done; done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

mkdir -p "$(dirname "$out")"
{
  cat <<HEAD
# Credits at the agent's port: $members members, bounds $bounds, one node (TCP loopback)

\`benchmarks/agent_credits_bench.sh --members $members --sizes "$sizes" --iters $iters --reps $reps --bounds "$bounds"\`
(UCX_TLS=$UCX_TLS, 256 KiB slots, each member asking for a window of 8; $(nproc) cores,
load $load_before before, $load_after after; $(date -u +%Y-%m-%d)). Medians over reps.

| bytes | bound (0 = none) | window granted | call µs | vs no bound | granted max | held max |
| ---: | ---: | ---: | ---: | ---: | ---: | ---: |
HEAD
  for b in $sizes; do
    python3 - "$raw" "$b" $bounds <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
b, sides = sys.argv[2], sys.argv[3:]
def col(t, i):
    return [float(r[i]) for r in rows if r[0] == t and r[1] == b]
base = statistics.median(col(sides[0], 3))
for t in sides:
    us = statistics.median(col(t, 3))
    print(f"| {b} | {t} | {int(col(t, 2)[0])} | {us:.0f} | {us / base:.2f} | "
          f"{int(max(col(t, 4)))} | {int(max(col(t, 5)))} |")
PY
  done
  echo
  echo "Raw runs (bound, bytes, window, median µs, granted max, held max):"
  echo
  sed 's/^/    /' "$raw"
} >"$out"
echo "agent_credits_bench: wrote ${out#$root/}" >&2
cat "$out"
