#!/usr/bin/env bash
# Small-call latency of the switch path on one node, sides side by side: for
# each side (a build tree, optionally with environment for its agent and
# members) and member count, a private agent and N members
# (agent_client_bench, float32 SUM of BYTES, one group) over TCP loopback;
# per run the members' median time per call, and the CPU the agent and the
# members used per call (spinning waits trade CPU for latency: both count).
# Sides and member counts interleave rep by rep; medians over reps.
# --pin: the agent on CPU 0, member r on CPU 1 + r mod (cores - 1) (taskset):
# each process its core where there are enough, the case a spin pays in.
#
#   benchmarks/agent_latency_bench.sh --sides "before=DIR after=DIR[,VAR=VAL...] ..."
#       [--members "2 4"] [--bytes 8] [--iters 3000] [--reps 3] [--pin] [--out FILE]
# DIR: build trees as for benchmarks/agent_cpu_bench.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sides="" members="2 4" bytes=8 iters=3000 reps=3 pin=0
out=$root/benchmarks/results/agent_latency.md
source "$root/benchmarks/lib/bench_args.sh"
source "$root/benchmarks/lib/bench_agent.sh"
bench_args agent_latency_bench 2,14 "sides members bytes iters reps out" "pin=pin=1" "$@"
[[ -n $sides ]] || { echo "agent_latency_bench: --sides is required" >&2; exit 2; }
bench_agent_tmp agent_latency_bench
warmup=200
tck=$(getconf CLK_TCK)
cores=$(nproc)
# taskset's CPU list for the agent ("" = not pinned) and for member $1.
agent_cpus() { ((pin)) && echo 0 || true; }
member_cpus() { ((pin)) && echo $((1 + $1 % (cores > 1 ? cores - 1 : 1))) || true; }
pinned() {  # $1 CPU list or "", then the command
  local cpus=$1
  shift
  if [[ -n $cpus ]]; then taskset -c "$cpus" "$@"; else "$@"; fi
}

# One run: prints "side members median_us agent_cpu_us_per_call members_cpu_us_per_call".
run() {  # $1 side name, $2 DIR[,VAR=VAL...], $3 members, $4 rep
  local dir=${2%%,*} envs=() e token cpu0 cpu1
  [[ $2 == *,* ]] && IFS=, read -r -a envs <<<"${2#*,}"
  # The side's environment, for its agent and its members.
  for e in "${envs[@]}"; do export "${e?}"; done
  local agent_bin=$dir/bin/switchagg-agent
  if ((pin)); then  # bench_start_agent runs a binary: a pinning wrapper
    printf '#!/bin/sh\nexec taskset -c %s %s "$@"\n' "$(agent_cpus)" "$agent_bin" >"$tmp/agent-pinned"
    chmod +x "$tmp/agent-pinned"
    agent_bin=$tmp/agent-pinned
  fi
  bench_start_agent "$agent_bin" "$tmp"
  token=$("$dir/bin/switchagg-ctl" --agent "unix:$tmp/agent.sock" lease create --job "lat$4$3" \
    --slots 8 | sed -n 's/.*SWITCHAGG_LEASE=\([0-9a-f]*\).*/\1/p')
  cpu0=$(awk '{print $14 + $15}' "/proc/$agent_pid/stat")
  : >"$tmp/clients.txt"
  # The members in a subshell of their own: its `times` is their CPU.
  (
    pids=()
    for r in $(seq 0 $(($3 - 1))); do
      pinned "$(member_cpus "$r")" "$dir/bin/agent_client_bench" --agent "$data" --token "$token" --group 1 --size "$3" \
        --rank "$r" --bytes "$bytes" --iters "$iters" --warmup "$warmup" >>"$tmp/clients.txt" &
      pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || exit 1; done
    times >"$tmp/times.txt"
  ) || { echo "agent_latency_bench: a client failed ($1, $3 members)" >&2; exit 1; }
  cpu1=$(awk '{print $14 + $15}' "/proc/$agent_pid/stat")
  bench_stop_agent
  for e in "${envs[@]}"; do unset "${e%%=*}"; done
  python3 - "$tmp/clients.txt" "$tmp/times.txt" "$1" "$3" $((iters + warmup)) $((cpu1 - cpu0)) "$tck" <<'PY'
import re, statistics, sys
f, times, side, n, calls, ticks, tck = sys.argv[1:]
med = statistics.median(float(w.split("=")[1]) for l in open(f) for w in l.split() if w.startswith("median_us="))
# `times`: the shell's own line, then its children's "XmY.YYYs XmY.YYYs".
child = open(times).read().strip().split("\n")[-1]
secs = sum(int(m) * 60 + float(s) for m, s in re.findall(r"(\d+)m([\d.]+)s", child))
calls = int(calls)
print(f"{side} {n} {med:.1f} {int(ticks) / int(tck) * 1e6 / calls:.1f} {secs * 1e6 / calls:.1f}")
PY
}

raw=$tmp/raw.txt
: >"$raw"
read -r -a side_list <<<"$sides"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
bench_interleave agent_latency_bench "$members" "${side_list[@]}"
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

mkdir -p "$(dirname "$out")"
{
  echo "# Switch-path latency of $bytes-byte calls, one node, agent over TCP loopback$( ((pin)) && echo ", each process pinned")"
  echo
  echo "\`benchmarks/agent_latency_bench.sh --sides \"$sides\" --members \"$members\"$( ((pin)) && echo " --pin")\`"
  echo "($iters calls + $warmup warm-ups per run, $reps reps interleaved, UCX_TLS=$UCX_TLS; $(nproc) cores,"
  echo "load $load_before before, $load_after after; $(date -u +%Y-%m-%d))."
  echo "Per run: the members' median µs per call; agent and members' CPU µs per call"
  echo "(user+system over the run / calls). Medians over reps."
  echo
  echo "| side | members | median µs/call | agent CPU µs/call | members CPU µs/call |"
  echo "| --- | ---: | ---: | ---: | ---: |"
  python3 - "$raw" "$sides" "$members" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
for m in sys.argv[3].split():
    for s in sys.argv[2].split():
        name = s.split("=")[0]
        sel = [r for r in rows if r[0] == name and r[1] == m]
        med = lambda c: statistics.median(float(r[c]) for r in sel)
        print(f"| {name} | {m} | {med(2):.0f} | {med(3):.1f} | {med(4):.1f} |")
EOF
  echo
  echo "Raw runs (side, members, median µs, agent CPU µs/call, members CPU µs/call):"
  echo
  sed 's/^/    /' "$raw"
} >"$out"
echo "agent_latency_bench: wrote ${out#$root/}" >&2
cat "$out"
