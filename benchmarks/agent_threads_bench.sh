#!/usr/bin/env bash
# One agent build, 1 against 2 data-plane threads (data.plane_threads) side
# by side in one run: JOBS jobs at once (one lease each, their home threads
# distinct when the agent has several), MEMBERS members each
# (agent_client_bench, float32 SUM, one group a job) over TCP loopback.
# --spread: each lease spread over every thread (data.threads_per_job = 0):
# every job's members stripe each call over the threads (one stripe per
# thread), so one job (--jobs 1) uses them all.
# Per run: input GB/s (all jobs' input bytes over the wall time from the
# first member's start to the last one's exit) and the agent's CPU seconds
# per GB of input. Sides alternate which goes first, rep by rep; medians.
# Writes benchmarks/results/agent_threads.md.
#
#   benchmarks/agent_threads_bench.sh [--build DIR] [--jobs 2] [--members 2]
#       [--sizes "1048576 8388608"] [--mb 800] [--reps 3] [--threads "1 2"] [--spread]
#       [--out FILE]
# DIR: a build tree with bin/switchagg-agent, bin/switchagg-ctl and
# bin/agent_client_bench (default: build).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build jobs=2 members=2 sizes="1048576 8388608" mb=800 reps=3 threads="1 2" spread=
out=$root/benchmarks/results/agent_threads.md
source "$root/benchmarks/lib/bench_args.sh"
source "$root/benchmarks/lib/bench_agent.sh"
bench_args agent_threads_bench 2,18 "build jobs members sizes mb reps threads out" "spread=spread=1" "$@"
for b in switchagg-agent switchagg-ctl agent_client_bench; do
  [[ -x $build/bin/$b ]] || { echo "agent_threads_bench: $build/bin/$b is not built" >&2; exit 2; }
done
build=$(cd "$build" && pwd)
bench_agent_tmp agent_threads_bench
warmup=2
now() { date +%s.%N; }

# Leases for JOBS jobs, on distinct data-plane threads where there are
# enough: prints "address token" lines.
leases() {  # $1 threads, $2 tag
  local i=0 seen="" line addr token n=0
  while ((n < jobs && i < 64)); do
    line=$("$build/bin/switchagg-ctl" --agent "unix:$tmp/agent.sock" lease create \
      --job "t$2-$i" --slots 8)
    addr=$(sed -n 's/.*SWITCHAGG_AGENT=\([^ ]*\).*/\1/p' <<<"$line")
    token=$(sed -n 's/.*SWITCHAGG_LEASE=\([0-9a-f]*\).*/\1/p' <<<"$line")
    i=$((i + 1))
    if [[ -n $spread ]] || ((n >= $1)) || [[ " $seen " != *" $addr "* ]]; then
      echo "$addr $token"
      seen="$seen $addr"
      n=$((n + 1))
    fi
  done
}

# One run: prints "threads bytes input_gb_per_s cpu_s_per_gb".
run() {  # $1 threads, $2 bytes, $3 rep
  local pids=() cpu0 cpu1 t0 t1 iters addr token
  iters=$((mb * 1000000 / (jobs * members * $2)))
  ((iters >= 10)) || iters=10
  BENCH_AGENT_ARGS="--data-threads $1${spread:+ --set data.threads_per_job=0}" bench_start_agent "$build/bin/switchagg-agent" "$tmp"
  leases "$1" "$3$2" >"$tmp/leases.txt"
  [[ $(wc -l <"$tmp/leases.txt") == "$jobs" ]] || { echo "agent_threads_bench: no $jobs leases" >&2; exit 1; }
  cpu0=$(awk '{print $14 + $15}' "/proc/$agent_pid/stat")
  t0=$(now)
  while read -r addr token; do
    for r in $(seq 0 $((members - 1))); do
      "$build/bin/agent_client_bench" --agent "$addr" --token "$token" --group 1 \
        --size "$members" --rank "$r" --bytes "$2" --iters "$iters" --warmup "$warmup" >/dev/null &
      pids+=($!)
    done
  done <"$tmp/leases.txt"
  for p in "${pids[@]}"; do wait "$p" || { echo "agent_threads_bench: a client failed ($1 threads, $2 bytes)" >&2; exit 1; }; done
  t1=$(now)
  cpu1=$(awk '{print $14 + $15}' "/proc/$agent_pid/stat")
  bench_stop_agent
  python3 -c "
import sys
t, b, n, it, ticks, tck, wall = sys.argv[1:]
gb = int(n) * int(b) * int(it) / 1e9
print(f'{t} {b} {gb / float(wall):.3f} {int(ticks) / int(tck) / gb:.4f}')" \
    "$1" "$2" $((jobs * members)) $((iters + warmup)) $((cpu1 - cpu0)) "$(getconf CLK_TCK)" \
    "$(python3 -c "print($t1 - $t0)")"
}

raw=$tmp/raw.txt
: >"$raw"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for rep in $(seq "$reps"); do
  for b in $sizes; do
    order=$threads
    ((rep % 2)) || order=$(tr ' ' '\n' <<<"$threads" | tac | tr '\n' ' ')
    for t in $order; do
      echo "agent_threads_bench: rep $rep, $b bytes, $t data-plane thread(s)" >&2
      run "$t" "$b" "$rep" >>"$raw"
    done
  done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

mkdir -p "$(dirname "$out")"
{
  echo "# Agent data-plane threads: $jobs job(s) x $members members at once, 1 vs 2 threads${spread:+, each lease spread over every thread}, TCP loopback"
  echo
  echo "\`benchmarks/agent_threads_bench.sh --jobs $jobs --members $members --sizes \"$sizes\" --mb $mb --reps $reps${spread:+ --spread}\`"
  echo "(UCX_TLS=$UCX_TLS, about $mb MB of input per run, $warmup warm-ups; $(nproc) cores,"
  echo "load $load_before before, $load_after after; $(date -u +%Y-%m-%d)). Medians over reps."
  echo
  echo "| bytes | threads | input GB/s | agent CPU s/GB | GB/s vs 1 thread |"
  echo "| ---: | ---: | ---: | ---: | ---: |"
  for b in $sizes; do
    python3 - "$raw" "$b" $threads <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
b, sides = sys.argv[2], sys.argv[3:]
def med(t, col):
    return statistics.median(float(r[col]) for r in rows if r[0] == t and r[1] == b)
base = med(sides[0], 2)
for t in sides:
    print(f"| {b} | {t} | {med(t, 2):.3f} | {med(t, 3):.3f} | {med(t, 2) / base:.2f} |")
EOF
  done
  echo
  echo "Raw runs (threads, bytes, input GB/s, CPU s/GB):"
  echo
  sed 's/^/    /' "$raw"
} >"$out"
echo "agent_threads_bench: wrote ${out#$root/}" >&2
cat "$out"
