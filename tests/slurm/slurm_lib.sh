# Helpers for slurm_cases.sh (sourced). Polls are bounded; nothing busy-waits
# faster than 10 Hz.

# Debian's interpreter: a version manager's shim in PATH can cost seconds a call.
PY=/usr/bin/python3
[[ -x $PY ]] || PY=python3

fail() {
  echo "FAIL ${case:-?}: $*" >&2
  exit 1
}

# The job id a job_probe.sh line reported.
jobOf() { grep -o 'job=[0-9]*' "$1" | head -1 | cut -d= -f2; }

# "job:J uid:U slots:S" of the agent's lease for job $1, or nothing.
leaseOf() {
  "$CTL" leases --json | "$PY" -c '
import json, sys
for l in json.load(sys.stdin).get("leases", []):
    if str(l.get("job")) == sys.argv[1]:
        print("job:%s uid:%s slots:%s" % (l["job"], l["uid"], l["slots"]))' "$1"
}

# A numeric counter of the agent's data plane (GET /v1/status).
agentCounter() {
  "$CTL" status --json | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["counters"][sys.argv[1]])' "$1"
}

# Control connections the agent shed to keep its budgets (all listeners and reasons).
shedTotal() {
  "$CTL" metrics | awk '/^switchagg_control_shed_total/ { n += $2 } END { print n + 0 }'
}

# The agent's data addresses, one per data-plane thread, as an ERE
# alternation: a lease's jobs get its home thread's (docs/agent-protocol.md
# "Data-plane threads").
dataAddresses() {
  "$CTL" status --json | "$PY" -c 'import json, sys, re
j = json.load(sys.stdin)
print("(" + "|".join(re.escape(t["address"]) for t in j.get("data_threads") or [{"address": j["data_address"]}]) + ")")'
}

# Waits (up to $2 s, default 30) until the agent holds / no longer holds job $1's lease.
waitLease() {
  untilLease held "$1" "${2:-30}" || fail "job $1 never got a lease"
}
waitNoLease() {
  untilLease gone "$1" "${2:-30}" ||
    fail "job $1's lease is still at the agent after the job: $(leaseOf "$1")"
}
# untilLease held|gone JOB S: polls the agent for JOB's lease for up to S s.
untilLease() {
  local end=$((SECONDS + $3)) lease
  while ((SECONDS < end)); do
    lease=$(leaseOf "$2")
    [[ $1 == held && -n $lease || $1 == gone && -z $lease ]] && return 0
    sleep 0.1
  done
  return 1
}

# untilLog PATTERN S: polls slurmd.log for a line matching PATTERN (grep -E)
# for up to S s.
untilLog() {
  local end=$((SECONDS + $2))
  while ((SECONDS < end)); do
    grep -Eq -- "$1" "$DIR/log/slurmd.log" && return 0
    sleep 0.1
  done
  return 1
}

waitJobsDone() {
  local ids
  ids=$(IFS=,; echo "$*")
  local end=$((SECONDS + 90))
  while ((SECONDS < end)); do
    [[ -z $(squeue -h -j "$ids" -o %i 2>/dev/null) ]] && return 0
    sleep 0.2
  done
  fail "jobs $ids did not finish"
}

jobCount() { scontrol show jobs -o 2>/dev/null | grep -c '^JobId=' || true; }

# Runs "$@" (a submission), which must fail with $1 in its output.
expectRefused() {
  local want=$1 out
  shift
  if out=$("$@" 2>&1); then fail "accepted: $*"; fi
  grep -qF -- "$want" <<<"$out" || fail "'$*' refused without saying '$want': $out"
}

# Commands run when the case ends, passed or failed (last registered first).
CLEANUP=()
atExit() { CLEANUP=("$*" "${CLEANUP[@]}"); }

# Stops the agent for this case; it starts again when the case ends.
agentDown() {
  "$here/slurm_cluster.sh" agent-stop "$DIR"
  atExit '"$here/slurm_cluster.sh" agent-start "$DIR"'
}

# The node still takes jobs (a failing prolog or batch step would drain it).
nodeUsable() {
  local state
  state=$(sinfo -h -o %t)
  [[ $state != drain* && $state != down* ]] || fail "node is $state: $(sinfo -h -o %E)"
  srun -n 1 true || fail "node does not run jobs any more"
}

onExit() {
  local rc=$? cmd
  for cmd in "${CLEANUP[@]}"; do eval "$cmd" || rc=1; done
  exit $rc
}
trap onExit EXIT
