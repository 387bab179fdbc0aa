#!/usr/bin/env bash
# Node leaders on the switch path (issue 14): what reaches the agent and how
# long an allreduce takes with SWITCHAGG_SWITCH_LEADERS on vs off, ranks on
# emulated nodes (tests/mpi/emulate_nodes.sh), a private agent on this
# machine. switchagg-bench --check, 1-4 MiB float32 sums, 20 timed calls per
# size, no warm-up; the agent's switchagg_bytes_in_total before and after
# each run over one vector per call (20 x 7 MiB) = the members it reduces.
# Runs alternate on/off; writes benchmarks/results/leaders.md.
#
#   benchmarks/leaders_bench.sh [--build DIR] [--layouts "4x2 6x3"] [--reps 2]
#                               [--out FILE]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build layouts="4x2 6x3" reps=2
out=$root/benchmarks/results/leaders.md
source "$root/benchmarks/lib/bench_args.sh"
bench_args leaders_bench 2,10 "build layouts reps out" "" "$@"
source "$root/benchmarks/lib/bench_env.sh"
bench_setup leaders-bench
agent_start "$root/config/agent.toml" "$work" || { echo "leaders_bench: agent start failed" >&2; exit 1; }
ctl() { "$bin/switchagg-ctl" --agent "unix:$AGENT_SOCKET" "$@"; }
eval "$(ctl lease create --job leaders-bench --slots 16 --ttl 30m | grep '^export ')"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 SWITCHAGG_UCX_WAIT=blocking
export SWITCHAGG_SWITCH_WINDOW=4
bytes_in() { local v; v=$(ctl metrics | awk '$1 == "switchagg_bytes_in_total" { print $2 }'); echo "${v%.*}"; }
calls=20 vector=$((20 * (1 + 2 + 4) * 1048576))  # one member's bytes per run

# run NP PPN on|off REP: one benchmark run; appends "layout leaders size p50 ingress" rows.
run() {
  local np=$1 ppn=$2 leaders=$3 b0 b1
  b0=$(bytes_in)
  SWITCHAGG_SWITCH_LEADERS=$leaders timeout 600 mpirun --oversubscribe --bind-to none \
    --mca btl self,vader --mca mca_base_component_path "$comp_path" -np "$np" \
    --mca coll_switchagg_offload on "$root/tests/mpi/emulate_nodes.sh" "$ppn" \
    "$bin/switchagg-bench" --min 1M --max 4M --iters $calls --min-iters $calls --warmup 0 \
    --check --csv "$work/run.csv" >"$work/run.log" 2>&1 ||
    { cat "$work/run.log" >&2; echo "leaders_bench: run failed" >&2; exit 1; }
  b1=$(bytes_in)
  awk -F, -v l="${np}x$ppn" -v s="$leaders" -v in_bytes=$((b1 - b0)) -v vector=$vector '
    NR == 1 { for (i = 1; i <= NF; ++i) col[$i] = i; next }
    { printf "%s %s %s %s %.2f\n", l, s, $col["bytes"], $col["p50_us"], in_bytes / vector }' \
    "$work/run.csv" >>"$work/rows"
}

for layout in $layouts; do
  np=${layout%x*} ppn=${layout#*x}
  for ((r = 0; r < reps; ++r)); do
    if ((r % 2)); then order="off on"; else order="on off"; fi
    for leaders in $order; do run "$np" "$ppn" "$leaders"; done
  done
done

{
  echo "# Switch path: node leaders on vs off"
  echo
  echo "Reproduce: \`benchmarks/leaders_bench.sh --layouts \"$layouts\" --reps $reps\`"
  echo "($(date -u '+%Y-%m-%d %H:%M UTC'), 2 cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the end;"
  echo "float32 sum, NP ranks on NP/PPN emulated nodes, agent on the same cores over UCX TCP"
  echo "loopback, window 4). Members: what the agent received in a run over one vector per"
  echo "call (20 calls each of 1, 2, 4 MiB), i.e. how many vectors its link carries per call."
  echo
  echo "| layout (np x ppn) | leaders | bytes | p50 us (median of $reps) | members (each rep) |"
  echo "| --- | --- | ---: | ---: | ---: |"
  sort -k1,1 -k2,2r -k3,3n "$work/rows" | awk "$(cat "$root/benchmarks/lib/stats.awk")"'
    { key = $1 " " $2 " " $3; if (!(key in us)) keys[++k] = key
      sep = (key in members) ? "/" : ""; us[key] = us[key] " " $4; members[key] = members[key] sep $5 }
    END { for (i = 1; i <= k; ++i) { split(keys[i], f, " ")
            printf "| %s | %s | %d | %.0f | %s |\n", f[1], f[2], f[3], median(us[keys[i]]), members[keys[i]] } }'
} >"$out"
cat "$out"
