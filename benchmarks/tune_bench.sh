#!/usr/bin/env bash
# Is `auto` right? switchagg-bench (float32 sum) with offload=auto and online
# tuning against every fixed choice, side by side in ONE run (repetitions
# interleaved, medians), with a lease so the switch is always a candidate:
#   auto        coll_switchagg_offload=auto, coll_switchagg_tune=online
#               (warm-up of >= 32 calls per size: the tuner settles first)
#   model       offload=auto, tune=off: the cost model alone (before tuning)
#   nolease     auto without a lease: what the same job gets without one
#   ring, recursive_doubling, rabenseifner, hierarchical, switch, previous:
#               forced (previous = Open MPI's module, through the component)
#   tuned       Open MPI's own module with the component excluded: not a
#               choice auto can make, the reference for the component's cost
# Reported per size: auto / min(fixed) and model / min(fixed), auto with a
# lease / auto without one, auto / tuned;
# the warm-up cost (calls spent measuring, their extra time) from
# mpi_tune_check.
# Writes benchmarks/results/tune.md.
#
#   benchmarks/tune_bench.sh [--build DIR] [--where "node fabric:4x1@400 fabric:4x2@400"]
#                            [--reps 3] [--min 8] [--max 32M] [--out FILE] [--report-only]
#   --report-only: write FILE from the raw results already there (no runs)
#   node: this machine, np 4; fabric:HOSTSxPPN@MBIT: scripts/fabric.py star
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build where="node fabric:4x1@400 fabric:4x2@400" reps=3 min=8 max=32M run=1
out=$root/benchmarks/results/tune.md
source "$root/benchmarks/lib/bench_args.sh"
bench_args tune_bench 2,19 "build where reps min max out" "report-only=run=0" "$@"
source "$root/benchmarks/lib/bench_env.sh"
bench_setup tune-bench tune_raw

fixed="ring recursive_doubling rabenseifner hierarchical switch previous"
args_for() {  # PATH -> mpirun arguments
  case $1 in
    auto | nolease) echo "--mca coll_switchagg_offload auto --mca coll_switchagg_tune online" ;;
    model) echo "--mca coll_switchagg_offload auto --mca coll_switchagg_tune off" ;;
    tuned) echo "--mca coll ^switchagg" ;;
    switch) echo "--mca coll_switchagg_offload on --mca coll_switchagg_allreduce_algorithm switch" ;;
    *) echo "--mca coll_switchagg_allreduce_algorithm $1" ;;
  esac
}
export SWITCHAGG_SWITCH_WINDOW=16 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

node_mpirun() {  # NP ARGS...: this machine, the component from the build
  local np=$1
  shift
  mpirun --oversubscribe --bind-to none --mca btl self,vader \
    --mca mca_base_component_path "$comp_path" \
    -np "$np" -x SWITCHAGG_UCX_WAIT=blocking "$@"
}

lease() {
  local out
  out=$("$bin/switchagg-ctl" --agent "unix:$AGENT_SOCKET" lease create --job tune-bench \
    --slots 16 --ttl 2h)
  eval "$(grep '^export ' <<<"$out")"
}

run_where() {  # node | fabric:HxP@MBIT
  local w=$1 tag launch np
  if [[ $w == node ]]; then
    tag=node np=4 launch="node_mpirun 4"
    agent_start "$root/config/agent.toml" "$work" >/dev/null
  else
    local hosts ppn mbit
    bench_config "${w#fabric:}"
    np=$((hosts * ppn)) tag=h${hosts}p$ppn launch="fabric_mpirun $np $ppn"
    fabric_up tb --hosts "$hosts" --rate "$mbit" --subnet 10.91
    fabric_agent_start "$work"
  fi
  lease
  local env=(-x SWITCHAGG_AGENT -x SWITCHAGG_LEASE -x SWITCHAGG_MODE -x SWITCHAGG_SWITCH_WINDOW)
  for rep in $(seq 1 "$reps"); do
    for p in auto model nolease $fixed tuned; do
      echo "$tag rep $rep: $p" >&2
      local warm=(--warmup 4 --min-warmup 1)
      [[ $p == auto || $p == nolease ]] && warm=(--warmup 40 --min-warmup 32)
      # The lease reaches ranks through the environment too (the fabric's
      # launcher keeps it): the no-lease run drops it in a subshell.
      local pass=("${env[@]}")
      [[ $p == nolease ]] && pass=(-x SWITCHAGG_SWITCH_WINDOW)
      (
        [[ $p == nolease ]] && unset SWITCHAGG_AGENT SWITCHAGG_LEASE SWITCHAGG_MODE
        # shellcheck disable=SC2046
        $launch $(args_for "$p") "${pass[@]}" "$bin/switchagg-bench" --min "$min" --max "$max" \
          --iters 40 --min-iters 5 "${warm[@]}" --label "$p" \
          --csv "$raw/${tag}_${p}_rep${rep}.csv" >"$work/run.log" 2>&1
      ) || { cat "$work/run.log" >&2; exit 1; }
    done
  done
  # Warm-up cost: one run of the checker per size list (its own report).
  # shellcheck disable=SC2046
  $launch $(args_for auto) "${env[@]}" "$bin/mpi_tune_check" --expect any --warmup 40 \
    --measure 10 --sizes 8,1024,65536,1048576,8388608 >"$raw/${tag}_warmup.txt" 2>&1 ||
    { cat "$raw/${tag}_warmup.txt" >&2; exit 1; }
  agent_stop
  [[ $w == node ]] || fabric_down
}

if ((run)); then
  for w in $where; do run_where "$w"; done
fi

summarize() {  # TAG
  cat "$raw/$1"_*_rep*.csv | awk -F, -v fixed="$fixed" "$(cat "$root/benchmarks/lib/stats.awk")"'
    $1 == "label" { next }
    { key = $1 SUBSEP $5; v[key] = v[key] " " $15; sizes[$5] = 1 }
    END {
      nf = split(fixed, fx, " ")
      printf "| bytes | auto µs | model µs | best fixed | best µs | auto / best | model / best |"
      for (j = 1; j <= nf; j++) printf " %s µs |", fx[j]
      printf " no-lease auto µs | auto / no-lease | tuned µs | auto / tuned |\n|---:|---:|---:|---|---:|---:|---:|"
      for (j = 1; j <= nf; j++) printf "---:|"
      printf "---:|---:|---:|---:|\n"
      n = sortedKeys(sizes, list)
      worst = 0; worst_model = 0
      for (i = 1; i <= n; i++) {
        s = list[i]; best = -1; bname = ""
        for (j = 1; j <= nf; j++) {
          t = median(v[fx[j] SUBSEP s]); m[j] = t
          if (t > 0 && (best < 0 || t < best)) { best = t; bname = fx[j] }
        }
        a = median(v["auto" SUBSEP s]); mo = median(v["model" SUBSEP s])
        if (a / best > worst) worst = a / best
        if (mo / best > worst_model) worst_model = mo / best
        printf "| %s | %.1f | %.1f | %s | %.1f | %.2f | %.2f |", human(s), a, mo, bname, best, a / best, mo / best
        for (j = 1; j <= nf; j++) printf " %.1f |", m[j]
        tu = median(v["tuned" SUBSEP s]); nl = median(v["nolease" SUBSEP s])
        if (nl > 0 && a / nl > worst_nl) worst_nl = a / nl
        if (nl > 0) printf " %.1f | %.2f |", nl, a / nl; else printf " – | – |"
        printf " %.1f | %.2f |\n", tu, a / tu
      }
      printf "\nWorst auto / best fixed: **%.2f** (target ≤ 1.10); the cost model alone: %.2f", worst, worst_model
      if (worst_nl > 0) printf "; auto with the lease / without: %.2f", worst_nl
      printf ".\n"
    }'
}

{
  echo "# auto against every fixed choice (online tuning)"
  echo
  echo "Command: \`benchmarks/tune_bench.sh --where \"$where\" --reps $reps --min $min --max $max\`,"
  if ((run)); then
    echo "$(date -u '+%Y-%m-%d %H:%M UTC'), 2 cores, load average at the end $(cut -d' ' -f1-3 /proc/loadavg)."
  else
    echo "page written $(date -u '+%Y-%m-%d %H:%M UTC') from the runs in benchmarks/results/tune_raw (2 cores)."
  fi
  echo "switchagg-bench float32 sum; each cell the median over $reps interleaved runs of its per-size"
  echo "p50. A lease is present in every run, so the switch is a candidate for \`auto\` and \`model\`."
  echo "\`auto\` gets ≥ 32 untimed calls per size (it settles within 30); the others 4."
  echo "(The 2026-12-01 page: the node and the fabric configurations were run one after the other, two"
  echo "invocations with these options; the fabric runs' no-lease column was lost to a script bug"
  echo "since fixed — the lease reached those ranks through the environment.)"
  for w in $where; do
    if [[ $w == node ]]; then
      tag=node title="one node, np 4 (oversubscribed on 2 cores), agent on the same node"
    else
      bench_config "${w#fabric:}"
      tag=h${hosts}p$ppn title="emulated cluster: $hosts hosts × $ppn rank(s), $mbit Mbit/s links"
    fi
    echo
    echo "## $title"
    echo
    summarize "$tag"
    echo
    echo "Warm-up (mpi_tune_check, slowest rank's wall time):"
    echo
    echo '```'
    grep -E '^size |^tuning' "$raw/${tag}_warmup.txt" || true
    echo '```'
  done
  # How to read them (written from the 2026-12-01 runs; re-check after a new one).
  cat "$root/benchmarks/tune_notes.md"
} >"$out.tmp"
mv "$out.tmp" "$out"
cat "$out"
