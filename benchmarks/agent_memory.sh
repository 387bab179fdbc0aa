#!/usr/bin/env bash
# Agent memory per group vs the group's size (issue 14): for each member
# count m, a fresh switchagg-agent (config/agent.toml, slots of SLOT bytes),
# one lease of W slots, one group of m real member processes streaming
# allreduces of a vector that fills the window; the agent's resident set at
# its peak (VmHWM) against its idle start, beside the formula the engine
# allocates by: W x (m + 1) x SLOT (every member's contribution plus the
# result per slot, so it can reduce in rank order). Then the model for a
# 16,384-rank job from the same formula (a model, not a run). Writes
# benchmarks/results/agent_memory.md.
#
#   benchmarks/agent_memory.sh [--build DIR] [--members "2 4 8 16 32"]
#                              [--window 8] [--slot 256K] [--out FILE]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build members="2 4 8 16 32" window=8 slot=256K
out=$root/benchmarks/results/agent_memory.md
source "$root/benchmarks/lib/bench_args.sh"
bench_args agent_memory 2,13 "build members window slot out" "" "$@"
source "$root/benchmarks/lib/bench_env.sh"
bench_setup agent-memory
bytes() { numfmt --from=iec "$1"; }
slot_bytes=$(bytes "$slot")
kib() { awk '/^'"$2"':/ { print $2 }' "/proc/$1/status"; }
rows=()
for m in $members; do
  agent_start "$root/config/agent.toml" "$work" --set agent.log_level=warn \
    --set "data.slot_bytes=$slot_bytes" --set data.threads=1 --set "policy.max_slots_per_job=$window"
  idle=$(kib "$AGENT_PID" VmRSS)
  eval "$("$bin/switchagg-ctl" --agent "unix:$AGENT_SOCKET" lease create --job mem \
    --slots "$window" | grep '^export ')"
  token=$SWITCHAGG_LEASE
  # float32 elements of W full slots: every call fills the whole window.
  count=$((window * slot_bytes / 4))
  pids=()
  for r in $(seq 0 $((m - 1))); do
    "$bin/test_data_member" --agent "$AGENT_DATA" --token "$token" --group 7 --size "$m" \
      --rank "$r" --count "$count" --iters 3 --window "$window" --timeout 60000 \
      >"$work/m$r.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || { cat "$work"/m*.log >&2; exit 1; }; done
  peak=$(kib "$AGENT_PID" VmHWM)
  grep -q "RESULT ok" "$work/m0.log" || { cat "$work/m0.log" >&2; exit 1; }
  model=$((window * (m + 1) * slot_bytes / 1024))
  rows+=("$m $idle $peak $model")
  echo "members $m: idle ${idle} KiB, peak ${peak} KiB, formula ${model} KiB" >&2
  agent_stop
  rm -f "$work"/m*.log
done
{
  echo "# Agent memory per group vs group size (issue 14)"
  echo
  echo "Command: \`benchmarks/agent_memory.sh --members \"$members\" --window $window --slot $slot\`,"
  echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores. A fresh agent per row (one reduction"
  echo "thread), one lease of $window slots, one group of m member processes (test_data_member)"
  echo "running 3 allreduces of $window × $slot each, so the whole window is in use. Resident set"
  echo "from /proc (VmRSS at start, VmHWM = peak after the run); the formula is what the engine"
  echo "allocates for a group's slots: W × (m + 1) × slot bytes (each member's contribution and"
  echo "the result, per slot, so the reduction can run in rank order whatever the arrival order)."
  echo
  echo "| members m | agent idle RSS MiB | agent peak RSS MiB | growth MiB | formula W×(m+1)×slot MiB | growth / formula |"
  echo "| ---: | ---: | ---: | ---: | ---: | ---: |"
  for row in "${rows[@]}"; do
    read -r m idle peak model <<<"$row"
    awk -v m="$m" -v i="$idle" -v p="$peak" -v f="$model" 'BEGIN {
      printf "| %d | %.1f | %.1f | %.1f | %.1f | %.2f |\n", m, i / 1024, p / 1024, (p - i) / 1024, f / 1024, (p - i) / f }'
  done
  echo
  read -r m idle peak model <<<"${rows[-1]}"
  awk -v m="$m" -v i="$idle" -v p="$peak" -v f="$model" 'BEGIN {
    printf "The growth is the formula plus about %.2f MiB per member (at m = %d: the member'"'"'s connection\n", (p - i - f) / 1024 / m, m
    print "state and the receive buffers of its chunks in flight); the slots dominate from the first"
    print "member on, and grow linearly with the group: that is what node leaders (members = nodes)"
    print "and trees (members = a leaf'"'"'s nodes, a spine'"'"'s leaves) cut." }'
  echo
  echo "## The model at 16,384 ranks (computed, not run)"
  echo
  awk -v w="$window" -v s="$slot_bytes" 'BEGIN {
    mib = 1048576; gib = 1073741824
    printf "Same formula, W = %d, slot = %d KiB, per active communicator:\n\n", w, s / 1024
    printf "| layout | members per agent | agent memory |\n| --- | ---: | ---: |\n"
    printf "| flat: every rank a member of one agent | 16,384 | %.1f GiB |\n", w * 16385 * s / gib
    printf "| node leaders, 8 ranks per node, one agent | 2,048 | %.1f GiB |\n", w * 2049 * s / gib
    printf "| node leaders + 4 stripes (each agent holds 1/4 of the vector, the same chunk geometry) | 2,048 | %.1f GiB per agent (4 agents) |\n", w * 2049 * s / gib
    printf "| leaf/spine tree, 64 leaves of 32 nodes, spine fan-in 64 (trees: not built yet) | 32 (leaf), 64 (spine) | %.0f MiB (leaf), %.0f MiB (spine) |\n", w * 33 * s / mib, w * 65 * s / mib
    print ""
    print "Stripes cut the bytes each agent carries and reduces by K, not its per-group memory: the"
    print "window and slot size are per group, so each stripe agent holds the same W × (m+1) slots."
    print "Only a tree bounds memory by fan-in (members of the leaf, children of the spine)."
  }'
} >"$out.tmp"
mv "$out.tmp" "$out"
cat "$out"
