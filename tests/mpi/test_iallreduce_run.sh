#!/usr/bin/env bash
# test_iallreduce_run.sh BUILD_DIR SCENARIO [ARGS...]
# MPI_Iallreduce with a real switchagg-agent (scripts/lib_agent.sh) and a
# real mpirun, the component loaded from BUILD_DIR. Scenarios:
#   matrix NP on|off [ARGS]   mpi_iallreduce_check --mode matrix: dtype x op x
#                             count x in place, Wait/Test/Waitall; on: offload
#                             on, served by the switch (counters) and the agent
#                             saw the bytes; off: offload off, every call in the
#                             previous module, the agent saw nothing
#   leaders NP                offload on, node leaders (every rank on this
#                             host's node, or PPN's emulated nodes): calls up to
#                             the keep limit served by the switch, the 8 MiB
#                             ones (--large) by the previous module
#   multi NP                  several calls outstanding on three communicators
#   busy NP                   as multi on a 2-slot lease: busy refusals redone
#   overlap NP BYTES          compute between Iallreduce and Wait overlaps it
#   kill|delete NP BYTES      the agent SIGKILLed / the lease deleted at a random
#                             moment of an Iallreduce loop: right answers, redo
#                             counted, no call over --max-ms
# PPN=K puts rank r on emulated node r / K (emulate_nodes.sh). Prints PASS.
set -uo pipefail
build=$1 scenario=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=$build/bin
source "$root/scripts/lib_agent.sh"
source "$here/fault_lib.sh"

work=$(mktemp -d /tmp/switchagg-iallreduce-test.XXXXXX)
cleanup() {
  agent_stop
  rm -rf "$work"
}
trap cleanup EXIT

component_path="$build/lib/openmpi:$(ompi_info --path pkglibdir --parsable | sed 's/^path:pkglibdir://')"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 SWITCHAGG_UCX_WAIT=blocking
export SWITCHAGG_SWITCH_WINDOW=${SWITCHAGG_SWITCH_WINDOW:-2}

die() { echo "FAIL: $*" >&2; [[ -f $work/agent.log ]] && tail -20 "$work/agent.log" >&2; exit 1; }
ctl() { "$bin/switchagg-ctl" --agent "unix:$AGENT_SOCKET" "$@"; }
metric() { ctl metrics | awk -v m="$1" '$1 == m { print $2 }'; }

lease() {  # JOB [SLOTS]
  local out
  out=$(ctl lease create --job "$1" --slots "${2:-16}" --ttl 10m) || die "lease create $1: $out"
  eval "$(grep '^export ' <<<"$out")"
}

emu=()
[[ -n ${PPN:-} ]] && emu=("$here/emulate_nodes.sh" "$PPN")

# run NP LOG ARGS...: mpi_iallreduce_check under mpirun, offload ${OFFLOAD:-on}.
run() {
  local np=$1 log=$2
  shift 2
  timeout -s KILL 240 mpirun --oversubscribe --bind-to none --mca btl self,vader \
    --mca mca_base_component_path "$component_path" -np "$np" \
    --mca coll_switchagg_offload "${OFFLOAD:-on}" --mca coll_switchagg_verbose 1 \
    -x SWITCHAGG_AGENT -x SWITCHAGG_LEASE -x SWITCHAGG_MODE -x SWITCHAGG_UCX_WAIT \
    -x SWITCHAGG_SWITCH_WINDOW "${emu[@]}" "$bin/mpi_iallreduce_check" "$@" >"$log" 2>&1
}

expect_pass() {  # LOG [PATTERN...]
  local log=$1
  shift
  cat "$log"
  grep -q '^PASS' "$log" || die "no PASS in $log"
  local p
  for p in "$@"; do grep -Eq -- "$p" "$log" || die "$log lacks /$p/"; done
}

start_agent() { agent_start "$root/config/agent.toml" "$work" --set agent.log_level=info || die "agent start"; }

case $scenario in
  matrix)
    np=$1 mode=$2
    shift 2
    start_agent
    lease "imatrix-np$np"
    if [[ $mode == on ]]; then
      run "$np" "$work/run.log" --mode matrix --expect switch "$@" || { cat "$work/run.log"; die "run failed"; }
      expect_pass "$work/run.log" "joined switch group"
      in=$(metric switchagg_bytes_in_total)
      echo "agent metrics: bytes_in=$in"
      [[ ${in%.*} -ge 1000000 ]] || die "the agent saw ${in:-no} bytes"
    else
      OFFLOAD=off run "$np" "$work/run.log" --mode matrix --expect previous "$@" ||
        { cat "$work/run.log"; die "run failed"; }
      expect_pass "$work/run.log"
      ! grep -q "joined switch group" "$work/run.log" || die "joined the agent with offload off"
      in=$(metric switchagg_bytes_in_total)
      [[ ${in%.*} -eq 0 ]] || die "the agent saw $in bytes with offload off"
    fi
    ;;
  leaders)
    np=$1
    start_agent
    lease "ileaders-np$np"
    run "$np" "$work/run.log" --mode matrix --expect switch --large ||
      { cat "$work/run.log"; die "run failed"; }
    expect_pass "$work/run.log" "joined switch group .* node leaders for $np ranks" \
      "iallreduce:switch [1-9][0-9]* previous [1-9]"
    ;;
  multi)
    np=$1
    start_agent
    lease "imulti-np$np"
    run "$np" "$work/run.log" --mode multi --iters 6 --expect switch || { cat "$work/run.log"; die "run failed"; }
    expect_pass "$work/run.log" "joined switch group"
    ;;
  busy)
    # A lease of one window (2 slots): the three communicators' calls stream
    # at once, the agent refuses some busy; those are redone on the host,
    # every result exact, the path kept.
    np=$1
    start_agent
    lease "ibusy-np$np" 2
    run "$np" "$work/run.log" --mode multi --iters 6 --expect auto || { cat "$work/run.log"; die "run failed"; }
    expect_pass "$work/run.log" "joined switch group" "redo:switch-busy [1-9]"
    ;;
  overlap)
    np=$1 bytes=$2
    start_agent
    lease "ioverlap-np$np"
    run "$np" "$work/run.log" --mode overlap --bytes "$bytes" --iters 8 --min-hidden 0.5 \
      --expect switch || { cat "$work/run.log"; die "run failed"; }
    expect_pass "$work/run.log" "^overlap: "
    ;;
  kill | delete)
    np=$1 bytes=$2
    delay_ms=$((RANDOM % 300))
    echo "injecting $scenario ${delay_ms} ms after the switch served its first Iallreduce"
    start_agent
    lease "ifault-$scenario"
    run "$np" "$work/run.log" --mode fault --fault "$work" --bytes "$bytes" --max-ms 8000 &
    pid=$!
    fire_fault $pid "$work/run.log" "$scenario" "ifault-$scenario" "$delay_ms"
    wait $pid || { cat "$work/run.log"; die "the job failed after the fault"; }
    expect_pass "$work/run.log" "switch allreduce failed .*recomputed on the host" \
      "redo:switch-failed [1-9]"
    ;;
  *) die "unknown scenario '$scenario'" ;;
esac
echo PASS
