# Sourced by the mpirun test scripts (test_switch_run.sh,
# test_iallreduce_run.sh) with build and here set (and work by the time a
# function runs): what both need to run a check program under mpirun
# against a real agent. Sets root and bin, and sources scripts/lib_agent.sh.
#   die MSG                  FAIL line (and the agent log's tail), exit 1
#   ctl ARGS / metric NAME   switchagg-ctl on the agent / one of its metrics
#   lease JOB [SLOTS]        exports SWITCHAGG_AGENT/LEASE/MODE for a lease
#                            (16 slots by default)
#   start_agent              the agent on config/agent.toml in $work
#   mpirun_lease NP ARGS...  mpirun with the component, offload ${OFFLOAD:-on},
#                            the lease exported (MPI_FLAVOR=mpich: mpiexec.mpich
#                            with the PMPI library; openmpi-pmpi: Open MPI's
#                            mpirun without the component, the PMPI library
#                            built for Open MPI preloaded)
#   expect_pass LOG [RE...]  LOG says PASS and matches every RE
#   expect_no_offload LOG    the run (offload off) never joined the agent,
#                            and the agent saw no bytes
#   emu                      the emulated-node prefix of a command (PPN=K)
#   fire_fault PID LOG KIND JOB DELAY_MS  (below)

root=$(cd "$here/../.." && pwd)
bin=$build/bin
# shellcheck source=/dev/null
source "$root/scripts/lib_agent.sh"

component_path="$build/lib/openmpi:$(ompi_info --path pkglibdir --parsable | sed 's/^path:pkglibdir://')"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 SWITCHAGG_UCX_WAIT=blocking
# Two communicators' groups fit a 16-slot lease many times over.
export SWITCHAGG_SWITCH_WINDOW=${SWITCHAGG_SWITCH_WINDOW:-2}

die() { echo "FAIL: $*" >&2; [[ -f $work/agent.log ]] && tail -20 "$work/agent.log" >&2; exit 1; }
ctl() { "$bin/switchagg-ctl" --agent "unix:$AGENT_SOCKET" "$@"; }
metric() { ctl metrics | awk -v m="$1" '$1 == m { print $2 }'; }

lease() {
  local out
  out=$(ctl lease create --job "$1" --slots "${2:-16}" --ttl 10m) || die "lease create $1: $out"
  eval "$(grep '^export ' <<<"$out")"
}

start_agent() { agent_start "$root/config/agent.toml" "$work" --set agent.log_level=info || die "agent start"; }

# (exported as a function: cg_compare.sh runs it through bash -c)
mpirun_lease() {
  local np=$1
  shift
  timeout -s KILL 240 mpirun --oversubscribe --bind-to none --mca btl self,vader \
    --mca mca_base_component_path "$component_path" -np "$np" \
    --mca coll_switchagg_offload "${OFFLOAD:-on}" --mca coll_switchagg_verbose "${VERBOSE:-1}" \
    -x SWITCHAGG_AGENT -x SWITCHAGG_LEASE -x SWITCHAGG_MODE -x SWITCHAGG_UCX_WAIT \
    -x SWITCHAGG_SWITCH_WINDOW "$@"
}
if [[ ${MPI_FLAVOR:-openmpi} == mpich ]]; then
  mpirun_lease() {
    local np=$1 name value
    shift
    local env=(-genv LD_PRELOAD "$build/lib/libswitchagg_pmpi.so"
      -genv SWITCHAGG_OFFLOAD "${OFFLOAD:-on}" -genv SWITCHAGG_VERBOSE "${VERBOSE:-1}")
    while (($# > 0)); do
      case $1 in
        --mca)
          if [[ $2 == coll_switchagg_* ]]; then
            name=${2#coll_switchagg_}
            env+=(-genv "SWITCHAGG_${name^^}" "$3")
          fi
          shift 3 ;;
        -x)
          if [[ $2 == *=* ]]; then env+=(-genv "${2%%=*}" "${2#*=}"); fi
          shift 2 ;;
        *) break ;;
      esac
    done
    timeout -s KILL 240 mpiexec.mpich -n "$np" "${env[@]}" "$@"
  }
fi
if [[ ${MPI_FLAVOR:-openmpi} == openmpi-pmpi ]]; then
  mpirun_lease() {
    local np=$1 name
    shift
    local args=(-x "LD_PRELOAD=$build/lib/libswitchagg_pmpi_openmpi.so"
      -x "SWITCHAGG_OFFLOAD=${OFFLOAD:-on}" -x "SWITCHAGG_VERBOSE=${VERBOSE:-1}")
    while (($# > 0)); do
      case $1 in
        --mca)
          if [[ $2 == coll_switchagg_* ]]; then
            name=${2#coll_switchagg_}
            args+=(-x "SWITCHAGG_${name^^}=$3")
          else
            args+=("$1" "$2" "$3")
          fi
          shift 3 ;;
        -x) args+=("$1" "$2"); shift 2 ;;
        *) break ;;
      esac
    done
    timeout -s KILL 240 mpirun --oversubscribe --bind-to none --mca btl self,vader \
      --mca mca_base_component_path "${component_path#*:}" --mca coll ^switchagg -np "$np" \
      -x SWITCHAGG_AGENT -x SWITCHAGG_LEASE -x SWITCHAGG_MODE -x SWITCHAGG_UCX_WAIT \
      -x SWITCHAGG_SWITCH_WINDOW "${args[@]}" "$@"
  }
fi
export -f mpirun_lease
export build
export component_path

expect_pass() {  # LOG [PATTERN...]
  local log=$1
  shift
  cat "$log"
  grep -q '^PASS' "$log" || die "no PASS in $log"
  # Any rank's failure line fails the run, whatever rank 0 printed.
  ! grep -q '^FAIL' "$log" || die "a FAIL line in $log: $(grep -m1 '^FAIL' "$log")"
  local p
  for p in "$@"; do grep -Eq -- "$p" "$log" || die "$log lacks /$p/"; done
}

expect_no_offload() {  # LOG
  ! grep -q "joined switch group" "$1" || die "joined the agent with offload off"
  local in
  in=$(metric switchagg_bytes_in_total)
  [[ ${in%.*} -eq 0 ]] || die "the agent saw $in bytes with offload off"
}

# The emulated-node prefix of a program's command line: rank r on node r / PPN.
emu=()
[[ -n ${PPN:-} ]] && emu=("$here/emulate_nodes.sh" "$PPN")
# with_emu MPIRUN-ARGS... PROGRAM [ARGS...]: args=() the same with the
# emulated-node prefix (PPN) before the program (the first argument that is
# an executable file; mpirun's options come before it).
with_emu() {
  args=()
  local a pre=("${emu[@]}")
  for a in "$@"; do
    if ((${#pre[@]} > 0)) && [[ -f $a && -x $a ]]; then args+=("${pre[@]}"); pre=(); fi
    args+=("$a")
  done
}

# fire_fault PID LOG KIND JOB DELAY_MS: once the job (PID, output in LOG)
# created $work/ready, waits DELAY_MS, then SIGKILLs the agent (KIND *kill)
# or deletes JOB's lease, and creates $work/fired.
fire_fault() {
  local pid=$1 log=$2 kind=$3 job=$4 delay_ms=$5
  for _ in $(seq 1 600); do [[ -f $work/ready ]] && break; kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
  [[ -f $work/ready ]] || { wait "$pid"; cat "$log"; die "the switch never served"; }
  sleep "$(awk -v ms="$delay_ms" 'BEGIN { printf "%.3f", ms / 1000 }')"
  if [[ $kind == *kill ]]; then
    kill -KILL "$AGENT_PID"
    wait "$AGENT_PID" 2>/dev/null
    AGENT_PID=
  else
    ctl lease delete --job "$job" || die "lease delete"
  fi
  touch "$work/fired"
}
