#!/usr/bin/env bash
# slurm_cluster.sh: a private, real Slurm cluster on this machine (munged,
# slurmctld, slurmd with a generated slurm.conf + plugstack.conf, free
# non-default ports) plus a real switchagg-agent, for tests. Runs as root.
#
#   slurm_cluster.sh start DIR [--spank SO] [--spank-args "k=v ..."]
#                              [--agent BIN] [--agent-toml FILE]
#       --spank SO         plugstack.conf gets "required SO control=unix:DIR/agent.sock
#                          state_dir=DIR/notes" followed by --spank-args
#       --agent BIN        switchagg-agent started with DIR/agent.toml (16 slots,
#                          8 per job, only root creates leases); --agent-toml
#                          FILE is appended to it
#   slurm_cluster.sh stop DIR [--logs-to D] everything start started, by pid; then
#                                           DIR is removed (its log/ copied to D)
#   slurm_cluster.sh agent-start DIR        (re)start the agent alone
#   slurm_cluster.sh agent-stop DIR         stop the agent alone (agent down)
#   slurm_cluster.sh slurmd-restart DIR     restart slurmd (re-reads plugstack.conf)
#   slurm_cluster.sh run DIR [start options] -- CMD...
#                                           start, run CMD, stop (always)
#
# After start, `source DIR/env.sh` exports SLURM_CONF (for srun/sbatch/
# squeue/scancel), SWITCHAGG_CONTROL (the agent's control socket, for
# switchagg-ctl), SWITCHAGG_TEST_CLUSTER=DIR and SWITCHAGG_TEST_PARTITION.
# A stale cluster left in DIR by an interrupted run is stopped first. A
# watchdog stops the cluster after SWITCHAGG_CLUSTER_MAX_S (default 900 s)
# so an interrupted test run cannot leave daemons behind.
set -euo pipefail

# pids_with_env (scripts/lib_procs.sh); the fabric fixture, which sources
# this file's functions, has sourced it already.
if ! declare -F pids_with_env >/dev/null; then
  # shellcheck source=/dev/null
  source "$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/scripts/lib_procs.sh"
fi

die() { echo "slurm_cluster: $*" >&2; exit 1; }
log() { echo "slurm_cluster: $*" >&2; }

freePort() {
  local py=/usr/bin/python3
  [[ -x $py ]] || py=python3
  "$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# Waits up to $2 tenths of a second for command $1 (a string) to succeed.
waitFor() {
  local cmd=$1 tries=$2
  for ((i = 0; i < tries; i++)); do
    if eval "$cmd" >/dev/null 2>&1; then return 0; fi
    sleep 0.1
  done
  return 1
}

# True while process $1 runs. A zombie counts as gone: daemons we started
# are re-parented to PID 1, which in a container may never reap them.
alive() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  [[ ${stat%% *} != Z ]]
}

# Stops the process (or, with a second argument "group", the process group)
# whose id is in file $1: TERM, then KILL after 5 s.
killPidFile() {
  local f=$1 target pid
  [[ -s $f ]] || return 0
  pid=$(cat "$f")
  target=$pid
  [[ ${2:-} == group ]] && target=-$pid
  if [[ $pid =~ ^[0-9]+$ ]] && alive "$pid"; then
    kill -TERM -- "$target" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do alive "$pid" || break; sleep 0.1; done
    alive "$pid" && kill -KILL -- "$target" 2>/dev/null
  fi
  rm -f "$f"
}

# munged with Debian's key on its default socket, which slurm, libmunge in
# the agent and the SPANK plugin all use. Started (as the munge user, like
# Debian's unit) only if none answers; then `stop` stops it again.
startMunge() {
  local dir=$1
  if munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; then return 0; fi
  [[ -r /etc/munge/munge.key ]] || die "no /etc/munge/munge.key (apt-get install munge)"
  install -d -o munge -g munge -m 0755 /run/munge
  install -d -o munge -g munge -m 0700 /var/lib/munge /var/log/munge
  runuser -u munge -- /usr/sbin/munged --force
  waitFor "munge -n </dev/null | unmunge" 100 || die "munged did not start"
  cp /run/munge/munged.pid "$dir/munged.pid"
  log "started munged (pid $(cat "$dir/munged.pid"))"
}

# The slurm.conf lines both fixtures' clusters share (this one's and the
# fabric's, tests/fabric/slurm_fabric.sh): no accounting, no cgroups, quick
# scheduling, nodes back in service by themselves.
slurmConfCommon() {
  cat <<'EOF'
SlurmdDebug=debug
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
SwitchType=switch/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
ReturnToService=2
SchedulerParameters=sched_interval=1
EOF
}

writeSlurmConf() {
  local dir=$1 spank=$2 spank_args=$3 host
  host=$(hostname -s)
  mkdir -p "$dir/state" "$dir/spool" "$dir/log"
  cat >"$dir/slurm.conf" <<EOF
ClusterName=switchaggtest
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
SlurmctldPort=$(freePort)
SlurmdPort=$(freePort)
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
$(slurmConfCommon)
MessageTimeout=10
KillWait=2
MinJobAge=300
InactiveLimit=0
PlugStackConfig=$dir/plugstack.conf
NodeName=$host CPUs=2 State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=10 State=UP OverSubscribe=FORCE:4
EOF
  # Slurm's PMIx plugin makes /tmp/spmix_appdir_<uid>_<job>.<step> for each
  # step. Job ids restart at 1 in every private cluster, so a directory left
  # in /tmp by a killed step of another cluster (or an earlier run) fails a
  # step with "File exists": each cluster gets its own base directory.
  mkdir -p "$dir/pmix"
  chmod 1777 "$dir/pmix"
  echo "PMIxCliTmpDirBase=$dir/pmix" >"$dir/mpi.conf"
  if [[ -n $spank ]]; then
    echo "required $spank control=unix:$dir/agent.sock state_dir=$dir/notes $spank_args" >"$dir/plugstack.conf"
  else
    : >"$dir/plugstack.conf"
  fi
}

# The agent's policy for tests: a small pool so quota tests are cheap. No
# user may create leases (allowed_users = []): the prolog creates them as
# root, and a job's tasks only fetch their own token, which owners may.
writeAgentToml() {
  local dir=$1 extra=$2
  cat >"$dir/agent.toml" <<EOF
[data]
listen = "127.0.0.1:$(freePort)"
threads = 1

[pool]
slots = 16

[control]
unix_socket = "$dir/agent.sock"
listen = "127.0.0.1:$(freePort)"
open_readonly = true

[policy]
default_slots = 2
max_slots_per_job = 8
max_slots_per_user = 16
default_ttl = "1h"
max_ttl = "2h"
allowed_users = []
EOF
  [[ -n $extra ]] && cat "$extra" >>"$dir/agent.toml"
  return 0
}

agentStart() {
  local dir=$1 bin
  bin=$(cat "$dir/agent.bin" 2>/dev/null) || die "no agent configured in $dir"
  killPidFile "$dir/agent.pid"
  rm -f "$dir/agent.sock"
  setsid "$bin" --config "$dir/agent.toml" >>"$dir/log/agent.log" 2>&1 </dev/null &
  echo $! >"$dir/agent.pid"
  waitFor "[[ -S $dir/agent.sock ]]" 300 || { tail -20 "$dir/log/agent.log" >&2; die "agent did not start"; }
}

agentStop() { killPidFile "$1/agent.pid"; rm -f "$1/agent.sock"; }

# slurmd reads plugstack.conf when it starts; tests that change the line
# restart it. Succeeds once the node answers again.
slurmdRestart() {
  local dir=$1
  export SLURM_CONF=$dir/slurm.conf
  killPidFile "$dir/slurmd.pid"
  /usr/sbin/slurmd -f "$dir/slurm.conf" || die "slurmd failed: $(tail -5 "$dir/log/slurmd.log")"
  waitFor "alive \$(cat $dir/slurmd.pid) && scontrol ping >/dev/null && sinfo -h -o %t | grep -E '^(idle|mix|alloc)\$' >/dev/null" 300 ||
    die "slurmd did not come back: $(tail -5 "$dir/log/slurmd.log")"
}

writeEnv() {
  local dir=$1
  cat >"$dir/env.sh" <<EOF
export SLURM_CONF=$dir/slurm.conf
export SWITCHAGG_CONTROL=unix:$dir/agent.sock
export SWITCHAGG_TEST_CLUSTER=$dir
export SWITCHAGG_TEST_PARTITION=test
EOF
}

stopAll() {
  local dir=$1
  [[ -d $dir ]] || return 0
  killPidFile "$dir/watchdog.pid" group
  # Cancel what still runs and let its epilog finish, then stop the daemons.
  if [[ -s $dir/slurmctld.pid ]] && alive "$(cat "$dir/slurmctld.pid")"; then
    export SLURM_CONF=$dir/slurm.conf
    timeout 5 scancel --quiet --state=PENDING,RUNNING,SUSPENDED 2>/dev/null || true
    waitFor "! squeue -h -t PD,R,CG,S -o %i | grep . >/dev/null" 50 || true
  fi
  killPidFile "$dir/slurmd.pid"
  killPidFile "$dir/slurmctld.pid"
  agentStop "$dir"
  # slurmstepd processes of jobs killed with slurmd (they hold our spool dir).
  pkillUnder "$dir/spool"
  killPidFile "$dir/munged.pid"
}

# A directory startAll made carries this marker; only such a directory is
# ever wiped (the fabric fixture, which sources these helpers, has its own).
cluster_marker=.switchagg_test_cluster
cluster_kind=test

# freshDir DIR: stops what runs in DIR (stopAll) and makes it afresh, empty
# but for log/ and the marker; refuses a non-empty DIR without the marker.
freshDir() {
  local dir=$1
  if [[ -d $dir && ! -e $dir/$cluster_marker && -n $(ls -A "$dir") ]]; then
    die "$dir exists and is not a switchagg $cluster_kind cluster; not touching it"
  fi
  stopAll "$dir"
  rm -rf "$dir"
  mkdir -p "$dir/log"
  touch "$dir/$cluster_marker"
  chmod 0755 "$dir"
}

# stop, then remove DIR (a directory start made), keeping its logs in $2.
stopAndRemove() {
  local dir=$1 logs=${2:-}
  stopAll "$dir"
  [[ -e $dir/$cluster_marker ]] || return 0
  if [[ -n $logs ]]; then
    rm -rf "$logs"
    mkdir -p "$logs"
    cp -a "$dir/log/." "$logs/" 2>/dev/null || true
  fi
  rm -rf "$dir"
}

# Ends slurmstepd processes whose working spool is under $1: only those this
# cluster started (matched by their exact spool path, never by name alone).
pkillUnder() {
  local spool=$1 pid
  for pid in $(pids_with_env "SLURM_CONF=${spool%/spool}/slurm.conf" slurmstepd); do
    kill -KILL "$pid" 2>/dev/null || true
  done
}

startAll() {
  local dir=$1; shift
  local spank="" spank_args="" agent="" agent_toml=""
  while (($#)); do
    case $1 in
      --spank) spank=$2; shift 2 ;;
      --spank-args) spank_args=$2; shift 2 ;;
      --agent) agent=$2; shift 2 ;;
      --agent-toml) agent_toml=$2; shift 2 ;;
      *) die "unknown start option $1" ;;
    esac
  done
  [[ $(id -u) -eq 0 ]] || die "must run as root (slurmd, munged)"
  freshDir "$dir"
  startMunge "$dir"
  writeSlurmConf "$dir" "$spank" "$spank_args"
  writeEnv "$dir"
  if [[ -n $agent ]]; then
    echo "$agent" >"$dir/agent.bin"
    writeAgentToml "$dir" "$agent_toml"
    agentStart "$dir"
  fi
  # SLURM_CONF in the daemons' environment marks their slurmstepds as ours.
  export SLURM_CONF=$dir/slurm.conf
  /usr/sbin/slurmctld -f "$dir/slurm.conf" -i || die "slurmctld failed: $(tail -5 "$dir/log/slurmctld.log")"
  /usr/sbin/slurmd -f "$dir/slurm.conf" || die "slurmd failed: $(tail -5 "$dir/log/slurmd.log")"
  waitFor "sinfo -h -o %t | grep -E '^(idle|mix|alloc)' >/dev/null" 300 ||
    { tail -5 "$dir/log/slurmctld.log" "$dir/log/slurmd.log" >&2; die "node did not become idle"; }
  local max=${SWITCHAGG_CLUSTER_MAX_S:-900}
  setsid bash -c "sleep $max; exec '$(realpath "$0")' stop '$dir'" >/dev/null 2>&1 </dev/null &
  echo $! >"$dir/watchdog.pid"
  log "cluster up in $dir (source $dir/env.sh)"
}

cmd=${1:-}; dir=${2:-}
[[ -n $cmd && -n $dir ]] || die "usage: $0 start|stop|agent-start|agent-stop|run DIR [...]"
dir=$(realpath -m "$dir")
shift 2
case $cmd in
  start) startAll "$dir" "$@" ;;
  stop)
    logs=""
    [[ ${1:-} == --logs-to ]] && logs=${2:?--logs-to needs a directory}
    stopAndRemove "$dir" "$logs"
    ;;
  agent-start) agentStart "$dir" ;;
  agent-stop) agentStop "$dir" ;;
  slurmd-restart) slurmdRestart "$dir" ;;
  run)
    opts=()
    while (($#)) && [[ $1 != -- ]]; do opts+=("$1"); shift; done
    [[ ${1:-} == -- ]] && shift
    (($#)) || die "run: no command after --"
    trap 'stopAndRemove "$dir"' EXIT
    startAll "$dir" "${opts[@]}"
    # shellcheck disable=SC1091
    source "$dir/env.sh"
    "$@"
    ;;
  *) die "unknown command $cmd" ;;
esac
