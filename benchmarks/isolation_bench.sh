#!/usr/bin/env bash
# Isolation from a heavy job (issue 27): a light job's small allreduces
# through the switch path (2 ranks, 8 B-64 KiB, --check) timed alone and
# while a heavy job on the same agent streams large allreduces with a deep
# window (--heavy-np ranks, every rank a member, window --window, 8 MiB
# calls), with the agent's fair share on (data.fair_share, default 4M) and
# off (0). Modes and quiet/heavy runs are interleaved per repetition so
# machine noise hits all alike. Besides the light job's p50 per size it
# reports what the agent counted: the largest reduction pass (contribution
# bytes a ready chunk could wait behind) and the chunks a pass deferred -
# counts, which this shared 2-core machine cannot blur. Theory: without a
# share a pass may hold the heavy job's whole window, W x slot x members
# (32 x 256 KiB x 2 = 16 MiB); with it, at most the share plus one chunk
# per group with chunks ready (4 MiB + 256 KiB x 2 + the light chunk).
# Writes benchmarks/results/isolation.md.
#
#   benchmarks/isolation_bench.sh [--build DIR] [--reps 3] [--share 4M]
#                                 [--window 32] [--heavy-np 2] [--out FILE]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build reps=3 share=4M window=32 heavy_np=2
out=$root/benchmarks/results/isolation.md
source "$root/benchmarks/lib/bench_args.sh"
bench_args isolation_bench 2,18 "build reps share window heavy-np out" "" "$@"
source "$root/benchmarks/lib/bench_env.sh"
bench_setup isolation-bench
heavy_pid=
trap '[[ -n $heavy_pid ]] && kill "$heavy_pid" 2>/dev/null; agent_stop; rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 SWITCHAGG_UCX_WAIT=blocking
export SWITCHAGG_SWITCH_LEADERS=off UCX_LOG_LEVEL=error
ctl() { "$bin/switchagg-ctl" --agent "unix:$AGENT_SOCKET" "$@"; }

# job NP LEASE_ENV WINDOW BENCH_ARGS...: one switchagg-bench job on the lease
# whose variables are in file LEASE_ENV.
job() {
  local np=$1 lease=$2 win=$3
  shift 3
  (
    # shellcheck source=/dev/null
    source "$lease"
    SWITCHAGG_SWITCH_WINDOW=$win timeout -s KILL 900 mpirun --oversubscribe --bind-to none \
      --mca btl self,vader --mca mca_base_component_path "$comp_path" -np "$np" \
      --mca coll_switchagg_offload on --mca coll_switchagg_allreduce_algorithm switch \
      -x SWITCHAGG_AGENT -x SWITCHAGG_LEASE -x SWITCHAGG_MODE -x SWITCHAGG_UCX_WAIT \
      -x SWITCHAGG_SWITCH_WINDOW -x SWITCHAGG_SWITCH_LEADERS -x UCX_LOG_LEVEL \
      "$bin/switchagg-bench" "$@"
  )
}

# light TAG: the light job's run; appends "mode tag bytes p50_us path" rows.
light() {
  local csv=$work/light.csv
  if ! job 2 "$work/light.env" 0 --check --min 8 --max 64K --iters 200 --warmup 20 \
    --csv "$csv" >/dev/null 2>"$work/light.err"; then
    echo "isolation_bench: the light job failed or a result was wrong (mode $mode, $1):" >&2
    cat "$work/light.err" >&2
    exit 1
  fi
  awk -F, -v m="$mode" -v t="$1" 'NR > 1 { print m, t, $5, $15, $13 }' "$csv" >>"$work/rows.txt"
}

: >"$work/rows.txt"
: >"$work/counts.txt"
for rep in $(seq 1 "$reps"); do
  for mode in share off; do
    fair=$share
    [[ $mode == off ]] && fair=0
    agent_start "$root/config/agent.toml" "$work" --set agent.log_level=warn \
      --set pool.slots=64 --set policy.max_slots_per_job=48 --set policy.max_slots_per_user=64 \
      --set "data.fair_share=$fair"
    ctl lease create --job light --slots 8 --ttl 2h | grep '^export ' >"$work/light.env"
    ctl lease create --job heavy --slots "$window" --ttl 2h | grep '^export ' >"$work/heavy.env"
    light quiet
    job "$heavy_np" "$work/heavy.env" "$window" --check --min 8M --max 8M --iters 100000 \
      --min-iters 100000 --warmup 1 >/dev/null 2>"$work/heavy.err" &
    heavy_pid=$!
    sleep 3
    light heavy
    kill -- "$heavy_pid" 2>/dev/null || true
    wait "$heavy_pid" 2>/dev/null || true
    heavy_pid=
    ctl metrics | awk -v m="$mode" '
      /^switchagg_largest_pass_bytes / { pass = $2 }
      /^switchagg_chunks_deferred_total / { def = $2 }
      /^switchagg_chunks_reduced_total / { red = $2 }
      END { print m, pass, def, red }' >>"$work/counts.txt"
    agent_stop
    echo "isolation_bench: rep $rep mode $mode done" >&2
  done
done

/usr/bin/python3 - "$work/rows.txt" "$work/counts.txt" "$share" "$window" "$heavy_np" "$reps" \
  >"$out" <<'EOF'
import statistics, sys
rows, counts, share, window, heavy_np, reps = sys.argv[1:7]
data, paths = {}, set()
for line in open(rows):
    mode, tag, size, p50, path = line.split()
    data.setdefault((mode, tag, int(size)), []).append(float(p50))
    paths.add(path)
print("# Isolation from a heavy job\n")
print("`benchmarks/isolation_bench.sh --reps %s --share %s --window %s --heavy-np %s`, one node, "
      "one agent; the light job: 2 ranks, 8 B-64 KiB allreduce, switch path forced, every result "
      "checked; the heavy job: %s ranks (every rank a member), 8 MiB allreduce back to back, "
      "window %s. Medians of %s runs' p50s, interleaved. Paths that served the light job: %s.\n"
      % (reps, share, window, heavy_np, heavy_np, window, reps, ", ".join(sorted(paths))))
print("## What the agent counted (per run: largest pass, chunks deferred, chunks reduced)\n")
print("| fair share | largest pass (MiB) | chunks deferred | chunks reduced |")
print("| --- | ---: | ---: | ---: |")
for line in open(counts):
    mode, pas, dfr, red = line.split()
    print("| %s | %.2f | %s | %s |" % (share if mode == "share" else "off", int(pas) / 2**20, dfr, red))
print("\n## The light job's p50 (µs)\n")
print("| size | share: alone | share: heavy beside | off: alone | off: heavy beside | heavy/alone share | heavy/alone off |")
print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
m = lambda k: statistics.median(data[k]) if k in data else float("nan")
for size in sorted({k[2] for k in data}):
    sq, sh, oq, oh = (m(("share", "quiet", size)), m(("share", "heavy", size)),
                      m(("off", "quiet", size)), m(("off", "heavy", size)))
    print("| %d | %.0f | %.0f | %.0f | %.0f | %.2f | %.2f |" % (size, sq, sh, oq, oh, sh / sq, oh / oq))
EOF
cat "$out"
