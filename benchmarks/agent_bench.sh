#!/usr/bin/env bash
# The agent's data-plane benchmark, in one run -> benchmarks/results/agent.md
#   1. reduction kernels alone vs memcpy vs a plain a[i] += b[i] loop at -O3
#      (agent_kernel_bench, Google Benchmark, CPU time = per core);
#   2. end-to-end agent goodput with 2, 4, 8 clients (agent_client_bench
#      against a private switchagg-agent) over each transport the data plane
#      can use, next to ucx_perftest AM bandwidth on the same transport.
#
#   benchmarks/agent_bench.sh [BUILD_DIR]      (default: build-bench, configured if missing)
#   AGENT_BENCH_BYTES=8388608 AGENT_BENCH_ITERS=10 AGENT_BENCH_REPS=5 (env knobs)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-bench}
bytes=${AGENT_BENCH_BYTES:-8388608}
iters=${AGENT_BENCH_ITERS:-10}
reps=${AGENT_BENCH_REPS:-5}
out=$root/benchmarks/results/agent.md
source "$root/benchmarks/lib/bench_agent.sh"
export UCX_LOG_LEVEL=${UCX_LOG_LEVEL:-error}  # UCX warnings go to stdout

if [[ ! -f "$build/build.ninja" ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSWITCHAGG_BUILD_MPI=OFF \
    -DSWITCHAGG_BUILD_SPANK=OFF -DSWITCHAGG_BUILD_TESTS=OFF >/dev/null
fi
cmake --build "$build" --target switchagg-agent switchagg-ctl agent_client_bench agent_kernel_bench >/dev/null

tmp=$(mktemp -d /tmp/agent_bench.XXXXXX)
agent_pid=""
cleanup() {
  [[ -n "$agent_pid" ]] && kill "$agent_pid" 2>/dev/null && wait "$agent_pid" 2>/dev/null
  pkill -P $$ ucx_perftest 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

echo "agent_bench: kernels" >&2
# (the slot-size, placement and OpenMP cases are benchmarks/kernel_slot_bench.sh's)
"$build/bin/agent_kernel_bench" --benchmark_filter='-(Omp|placed|slotKernel|slotPlain)' \
  --benchmark_repetitions="$reps" \
  --benchmark_report_aggregates_only=true --benchmark_format=json >"$tmp/kernels.json" 2>/dev/null

# A private agent (benchmarks/lib/bench_agent.sh).
start_agent() { bench_start_agent "$build/bin/switchagg-agent" "$tmp" "${1:-}"; }
stop_agent() { kill "$agent_pid"; wait "$agent_pid" 2>/dev/null || true; agent_pid=""; }

# N members of one group; one line per member into $tmp/e2e_<label>_<n>.txt
run_clients() {  # $1 label, $2 n, $3 UCX_TLS or ""
  local token
  token=$("$build/bin/switchagg-ctl" --agent "unix:$tmp/agent.sock" lease create --job "b$1$2" \
    --slots 8 | sed -n 's/.*SWITCHAGG_LEASE=\([0-9a-f]*\).*/\1/p')
  local pids=() cpu0
  cpu0=$(awk '{print $14 + $15}' "/proc/$agent_pid/stat")
  for r in $(seq 0 $(($2 - 1))); do
    env ${3:+UCX_TLS=$3} "$build/bin/agent_client_bench" --agent "$data" --token "$token" \
      --group 1 --size "$2" --rank "$r" --bytes "$bytes" --iters "$iters" --warmup 2 \
      >>"$tmp/e2e_$1_$2.txt" 2>>"$tmp/e2e_$1_$2.err" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || echo "client failed" >>"$tmp/e2e_$1_$2.err"; done
  # Agent CPU (clock ticks) spent on the whole run, warm-ups included.
  echo $(($(awk '{print $14 + $15}' "/proc/$agent_pid/stat") - cpu0)) $(getconf CLK_TCK) \
    >"$tmp/cpu_$1_$2.txt"
}

perftest() {  # $1 label, $2 UCX_TLS -> $tmp/perftest_<label>.txt (MiB/s overall)
  env UCX_TLS="$2" ucx_perftest -p 13390 >/dev/null 2>&1 &
  local srv=$!
  sleep 1
  env UCX_TLS="$2" timeout 120 ucx_perftest 127.0.0.1 -p 13390 -t ucp_am_bw -s 262144 -n 4000 \
    2>/dev/null | awk '/^Final:/ {print $6}' >"$tmp/perftest_$1.txt" || true
  kill "$srv" 2>/dev/null || true
  wait "$srv" 2>/dev/null || true
}

for t in tcp shm; do
  tls=""
  [[ $t == shm ]] && tls="posix,sysv,cma,self,tcp"
  echo "agent_bench: $t" >&2
  perftest "$t" "${tls:-tcp}"
  start_agent "$tls"
  for n in 2 4 8; do run_clients "$t" "$n" "$tls"; done
  stop_agent
done

load_after=$(cut -d' ' -f1-3 /proc/loadavg)
python3 "$root/benchmarks/agent_report.py" "$tmp" "$bytes" "$iters" "$reps" \
  "$load_before" "$load_after" "$(nproc)" "$root/benchmarks/agent_analysis.md" >"$out"
echo "agent_bench: wrote ${out#$root/}" >&2
