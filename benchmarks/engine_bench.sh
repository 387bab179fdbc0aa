#!/usr/bin/env bash
# The aggregation engine alone (benchmarks/engine_bench.cc), this tree's
# against a baseline commit's, side by side in one run: the baseline's
# engine sources (git archive REF) compiled with the same compiler and
# flags into a second engine_bench. Per rep, interleaved: this machine's
# `a += b` bound, the input GB/s of the data-plane thread (float32 sum, m
# members, 256 KiB chunks, a window of 4 slots: in place, eager copy,
# placed; members in rank order and reversed), and the CPU
# microseconds per contribution and per result at m = 2, 8, 64, 512
# (8-byte chunks), fitted as alpha + m*beta. Medians of the reps; the
# machine's load from uptime. Writes benchmarks/results/engine.md.
#
#   benchmarks/engine_bench.sh [--build DIR] [--base REF] [--reps 5]
#       [--seconds 1] [--members 4] [--out FILE]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build base=main reps=5 seconds=1 members=4
out=$root/benchmarks/results/engine.md
source "$root/benchmarks/lib/bench_env.sh"  # bench_ratio
while [[ $# -gt 0 ]]; do
  case $1 in
    --build) build=$2 ;; --base) base=$2 ;; --reps) reps=$2 ;; --seconds) seconds=$2 ;;
    --members) members=$2 ;; --out) out=$2 ;;
    *) echo "engine_bench.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift 2
done
after=$build/bin/engine_bench
[[ -x $after ]] || { echo "engine_bench.sh: $after is not built (ninja -C $build engine_bench)" >&2; exit 2; }
for lib in wire common; do
  [[ -f $build/lib/libswitchagg_$lib.a ]] ||
    { echo "engine_bench.sh: $build/lib/libswitchagg_$lib.a is not built" >&2; exit 2; }
done
rev=$(git -C "$root" rev-parse --short "$base")
tmp=$(mktemp -d /tmp/engine_bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# The baseline: its engine and its headers; wire and common as built here
# (the script refuses a base whose wire or common differ).
if ! git -C "$root" diff --quiet "$base" HEAD -- switchagent/wire common switchagent/include; then
  echo "engine_bench.sh: $base's wire codec or common code differs from this tree's" >&2; exit 2
fi
git -C "$root" archive "$base" switchagent/engine switchagent/include common | tar -x -C "$tmp"
flags=(-std=c++17 -O2 -g -DNDEBUG -I"$tmp/switchagent/engine" -I"$tmp/switchagent/include"
       -I"$tmp/common/include" -I"$build/common/include")
objs=()
for f in "$tmp"/switchagent/engine/*.cc; do
  c++ "${flags[@]}" -c "$f" -o "$f.o"
  objs+=("$f.o")
done
c++ "${flags[@]}" -O3 -fno-trapping-math "$root/benchmarks/engine_bench.cc" "${objs[@]}" "$build/lib/libswitchagg_wire.a" \
  "$build/lib/libswitchagg_common.a" -lpthread -o "$tmp/engine_bench_base"
before=$tmp/engine_bench_base
load=$(uptime | sed 's/.*load average: //')
val() { sed -n "s/.* $1=\([^ ]*\).*/\1/p"; }
med() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
declare -A r
for ((rep = 0; rep < reps; ++rep)); do
  line=$("$after" --mode bound --members "$members" --bytes 262144 --seconds "$seconds")
  r[bound]+="$(awk -v a="$(val input_GBps <<<"$line")" -v b="$(val plain_GBps <<<"$line")" \
    'BEGIN {print (a > b) ? a : b}') "
  for side in before after; do
    bin=${!side}
    for d in inplace eager placed; do
      [[ $side == before && $d == placed ]] && continue
      for o in inorder reverse; do
        r[$side.$d.$o]+="$("$bin" --mode rate --members "$members" --bytes 262144 --seconds "$seconds" \
          --delivery $d --order $o | val input_GBps) "
      done
    done
    for m in 2 8 64 512; do
      line=$("$bin" --mode turnaround --members $m --bytes 8 --chunks $((40000 / m + 200)))
      r[$side.c$m]+="$(val us_per_contribution <<<"$line") "
      r[$side.r$m]+="$(val us_per_result <<<"$line") "
      r[$side.t$m]+="$(val us_per_chunk <<<"$line") "
    done
  done
done
m_() { tr ' ' '\n' <<<"${r[$1]}" | grep -v '^$' | med; }
bound=$(m_ bound)
# Least squares of us_per_chunk = alpha + m * beta over m = 2, 8, 64, 512.
fit() {  # $1 side -> "alpha beta"
  for m in 2 8 64 512; do echo "$m $(m_ "$1.t$m")"; done |
    awk '{n++; sx+=$1; sy+=$2; sxx+=$1*$1; sxy+=$1*$2}
         END {b=(n*sxy-sx*sy)/(n*sxx-sx*sx); printf "%.3f %.4f", (sy-b*sx)/n, b}'
}
read -r a0 b0 <<<"$(fit before)"
read -r a1 b1 <<<"$(fit after)"
pct() { awk -v x="$1" -v y="$bound" 'BEGIN {printf "%.0f", 100 * x / y}'; }
{
  echo "# The engine alone: one data-plane thread, $members members as threads, no network (baseline $rev)"
  echo
  echo "Command: \`benchmarks/engine_bench.sh --base $base --reps $reps --seconds $seconds --members $members\`"
  echo "on $(nproc) cores shared with other work (load average at the start: $load);"
  echo "medians of $reps interleaved reps; CPU time of the data-plane thread"
  echo "(CLOCK_THREAD_CPUTIME_ID), so the load slows the run but not the figure"
  echo "much (cache and memory bandwidth are still shared)."
  echo "Deployment: none (the engine in one process); it is the per-core figure"
  echo "a reducer host or the agent in the switch gets from one data-plane thread."
  echo "Baseline: the engine of \`$rev\` compiled by the script with the same"
  echo "flags (-O2), same wire codec and kernels."
  echo
  echo "## Input GB/s per data-plane thread (float32 sum, 256 KiB chunks, m = $members)"
  echo
  echo "| delivery, arrival order | baseline | this tree | this tree / bound | theory |"
  echo "|---|---|---|---|---|"
  echo "| \`a += b\` bound (same bytes; the faster of reduceInto and a plain -O3 loop) | | $bound | 100 % | one pass per input |"
  for d in inplace eager placed; do
    for o in inorder reverse; do
      case $d.$o in
        inplace.inorder) th="fold from the body: ~ bound" ;;
        inplace.reverse) th="m-1 bodies copied to wait: ~ bound / 2" ;;
        eager.inorder) th="+ the transport's copy (buffer reused): ~ bound / 2" ;;
        eager.reverse) th="+ transport copy + wait copy: ~ bound / 3" ;;
        placed.inorder) th="+ one copy into the slot: ~ bound / 2" ;;
        placed.reverse) th="+ one copy into the slot, none to wait: ~ bound / 2" ;;
      esac
      base_rate=-; [[ $d != placed ]] && base_rate=$(m_ before.$d.$o)
      echo "| $d, $o | $base_rate | $(m_ after.$d.$o) | $(pct "$(m_ after.$d.$o)") % | $th |"
    done
  done
  echo
  echo "## CPU µs per chunk of 8 bytes (m contributions + one result with m sends)"
  echo
  echo "| m | baseline per contribution | this tree | baseline per result | this tree | baseline per chunk | this tree |"
  echo "|---|---|---|---|---|---|---|"
  for m in 2 8 64 512; do
    echo "| $m | $(m_ before.c$m) | $(m_ after.c$m) | $(m_ before.r$m) | $(m_ after.r$m) | $(m_ before.t$m) | $(m_ after.t$m) |"
  done
  echo
  echo "Fit per chunk = α + m·β: baseline α = $a0 µs, β = $b0 µs; this tree α = $a1 µs, β = $b1 µs"
  echo "(β ratio baseline / this tree: $(bench_ratio "$b0" "$b1"))."
} >"$out"
cat "$out"
