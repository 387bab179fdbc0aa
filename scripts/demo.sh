#!/usr/bin/env bash
# README command one — the main job. Bootstraps and builds, starts a local
# switchagg-agent with the example policy, creates a lease, runs
# `mpirun -np 4` of switchagg-bench --check (MPI_Allreduce, then MPI_Barrier
# and MPI_Reduce_scatter_block) and switchagg-train --check with offload on
# (switch path) and off (host algorithms / Open MPI's own), the benchmark
# once more with offload=auto (online tuning: what every job gets), prints
# one summary screen and stops everything it started (also on Ctrl-C).
#
#   scripts/demo.sh [--slurm] [--np N] [--max SIZE] [--iters N] [--steps N]
#                   [--out DIR] [--no-build]
#   scripts/demo.sh --fabric [--hosts H] [--rate MBIT] [--max SIZE] [--iters N]
#                   [--steps N] [--out DIR] [--no-build]
#
#   --fabric     the same jobs on an emulated cluster of H hosts (default 4) whose
#                links are shaped to MBIT (default 400) so the network is the
#                bottleneck: switch path, ring, hierarchical and Open MPI's tuned
#                with 1 and 2 ranks per host, bytes per host link beside theory
#                (scripts/demo_fabric.sh, docs/fabric.md)
#   --slurm      run the same jobs through a private local Slurm cluster (munged,
#                slurmctld, slurmd, the switchagg SPANK plugin and agent) with
#                `srun --switch-agg=require --mpi=pmix` (the plugin creates and
#                deletes the lease) and `srun --switch-agg=off` for the host run
#   --np N       MPI ranks (default 4)
#   --max SIZE   largest allreduce of the bench sweep, 8 B up to SIZE (default 4M)
#   --iters N    bench iterations per size up to 64K, fewer above (default 200)
#   --steps N    training steps of switchagg-train (default 40; its --check wants
#                at least ~20 to see the loss fall)
#   --out DIR    logs, CSVs and plots (default out/demo)
#   --no-build   use the build directory as it is (no bootstrap, no build step)
#   -h, --help   this text
#
# SWITCHAGG_BUILD_DIR selects the build directory (default build/).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${SWITCHAGG_BUILD_DIR:-$root/build}
np=4 max=4M iters=200 steps=40 out=$root/out/demo use_slurm=0 do_build=1

usage() { sed -n '2,32p' "$0" | sed 's/^# \{0,1\}//'; }
for a in "$@"; do
  [[ $a == --fabric ]] || continue
  args=()
  for b in "$@"; do [[ $b == --fabric ]] || args+=("$b"); done
  exec "$root/scripts/demo_fabric.sh" "${args[@]}"
done
# shellcheck source=scripts/lib_demo.sh
source "$root/scripts/lib_demo.sh"  # value, say, demo_prepare
while (($#)); do
  case $1 in
    --np) np=$(value "$@"); shift 2 ;;
    --max) max=$(value "$@"); shift 2 ;;
    --iters) iters=$(value "$@"); shift 2 ;;
    --steps) steps=$(value "$@"); shift 2 ;;
    --out) out=$(value "$@"); shift 2 ;;
    --slurm) use_slurm=1; shift ;;
    --no-build) do_build=0; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "demo: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done

demo_prepare
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# shellcheck source=scripts/lib_agent.sh
source "$root/scripts/lib_agent.sh"
work=$(mktemp -d /tmp/switchagg-demo.XXXXXX)
chmod 0755 "$work"  # Slurm's job steps reach the cluster's files through it
# Every process the demo starts inherits this marker; the cleanup ends any
# that outlived their parents (ranks of a killed mpirun, job steps), never
# matching by name (other users' agents and clusters may run here).
export SWITCHAGG_DEMO_WORK=$work
cluster=$work/cluster fixture=$root/tests/slurm/slurm_cluster.sh
child=""  # the running mpirun/srun

stopChild() {
  [[ -n $child ]] && kill -0 "$child" 2>/dev/null || return 0
  kill -TERM "$child" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "$child" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$child" 2>/dev/null || true
  wait "$child" 2>/dev/null || true
  child=""
}
sweepMarked() {
  local f p pids=()
  # Job steps' slurmstepd rewrites its environment; it keeps the cluster's SLURM_CONF.
  for f in $(grep -lsxzF -e "SWITCHAGG_DEMO_WORK=$work" -e "SLURM_CONF=$cluster/slurm.conf" /proc/[0-9]*/environ); do
    p=${f#/proc/}
    p=${p%/environ}
    [[ $p == "$$" || $p == "$BASHPID" ]] || pids+=("$p")
  done
  ((${#pids[@]} == 0)) || kill -KILL "${pids[@]}" 2>/dev/null || true
}
cleanup() {
  local rc=$?
  set +e
  trap '' INT TERM  # a second Ctrl-C must not cut the cleanup short
  stopChild
  [[ -e $cluster ]] && "$fixture" stop "$cluster" >/dev/null 2>&1
  agent_stop
  sweepMarked
  [[ -n ${DEMO_KEEP:-} ]] || rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT
trap 'echo; echo "demo: interrupted; stopping everything it started" >&2; exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# Runs one MPI job in the background and waits for it, so that Ctrl-C
# reaches the trap at once (bash defers traps while a foreground child runs).
runJob() {  # runJob LOG COMMAND...
  local log=$1; shift
  "$@" >"$log" 2>&1 </dev/null &
  child=$!
  if ! wait "$child"; then
    child=""
    echo "demo: FAILED: $* (log: $log)"; tail -20 "$log"; exit 1
  fi
  child=""
}

# --slurm: a private cluster from the test fixture. Its jobs run as root here,
# like the rest of the demo; rank 0 of each job notes what the plugin handed
# over (never the token itself, only its length).
slurmStart() {
  say "start a private Slurm cluster: munged, slurmctld, slurmd + switchagg SPANK plugin, switchagg-agent"
  SWITCHAGG_CLUSTER_MAX_S=${SWITCHAGG_CLUSTER_MAX_S:-3600} runJob "$work/cluster.log" \
    "$fixture" start "$cluster" --spank "$build/lib/slurm/switchagg_spank.so" --agent "$bin/switchagg-agent"
  # shellcheck disable=SC1091
  source "$cluster/env.sh"
  echo "cluster in $cluster; plugstack.conf: $(cat "$cluster/plugstack.conf")"
  # mpirun --oversubscribe makes idle ranks yield; a direct srun launch does not know
  # the node is oversubscribed, so say it here.
  export OMPI_MCA_mca_base_component_path=${mca[2]} OMPI_MCA_btl=self,vader SWITCHAGG_UCX_WAIT=blocking \
    OMPI_MCA_mpi_yield_when_idle=1
  mkdir -p "$work/jobs"
  unset SWITCHAGG_AGENT SWITCHAGG_LEASE SWITCHAGG_MODE  # only the plugin's, not a caller's
}
slurmRun() {  # slurmRun OFFLOAD LOG PROGRAM ARGS...
  local offload=$1 log=$2 opts=(--switch-agg=off)
  shift 2
  [[ $offload == on ]] && opts=(--switch-agg=require --switch-agg-slots=8)
  [[ $offload == auto ]] && opts=(--switch-agg=auto --switch-agg-slots=8)
  # shellcheck disable=SC2016 # expanded by the job's shell
  local note='[[ ${SLURM_PROCID:-0} != 0 ]] || echo "$SLURM_JOB_ID ${SWITCHAGG_MODE:-unset} ${#SWITCHAGG_LEASE} ${SWITCHAGG_AGENT:-none}" >"$SWITCHAGG_DEMO_JOBNOTE"; exec "$0" "$@"'
  OMPI_MCA_coll_switchagg_offload=$offload SWITCHAGG_DEMO_JOBNOTE=$work/jobs/$(basename "$log" .log) \
    runJob "$log" srun "${opts[@]}" --mpi=pmix -n "$np" --overcommit bash -c "$note" "$@"
}
# One line per job: what its tasks got and what the agent logged for it.
slurmReport() {
  local name job mode chars agent line alog=$cluster/log/agent.log
  echo "slurm: what the SPANK plugin did (rank 0's environment; agent log)"
  for name in bench-switch train-switch bench-host train-host; do
    read -r job mode chars agent <"$work/jobs/$name"
    line="  job $job ${name%-*} --switch-agg=$([[ $name == *switch ]] && echo require || echo off):"
    line+=" SWITCHAGG_MODE=$mode,"
    if ((chars == 0)); then
      echo "$line no token, no lease"
      continue
    fi
    for _ in $(seq 1 100); do grep -q "lease deleted: job $job " "$alog" && break; sleep 0.2; done
    line+=" token ($chars chars), agent $agent; $(grep -m1 -o "lease created: job $job uid .*" "$alog" | sed 's/ (by.*//;s/: job [0-9]* /: /')"
    grep -q "lease deleted: job $job " "$alog" && line+="; deleted at job end" || line+="; NOT deleted"
    echo "$line"
  done
}

pkglib=$(ompi_info --path pkglibdir --parsable 2>/dev/null | sed 's/^path:pkglibdir://')
mca=(--mca mca_base_component_path "$build/lib/openmpi:${pkglib:-/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3}")
echo "work dir $work"

if ((use_slurm)); then
  slurmStart
else
  say "start switchagg-agent (config/agent.toml, private socket in $work)"
  agent_start "$root/config/agent.toml" "$work"
  echo "agent pid $AGENT_PID, control unix:$AGENT_SOCKET, data $AGENT_DATA"
  export SWITCHAGG_CONTROL=unix:$AGENT_SOCKET  # switchagg-ctl's default agent
  job=demo-$$
  say "lease: switchagg-ctl lease create --job $job --slots 8"
  eval "$("$bin/switchagg-ctl" lease create --job "$job" --slots 8 --mode require | grep '^export ')"
  echo "SWITCHAGG_AGENT=$SWITCHAGG_AGENT SWITCHAGG_MODE=$SWITCHAGG_MODE SWITCHAGG_LEASE=<${#SWITCHAGG_LEASE} hex chars>"
fi

run() {  # run OFFLOAD LOG -- program args...
  local offload=$1 log=$2; shift 3
  if ((use_slurm)); then
    slurmRun "$offload" "$log" "$@"
  else
    runJob "$log" mpirun -np "$np" --oversubscribe "${mca[@]}" --mca coll_switchagg_offload "$offload" \
      -x SWITCHAGG_AGENT -x SWITCHAGG_LEASE -x SWITCHAGG_MODE -x SWITCHAGG_UCX_WAIT=blocking "$@"
  fi
}

for mode in on off; do
  label=$([[ $mode == on ]] && echo switch || echo host)
  launcher="mpirun -np $np"
  ((use_slurm)) && launcher="srun --switch-agg=$([[ $mode == on ]] && echo require || echo off) --mpi=pmix -n $np"
  say "$launcher switchagg-bench --check --max $max   (offload=$mode)"
  run "$mode" "$out/bench-$label.log" -- "$bin/switchagg-bench" --check --max "$max" --iters "$iters" \
    --label "$label" --csv "$out/bench-$label.csv"
  # Beside allreduce: MPI_Barrier and MPI_Reduce_scatter_block. On one node
  # every rank is its node's, so the routed reduce-scatter needs every rank
  # to be a member (node leaders off; on a cluster with one rank per node
  # it is the default).
  for coll in barrier reduce_scatter_block; do
    say "$launcher switchagg-bench --coll $coll --check   (offload=$mode)"
    run "$mode" "$out/$coll-$label.log" -- env SWITCHAGG_SWITCH_LEADERS=off "$bin/switchagg-bench" \
      --coll "$coll" --check --min 4K --max 256K --iters 20 --label "$label" --csv "$out/$coll-$label.csv"
  done
  say "$launcher switchagg-train --check --steps $steps   (offload=$mode)"
  run "$mode" "$out/train-$label.log" -- "$bin/switchagg-train" --check --steps "$steps" \
    --loss-file "$out/loss-$label.csv"
done

# What every job gets by default: offload=auto (`srun --switch-agg=auto`),
# online tuning measuring the candidates for each size during the warm-up
# (at least 32 calls a size) and then serving the fastest; the summary shows
# the path it settled on per size beside on and off.
launcher="mpirun -np $np"
((use_slurm)) && launcher="srun --switch-agg=auto --mpi=pmix -n $np"
say "$launcher switchagg-bench --check --max $max   (offload=auto, after its warm-up)"
run auto "$out/bench-auto.log" -- "$bin/switchagg-bench" --check --max "$max" --iters "$iters" \
  --warmup 40 --min-warmup 32 --label auto --csv "$out/bench-auto.csv"

plots=$("$root/scripts/plot_bench.sh" -o "$out" -t "MPI_Allreduce, np=$np" "$out/bench-switch.csv" "$out/bench-host.csv" 2>/dev/null | tr '\n' ' ' || true)
extra=""
if ((use_slurm)); then
  extra=$(slurmReport)
else
  "$bin/switchagg-ctl" lease delete --job "$job" >/dev/null
fi
"$root/scripts/demo_summary.sh" "$out" "$np" "$("$bin/switchagg-ctl" metrics)" "$plots" "$extra"
