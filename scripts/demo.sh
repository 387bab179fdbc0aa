#!/usr/bin/env bash
# README command one — the main job. Bootstraps and builds, starts a local
# switchagg-agent with the example policy, creates a lease, runs
# `mpirun -np 4` of switchagg-bench --check and switchagg-train --check with
# offload on (switch path) and off (host algorithms), prints one summary
# screen and stops everything it started (also on Ctrl-C).
#
#   scripts/demo.sh [--np N] [--max SIZE] [--out DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${SWITCHAGG_BUILD_DIR:-$root/build}
np=4 max=4M out=$root/out/demo
while (($#)); do
  case $1 in
    --np) np=$2; shift 2 ;;
    --max) max=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "demo: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done

say() { printf '\033[1m== %s\033[0m\n' "$*"; }
say "build (scripts/build.sh → $build)"
SWITCHAGG_BUILD_DIR=$build "$root/scripts/build.sh" >/dev/null
mkdir -p "$out"
bin=$build/bin
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# shellcheck source=scripts/lib_agent.sh
source "$root/scripts/lib_agent.sh"
work=$(mktemp -d /tmp/switchagg-demo.XXXXXX)
cleanup() {
  agent_stop
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say "start switchagg-agent (config/agent.toml, private socket in $work)"
agent_start "$root/config/agent.toml" "$work"
echo "agent pid $AGENT_PID, control unix:$AGENT_SOCKET, data $AGENT_DATA"

job=demo-$$
say "lease: switchagg-ctl lease create --job $job --slots 8"
eval "$("$bin/switchagg-ctl" --agent "unix:$AGENT_SOCKET" lease create --job "$job" --slots 8 --mode require | grep '^export ')"
echo "SWITCHAGG_AGENT=$SWITCHAGG_AGENT SWITCHAGG_MODE=$SWITCHAGG_MODE SWITCHAGG_LEASE=<${#SWITCHAGG_LEASE} hex chars>"

mca=(--mca mca_base_component_path "$build/lib/openmpi:/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3")
run() {  # run OFFLOAD LOG -- program args...
  local offload=$1 log=$2; shift 3
  mpirun -np "$np" --oversubscribe "${mca[@]}" --mca coll_switchagg_offload "$offload" \
    -x SWITCHAGG_AGENT -x SWITCHAGG_LEASE -x SWITCHAGG_MODE -x SWITCHAGG_UCX_WAIT=blocking \
    "$@" >"$log" 2>&1 || { echo "demo: FAILED: $* (log: $log)"; tail -20 "$log"; exit 1; }
}

for mode in on off; do
  label=$([[ $mode == on ]] && echo switch || echo host)
  say "mpirun -np $np switchagg-bench --check --max $max   (offload=$mode)"
  run "$mode" "$out/bench-$label.log" -- "$bin/switchagg-bench" --check --max "$max" \
    --label "$label" --csv "$out/bench-$label.csv"
  say "mpirun -np $np switchagg-train --check   (offload=$mode)"
  run "$mode" "$out/train-$label.log" -- "$bin/switchagg-train" --check --loss-file "$out/loss-$label.csv"
done

plots=$("$root/scripts/plot_bench.sh" -o "$out" -t "MPI_Allreduce, np=$np" "$out/bench-switch.csv" "$out/bench-host.csv" 2>/dev/null | tr '\n' ' ' || true)
"$bin/switchagg-ctl" --agent "unix:$AGENT_SOCKET" lease delete --job "$job" >/dev/null
"$root/scripts/demo_summary.sh" "$out" "$np" "$("$bin/switchagg-ctl" --agent "unix:$AGENT_SOCKET" metrics)" "$plots"
