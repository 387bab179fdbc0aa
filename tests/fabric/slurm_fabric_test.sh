#!/usr/bin/env bash
# slurm_fabric_test.sh BUILD_DIR: the SPANK plugin on a real multi-node Slurm
# cluster over an emulated fabric. Brings up fabric `sl` (star, 3 hosts,
# 400 Mbit/s, 10.79/16), switchagg-agent on its `agent` host, and Slurm
# (slurm_fabric.sh: slurmctld on h1, slurmd on h1..h3), then runs:
#   srun_3_nodes   srun -N 3 --switch-agg=require: one lease for the job, the
#                  same token on all 3 nodes, gone after the job
#   srun_off       --switch-agg=off: no lease, no token
#   scancel        a running 3-node require job cancelled: lease and every
#                  step process gone within 20 s
#   slurmd_killed  slurmd of h3 SIGKILLed mid-job: the job ends, the lease
#                  goes (the test says who released it)
#   mpi_3_nodes    a real MPI job: srun -N 3 --mpi=pmix --switch-agg=require
#                  mpi_allreduce_check --expect switch with the coll
#                  component loaded in the tasks: every result exact, every
#                  call served by the switch path (the component's counters,
#                  and the agent's groups_created / bytes_reduced moved),
#                  the component saw 3 nodes, the lease gone after the job
#   mpi_scancel    the same kind of MPI job (mpi_oneshot_check, a long loop)
#                  cancelled while the switch path serves it: lease and every
#                  task gone within 20 s, the job CANCELLED
# With a second argument `tree`: two leaf agents under the agent (the
# spine) in the plugin's fabric map, and these cases instead:
#   srun_tree      srun -N 3 --switch-agg=require across both racks: one
#                  lease at leaf1, leaf2 and the spine during the job, the
#                  three agents' names and the map in the tasks, none after
#   mpi_tree       the MPI job of mpi_3_nodes across both racks: exact, every
#                  call on the switch path through the tree (both leaves
#                  sent bytes up, the spine reduced), no lease at any of the
#                  three agents after the job
# MPI under srun: Slurm's pmix plugin (`srun --mpi=pmix`, Slurm 22.05's
# PMIx v4 server) with Open MPI 4.1's PMIx client; setup fails if `srun
# --mpi=list` lacks pmix. The tasks load the component from BUILD_DIR
# (OMPI_MCA_mca_base_component_path); the plugin hands them the lease.
# Prints "PASS <case>" per case; exits 0 only if all pass. Everything is torn
# down on exit (also on INT/TERM and failures), then checked to be gone.
# Runs as root. Work files and logs: /var/tmp/switchagg-slurm-fabric-sl/
# (the logs of the last run stay in logs/ there: the daemons' logs, the
# agents' logs and each MPI case's srun output, mpi-<case>.out/.err).
# shellcheck disable=SC2034  # $case is read by fail() (slurm_lib.sh)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(realpath "${1:?usage: $0 BUILD_DIR [tree]}")
# tree: the plugin's fabric map puts h1-h2 under leaf agent leaf1 and h3
# under leaf2, both children of the spine (the cluster's agent); one case.
mode=${2:-cases}
T0=$SECONDS

[[ $(id -u) -eq 0 ]] || { echo "FAIL setup: must run as root" >&2; exit 1; }
CTL=$build/bin/switchagg-ctl
SPANK=$build/lib/slurm/switchagg_spank.so
CHECK=$build/bin/mpi_allreduce_check
ONESHOT=$build/bin/mpi_oneshot_check
for f in "$CTL" "$build/bin/switchagg-agent" "$SPANK" "$CHECK" "$ONESHOT" \
  "$build/lib/openmpi/mca_coll_switchagg.so"; do
  [[ -e $f ]] || { echo "FAIL setup: $f missing (build first)" >&2; exit 1; }
done

# shellcheck source=/dev/null
source "$root/scripts/lib_fabric.sh"
# shellcheck source=/dev/null
source "$root/scripts/lib_agent.sh"
# shellcheck source=/dev/null
source "$root/scripts/lib_procs.sh"
# fail, jobOf, leaseOf, waitLease, waitNoLease (they use $CTL, $case, $PY).
# Its EXIT trap is replaced by teardown below.
# shellcheck source=/dev/null
source "$root/tests/slurm/slurm_lib.sh"

FABRIC=sl
FABRIC_DIR=$FABRIC_STATE_ROOT/$FABRIC
W=/var/tmp/switchagg-slurm-fabric-$FABRIC   # not /tmp: every host has its own
CL=$W/cluster
AG=$W/agent
J=$W/jobs
BG_PIDS=()
case=setup

say() { echo "slurm_fabric_test: $*" >&2; }

# True while process $1 runs (zombies count as gone: PID 1 here may not reap).
alive() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  [[ ${stat%% *} != Z ]]
}

# pids recorded in pid files $@ (for the final check that none survived).
recordedPids() { cat "$@" 2>/dev/null | grep -E '^[0-9]+$' || true; }

stopAgentRecorded() {
  local pid f
  for f in "$AG"/leaf*.pid; do
    [[ -f $f ]] || continue
    pid=$(cat "$f")
    if alive "$pid" && [[ $(cat "/proc/$pid/comm" 2>/dev/null) == switchagg-agent ]]; then
      AGENT_PID=$pid
      agent_stop
    fi
    rm -f "$f"
  done
  pid=$(cat "$AG/agent.pid" 2>/dev/null) || return 0
  if alive "$pid" && [[ $(cat "/proc/$pid/comm" 2>/dev/null) == switchagg-agent ]]; then
    AGENT_PID=$pid
    agent_stop
  fi
  rm -f "$AG/agent.pid"
}

# Everything a run (this one, or a dead one before it) left: Slurm, agent, fabric.
tearDownAll() {
  local pid bg f
  # Our sruns and what they forked (srun's shepherd): TERM lets srun cancel
  # its step while slurmctld still answers; what is left gets KILL below.
  bg=$(pids_below "${BG_PIDS[@]}")
  for pid in "${BG_PIDS[@]}"; do alive "$pid" && kill -TERM "$pid" 2>/dev/null; done
  "$here/slurm_fabric.sh" stop "$CL" --logs-to "$W/logs" || say "slurm_fabric.sh stop failed"
  for pid in $bg; do alive "$pid" && kill -KILL "$pid" 2>/dev/null; done
  stopAgentRecorded
  [[ -f $AG/agent.log ]] && cp "$AG/agent.log" "$W/logs/" 2>/dev/null
  for f in 1 2; do
    [[ -f $AG/l$f/agent.log ]] && cp "$AG/l$f/agent.log" "$W/logs/leaf$f-agent.log" 2>/dev/null
  done
  cp "$J"/mpi-*.out "$J"/mpi-*.err "$W/logs/" 2>/dev/null || true
  fabric_down
  return 0
}

teardown() {
  local rc=$? pids pid left=() steps
  set +e
  trap - EXIT INT TERM
  pids=$(recordedPids "$CL/slurmctld.pid" "$CL"/slurmd-*.pid "$AG/agent.pid" "$AG"/leaf*.pid)
  tearDownAll
  for pid in $pids; do alive "$pid" && left+=("$pid($(cat "/proc/$pid/comm"))"); done
  if ((${#left[@]})); then
    echo "FAIL teardown: still running after teardown: ${left[*]}" >&2
    rc=1
  fi
  if ip -o link show | grep -E "^[0-9]+: ${FABRIC}[sl][0-9]" >/dev/null; then
    echo "FAIL teardown: fabric links/bridges left: $(ip -o link show | grep -Eo "^[0-9]+: ${FABRIC}[sl][0-9][^:@]*" | tr '\n' ' ')" >&2
    rc=1
  fi
  # The hosts' network namespaces (anonymous: Mininet's) live while any
  # process is in one; none may be left.
  if [[ -s $W/netns ]]; then
    steps=$("$PY" - "$W/netns" <<'EOF'
import os, sys
want = set(open(sys.argv[1]).read().split())
left = []
for p in filter(str.isdigit, os.listdir("/proc")):
    try:
        if os.readlink("/proc/%s/ns/net" % p) in want:
            left.append("%s:%s" % (p, open("/proc/%s/comm" % p).read().strip()))
    except OSError:
        pass
print(" ".join(left))
EOF
)
    if [[ -n $steps ]]; then
      echo "FAIL teardown: processes still in the fabric's network namespaces: $steps" >&2
      rc=1
    fi
  fi
  if [[ -e $FABRIC_DIR ]]; then
    echo "FAIL teardown: $FABRIC_DIR still exists" >&2
    rc=1
  fi
  BG_PIDS=()   # the sruns count now
  steps=$(stepProcs "SLURM_CONF=$CL/slurm.conf")
  if [[ -n $steps ]]; then
    echo "FAIL teardown: job step processes left: $steps" >&2
    rc=1
  fi
  if ((rc == 0)); then
    echo "PASS teardown (no fabric namespace, link, state dir, daemon or step process left; $((SECONDS - T0)) s in all)"
  fi
  rm -rf "$J" "$AG" "$W/netns"
  exit "$rc"
}

# Processes (other than the test's own sruns) whose environment holds $1
# (e.g. SLURM_JOB_ID=7), or slurmstepd of job $2: "pid:comm@host ...",
# host = the process's UTS hostname. One python pass over /proc.
stepProcs() {
  "$PY" - "$1" "${2:-}" "${BG_PIDS[@]}" <<'EOF'
import os, subprocess, sys
var, job, skip = sys.argv[1].encode(), sys.argv[2], set(sys.argv[3:]) | {str(os.getpid())}
out = []
for p in os.listdir("/proc"):
    if not p.isdigit() or p in skip:
        continue
    try:
        with open("/proc/%s/stat" % p) as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                continue
        with open("/proc/%s/environ" % p, "rb") as f:
            env = f.read().split(b"\0")
        with open("/proc/%s/cmdline" % p, "rb") as f:
            cmd = f.read().split(b"\0")[0].decode(errors="replace")
        with open("/proc/%s/comm" % p) as f:
            comm = f.read().strip()
    except (OSError, IndexError):
        continue
    if var in env or (job and cmd.startswith("slurmstepd: [%s." % job)):
        host = subprocess.run(["nsenter", "-t", p, "-u", "hostname"], capture_output=True,
                              text=True).stdout.strip() or "?"
        out.append("%s:%s@%s" % (p, comm, host))
print(" ".join(sorted(out)))
EOF
}

# Runs a command in the background (so that a signal to this script is
# handled at once), remembering its pid in BG (and BG_PIDS for teardown).
# `client` is replaced by its script, so that $! is srun's own pid (a shell
# function would run in a subshell, with srun a grandchild).
startBg() {
  local out=$1 err=$2
  shift 2
  [[ $1 == client ]] && set -- "$CL/client" "${@:2}"
  "$@" >"$out" 2>"$err" </dev/null &
  BG=$!
  BG_PIDS+=("$BG")
}

# Waits up to $2 s for background pid $1; its exit code in BG_RC. Fails on timeout.
waitBg() {
  local pid=$1 end=$((SECONDS + $2))
  while alive "$pid" && ((SECONDS < end)); do sleep 0.2; done
  alive "$pid" && fail "$3 still running after $2 s"
  BG_RC=0
  wait "$pid" || BG_RC=$?
}

# srunDone PID NAME WHAT: the background srun PID (WHAT, "srun ARGS") ended
# within 5 s with exit 0 and its tasks' output $J/NAME.out names the job:
# in $job.
srunDone() {
  waitBg "$1" 5 "$3"
  ((BG_RC == 0)) || fail "$3 failed ($BG_RC): $(cat "$J/$2.err")"
  job=$(jobOf "$J/$2.out") || true
  [[ -n $job ]] || fail "no job id in the tasks' output: $(cat "$J/$2.out")"
}

# Slurm clients run on h1 (the root namespace has no route to the fabric).
client() { "$CL/client" "$@"; }

# The job id of the job named $1 (waits up to 20 s for it to appear).
jobNamed() {
  local end=$((SECONDS + 20)) id
  while ((SECONDS < end)); do
    id=$(client squeue -h -n "$1" -o %i 2>/dev/null | sed -n 1p)
    [[ -n $id ]] && { echo "$id"; return 0; }
    sleep 0.5
  done
  fail "job $1 never showed up in squeue"
}

# Waits up to 20 s until job $1 has $2 task processes (named sleep) running.
waitTasks() {
  local end=$((SECONDS + 20)) procs
  while ((SECONDS < end)); do
    procs=$(stepProcs "SLURM_JOB_ID=$1")
    [[ $(grep -o ':sleep@h[0-9]*' <<<"$procs" | sort -u | wc -l) == "$2" ]] && return 0
    sleep 0.5
  done
  fail "job $1 does not run $2 tasks on $2 hosts: $procs"
}

nowMs() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }

md5of() { printf %s "$1" | md5sum | cut -c1-8; }

# ------------------------------------------------------------------ cases

# srun -N 3 require: exactly one lease (4 slots) at the agent while the job
# runs, the same token on all 3 nodes, each task on its own host.
case_srun_3_nodes() {
  case=srun_3_nodes
  startBg "$J/c1.out" "$J/c1.err" client srun -N 3 -n 3 --switch-agg=require --switch-agg-slots=4 \
    -J sa-c1 env PROBE_HOLD=3 "$PROBE"
  local pid=$BG end=$((SECONDS + 60)) n max=0 seen="" tokens="" job line tok
  # Watch the agent from outside while the job runs.
  while alive "$pid" && ((SECONDS < end)); do
    line=$("$CTL" leases --json | "$PY" -c 'import json,sys; print(" ".join(str(l["job"]) for l in json.load(sys.stdin).get("leases", [])))') ||
      fail "cannot list the agent's leases"
    n=$(wc -w <<<"$line")
    ((n > max)) && max=$n
    for job in $line; do
      [[ " $seen " == *" $job "* ]] || seen+=" $job"
      tok=$("$CTL" lease token --job "$job" 2>/dev/null | grep -o 'SWITCHAGG_LEASE=[0-9a-f]*' | cut -d= -f2) || true
      [[ -n $tok ]] && tokens+=" $(md5of "$tok")"
    done
    sleep 0.2
  done
  srunDone "$pid" c1 "srun -N 3"
  [[ $(wc -l <"$J/c1.out") == 3 ]] || fail "want 3 task lines: $(cat "$J/c1.out")"
  [[ $(grep -o 'host=h[0-9]*' "$J/c1.out" | sort | tr '\n' ' ') == "host=h1 host=h2 host=h3 " ]] ||
    fail "tasks are not on h1, h2, h3: $(cat "$J/c1.out")"
  while read -r line; do
    [[ $line =~ host=(h[0-9]+)\ node=(h[0-9]+) && ${BASH_REMATCH[1]} == "${BASH_REMATCH[2]}" ]] ||
      fail "task's hostname is not its node's name: $line"
  done <"$J/c1.out"
  [[ $(grep -c "mode=require lease_len=32 " "$J/c1.out") == 3 ]] || fail "a task lacks the lease: $(cat "$J/c1.out")"
  [[ $(grep -o 'lease_sum=[0-9a-f]*' "$J/c1.out" | sort -u | wc -l) == 1 ]] ||
    fail "the nodes got different tokens: $(grep -o 'host=h[0-9]*\|lease_sum=[0-9a-f]*' "$J/c1.out" | tr '\n' ' ')"
  [[ $(grep -c "agent=$AGENT_DATA " "$J/c1.out") == 3 ]] ||
    fail "SWITCHAGG_AGENT is not the agent's data address $AGENT_DATA: $(cat "$J/c1.out")"
  [[ $(grep -c "during=job:$job uid:0 slots:4 leases_total=1" "$J/c1.out") == 3 ]] ||
    fail "a task did not see exactly one 4-slot lease of job $job: $(cat "$J/c1.out")"
  [[ $max == 1 && $seen == " $job" ]] ||
    fail "the agent held $max lease(s) at once (jobs:$seen) during job $job; want exactly job $job's"
  local sum
  sum=$(grep -o 'lease_sum=[0-9a-f]*' "$J/c1.out" | sed -n 1p | cut -d= -f2)
  [[ -n $tokens && $(tr ' ' '\n' <<<"$tokens" | sort -u | grep . | tr -d '\n') == "$sum" ]] ||
    fail "the tasks' token is not the lease the agent holds for job $job"
  [[ ! -s $J/c1.err ]] || fail "unexpected stderr: $(cat "$J/c1.err")"
  waitNoLease "$job" 20
  [[ $("$CTL" leases --json | "$PY" -c 'import json,sys; print(len(json.load(sys.stdin).get("leases", [])))') == 0 ]] ||
    fail "leases remain after job $job: $("$CTL" leases)"
  echo "PASS srun_3_nodes (job $job: 1 lease of 4 slots at the agent during the job, same token on h1 h2 h3, none after)"
}

# --switch-agg=off on 3 nodes: no lease ever, no token in the tasks.
case_srun_off() {
  case=srun_off
  local created_before
  created_before=$(grep -c 'lease created' "$AG/agent.log" || true)
  startBg "$J/c2.out" "$J/c2.err" client srun -N 3 -n 3 --switch-agg=off -J sa-c2 env PROBE_HOLD=0 "$PROBE"
  local pid=$BG max=0 n end=$((SECONDS + 60))
  while alive "$pid" && ((SECONDS < end)); do
    n=$("$CTL" leases --json | "$PY" -c 'import json,sys; print(len(json.load(sys.stdin).get("leases", [])))') ||
      fail "cannot list the agent's leases"
    ((n > max)) && max=$n
    sleep 0.2
  done
  local job
  srunDone "$pid" c2 "srun --switch-agg=off"
  [[ $(grep -o 'host=h[0-9]*' "$J/c2.out" | sort | tr '\n' ' ') == "host=h1 host=h2 host=h3 " ]] ||
    fail "tasks are not on h1, h2, h3: $(cat "$J/c2.out")"
  [[ $(grep -c ' lease_len=0 ' "$J/c2.out") == 3 ]] || fail "a task sees SWITCHAGG_LEASE: $(cat "$J/c2.out")"
  [[ $(grep -c 'during=none leases_total=0' "$J/c2.out") == 3 ]] ||
    fail "a task saw a lease at the agent: $(cat "$J/c2.out")"
  ((max == 0)) || fail "the agent held a lease during the off job $job"
  [[ $(grep -c 'lease created' "$AG/agent.log" || true) == "$created_before" ]] ||
    fail "the agent created a lease: $(grep 'lease created' "$AG/agent.log" | tail -1)"
  ! grep -q "switchagg: job $job: lease" "$CL"/log/d-h*.log || fail "a prolog leased for the off job: $(grep -h "switchagg: job $job:" "$CL"/log/d-h*.log)"
  echo "PASS srun_off (job $job: no lease created, no SWITCHAGG_LEASE on h1 h2 h3, tasks see $(grep -o 'mode=[a-z]*' "$J/c2.out" | sort -u | tr '\n' ' ' | sed 's/ $//'))"
}

# scancel of job $1 (srun pid $2, named $3 in errors): within 20 s no lease
# and no step process (slurmstepd or task) on any host; srun ends within
# 15 s; the job CANCELLED. TOOK: ms from scancel to all gone; STATE.
cancelJob() {
  local job=$1 pid=$2 end t0 procs=""
  client scancel "$job" || fail "scancel $job failed"
  t0=$(nowMs)
  end=$((SECONDS + 20))
  while ((SECONDS < end)); do
    procs=$(stepProcs "SLURM_JOB_ID=$job" "$job")
    [[ -z $(leaseOf "$job") && -z $procs ]] && break
    sleep 0.5
  done
  [[ -z $(leaseOf "$job") ]] || fail "job $job's lease is still at the agent 20 s after scancel: $(leaseOf "$job")"
  [[ -z $procs ]] || fail "job $job's step processes still run 20 s after scancel: $procs"
  TOOK=$(($(nowMs) - t0))
  waitBg "$pid" 15 "$3"
  STATE=$(client scontrol show job "$job" | grep -o 'JobState=[A-Z_]*')
  [[ $STATE == JobState=CANCELLED ]] || fail "job $job is $STATE after scancel"
}

# scancel of a running 3-node require job: within 20 s no lease and no step
# process (slurmstepd or task) on any host.
case_scancel() {
  case=scancel
  startBg "$J/c3.out" "$J/c3.err" client srun -N 3 -n 3 --switch-agg=require -J sa-c3 sleep 60
  local pid=$BG job
  job=$(jobNamed sa-c3)
  waitLease "$job" 20
  waitTasks "$job" 3
  cancelJob "$job" "$pid" "srun of the cancelled job"
  echo "PASS scancel (job $job: lease and every step process on h1 h2 h3 gone ${TOOK} ms after scancel returned, $STATE, srun exit $BG_RC: $(grep -c . "$J/c3.err") stderr lines)"
}

# slurmd of h3 SIGKILLed while a 3-node require job runs.
case_slurmd_killed() {
  case=slurmd_killed
  startBg "$J/c4.out" "$J/c4.err" client srun -N 3 -n 3 --switch-agg=require -J sa-c4 sleep 60
  local pid=$BG job t0 down="" ended="" gone="" how="ended by Slurm" end node state
  job=$(jobNamed sa-c4)
  waitLease "$job" 20
  waitTasks "$job" 3
  local slurmd
  slurmd=$(cat "$CL/slurmd-h3.pid")
  kill -KILL "$slurmd"
  t0=$SECONDS
  end=$((SECONDS + 45))
  while ((SECONDS < end)) && [[ -z $down || -z $gone || -z $ended ]]; do
    if [[ -z $down ]]; then
      node=$(client sinfo -h -n h3 -o %t 2>/dev/null) || true
      [[ $node == down* ]] && down=$((SECONDS - t0))
    fi
    if [[ -z $ended ]]; then
      state=$(client scontrol show job "$job" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2) || true
      [[ -n $state && ! $state =~ ^(RUNNING|PENDING|CONFIGURING|SUSPENDED)$ ]] && ended=$((SECONDS - t0))
      # Slurm kept it running after the node went down: cancel it ourselves.
      if [[ -n $down && -z $ended && $how == "ended by Slurm" ]] && ((SECONDS - t0 > down + 10)); then
        client scancel "$job"
        how="cancelled by the test after h3 was down"
      fi
    fi
    [[ -z $gone && -z $(leaseOf "$job") ]] && gone=$((SECONDS - t0))
    sleep 1
  done
  [[ -n $down ]] || fail "h3 never marked down within 45 s of its slurmd's death: $(client sinfo -N 2>&1 | tr '\n' ' ')"
  [[ -n $ended ]] || fail "job $job still ${state:-?} 45 s after h3's slurmd died"
  [[ -n $gone ]] || fail "job $job's lease still at the agent 45 s after h3's slurmd died: $(leaseOf "$job")"
  waitBg "$pid" 15 "srun of the job on the dead node"
  state=$(client scontrol show job "$job" | grep -o 'JobState=[A-Z_]*\|Reason=[^ ]*' | tr '\n' ' ')
  # Who released the lease: the epilog of a surviving node (its slurmd log
  # says "lease deleted", the agent says deleted by a control call). The
  # lease's TTL (policy.default_ttl=1h) cannot expire within the 45 s above,
  # and the dead node runs no epilog.
  local by
  by=$(grep -l "switchagg: job $job: lease deleted" "$CL"/log/d-h*.log 2>/dev/null | sed 's|.*/d-\(h[0-9]*\)\.log|\1|' | tr '\n' ' ') || true
  local agent_says
  agent_says=$(grep -o "lease deleted: job $job (by uid [0-9]*)" "$AG/agent.log" | sed -n 1p) || true
  [[ -n $by && -n $agent_says ]] ||
    fail "job $job's lease went, but no epilog deleted it (slurmd logs: '${by}', agent: '$agent_says'): $(grep "job $job" "$AG/agent.log")"
  [[ " $by" != *" h3 "* ]] || fail "job $job's lease was deleted by an epilog on the dead node h3 (nodes: $by)"
  by="the epilog on ${by% } (agent: \"$agent_says\")"
  local orphans
  orphans=$(stepProcs "SLURM_JOB_ID=$job" "$job")
  echo "PASS slurmd_killed (job $job: h3 down ${down} s after its slurmd was killed, job ${how} at ${ended} s: ${state% };" \
    "lease released at ${gone} s by ${by}; srun exit $BG_RC; left on the dead node until teardown: ${orphans:-nothing})"
}

# A 3-node require job across two racks (tree mode): one lease for the job
# at leaf1, at leaf2 and at the spine while it runs (all or nothing), the
# tasks get the three agents' addresses in map order with their names and
# the map, and nothing is left at any agent after the job.
case_srun_tree() {
  case=srun_tree
  startBg "$J/t1.out" "$J/t1.err" client srun -N 3 -n 3 --switch-agg=require --switch-agg-slots=4 \
    -J sa-tree env PROBE_HOLD=3 "$PROBE"
  local pid=$BG job="" end=$((SECONDS + 60)) a held="" all
  while alive "$pid" && ((SECONDS < end)); do
    [[ -n $job ]] || job=$(client squeue -h -n sa-tree -o %i 2>/dev/null | sed -n 1p)
    if [[ -n $job ]]; then
      all=""
      for a in "$AG/l1/agent.sock" "$AG/l2/agent.sock" "$AGENT_SOCKET"; do
        "$CTL" --agent "unix:$a" leases --json 2>/dev/null | "$PY" -c 'import json,sys
sys.exit(0 if any(str(l["job"]) == sys.argv[1] for l in json.load(sys.stdin).get("leases", [])) else 1)' "$job" &&
          all+=x
      done
      [[ $all == xxx ]] && held=yes
    fi
    sleep 0.2
  done
  srunDone "$pid" t1 "srun -N 3 across two racks"
  [[ $held == yes ]] || fail "job $job's lease was never at leaf1, leaf2 and the spine at once"
  [[ $(grep -c "names=leaf1,leaf2,spine fabric=$W/tree.toml " "$J/t1.out") == 3 ]] ||
    fail "the tasks lack SWITCHAGG_AGENT_NAMES=leaf1,leaf2,spine and the map: $(cat "$J/t1.out")"
  [[ $(grep -c "agent=$L1_DATA,$L2_DATA,$AGENT_DATA " "$J/t1.out") == 3 ]] ||
    fail "SWITCHAGG_AGENT is not leaf1, leaf2, spine: $(cat "$J/t1.out")"
  [[ $(grep -o 'lease_sum=[0-9a-f]*' "$J/t1.out" | sort -u | wc -l) == 1 ]] ||
    fail "the nodes got different tokens: $(cat "$J/t1.out")"
  end=$((SECONDS + 20))
  while ((SECONDS < end)); do
    all=0
    for a in "$AG/l1/agent.sock" "$AG/l2/agent.sock" "$AGENT_SOCKET"; do
      all=$((all + $("$CTL" --agent "unix:$a" leases --json | "$PY" -c 'import json,sys; print(len(json.load(sys.stdin).get("leases", [])))')))
    done
    ((all == 0)) && break
    sleep 0.5
  done
  ((all == 0)) || fail "$all lease(s) left at the tree's agents after job $job"
  echo "PASS srun_tree (job $job on h1 h2 h3 across 2 racks: one lease at leaf1, leaf2 and the spine during the job, none after)"
}

# A numeric counter ($2) of the agent on control socket $1 (GET /v1/status).
counterAt() {
  "$CTL" --agent "unix:$1" status --json |
    "$PY" -c 'import json, sys; print(json.load(sys.stdin)["counters"][sys.argv[1]])' "$2" ||
    fail "cannot read counter $2 of the agent at $1"
}

# Leases held at the agents on control sockets $@, summed.
leaseCount() {
  local a n=0
  for a in "$@"; do
    n=$((n + $("$CTL" --agent "unix:$a" leases --json |
      "$PY" -c 'import json,sys; print(len(json.load(sys.stdin).get("leases", [])))'))) ||
      fail "cannot list the leases of the agent at $a"
  done
  echo "$n"
}

# Waits up to $1 s until no agent on control sockets $2... holds a lease.
waitNoLeaseAt() {
  local end=$((SECONDS + $1)) n
  shift
  while ((SECONDS < end)); do
    n=$(leaseCount "$@")
    ((n == 0)) && return 0
    sleep 0.5
  done
  fail "$n lease(s) still at the agents ($*) $1 s after the job: $(for a in "$@"; do "$CTL" --agent "unix:$a" leases; done)"
}

# Open MPI in the srun'd tasks, as fabric_mpirun (scripts/lib_fabric.sh)
# sets it up for mpirun: the component from the build tree (the path
# replaces Open MPI's own list, so that stays in it), offload on, TCP on the
# fabric's subnet only (every host has the same boot id, which UCX would
# take for "same node"), the component's UCX waits blocking (2 shared cores).
PKGLIB=$(ompi_info --path pkglibdir --parsable | sed 's/^path:pkglibdir://')
[[ -d $PKGLIB ]] || { echo "FAIL setup: no Open MPI component directory (ompi_info: '$PKGLIB')" >&2; exit 1; }
MPI_ENV=(env "OMPI_MCA_mca_base_component_path=$build/lib/openmpi:$PKGLIB"
  OMPI_MCA_coll_switchagg_offload=on OMPI_MCA_coll_switchagg_verbose=1
  "OMPI_MCA_btl=self,vader,tcp" OMPI_MCA_btl_tcp_if_include=10.79.0.0/16
  OMPI_MCA_mpi_yield_when_idle=1 "UCX_TLS=self,tcp" SWITCHAGG_UCX_WAIT=blocking)

# Starts (startBg) an MPI job named $1 on h1..h3, one task each, through
# Slurm's PMIx (srun --mpi=pmix) with --switch-agg=require: PROGRAM ARGS...
# ($4...), output in $2/$3. Each task first prints "task job=J host=H
# rank=R mode=M" (SWITCHAGG_MODE, which the plugin sets).
mpiSrun() {
  local name=$1 out=$2 err=$3
  shift 3
  # shellcheck disable=SC2016  # expanded by the task's shell
  startBg "$out" "$err" client srun -N 3 -n 3 --mpi=pmix --switch-agg=require --switch-agg-slots=4 \
    -J "$name" "${MPI_ENV[@]}" bash -c \
    'echo "task job=$SLURM_JOB_ID host=$(hostname) rank=$SLURM_PROCID mode=${SWITCHAGG_MODE:-unset}"; exec "$0" "$@"' \
    "$@"
}

# What every finished MPI case asserts of its output ($1 stdout, $2
# stderr; job id in MPI_JOB): one task on each of h1 h2 h3 with the lease's
# mode, the checker's PASS for 3 ranks and --expect switch (it fails, and
# says which, if a result is not exact or a call was not served by the
# switch path: the component's per-call diagnostics and its switch
# counter), and the component saw 3 nodes.
checkMpiOutput() {
  local out=$1 err=$2 what=$3
  MPI_JOB=$(jobOf "$out") || true
  [[ -n $MPI_JOB ]] || fail "no job id in the MPI job's output ($out): $(head -5 "$out")"
  [[ $(grep -o '^task job=[0-9]* host=h[0-9]*' "$out" | sed 's/.*host=//' | sort | tr '\n' ' ') == "h1 h2 h3 " ]] ||
    fail "the MPI tasks are not one on each of h1 h2 h3: $(grep '^task ' "$out")"
  [[ $(grep -c '^task .* mode=require$' "$out") == 3 ]] ||
    fail "a task lacks SWITCHAGG_MODE=require from the plugin: $(grep '^task ' "$out")"
  grep -q "^PASS np=3 expect=switch: [0-9]* cases checked on [0-9]* ranks, 0 failures" "$out" ||
    fail "$what did not pass (every result exact and on the switch path): $(grep -h 'FAIL\|error' "$out" "$err" | sed -n 1,10p)"
  grep -q '3 ranks on 3 nodes (max 1 per node)' "$out" "$err" ||
    fail "the component did not see 3 nodes: $(grep -h 'ranks on' "$out" "$err" | sed -n 1,3p)"
}

# The MPI job $1 (output in $2/$3) running mpi_allreduce_check --expect
# switch ARGS ($5...), $4 saying where: it must end within 180 s, exit 0
# and pass checkMpiOutput. MPI_JOB: its job id.
runMpiCheck() {
  local name=$1 out=$2 err=$3 where=$4
  shift 4
  mpiSrun "$name" "$out" "$err" "$CHECK" --expect switch "$@"
  waitBg "$BG" 180 "the MPI job $where (srun --mpi=pmix -N 3 mpi_allreduce_check; logs: $out, $err)"
  ((BG_RC == 0)) || fail "the MPI job $where failed (srun exit $BG_RC): $(tail -20 "$err")"
  checkMpiOutput "$out" "$err" "mpi_allreduce_check --expect switch $where"
}

# A real MPI job across 3 nodes: every result exact, the switch path served
# every call (the checker's assertion) and the agent reduced for it (its
# counters moved), the lease gone after the job.
case_mpi_3_nodes() {
  case=mpi_3_nodes
  local out=$J/mpi-3-nodes.out err=$J/mpi-3-nodes.err g0 b0 g1 b1
  g0=$(counterAt "$AGENT_SOCKET" groups_created)
  b0=$(counterAt "$AGENT_SOCKET" bytes_reduced)
  runMpiCheck sa-mpi "$out" "$err" "across h1 h2 h3" --quick
  grep -q "joined switch group .* at ${AGENT_DATA%:*}" "$out" "$err" ||
    fail "the ranks did not join the agent at its fabric address $AGENT_DATA: $(grep -h 'switch' "$err" | sed -n 1,5p)"
  g1=$(counterAt "$AGENT_SOCKET" groups_created)
  b1=$(counterAt "$AGENT_SOCKET" bytes_reduced)
  ((g1 > g0)) || fail "the agent created no aggregation group for job $MPI_JOB: offload did not happen"
  ((b1 > b0)) || fail "the agent reduced nothing for job $MPI_JOB: offload did not happen"
  waitNoLeaseAt 20 "$AGENT_SOCKET"
  echo "PASS mpi_3_nodes (job $MPI_JOB: srun --mpi=pmix on h1 h2 h3, $(grep -o '[0-9]* cases checked' "$out") exact" \
    "on the switch path, the agent reduced $((b1 - b0)) bytes in $((g1 - g0)) group(s), no lease after)"
}

# The MPI job cancelled while the switch path serves it: within 20 s of
# scancel no lease and no step process (slurmstepd, task) on any host.
case_mpi_scancel() {
  case=mpi_scancel
  local out=$J/mpi-scancel.out err=$J/mpi-scancel.err ready=$J/mpi-scancel.ready pid job end b0 procs
  rm -f "$ready"
  # 10^6 iterations: minutes; the job is cancelled long before it ends.
  mpiSrun sa-mpicancel "$out" "$err" "$ONESHOT" --iters 1000000 --ready "$ready"
  pid=$BG
  job=$(jobNamed sa-mpicancel)
  waitLease "$job" 30
  # Rank 0 writes $ready once the communicator joined the switch group.
  end=$((SECONDS + 90))
  while [[ ! -e $ready ]] && alive "$pid" && ((SECONDS < end)); do sleep 0.2; done
  [[ -e $ready ]] || fail "job $job's MPI ranks did not join the switch group within 90 s (no $ready): $(tail -5 "$err")"
  b0=$(counterAt "$AGENT_SOCKET" bytes_reduced)
  end=$((SECONDS + 20))
  while (($(counterAt "$AGENT_SOCKET" bytes_reduced) == b0)) && ((SECONDS < end)); do sleep 0.2; done
  (($(counterAt "$AGENT_SOCKET" bytes_reduced) > b0)) ||
    fail "the agent reduced nothing for running job $job within 20 s"
  procs=$(stepProcs "SLURM_JOB_ID=$job")
  [[ $(grep -o ':mpi_oneshot_ch[a-z]*@h[0-9]*' <<<"$procs" | sort -u | wc -l) == 3 ]] ||
    fail "job $job does not run its 3 MPI tasks on h1 h2 h3: $procs"
  alive "$pid" || fail "job $job's srun ended before the scancel: $(tail -5 "$err")"
  cancelJob "$job" "$pid" "srun of the cancelled MPI job $job"
  ! grep -q '^PASS' "$out" || fail "job $job's MPI program finished before the scancel: the case did not cancel it mid-run"
  waitNoLeaseAt 20 "$AGENT_SOCKET"
  echo "PASS mpi_scancel (job $job: cancelled while the agent reduced for it; lease and every MPI task on h1 h2 h3" \
    "gone ${TOOK} ms after scancel returned, $STATE, srun exit $BG_RC)"
}

# The MPI job across both racks of the tree: exact, every call on the
# switch path through the tree (the component says so, both leaves sent
# bytes up to the spine, the spine reduced), no lease at any agent after.
case_mpi_tree() {
  case=mpi_tree
  local out=$J/mpi-tree.out err=$J/mpi-tree.err s0 s1 u10 u11 u20 u21
  local socks=("$AG/l1/agent.sock" "$AG/l2/agent.sock" "$AGENT_SOCKET")
  s0=$(counterAt "$AGENT_SOCKET" bytes_reduced)
  u10=$(counterAt "$AG/l1/agent.sock" bytes_up)
  u20=$(counterAt "$AG/l2/agent.sock" bytes_up)
  runMpiCheck sa-mpitree "$out" "$err" "across two racks" --quick --counts 2,1001
  grep -q "a tree over 2 leaf agents" "$out" "$err" ||
    fail "the calls did not use the tree of leaf1, leaf2 and the spine: $(grep -h 'switch\|tree' "$err" | sed -n 1,5p)"
  s1=$(counterAt "$AGENT_SOCKET" bytes_reduced)
  u11=$(counterAt "$AG/l1/agent.sock" bytes_up)
  u21=$(counterAt "$AG/l2/agent.sock" bytes_up)
  ((u11 > u10)) || fail "leaf1 (h1, h2) sent nothing up to the spine for job $MPI_JOB"
  ((u21 > u20)) || fail "leaf2 (h3) sent nothing up to the spine for job $MPI_JOB"
  ((s1 > s0)) || fail "the spine reduced nothing for job $MPI_JOB"
  waitNoLeaseAt 20 "${socks[@]}"
  echo "PASS mpi_tree (job $MPI_JOB: srun --mpi=pmix on h1 h2 | h3, $(grep -o '[0-9]* cases checked' "$out") exact" \
    "through the tree: leaf1 sent $((u11 - u10)) bytes up, leaf2 $((u21 - u20)), the spine reduced $((s1 - s0));" \
    "no lease at leaf1, leaf2 or the spine after)"
}

# ------------------------------------------------------------------ main

# Another live run of this test (another checkout) owns $W and the fabric
# until it ends: wait for it rather than tear down what it runs (so before
# the teardown trap).
if ! fabric_lock "$FABRIC"; then
  echo "FAIL setup: fabric $FABRIC stayed in use by another run" >&2
  exit 1
fi
trap teardown EXIT
trap 'say "interrupted"; exit 130' INT
trap 'say "terminated"; exit 143' TERM

# What a dead run left (its daemons, its fabric), then a fresh work dir.
mkdir -p "$W"
tearDownAll
rm -rf "$J" "$AG"
mkdir -p "$J" "$AG"
chmod 0755 "$W" "$J" "$AG"

fabric_up "$FABRIC" --topo star --hosts 3 --rate 400 --subnet 10.79 || fail "fabric $FABRIC did not come up"
"$PY" -c 'import json, os, sys
print(" ".join(os.readlink("/proc/%d/ns/net" % h["pid"]) for h in json.load(open(sys.argv[1]))["hosts"]))' \
  "$FABRIC_DIR/state.json" >"$W/netns" || fail "cannot read the fabric hosts' namespaces"
# The agents' policy as in tests/slurm: 16 slots, 8 per job, only root
# (the plugin's prolog) creates leases.
policy=(--set pool.slots=16 --set policy.max_slots_per_job=8 --set policy.max_slots_per_user=16
  --set policy.default_slots=2 --set policy.default_ttl=1h --set policy.max_ttl=2h
  --set policy.allowed_users= --set data.threads=1)
fabric_agent_start "$AG" "${policy[@]}" || fail "agent did not start"
echo "$AGENT_PID" >"$AG/agent.pid"
[[ $AGENT_DATA == 10.79.1.1:* ]] || fail "agent's data plane is on $AGENT_DATA, not the agent host's fabric address"
spank_args="max_slots=8 timeout=2s"
if [[ $mode == tree ]]; then
  # Two leaf agents (same host, own sockets and ports) under the cluster's
  # agent as the spine.
  printf '[[agent]]\nname = "leaf1"\ncontrol = "unix:%s/l1/agent.sock"\nnodes = "h[1-2]"\nparent = "spine"\n\n' "$AG" >"$W/tree.toml"
  printf '[[agent]]\nname = "leaf2"\ncontrol = "unix:%s/l2/agent.sock"\nnodes = "h3"\nparent = "spine"\n\n' "$AG" >>"$W/tree.toml"
  printf '[[agent]]\nname = "spine"\ncontrol = "unix:%s"\ndata = "%s"\n' "$AGENT_SOCKET" "$AGENT_DATA" >>"$W/tree.toml"
  spine_pid=$AGENT_PID spine_socket=$AGENT_SOCKET spine_data=$AGENT_DATA
  for r in 1 2; do
    mkdir -p "$AG/l$r"
    fabric_agent_start "$AG/l$r" "${policy[@]}" --set fabric.map="$W/tree.toml" \
      --set fabric.name="leaf$r" || fail "leaf $r did not start"
    echo "$AGENT_PID" >"$AG/leaf$r.pid"
    declare "L${r}_DATA=$AGENT_DATA"
  done
  AGENT_PID=$spine_pid AGENT_SOCKET=$spine_socket AGENT_DATA=$spine_data
  spank_args+=" fabric=$W/tree.toml"
fi
"$here/slurm_fabric.sh" start "$CL" "$FABRIC" --spank "$SPANK" --spank-args "$spank_args" \
  --agent-socket "$AGENT_SOCKET" || fail "the Slurm cluster did not come up"
# shellcheck disable=SC1091
source "$CL/env.sh"
export SWITCHAGG_CONTROL

# The task probe: where it runs, what the plugin handed over (a hash of the
# token, never the token), and the agent's leases as this task sees them.
PROBE=$J/probe.sh
cat >"$PROBE" <<EOF
#!/bin/bash
lease=\${SWITCHAGG_LEASE:-}
sleep 1   # every node's prolog has run by now
leases=\$("$CTL" leases --json 2>/dev/null | "$PY" -c '
import json, sys
try:
    ls = json.load(sys.stdin).get("leases", [])
except ValueError:
    print("during=unreachable"); sys.exit(0)
mine = [l for l in ls if str(l.get("job")) == sys.argv[1]]
print("during=" + ("job:%s uid:%s slots:%s" % (mine[0]["job"], mine[0]["uid"], mine[0]["slots"]) if mine else "none")
      + " leases_total=%d" % len(ls))' "\${SLURM_JOB_ID:-}")
echo "host=\$(hostname) node=\${SLURMD_NODENAME:-?} task=\${SLURM_PROCID:-?} job=\${SLURM_JOB_ID:-?}" \\
  "mode=\${SWITCHAGG_MODE:-unset} lease_len=\${#lease} lease_sum=\$(printf %s "\$lease" | md5sum | cut -c1-8)" \\
  "agent=\${SWITCHAGG_AGENT:-unset} names=\${SWITCHAGG_AGENT_NAMES:-unset} fabric=\${SWITCHAGG_FABRIC:-unset} \$leases"
sleep "\${PROBE_HOLD:-0}"
EOF
chmod 0755 "$PROBE"
say "fabric, agent ($AGENT_DATA) and 3-node Slurm up in $((SECONDS - T0)) s"
# The MPI cases launch through Slurm's PMIx plugin: it must be there.
case=setup
mpis=$(client srun --mpi=list 2>&1) || fail "srun --mpi=list failed: $mpis"
grep -qw pmix <<<"$mpis" || fail "Slurm has no pmix MPI plugin (srun --mpi=list: $(tr '\n' ' ' <<<"$mpis"))"
say "$(tr '\n' ' ' <<<"$mpis")"

if [[ $mode == tree ]]; then
  case_srun_tree
  case_mpi_tree
else
  case_srun_3_nodes
  case_srun_off
  case_scancel
  case_mpi_3_nodes
  case_mpi_scancel
  case_slurmd_killed
fi
