#!/usr/bin/env bash
# slurm_fabric.sh: a real multi-node Slurm cluster whose nodes are the hosts
# of an emulated fabric (scripts/fabric.py). Runs as root.
#
#   slurm_fabric.sh start DIR FABRIC [--spank SO] [--spank-args "k=v ..."]
#                                    [--agent-socket PATH]
#       slurmctld on h1 and one slurmd per compute host (h1..hH, NodeAddr =
#       the host's fabric address), munged in the root namespace (its socket
#       is a file, so every host reaches it; started only if none answers).
#       --spank SO         plugstack.conf gets "required SO control=unix:PATH
#                          state_dir=DIR/notes" followed by --spank-args
#       --agent-socket P   the agent's Unix control socket (default
#                          DIR/agent.sock); a file, so slurmd/slurmstepd on
#                          every host reach it
#   slurm_fabric.sh stop DIR [--logs-to D]
#       stops what start started, by the pids it recorded in DIR (also what
#       a dead run left there: daemons of a fabric that is gone, slurmstepd
#       processes of killed slurmds and their tasks, Slurm clients such as
#       srun still waiting for this cluster), then removes DIR
#       (its log/ copied to D). Idempotent.
#
# After start, `source DIR/env.sh` exports SLURM_CONF, SWITCHAGG_CONTROL,
# SWITCHAGG_TEST_CLUSTER, SWITCHAGG_TEST_PARTITION, SWITCHAGG_FABRIC and
# SWITCHAGG_SLURM_CLIENT (DIR/client CMD...: runs CMD on h1, where the
# Slurm clients must run: the root namespace has no route to the fabric).
# DIR must not be under /tmp (every fabric host has its own /tmp).
# A watchdog stops the cluster after SWITCHAGG_CLUSTER_MAX_S (default 900 s).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
self=$here/$(basename "${BASH_SOURCE[0]}")

# The single-node fixture's helpers (alive, waitFor, killPidFile, startMunge,
# freshDir, stopAndRemove):
# its function definitions, without its command dispatch at the end.
fixture=$root/tests/slurm/slurm_cluster.sh
# shellcheck source=/dev/null
source "$root/scripts/lib_procs.sh"  # before the fixture, which looks for it
# shellcheck disable=SC1090
source <(sed '/^cmd=\${1:-}; dir=\${2:-}$/,$d' "$fixture")
for f in alive waitFor killPidFile startMunge freshDir stopAndRemove; do
  declare -F "$f" >/dev/null || { echo "slurm_fabric: $fixture no longer defines $f" >&2; exit 1; }
done
# Its freshDir and stopAndRemove, over this fixture's marker (and stopAll).
cluster_marker=.switchagg_fabric_cluster
cluster_kind=fabric

die() { echo "slurm_fabric: $*" >&2; exit 1; }
log() { echo "slurm_fabric: $*" >&2; }

fabric_py() { /usr/bin/python3 "$root/scripts/fabric.py" "$@"; }

CTLD_PORT=16817
SLURMD_PORT=16818

# Stops the process whose pid is in file $1 if it still runs and is named
# $2 (its /proc comm; guards against a reused pid of a dead run): TERM, then
# KILL after 5 s. Removes the file.
stopRecorded() {
  local f=$1 name=$2 pid
  [[ -s $f ]] || { rm -f "$f"; return 0; }
  pid=$(cat "$f")
  if [[ $pid =~ ^[0-9]+$ ]] && alive "$pid" && [[ $(cat "/proc/$pid/comm" 2>/dev/null) == "$name" ]]; then
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do alive "$pid" || break; sleep 0.1; done
    alive "$pid" && kill -KILL "$pid" 2>/dev/null
  fi
  rm -f "$f"
}

# slurmstepd processes of this cluster (their environment names our
# slurm.conf: they inherit it from our slurmd) and every process below them.
stepTrees() {
  # shellcheck disable=SC2046
  pids_below $(pids_with_env "SLURM_CONF=$1" slurmstepd)
}

# Slurm clients of this cluster (srun, salloc, ... with our SLURM_CONF)
# still running once its daemons are gone, e.g. those of a dead test run:
# with slurmctld gone they would wait for it, so they are killed.
killClients() {
  local pids=()
  mapfile -t pids < <(pids_with_env "SLURM_CONF=$1" 'srun|salloc|sbatch|sattach|scancel|squeue|sinfo|scontrol')
  ((${#pids[@]})) || return 0
  log "killing leftover Slurm clients: ${pids[*]}"
  kill -KILL "${pids[@]}" 2>/dev/null || true
}

killStepTrees() {
  local conf=$1 pids
  pids=$(stepTrees "$conf")
  [[ -n $pids ]] || return 0
  log "killing leftover job step processes: $(tr '\n' ' ' <<<"$pids")"
  # shellcheck disable=SC2086
  kill -KILL $pids 2>/dev/null || true
}

# "name ip" of the fabric's compute hosts.
fabricHosts() { fabric_py status "$1" | awk '$3 == "host" { print $1, $2 }'; }

writeSlurmConf() {
  local dir=$1 spank=$2 spank_args=$3 sock=$4 hosts=$5 ctl_ip names
  ctl_ip=$(awk '$1 == "h1" { print $2 }' <<<"$hosts")
  [[ -n $ctl_ip ]] || die "the fabric has no host h1"
  names=$(awk '{ printf "%s%s", (NR > 1 ? "," : ""), $1 }' <<<"$hosts")
  mkdir -p "$dir/state" "$dir/log" "$dir/run" "$dir/notes"
  # slurmd wants its spool (domain socket, hwloc cache) at start.
  awk -v d="$dir" '{ print d "/spool-" $1 }' <<<"$hosts" | xargs mkdir -p
  {
    cat <<EOF
ClusterName=switchaggfab
SlurmctldHost=h1($ctl_ip)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool-%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/d-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/d-%n.log
$(slurmConfCommon)
MessageTimeout=5
SlurmdTimeout=${SWITCHAGG_SLURMD_TIMEOUT:-10}
KillWait=2
MinJobAge=300
InactiveLimit=0
PlugStackConfig=$dir/plugstack.conf
EOF
    awk '{ print "NodeName=" $1 " NodeAddr=" $2 " CPUs=2 State=UNKNOWN" }' <<<"$hosts"
    echo "PartitionName=test Nodes=$names Default=YES MaxTime=10 State=UP OverSubscribe=FORCE:4"
  } >"$dir/slurm.conf"
  if [[ -n $spank ]]; then
    echo "required $spank control=unix:$sock state_dir=$dir/notes $spank_args" >"$dir/plugstack.conf"
  else
    : >"$dir/plugstack.conf"
  fi
}

writeEnv() {
  local dir=$1 fabric=$2 sock=$3
  cat >"$dir/client" <<EOF
#!/bin/sh
# Runs a command on h1 of fabric $fabric (slurmctld's host) with this cluster's SLURM_CONF.
SLURM_CONF=$dir/slurm.conf exec /usr/bin/python3 $root/scripts/fabric.py exec $fabric h1 -- "\$@"
EOF
  chmod 0755 "$dir/client"
  cat >"$dir/env.sh" <<EOF
export SLURM_CONF=$dir/slurm.conf
export SWITCHAGG_CONTROL=unix:$sock
export SWITCHAGG_TEST_CLUSTER=$dir
export SWITCHAGG_TEST_PARTITION=test
export SWITCHAGG_FABRIC=$fabric
export SWITCHAGG_SLURM_CLIENT=$dir/client
EOF
}

# Runs a daemon on a fabric host in the background, recording its pid
# (fabric.py exec does not fork: $! is the daemon's own pid).
startOnHost() {
  local dir=$1 fabric=$2 host=$3 pidfile=$4 out=$5
  shift 5
  SLURM_CONF=$dir/slurm.conf setsid /usr/bin/python3 "$root/scripts/fabric.py" exec "$fabric" "$host" -- \
    "$@" >>"$out" 2>&1 </dev/null &
  echo $! >"$pidfile"
}

stopAll() {
  local dir=$1 f host
  [[ -d $dir ]] || return 0
  # (The watchdog's own stop runs under the watchdog's pid: not itself.)
  [[ $(cat "$dir/watchdog.pid" 2>/dev/null) == "$$" ]] || killPidFile "$dir/watchdog.pid" group
  # Cancel what still runs and let the epilogs finish (needs h1, i.e. the
  # fabric, still up), then stop the daemons.
  if [[ -s $dir/slurmctld.pid && -x $dir/client ]] && alive "$(cat "$dir/slurmctld.pid")"; then
    timeout 5 "$dir/client" scancel --quiet --state=PENDING,RUNNING,SUSPENDED 2>/dev/null || true
    waitFor "! timeout 3 '$dir/client' squeue -h -t PD,R,CG,S -o %i | grep . >/dev/null" 30 || true
  fi
  for f in "$dir"/slurmd-*.pid; do
    [[ -e $f ]] && stopRecorded "$f" slurmd
  done
  stopRecorded "$dir/slurmctld.pid" slurmctld
  killStepTrees "$dir/slurm.conf"
  killClients "$dir/slurm.conf"
  killPidFile "$dir/munged.pid"
}

startAll() {
  local dir=$1 fabric=$2
  shift 2
  local spank="" spank_args="" sock=$dir/agent.sock hosts host
  while (($#)); do
    case $1 in
      --spank) spank=$(realpath "$2"); shift 2 ;;
      --spank-args) spank_args=$2; shift 2 ;;
      --agent-socket) sock=$(realpath -m "$2"); shift 2 ;;
      *) die "unknown start option $1" ;;
    esac
  done
  [[ -z $spank || -r $spank ]] || die "no SPANK plugin $spank"
  [[ $(id -u) -eq 0 ]] || die "must run as root (slurmd, munged, fabric)"
  [[ $dir != /tmp/* ]] || die "$dir is under /tmp, which every fabric host has its own of"
  hosts=$(fabricHosts "$fabric") || die "fabric $fabric is not up"
  [[ -n $hosts ]] || die "fabric $fabric has no compute hosts"
  freshDir "$dir"
  echo "$fabric" >"$dir/fabric"
  startMunge "$dir"
  writeSlurmConf "$dir" "$spank" "$spank_args" "$sock" "$hosts"
  writeEnv "$dir" "$fabric" "$sock"
  local max=${SWITCHAGG_CLUSTER_MAX_S:-900}
  setsid bash -c "sleep $max; exec '$self' stop '$dir'" >/dev/null 2>&1 </dev/null &
  echo $! >"$dir/watchdog.pid"

  startOnHost "$dir" "$fabric" h1 "$dir/slurmctld.pid" "$dir/log/slurmctld.out" \
    /usr/sbin/slurmctld -D -i -f "$dir/slurm.conf"
  waitFor "timeout 3 '$dir/client' scontrol ping | grep 'is UP' >/dev/null" 150 ||
    { tail -5 "$dir/log/slurmctld.log" "$dir/log/slurmctld.out" >&2; die "slurmctld did not come up"; }
  while read -r host _; do
    startOnHost "$dir" "$fabric" "$host" "$dir/slurmd-$host.pid" "$dir/log/d-$host.out" \
      /usr/sbin/slurmd -D -f "$dir/slurm.conf" -N "$host"
  done <<<"$hosts"
  local want
  want=$(wc -l <<<"$hosts")
  # sinfo runs inside h1 (a python + nsenter each time): poll at 4 Hz.
  local end=$((SECONDS + 40))
  while ((SECONDS < end)); do
    [[ $(timeout 5 "$dir/client" sinfo -h -N -o '%N %t' 2>/dev/null | grep -Ec ' (idle|mix|alloc)$') == "$want" ]] &&
      break
    for f in "$dir"/slurmd-*.pid; do
      alive "$(cat "$f")" || { tail -5 "$dir/log/d-$(basename "$f" .pid | cut -d- -f2).log" >&2; die "$(basename "$f" .pid) died"; }
    done
    sleep 0.25
  done
  ((SECONDS < end)) || { "$dir/client" sinfo -N >&2 || true; die "not all $want nodes became idle"; }
  log "cluster of $want nodes up on fabric $fabric in $dir (source $dir/env.sh)"
}

cmd=${1:-}
dir=${2:-}
[[ -n $cmd && -n $dir ]] || die "usage: $0 start DIR FABRIC [options] | stop DIR [--logs-to D]"
dir=$(realpath -m "$dir")
shift 2
case $cmd in
  start)
    fabric=${1:-}
    [[ -n $fabric ]] || die "usage: $0 start DIR FABRIC [options]"
    shift
    startAll "$dir" "$fabric" "$@"
    ;;
  stop)
    logs=""
    [[ ${1:-} == --logs-to ]] && logs=${2:?--logs-to needs a directory}
    stopAndRemove "$dir" "$logs"
    ;;
  *) die "unknown command $cmd" ;;
esac
