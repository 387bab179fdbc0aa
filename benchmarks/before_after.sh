#!/usr/bin/env bash
# A change that should not change speed (a restructure), shown: the same
# switchagg-bench runs with an older build's component and agent (--before
# DIR: a build tree of the older commit) and with this build's, interleaved
# run by run; per path and size the median of the per-run p50 latencies and
# the ratio after/before. Paths: a host algorithm at small sizes (busy waits,
# so a few hundred ns of dispatch would show), ring at large sizes, and the
# switch path through each build's own agent. Writes
# benchmarks/results/before_after.md.
#
#   benchmarks/before_after.sh --before DIR [--build DIR] [--np 2] [--reps 5]
#                              [--what "restructure (issue 13)"] [--out FILE]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build before="" np=2 reps=5 what="this change"
out=$root/benchmarks/results/before_after.md
source "$root/benchmarks/lib/bench_args.sh"
bench_args before_after 2,13 "before build np reps what out" "" "$@"
for d in "$before" "$build"; do
  [[ -f $d/lib/openmpi/mca_coll_switchagg.so && -x $d/bin/switchagg-agent ]] ||
    { echo "before_after: $d is not a build tree (lib/openmpi/mca_coll_switchagg.so, bin/switchagg-agent)" >&2; exit 2; }
done
before=$(cd "$before" && pwd)
source "$root/benchmarks/lib/bench_env.sh"
bench_setup before-after
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ompi=${comp_path#*:}
raw=$work/raw.txt

# bench SIDE DIR ALGORITHM [switchagg-bench options...]: "side algorithm bytes p50" rows.
bench() {
  local side=$1 dir=$2 alg=$3
  shift 3
  mpirun --oversubscribe --bind-to none -np "$np" --mca btl self,vader \
    --mca mca_base_component_path "$dir/lib/openmpi:$ompi" \
    --mca coll_switchagg_allreduce_algorithm "$alg" -x SWITCHAGG_UCX_WAIT \
    ${SWITCHAGG_LEASE:+-x SWITCHAGG_AGENT -x SWITCHAGG_LEASE -x SWITCHAGG_MODE -x SWITCHAGG_SWITCH_WINDOW} \
    "$dir/bin/switchagg-bench" --csv - "$@" |
    awk -F, -v s="$side" -v a="$alg" 'NR > 1 { print s, a, $5, $15 }' >>"$raw"
}

# One side: host algorithms, then the switch path through that build's own agent.
run_side() {
  local side=$1 dir=$2 keep=$build
  SWITCHAGG_UCX_WAIT=busy bench "$side" "$dir" recursive_doubling --min 8 --max 4096 --iters 2000
  SWITCHAGG_UCX_WAIT=blocking bench "$side" "$dir" ring --min 1M --max 4M --iters 20
  build=$dir
  # Each agent with its own checkout's config (a newer one names keys an
  # older agent refuses).
  local src
  src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$dir/CMakeCache.txt")
  agent_start "${src:-$root}/config/agent.toml" "$work" --set agent.log_level=warn
  build=$keep
  eval "$("$dir/bin/switchagg-ctl" --agent "unix:$AGENT_SOCKET" lease create --job before-after \
    --slots 8 --ttl 1h | grep '^export ')"
  SWITCHAGG_UCX_WAIT=blocking SWITCHAGG_SWITCH_WINDOW=8 \
    bench "$side" "$dir" switch --min 64K --max 1M --iters 50
  agent_stop
  unset SWITCHAGG_AGENT SWITCHAGG_LEASE SWITCHAGG_MODE
}

: >"$raw"
# Which side runs first alternates, so a warm-up or order effect cancels.
for ((r = 1; r <= reps; r++)); do
  if ((r % 2)); then
    run_side before "$before"
    run_side after "$build"
  else
    run_side after "$build"
    run_side before "$before"
  fi
done
{
  echo "# Before and after $what"
  echo
  echo "Command: \`benchmarks/before_after.sh --before DIR --np $np --reps $reps\`, $(date -u '+%Y-%m-%d %H:%M UTC'),"
  echo "before = $(git -C "$before/.." rev-parse --short HEAD 2>/dev/null || echo "$before"), after = $(git -C "$root" rev-parse --short HEAD)."
  echo "2 cores shared with other jobs (load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)); ob1 + vader;"
  echo "each row: median over $reps interleaved runs (which side goes first alternates) of the"
  echo "per-run p50 latency (us). Host sizes up to 4 KiB with busy waits; ring and the switch path"
  echo "(each build's own agent, 8 slots) with blocking waits."
  echo
  echo "| path | bytes | before p50 (us) | after p50 (us) | after/before |"
  echo "| --- | ---: | ---: | ---: | ---: |"
  python3 - "$raw" <<'PY'
import sys, statistics, collections
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    side, alg, size, p50 = line.split()
    rows[(alg, int(size), side)].append(float(p50))
keys = sorted({(a, s) for a, s, _ in rows}, key=lambda k: (["recursive_doubling", "ring", "switch"].index(k[0]), k[1]))
for alg, size in keys:
    b = rows.get((alg, size, "before")); a = rows.get((alg, size, "after"))
    if not a or not b:
        continue
    mb, ma = statistics.median(b), statistics.median(a)
    print("| %s | %d | %.2f | %.2f | %.2f |" % (alg, size, mb, ma, ma / mb))
PY
  # What the figures mean (written after a run; benchmarks/<page>_notes.md).
  bench_notes
} >"$out"
cat "$out"
