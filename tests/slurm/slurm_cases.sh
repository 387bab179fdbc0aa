#!/usr/bin/env bash
# slurm_cases.sh CASE: one real-Slurm test of switchagg_spank.so against the
# cluster + agent that slurm_cluster.sh started in $SWITCHAGG_TEST_CLUSTER.
# Needs SWITCHAGG_CTL (switchagg-ctl) and SWITCHAGG_SPANK (the plugin).
# Prints "PASS CASE" and exits 0, or says what failed and exits 1.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
case=${1:?usage: $0 CASE}
DIR=${SWITCHAGG_TEST_CLUSTER:?start the cluster with slurm_cluster.sh first}
CTL=${SWITCHAGG_CTL:?path to switchagg-ctl}
# shellcheck disable=SC1091
source "$DIR/env.sh"
# shellcheck source=slurm_lib.sh
source "$here/slurm_lib.sh"

# srun --switch-agg=require: every task gets SWITCHAGG_*, the lease is at the
# agent (with the asked slots) while the job runs and gone after it.
case_require_srun() {
  srun --switch-agg=require --switch-agg-slots=3 -n 2 "$PROBE" >"$W/out" 2>"$W/err" ||
    fail "require job failed: $(cat "$W/err")"
  local job
  job=$(jobOf "$W/out")
  [[ $(grep -c 'mode=require' "$W/out") == 2 ]] || fail "tasks lack SWITCHAGG_MODE=require: $(cat "$W/out")"
  [[ $(grep -c 'lease_len=32 ' "$W/out") == 2 ]] || fail "tasks lack a 32-char token: $(cat "$W/out")"
  [[ $(grep -o 'lease_sum=[0-9a-f]*' "$W/out" | sort -u | wc -l) == 1 ]] || fail "tasks got different tokens"
  grep -qE "agent=$(dataAddresses) " "$W/out" || fail "SWITCHAGG_AGENT is not the agent's data address"
  grep -q "during=job:$job uid:0 slots:3" "$W/out" || fail "no 3-slot lease of job $job during the job: $(cat "$W/out")"
  [[ ! -s $W/err ]] || fail "unexpected stderr: $(cat "$W/err")"
  waitNoLease "$job"
}

# sbatch with SWITCHAGG_JOB_MODE/SWITCHAGG_JOB_SLOTS: the batch script and
# the srun inside it both get the lease; one lease for the whole job.
case_sbatch_env() {
  cat >"$W/job.sh" <<EOF
#!/bin/bash
"$PROBE" batch
srun -n 2 "$PROBE"
srun -n 1 --switch-agg=off "$PROBE"
EOF
  local job
  job=$(SWITCHAGG_JOB_MODE=require SWITCHAGG_JOB_SLOTS=2 sbatch --parsable --wait -n 2 -o "$W/out" "$W/job.sh") ||
    fail "batch job failed: $(cat "$W/out")"
  [[ $(grep -c 'mode=require lease_len=32 ' "$W/out") == 3 ]] || fail "batch script + 2 tasks lack the lease: $(cat "$W/out")"
  [[ $(grep 'lease_len=32 ' "$W/out" | grep -o 'lease_sum=[0-9a-f]*' | sort -u | wc -l) == 1 ]] ||
    fail "steps got different tokens"
  grep -q "during=job:$job uid:0 slots:2" "$W/out" || fail "no 2-slot lease during the job: $(cat "$W/out")"
  [[ $(grep -o 'leases_total=[0-9]*' "$W/out" | sort -u) == leases_total=1 ]] || fail "more than one lease: $(cat "$W/out")"
  grep -q 'mode=off lease_len=0 ' "$W/out" || fail "srun --switch-agg=off still sees the lease: $(cat "$W/out")"
  waitNoLease "$job"
}

# salloc --switch-agg=require: the srun inside the allocation gets the lease.
case_salloc() {
  salloc --switch-agg=require -n 1 srun -n 1 "$PROBE" >"$W/out" 2>"$W/err" ||
    fail "salloc job failed: $(cat "$W/err")"
  grep -q 'mode=require lease_len=32 ' "$W/out" || fail "no lease in the salloc step: $(cat "$W/out")"
  waitNoLease "$(jobOf "$W/out")"
}

# auto with the agent down: the job runs, with exactly one warning line.
case_auto_agent_down() {
  agentDown
  srun --switch-agg=auto -n 2 "$PROBE" >"$W/out" 2>"$W/err" || fail "auto job failed: $(cat "$W/err")"
  [[ $(grep -c 'mode=auto lease_len=0 ' "$W/out") == 2 ]] || fail "tasks: $(cat "$W/out")"
  [[ $(grep -c '^switchagg: warning: job [0-9]* runs without switch aggregation' "$W/err") == 1 ]] ||
    fail "want one warning line, stderr: $(cat "$W/err")"
  grep -q 'unreachable' "$W/err" || fail "warning does not say why: $(cat "$W/err")"
}

# require with the agent down: srun and sbatch jobs fail before their tasks
# run, saying why; the node is not drained.
case_require_agent_down() {
  agentDown
  if srun --switch-agg=require -n 2 bash -c 'echo TASK-RAN' >"$W/out" 2>"$W/err"; then
    fail "require job succeeded without an agent"
  fi
  ! grep -q TASK-RAN "$W/out" || fail "a task ran"
  grep -q 'switchagg: job [0-9]* requires switch aggregation (--switch-agg=require) but has no lease: the switch agent is unreachable' "$W/err" ||
    fail "no reason on stderr: $(cat "$W/err")"
  if sbatch --parsable --wait --switch-agg=require -o "$W/bout" --wrap 'echo TASK-RAN' >/dev/null 2>&1; then
    fail "require batch job succeeded without an agent"
  fi
  ! grep -q TASK-RAN "$W/bout" || fail "the batch script ran"
  grep -q 'requires switch aggregation.*unreachable' "$W/bout" || fail "batch output lacks the reason: $(cat "$W/bout")"
  nodeUsable
}

# require with the quota exhausted (the pool's 16 slots held by others).
case_require_quota() {
  atExit '"$CTL" lease delete --job fill-a >/dev/null; "$CTL" lease delete --job fill-b >/dev/null'
  "$CTL" lease create --job fill-a --slots 8 --uid 4242 >/dev/null || fail "cannot fill the pool"
  "$CTL" lease create --job fill-b --slots 8 --uid 4243 >/dev/null || fail "cannot fill the pool"
  if srun --switch-agg=require -n 1 bash -c 'echo TASK-RAN' >"$W/out" 2>"$W/err"; then
    fail "require job succeeded with the pool full"
  fi
  ! grep -q TASK-RAN "$W/out" || fail "the task ran"
  grep -q 'has no lease: quota exceeded' "$W/err" || fail "reason is not the quota: $(cat "$W/err")"
  srun --switch-agg=auto -n 1 "$PROBE" >"$W/out" 2>"$W/err" || fail "auto job failed on quota"
  grep -q 'warning: .*quota exceeded' "$W/err" || fail "auto: no quota warning: $(cat "$W/err")"
}

# Two jobs at once hold two leases with different tokens.
case_concurrent() {
  cat >"$W/job.sh" <<EOF
#!/bin/bash
touch "$W/started.\$SLURM_JOB_ID"
end=\$((SECONDS + 60))
while ((SECONDS < end)) && [[ \$(ls "$W"/started.* | wc -l) -lt 2 ]]; do sleep 0.1; done
srun -n 1 "$PROBE"
EOF
  local a b
  a=$(sbatch --parsable --switch-agg=require -n 1 -o "$W/a" "$W/job.sh")
  b=$(sbatch --parsable --switch-agg=require -n 1 -o "$W/b" "$W/job.sh")
  waitJobsDone "$a" "$b"
  grep -q 'lease_len=32 ' "$W/a" && grep -q 'lease_len=32 ' "$W/b" || fail "a job lacks its lease: $(cat "$W/a" "$W/b")"
  [[ $(grep -ho 'lease_sum=[0-9a-f]*' "$W/a" "$W/b" | sort -u | wc -l) == 2 ]] || fail "the two jobs share a token"
  grep -q "during=job:$a uid:0" "$W/a" && grep -q "during=job:$b uid:0" "$W/b" || fail "leases not listed"
  grep -q 'leases_total=2' "$W/a" "$W/b" || fail "never saw both leases at once: $(cat "$W/a" "$W/b")"
  waitNoLease "$a"
  waitNoLease "$b"
}

# scancel while a job runs, and a job killed at its time limit: both
# epilogs delete the lease. The limit is reached by moving the job's
# EndTime to now; slurmctld enforces limits within 30 s.
case_scancel_and_time_limit() {
  local limited job
  limited=$(sbatch --parsable --switch-agg=require -o /dev/null --wrap 'sleep 300')
  atExit "scancel $limited"
  job=$(sbatch --parsable --switch-agg=require -o /dev/null --wrap 'sleep 120')
  atExit "scancel $job"
  waitLease "$limited"
  scontrol update JobId="$limited" EndTime="$(date +%Y-%m-%dT%H:%M:%S)" || fail "cannot move EndTime"
  waitLease "$job"
  scancel "$job"
  waitNoLease "$job"
  waitNoLease "$limited" 75
  [[ $(scontrol show job "$limited" | grep -o 'JobState=[A-Z]*') == JobState=TIMEOUT ]] ||
    fail "job $limited did not end by its time limit: $(scontrol show job "$limited" | grep JobState)"
}

# A task killed by a signal: the job fails, the lease still goes.
case_task_signal() {
  if srun --switch-agg=require -n 2 bash -c "\"$PROBE\"; kill -KILL \$\$" >"$W/out" 2>"$W/err"; then
    fail "job with killed tasks succeeded"
  fi
  local job
  job=$(jobOf "$W/out")
  grep -q 'lease_len=32 ' "$W/out" || fail "tasks had no lease: $(cat "$W/out")"
  waitNoLease "$job"
}

# Bad values fail at submission, naming the valid ones, and create no job.
case_invalid_options() {
  local before
  before=$(jobCount)
  expectRefused 'valid: off, auto, require' srun --switch-agg=bogus -n 1 true
  expectRefused 'valid: an integer from 1 to 8' srun --switch-agg-slots=-2 -n 1 true
  expectRefused 'valid: an integer from 1 to 8' srun --switch-agg=auto --switch-agg-slots=100000 -n 1 true
  expectRefused 'valid: off, auto, require' sbatch --switch-agg=bogus --wrap true
  expectRefused 'SWITCHAGG_JOB_MODE: invalid value' env SWITCHAGG_JOB_MODE=sometimes sbatch --wrap true
  expectRefused 'SWITCHAGG_JOB_SLOTS: invalid value' env SWITCHAGG_JOB_SLOTS=0 srun -n 1 true
  expectRefused 'valid: an integer from 1 to 64' srun --switch-agg-reducers=0 -n 1 true
  expectRefused 'SWITCHAGG_JOB_REDUCERS: invalid value' env SWITCHAGG_JOB_REDUCERS=x srun -n 1 true
  [[ $(jobCount) == "$before" ]] || fail "a refused submission created a job"
  srun --help | grep -A1 -- '--switch-agg=' | grep 'auto=if available; require=or fail' >/dev/null || fail "--help lacks --switch-agg"
  srun --help | grep -- '--switch-agg-slots=N  *switch slots to reserve, 1-8' >/dev/null || fail "--help lacks --switch-agg-slots"
  srun --help | grep -- '--switch-agg-reducers=K *reducer hosts' >/dev/null || fail "--help lacks --switch-agg-reducers"
}

# The agent down when a job ends. The agent keeps its leases in a lease
# file (they survive its restarts) and the plugin asks for ttl=20s. (a) The
# agent is back within the epilog's retry budget (3 x timeout=2s): the
# epilog logs that it retries, with the job id, and then deletes the lease
# itself ("lease deleted after N retries"; the restored lease is really
# deleted, not "already gone"). (b) The agent stays down past the budget:
# the epilog gives up with the job id in slurmd.log, the lease is still held
# when the agent returns, and it expires at the plugin's TTL (the agent logs
# the expiry), not before.
case_epilog_agent_down() {
  local ttl=20 job created gone_after
  GOOD_PLUGSTACK=$(cat "$DIR/plugstack.conf")
  GOOD_AGENT_TOML=$(cat "$DIR/agent.toml")
  atExit 'printf "%s\n" "$GOOD_AGENT_TOML" >"$DIR/agent.toml"; "$here/slurm_cluster.sh" agent-start "$DIR"'
  atExit 'printf "%s\n" "$GOOD_PLUGSTACK" >"$DIR/plugstack.conf"; "$here/slurm_cluster.sh" slurmd-restart "$DIR"'
  printf '\n[state]\nlease_file = "%s"\n' "$W/leases.json" >>"$DIR/agent.toml"
  "$here/slurm_cluster.sh" agent-start "$DIR" || fail "the agent did not start with a lease file"
  printf '%s ttl=%ds\n' "$GOOD_PLUGSTACK" "$ttl" >"$DIR/plugstack.conf"
  "$here/slurm_cluster.sh" slurmd-restart "$DIR" || fail "slurmd did not restart with ttl="

  # (a) back within the retry budget.
  job=$(sbatch --parsable --switch-agg=require -n 1 -o /dev/null \
    --wrap "while [ ! -e $W/end.a ]; do sleep 0.1; done")
  atExit "scancel $job 2>/dev/null; true"
  waitLease "$job"
  grep -q "switchagg: job $job: lease created for uid 0: [0-9]* slots, ttl ${ttl}s" "$DIR/log/slurmd.log" ||
    fail "the prolog did not create job $job's lease with the plugin's ttl: $(grep "job $job" "$DIR/log/slurmd.log")"
  "$here/slurm_cluster.sh" agent-stop "$DIR"
  touch "$W/end.a"
  untilLog "switchagg: job $job: cannot delete the lease yet (.*); retrying for up to [0-9]+ ms" 30 ||
    fail "the epilog of job $job did not retry with the agent down: $(grep "job $job" "$DIR/log/slurmd.log")"
  "$here/slurm_cluster.sh" agent-start "$DIR" || fail "the agent did not restart"
  untilLog "switchagg: job $job: lease deleted after [1-9][0-9]* retries" 30 ||
    fail "the epilog did not delete job $job's lease once the agent was back: $(grep "job $job" "$DIR/log/slurmd.log")"
  [[ -z $(leaseOf "$job") ]] || fail "job $job's lease is still at the agent: $(leaseOf "$job")"
  grep -q "lease deleted: job $job (by uid 0)" "$DIR/log/agent.log" || fail "the agent did not log the delete"
  echo "(a) job $job: $(grep -o "lease deleted after [0-9]* retries" "$DIR/log/slurmd.log" | tail -1) once the agent was back"

  # (b) down past the budget: the TTL ends it.
  job=$(sbatch --parsable --switch-agg=require -n 1 -o /dev/null \
    --wrap "while [ ! -e $W/end.b ]; do sleep 0.1; done")
  atExit "scancel $job 2>/dev/null; true"
  waitLease "$job"
  created=$SECONDS
  "$here/slurm_cluster.sh" agent-stop "$DIR"
  touch "$W/end.b"
  untilLog "switchagg: job $job: cannot delete the lease (.*) after [0-9]* retries; the agent's TTL will expire it" 40 ||
    fail "the epilog of job $job did not give up with the job id: $(grep "job $job" "$DIR/log/slurmd.log")"
  "$here/slurm_cluster.sh" agent-start "$DIR" || fail "the agent did not restart"
  [[ -n $(leaseOf "$job") ]] || fail "job $job's lease did not outlive its epilog (lost with the agent's restart?)"
  untilLease gone "$job" $((ttl + 10)) || fail "job $job's lease outlived its ${ttl}s TTL: $(leaseOf "$job")"
  gone_after=$((SECONDS - created))
  ((gone_after >= ttl - 1)) || fail "job $job's lease went after ${gone_after}s, before its ${ttl}s TTL"
  grep -q "lease of job $job (uid 0, [0-9]* slots) expired: ttl $ttl s" "$DIR/log/agent.log" ||
    fail "the agent did not log job $job's lease expiring: $(grep "job $job" "$DIR/log/agent.log")"
  ! grep -q "lease deleted: job $job " "$DIR/log/agent.log" || fail "job $job's lease was deleted, not expired"
  echo "(b) job $job: the epilog gave up; the lease expired ${gone_after}s after it was created (ttl ${ttl}s)"
}

# A job of another user: the lease belongs to that uid, the token reached its
# tasks (fetched as that user), another user cannot fetch it, and the token
# is in no log, no `scontrol show job`.
case_token_secrecy() {
  chmod 0777 "$W"
  local job token
  job=$(sbatch --parsable --wait --uid=nobody --gid=nogroup --switch-agg=require -o "$W/out" \
    --wrap "\"$PROBE\" batch; umask 077; printf %s \"\$SWITCHAGG_LEASE\" >\"$W/token\"; sleep 1") ||
    fail "nobody's job failed: $(cat "$W/out")"
  grep -q "during=job:$job uid:65534" "$W/out" || fail "lease not owned by nobody: $(cat "$W/out")"
  token=$(cat "$W/token")
  [[ $token =~ ^[0-9a-f]{32}$ ]] || fail "no token in nobody's job"
  [[ $(stat -c %U "$W/token") == nobody ]] || fail "token file not nobody's"
  local hits
  hits=$(grep -rl "$token" "$DIR/log" 2>/dev/null || true)
  [[ -z $hits ]] || fail "token found in logs: $hits"
  ! scontrol show job -d "$job" | grep "$token" >/dev/null || fail "token in scontrol show job"
  ! scontrol show job -d "$job" | grep -i 'SWITCHAGG_LEASE' >/dev/null || fail "lease variable in scontrol show job"
  # While a job holds a lease, another (non-admin) user cannot fetch its token.
  local held
  held=$(sbatch --parsable --uid=nobody --gid=nogroup --switch-agg=require -o /dev/null --wrap 'sleep 60')
  atExit "scancel $held"
  waitLease "$held"
  if setpriv --reuid=daemon --regid=daemon --clear-groups "$CTL" lease token --job "$held" >"$W/steal" 2>&1; then
    fail "user daemon fetched nobody's token"
  fi
  ! grep -Eq '[0-9a-f]{32}' "$W/steal" || fail "a token leaked to another user"
  scancel "$held"
  waitNoLease "$job"
  waitNoLease "$held"
}

# A broken plugstack line: slurmd keeps running and logs a clear error; srun
# says so; require is refused, auto runs with a warning.
case_broken_plugstack() {
  # Global, not local: the restore runs at exit, after this function's
  # locals are gone (and set -u would abort it, leaving the line broken for
  # the cases that follow).
  GOOD_PLUGSTACK=$(cat "$DIR/plugstack.conf")
  atExit 'printf "%s\n" "$GOOD_PLUGSTACK" >"$DIR/plugstack.conf"; "$here/slurm_cluster.sh" slurmd-restart "$DIR"'
  printf '%s bogus_key=1\n' "$GOOD_PLUGSTACK" >"$DIR/plugstack.conf"
  "$here/slurm_cluster.sh" slurmd-restart "$DIR" || fail "slurmd did not survive the broken line"
  grep -q "switchagg: plugstack.conf: unknown key 'bogus_key' (valid keys: control, mode" "$DIR/log/slurmd.log" ||
    fail "slurmd.log lacks the error"
  expectRefused "unknown key 'bogus_key'" srun --switch-agg=require -n 1 true
  srun --switch-agg=auto -n 1 bash -c 'echo TASK-RAN' >"$W/out" 2>"$W/err" || fail "auto job failed: $(cat "$W/err")"
  grep -q TASK-RAN "$W/out" || fail "auto task did not run"
  grep -q 'switchagg: warning: switch aggregation is misconfigured' "$W/err" || fail "no warning: $(cat "$W/err")"
  srun -n 1 true 2>"$W/err" || fail "a job without --switch-agg failed"
}

# fabric= in plugstack.conf: the map says a second agent serves this node
# (the cluster's own agent serves other names), so the prolog leases there
# for the job's node list, the tasks get that agent's address and token (and
# its name and the map's path), and the epilog frees it; the cluster's own
# agent never sees the job.
# A second agent (its own control socket $W/agent2.sock, data port any)
# beside the cluster's, stopped at the end.
startSecondAgent() {
  local bin pid end
  bin=$(cat "$DIR/agent.bin")
  sed -e "s#$DIR/agent.sock#$W/agent2.sock#" -e 's#^listen = "127.0.0.1:[0-9]*"#listen = "127.0.0.1:0"#' \
    "$DIR/agent.toml" >"$W/agent2.toml"
  setsid "$bin" --config "$W/agent2.toml" >"$W/agent2.log" 2>&1 </dev/null &
  pid=$!
  atExit "kill $pid 2>/dev/null; true"
  end=$((SECONDS + 30))
  until [[ -S $W/agent2.sock ]]; do
    ((SECONDS < end)) || fail "second agent did not start: $(tail -5 "$W/agent2.log")"
    sleep 0.1
  done
}

# slurmd restarted with plugstack fabric=MAP (the good line back at the end).
useFabricMap() {
  GOOD_PLUGSTACK=$(cat "$DIR/plugstack.conf")
  atExit 'printf "%s\n" "$GOOD_PLUGSTACK" >"$DIR/plugstack.conf"; "$here/slurm_cluster.sh" slurmd-restart "$DIR"'
  printf '%s fabric=%s\n' "$GOOD_PLUGSTACK" "$1" >"$DIR/plugstack.conf"
  "$here/slurm_cluster.sh" slurmd-restart "$DIR" || fail "slurmd did not restart with fabric="
}

case_fabric_map() {
  local job second=unix:$W/agent2.sock
  startSecondAgent
  printf '[[agent]]\nname = "cluster"\ncontrol = "unix:%s"\nnodes = "elsewhere[1-4]"\n\n' \
    "$DIR/agent.sock" >"$W/fabric.toml"
  printf '[[agent]]\nname = "second"\ncontrol = "%s"\nnodes = "%s"\n' "$second" "$(hostname -s)" \
    >>"$W/fabric.toml"
  useFabricMap "$W/fabric.toml"
  # The probe lists the leases of the agent SWITCHAGG_CONTROL names: the second one.
  SWITCHAGG_CONTROL=$second srun --switch-agg=require --switch-agg-slots=3 -n 2 "$PROBE" \
    >"$W/out" 2>"$W/err" || fail "require job failed: $(cat "$W/err")"
  job=$(jobOf "$W/out")
  [[ $(grep -c 'mode=require lease_len=32 ' "$W/out") == 2 ]] || fail "tasks lack the lease: $(cat "$W/out")"
  grep -qE "agent=$(SWITCHAGG_CONTROL=$second dataAddresses) " "$W/out" ||
    fail "SWITCHAGG_AGENT is not the second agent's data address: $(cat "$W/out")"
  [[ $(grep -c "names=second fabric=$W/fabric.toml " "$W/out") == 2 ]] ||
    fail "tasks lack SWITCHAGG_AGENT_NAMES=second / SWITCHAGG_FABRIC=$W/fabric.toml: $(cat "$W/out")"
  grep -q "during=job:$job uid:0 slots:3" "$W/out" ||
    fail "no lease at the second agent during the job: $(cat "$W/out")"
  [[ -z $(leaseOf "$job") ]] || fail "the cluster's own agent got the job's lease"
  SWITCHAGG_CONTROL=$second waitNoLease "$job"
}

# A reducer pool: the cluster's agent and a second one serve this node
# together. --switch-agg-reducers=1 leases on exactly one of them (the
# prolog's choice, which the tasks' token fetch finds again: one address,
# one name, the lease at that agent during the job); =2 on both, in pool
# order; =3 (more than the pool has) fails the require job, naming the pool.
case_fabric_pool() {
  local job name second=unix:$W/agent2.sock
  startSecondAgent
  printf '[[agent]]\nname = "cluster"\ncontrol = "unix:%s"\n\n[[agent]]\nname = "second"\ncontrol = "%s"\n\n' \
    "$DIR/agent.sock" "$second" >"$W/pool.toml"
  printf '[[pool]]\nname = "reducers"\nagents = ["cluster", "second"]\nnodes = "%s"\n' \
    "$(hostname -s)" >>"$W/pool.toml"
  useFabricMap "$W/pool.toml"
  srun --switch-agg=require --switch-agg-reducers=1 -n 2 "$PROBE" >"$W/out" 2>"$W/err" ||
    fail "reducers=1 job failed: $(cat "$W/err")"
  job=$(jobOf "$W/out")
  [[ $(grep -c 'mode=require lease_len=32 ' "$W/out") == 2 ]] || fail "tasks lack one token: $(cat "$W/out")"
  name=$(sed -n 's/.* names=\([a-z]*\) .*/\1/p' "$W/out" | sort -u)
  [[ $name == cluster || $name == second ]] || fail "tasks got agents '$name', not one of the pool: $(cat "$W/out")"
  local at=unix:$DIR/agent.sock
  [[ $name == second ]] && at=$second
  grep -qE "agent=$(SWITCHAGG_CONTROL=$at dataAddresses) " "$W/out" ||
    fail "SWITCHAGG_AGENT is not agent $name's data address: $(cat "$W/out")"
  grep -q "job $job: lease created .*agents $name\$" "$DIR/log/slurmd.log" ||
    fail "the prolog did not log the one agent it got: $(grep "job $job" "$DIR/log/slurmd.log" | tail -3)"
  waitNoLease "$job"
  SWITCHAGG_CONTROL=$second waitNoLease "$job"
  srun --switch-agg=require --switch-agg-reducers=2 -n 1 "$PROBE" >"$W/out" 2>"$W/err" ||
    fail "reducers=2 job failed: $(cat "$W/err")"
  grep -q 'lease_len=65 .*names=cluster,second ' "$W/out" || fail "reducers=2: not both agents: $(cat "$W/out")"
  if srun --switch-agg=require --switch-agg-reducers=3 -n 1 "$PROBE" >"$W/out" 2>"$W/err"; then
    fail "reducers=3 of a pool of 2 ran: $(cat "$W/out")"
  fi
  grep -q "reducers=3: pool 'reducers' has 2 agent(s)" "$W/err" ||
    fail "the failure does not name the pool: $(cat "$W/err")"
}

# The control-plane starvation attack while jobs start: user nobody holds
# 200 TCP and 200 Unix-socket connections to the agent, each with half a
# request line, re-opened every second. Every --switch-agg=require job still
# gets its lease from the prolog, each srun takes at most 1 s longer than
# without the attack, an admin lease create over the Unix socket answers
# within 1 s, and the agent counts what it shed. Needs SWITCHAGG_FLOOD.
case_prolog_under_flood() {
  local flood tcp base=999999 t0 ms job i
  flood=$W/$(basename "${SWITCHAGG_FLOOD:?}")
  cp "$SWITCHAGG_FLOOD" "$flood"
  tcp=$(sed -n '/^\[control\]/,/^\[/s/^listen = "\(.*\)"/\1/p' "$DIR/agent.toml")
  [[ -n $tcp ]] || fail "no control listen address in $DIR/agent.toml"
  for i in 1 2; do
    t0=$(date +%s%N)
    srun --switch-agg=require -n 1 "$PROBE" >"$W/out" 2>"$W/err" || fail "baseline job failed: $(cat "$W/err")"
    ms=$((($(date +%s%N) - t0) / 1000000))
    ((ms < base)) && base=$ms
  done
  local shed_before
  shed_before=$(shedTotal)
  local target
  for target in "$tcp" "unix:$DIR/agent.sock"; do
    setpriv --reuid=nobody --regid=nogroup --clear-groups "$flood" --address "$target" \
      --connections 200 --reopen-ms 1000 --seconds 120 >/dev/null 2>&1 &
    atExit "kill $! 2>/dev/null; wait $! 2>/dev/null"
  done
  sleep 1.5
  for i in 1 2 3; do
    t0=$(date +%s%N)
    srun --switch-agg=require -n 1 "$PROBE" >"$W/out" 2>"$W/err" || fail "job under attack failed: $(cat "$W/err")"
    ms=$((($(date +%s%N) - t0) / 1000000))
    job=$(jobOf "$W/out")
    grep -q "during=job:$job uid:0" "$W/out" || fail "job $job had no lease under attack: $(cat "$W/out")"
    ((ms <= base + 1000)) || fail "srun took $ms ms under attack, $base ms without"
    echo "srun under attack: $ms ms (without: $base ms)"
    t0=$(date +%s%N)
    "$CTL" lease create --job "flood-$i" --slots 1 >/dev/null || fail "admin lease create failed under attack"
    ms=$((($(date +%s%N) - t0) / 1000000))
    ((ms < 1000)) || fail "admin lease create took $ms ms under attack"
    "$CTL" lease delete --job "flood-$i" >/dev/null
    waitNoLease "$job"
  done
  (($(shedTotal) > shed_before + 300)) || fail "the agent shed only $(($(shedTotal) - shed_before)) connections: was the attack real?"
}

# The MPI end-to-end: srun --mpi=pmix -n 4 switchagg-bench --check with the
# coll component offloading to the agent; the agent's counters must move,
# the results must check out, and the lease must go with the job. Needs
# SWITCHAGG_BENCH and SWITCHAGG_OMPI_COMPONENT_PATH (slurm_tests.cmake sets
# them when mca_coll_switchagg and switchagg-bench are built).
case_mpi_offload() {
  local bench=${SWITCHAGG_BENCH:?} path=${SWITCHAGG_OMPI_COMPONENT_PATH:?} before after job
  before=$(agentCounter groups_created)
  OMPI_MCA_mca_base_component_path=$path OMPI_MCA_coll_switchagg_offload=on \
    OMPI_MCA_btl=self,vader SWITCHAGG_UCX_WAIT=blocking \
    srun --switch-agg=require --switch-agg-slots=4 --mpi=pmix -n 4 --overcommit \
    bash -c 'echo "job=$SLURM_JOB_ID"; exec "$0" "$@"' "$bench" --check --max 256K --iters 20 \
    >"$W/out" 2>"$W/err" || fail "bench failed: $(tail -20 "$W/err")"
  after=$(agentCounter groups_created)
  job=$(jobOf "$W/out")
  ((after > before)) || fail "no aggregation group at the agent: offload was not used"
  [[ $(agentCounter bytes_reduced) -gt 0 ]] || fail "the agent reduced nothing"
  waitNoLease "$job"
}

# An MPICH program (built with mpicc.mpich) with the PMPI library under
# srun --mpi=pmi2 --switch-agg=require: the exact-result checker with every
# call served by the switch path (its diagnostics; it aborts without the
# library), the agent made a group and reduced bytes, the lease gone after.
case_mpich_offload() {
  local check=${SWITCHAGG_MPICH_CHECK:?} icheck=${SWITCHAGG_MPICH_ICHECK:?} lib=${SWITCHAGG_PMPI_LIB:?}
  local before after job
  srun --mpi=list 2>&1 | grep -w pmi2 >/dev/null || fail "srun --mpi=list has no pmi2: $(srun --mpi=list 2>&1)"
  before=$(agentCounter groups_created)
  # The library is preloaded into the MPI program only (not srun, not bash).
  SWITCHAGG_TEST_PRELOAD=$lib SWITCHAGG_OFFLOAD=on SWITCHAGG_VERBOSE=1 SWITCHAGG_UCX_WAIT=blocking \
    srun --switch-agg=require --switch-agg-slots=4 --mpi=pmi2 -n 3 --overcommit \
    bash -c 'echo "job=$SLURM_JOB_ID"; LD_PRELOAD=$SWITCHAGG_TEST_PRELOAD exec "$0" "$@"' \
    "$check" --expect switch --quick >"$W/out" 2>"$W/err" ||
    fail "MPICH job failed: $(tail -n 20 "$W/out" "$W/err")"
  after=$(agentCounter groups_created)
  job=$(jobOf "$W/out")
  # np=3: one 3-rank MPI_COMM_WORLD (PMI wired the tasks together), not 3 singletons.
  grep -q '^PASS np=3 expect=switch' "$W/out" ||
    fail "no 3-rank PASS from the checker: $(tail -n 20 "$W/out" "$W/err")"
  grep -q 'PMPI layer active (libswitchagg_pmpi) over MPICH' "$W/err" ||
    fail "the PMPI layer did not say it was active: $(tail -n 20 "$W/err")"
  ((after > before)) || fail "no aggregation group at the agent: offload was not used"
  [[ $(agentCounter bytes_reduced) -gt 0 ]] || fail "the agent reduced nothing"
  waitNoLease "$job"
  # The negative control under srun (tests/mpi/verdict.h): one rank's
  # answer wrong on purpose; the checker must fail with its FAIL verdict.
  if SWITCHAGG_TEST_PRELOAD=$lib SWITCHAGG_OFFLOAD=on SWITCHAGG_UCX_WAIT=blocking \
    SWITCHAGG_TEST_WRONG_RESULT=rank:1 \
    srun --switch-agg=require --switch-agg-slots=4 --mpi=pmi2 -n 3 --overcommit \
    bash -c 'echo "job=$SLURM_JOB_ID"; LD_PRELOAD=$SWITCHAGG_TEST_PRELOAD exec "$0" "$@"' \
    "$check" --expect switch --quick >"$W/nout" 2>"$W/nerr"; then
    fail "the checker passed under srun with one rank's answer wrong: $(tail -n 5 "$W/nout")"
  fi
  grep -Eq '^FAIL np=3 expect=switch: [0-9]+ cases checked on 3 ranks, [1-9][0-9]* failures' \
    "$W/nout" || fail "no FAIL verdict from the broken run: $(tail -n 20 "$W/nout" "$W/nerr")"
  waitNoLease "$(jobOf "$W/nout")"
  # MPI_Iallreduce through the layer's progress thread under srun: the
  # program with rank 0 blocked in MPI_Recv while rank 1 waits for its call
  # (docs/pmpi.md), every call counted as served by the switch.
  SWITCHAGG_TEST_PRELOAD=$lib SWITCHAGG_OFFLOAD=on SWITCHAGG_VERBOSE=1 SWITCHAGG_UCX_WAIT=blocking \
    srun --switch-agg=require --switch-agg-slots=4 --mpi=pmi2 -n 3 --overcommit \
    bash -c 'echo "job=$SLURM_JOB_ID"; LD_PRELOAD=$SWITCHAGG_TEST_PRELOAD exec "$0" "$@"' \
    "$icheck" --mode recv --iters 3 --bytes 1048576 --max-ms 30000 --expect switch \
    >"$W/iout" 2>"$W/ierr" || fail "MPICH Iallreduce job failed: $(tail -n 20 "$W/iout" "$W/ierr")"
  grep -q '^recv: 3 rounds of 1048576 bytes + 32 bytes, iallreduce:switch 6' "$W/iout" &&
    grep -q '^PASS' "$W/iout" ||
    fail "the Iallreduce job was not served by the switch: $(tail -n 20 "$W/iout" "$W/ierr")"
  grep -q "MPI_Iallreduce through the layer's progress thread" "$W/ierr" ||
    fail "the PMPI layer did not start its progress thread: $(tail -n 20 "$W/ierr")"
  waitNoLease "$(jobOf "$W/iout")"
}

W=$(mktemp -d "$DIR/case.$case.XXXXXX")
chmod 0755 "$W"
# Copies the jobs can run whatever user they run as and wherever the
# checkout lives.
cp "$here/job_probe.sh" "$CTL" "$W/"
PROBE=$W/job_probe.sh
export SWITCHAGG_PROBE_CTL=$W/$(basename "$CTL")
declare -F "case_$case" >/dev/null || { echo "unknown case $case" >&2; exit 2; }
"case_$case"
rm -rf "$W"
echo "PASS $case"
