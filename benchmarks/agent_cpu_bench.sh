#!/usr/bin/env bash
# The agent's CPU cost per input byte, two agents side by side in one run:
# for each side (a build tree) and vector size, a private agent, N members
# (agent_client_bench, float32 SUM, one group) over TCP loopback, ITERS
# allreduces; the agent process's user+system time over the run divided by
# the input bytes it received (N x bytes x (iters + warm-ups); iters sized
# so that every run moves about MB megabytes of input, far above the
# 10 ms resolution of /proc's CPU times). Sides and
# sizes interleave rep by rep (this machine is shared: medians, ratios).
# Reducer-host deployment figure: what one agent core costs per GB of input,
# independent of how busy the machine was. Writes benchmarks/results/agent_cpu.md.
#
#   benchmarks/agent_cpu_bench.sh --before DIR [--after DIR] [--members 4]
#       [--sizes "262144 1048576 8388608"] [--mb 1500] [--reps 3] [--out FILE]
# DIR: build trees with bin/switchagg-agent, bin/switchagg-ctl and
# bin/agent_client_bench (benchmarks/agent_bench.sh's build-bench layout:
# cmake -DCMAKE_BUILD_TYPE=Release -DSWITCHAGG_BUILD_MPI=OFF
# -DSWITCHAGG_BUILD_SPANK=OFF -DSWITCHAGG_BUILD_TESTS=OFF).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
before="" after=$root/build-bench members=4 sizes="262144 1048576 8388608" mb=1500 reps=3
out=$root/benchmarks/results/agent_cpu.md
source "$root/benchmarks/lib/bench_args.sh"
source "$root/benchmarks/lib/bench_agent.sh"
bench_args agent_cpu_bench 2,18 "before after members sizes mb reps out" "" "$@"
[[ -n $before ]] || { echo "agent_cpu_bench: --before DIR is required" >&2; exit 2; }
for d in "$before" "$after"; do
  for b in switchagg-agent switchagg-ctl agent_client_bench; do
    [[ -x $d/bin/$b ]] || { echo "agent_cpu_bench: $d/bin/$b is not built" >&2; exit 2; }
  done
done
before=$(cd "$before" && pwd) after=$(cd "$after" && pwd)
bench_agent_tmp agent_cpu_bench
warmup=2

start_agent() { bench_start_agent "$1/bin/switchagg-agent" "$tmp"; }  # $1 build dir
stop_agent() { bench_stop_agent; }

# One run: prints "side bytes cpu_s_per_gb median_us".
run() {  # $1 side, $2 dir, $3 bytes, $4 rep
  local token pids=() cpu0 cpu1 tck lines iters
  iters=$((mb * 1000000 / (members * $3)))
  ((iters >= 10)) || iters=10
  start_agent "$2"
  token=$("$2/bin/switchagg-ctl" --agent "unix:$tmp/agent.sock" lease create --job "cpu$4$3" \
    --slots 8 | sed -n 's/.*SWITCHAGG_LEASE=\([0-9a-f]*\).*/\1/p')
  cpu0=$(awk '{print $14 + $15}' "/proc/$agent_pid/stat")
  : >"$tmp/clients.txt"
  for r in $(seq 0 $((members - 1))); do
    "$2/bin/agent_client_bench" --agent "$data" --token "$token" --group 1 --size "$members" \
      --rank "$r" --bytes "$3" --iters "$iters" --warmup "$warmup" >>"$tmp/clients.txt" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || { echo "agent_cpu_bench: a client failed ($1, $3 bytes)" >&2; exit 1; }; done
  cpu1=$(awk '{print $14 + $15}' "/proc/$agent_pid/stat")
  tck=$(getconf CLK_TCK)
  stop_agent
  lines=$(grep -c median_us "$tmp/clients.txt")
  [[ $lines == "$members" ]] || { echo "agent_cpu_bench: $lines of $members clients reported" >&2; exit 1; }
  python3 - "$tmp/clients.txt" "$1" "$3" "$members" $((iters + warmup)) $((cpu1 - cpu0)) "$tck" <<'PY'
import statistics, sys
f, side, b, n, it, ticks, tck = sys.argv[1:]
med = statistics.median(float(w.split("=")[1]) for l in open(f) for w in l.split() if w.startswith("median_us="))
print(f"{side} {b} {(int(ticks) / int(tck)) / (int(n) * int(b) * int(it) / 1e9):.4f} {med:.0f}")
PY
}

raw=$tmp/raw.txt
: >"$raw"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
bench_interleave agent_cpu_bench "$sizes" "after=$after" "before=$before"
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

mkdir -p "$(dirname "$out")"
{
  echo "# Agent CPU per GB of input, side by side"
  echo
  echo "\`benchmarks/agent_cpu_bench.sh --before $before --after $after\` ($members members, UCX_TLS=$UCX_TLS,"
  echo "about $mb MB of input per run ($warmup warm-ups), $reps reps interleaved; $(nproc) cores,"
  echo "load $load_before before, $load_after after; $(date -u +%Y-%m-%d))."
  echo "Agent CPU = its user+system time / input bytes received; medians over reps."
  echo
  echo "| bytes | before CPU s/GB | after CPU s/GB | after/before | before median us | after median us |"
  echo "| ---: | ---: | ---: | ---: | ---: | ---: |"
  for b in $sizes; do
    python3 - "$raw" "$b" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
b = sys.argv[2]
def med(side, col):
    return statistics.median(float(r[col]) for r in rows if r[0] == side and r[1] == b)
cb, ca = med("before", 2), med("after", 2)
print(f"| {b} | {cb:.3f} | {ca:.3f} | {ca / cb:.2f} | {med('before', 3):.0f} | {med('after', 3):.0f} |")
EOF
  done
  echo
  echo "Raw runs (side, bytes, CPU s/GB, median us):"
  echo
  sed 's/^/    /' "$raw"
} >"$out"
echo "agent_cpu_bench: wrote ${out#$root/}" >&2
cat "$out"
