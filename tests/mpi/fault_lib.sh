# Sourced by the mpirun test scripts (test_switch_run.sh,
# test_iallreduce_run.sh), which define work, die, ctl and AGENT_PID.
#
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
