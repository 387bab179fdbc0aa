#!/usr/bin/env bash
# chaos_soak.sh: Slurm jobs run the training proxy (switchagg-train --check)
# and an exact allreduce checker (switchagg-chaos-check) back to back, with
# the switchagg component offloading to a real agent, while a chaos loop at
# random intervals SIGKILLs the agent and restarts it (as systemd's
# Restart=on-failure would), SIGSTOPs/SIGCONTs it, deletes a running job's
# lease, kills one rank of a running job, scancels a job, and floods the
# control API with junk connections (as user nobody). One node: the private
# Slurm cluster of tests/slurm/slurm_cluster.sh. Runs as root.
#
#   chaos_soak.sh --build BUILD [--minutes M] [--out DIR] [--seed N]
#                 [--loops L] [--job-seconds S]
#
# At the end it writes DIR/figures.txt (and prints it): calls made, wrong
# answers, hangs past the bound, leases left after all jobs ended,
# fallbacks and rejoins, and the recovery time after each kind of fault
# (median, max). Exits 1 on any wrong answer, hang or leaked lease, and
# when the switch path stopped serving: a fault it did not come back from
# within the recovery bound (below), too small a share of the calls served
# by it, or a final job (--switch-agg=require) it did not serve.
#
# The bound: a call may stall while the agent is stopped (at most 4 s here)
# plus the member timeout (data.member_timeout, 10 s) before the ranks fall
# back, so a call over 30 s, or a job running 60 s past its planned length,
# is a hang.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build="" minutes=2 out="" seed=$$ loops=2 job_seconds=12
while (($#)); do
  case $1 in
    --build) build=$2; shift 2 ;;
    --minutes) minutes=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --loops) loops=$2; shift 2 ;;
    --job-seconds) job_seconds=$2; shift 2 ;;
    *) echo "chaos_soak.sh: unknown argument '$1' (see the header of $0)" >&2; exit 2 ;;
  esac
done
[[ -n $build ]] || { echo "chaos_soak.sh: --build BUILD_DIR is required" >&2; exit 2; }
build=$(cd "$build" && pwd)
for bin in switchagg-agent switchagg-ctl switchagg-train switchagg-chaos-check switchagg-test-control-flood; do
  [[ -x $build/bin/$bin ]] || { echo "chaos_soak.sh: $build/bin/$bin is not built" >&2; exit 2; }
done
# The plugin's fixed place in the build (spank_plugin/CMakeLists.txt); never
# searched for: a sanitized build inside BUILD (scripts/sanitize.sh) has one too.
spank=$build/lib/slurm/switchagg_spank.so
[[ -f $spank ]] || { echo "chaos_soak.sh: $spank is not built" >&2; exit 2; }
RANDOM=$seed
PY=/usr/bin/python3
[[ -x $PY ]] || PY=python3
readonly CALL_BOUND_MS=30000 JOB_GRACE_S=60
# Service: after a fault that no other fault follows before it, the switch
# path serves again within 20 s + 2 job lengths (44 s for 12 s jobs): the
# member timeout (10 s) before the ranks fall back, the rest of a job that
# stays on the host (a deleted lease, rejoins backing off), a training job
# that may come next in the loop (its ranks print no per-call lines; it runs
# in a few seconds: switchagg-train gives each rank its share of the cores),
# the next check job's start, lease and join, and margin for 2 loaded
# cores; and over the soak at least this share of the checked calls went
# through the switch path.
readonly RECOVERY_BOUND_MS=$(((20 + 2 * job_seconds) * 1000)) MIN_SWITCH_SHARE=0.15

# Under /tmp: user nobody (the flood) must reach the socket and the tools.
# The cluster gets its own subdirectory (slurm_cluster.sh owns and wipes it).
BASE=$(mktemp -d /tmp/switchagg-chaos.XXXXXX)
chmod 0755 "$BASE"
DIR=$BASE/cluster
out=${out:-$BASE/out}
rm -rf "$out/logs" "$out/cluster-logs"
mkdir -p "$out/logs"
chmod 0777 "$out/logs"
: >"$out/faults.log"
: >"$out/jobs.log"
tools=$BASE/tools
mkdir -p "$tools"
# Copies: a rebuild of the tree during a long run must not change what runs
# (the agent is restarted from this copy, slurmstepd loads this plugin).
cp "$build/bin/switchagg-chaos-check" "$build/bin/switchagg-train" "$build/bin/switchagg-ctl" \
  "$build/bin/switchagg-test-control-flood" "$build/bin/switchagg-agent" "$spank" "$tools/"
CTL=$tools/switchagg-ctl

cat >"$BASE/agent-extra.toml" <<EOF

[state]
lease_file = "$BASE/leases.json"
EOF
cleanup() {
  local rc=$?
  touch "$BASE/stop"
  local pid
  for pid in $(jobs -p); do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  # SIGCONT first: a stopped agent cannot be stopped by SIGTERM.
  [[ -s $DIR/agent.pid ]] && kill -CONT "$(cat "$DIR/agent.pid")" 2>/dev/null || true
  "$root/tests/slurm/slurm_cluster.sh" stop "$DIR" --logs-to "$out/cluster-logs" >/dev/null 2>&1 || true
  rm -rf "$BASE/tools" "$BASE/leases.json"
  [[ $out == "$BASE"/* ]] || rm -rf "$BASE"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM
SWITCHAGG_CLUSTER_MAX_S=$((minutes * 60 + 900)) \
  "$root/tests/slurm/slurm_cluster.sh" start "$DIR" --spank "$tools/switchagg_spank.so" \
  --spank-args "timeout=2s" --agent "$tools/switchagg-agent" --agent-toml "$BASE/agent-extra.toml" >"$out/cluster-start.log" 2>&1 ||
  { cat "$out/cluster-start.log" >&2; exit 1; }
# shellcheck disable=SC1091
source "$DIR/env.sh"
# Where the control API listens on TCP (the flood's target).
control_tcp=$(sed -n '/^\[control\]/,/^\[/s/^listen = "\(.*\)"/\1/p' "$DIR/agent.toml")

pkglibdir=$(ompi_info --path pkglibdir --parsable | sed 's/^path:pkglibdir://')
export OMPI_MCA_mca_base_component_path=$build/lib/openmpi:$pkglibdir
export OMPI_MCA_coll_switchagg_offload=on OMPI_MCA_btl=self,vader SWITCHAGG_UCX_WAIT=blocking
export SWITCHAGG_SWITCH_REJOIN_CALLS=20 UCX_LOG_LEVEL=error

now_ms() { date +%s%3N; }

# One job loop: checker and training jobs, back to back, each bounded.
jobLoop() {
  local loop=$1 n=0 kind rc t0 t1 limit
  while [[ ! -f $BASE/stop ]]; do
    n=$((n + 1))
    kind=check
    ((n % 3 == 0)) && kind=train
    limit=$((job_seconds + JOB_GRACE_S))
    t0=$(now_ms)
    set +e
    if [[ $kind == check ]]; then
      timeout -s KILL "$limit" srun --switch-agg=auto --switch-agg-slots=2 --mpi=pmix -n 2 --overcommit \
        --kill-on-bad-exit=1 -J "chaos-check-$loop" "$tools/switchagg-chaos-check" \
        --seconds "$job_seconds" --log-dir "$out/logs" >"$out/logs/loop$loop.$n.out" 2>&1
    else
      timeout -s KILL "$limit" srun --switch-agg=auto --switch-agg-slots=2 --mpi=pmix -n 2 --overcommit \
        --kill-on-bad-exit=1 -J "chaos-train-$loop" bash -c 'echo "job=$SLURM_JOB_ID"; exec "$0" "$@"' \
        "$tools/switchagg-train" --check --steps 300 --print-every 1000 \
        >"$out/logs/loop$loop.$n.out" 2>&1
    fi
    rc=$?
    set -e
    t1=$(now_ms)
    echo "job loop=$loop n=$n kind=$kind rc=$rc start=$t0 end=$t1 limit_s=$limit out=loop$loop.$n.out" >>"$out/jobs.log"
  done
}

# A running job of ours (the chaos loop picks its victims among them).
runningJob() { squeue -h -t R -o %i -n chaos-check-1,chaos-check-2,chaos-train-1,chaos-train-2 2>/dev/null | shuf -n 1 || true; }

fault() { echo "fault $(now_ms) $*" >>"$out/faults.log"; }

agentPid() { cat "$DIR/agent.pid"; }

chaosOnce() {
  local pick=$((RANDOM % 6)) job pid pause
  case $pick in
    0)  # SIGKILL, then restart 0.5 s later (systemd RestartSec=500ms)
      kill -KILL "$(agentPid)" 2>/dev/null || true
      sleep 0.5
      "$root/tests/slurm/slurm_cluster.sh" agent-start "$DIR" >/dev/null
      fault agent_kill ;;
    1)  # SIGSTOP for 1-4 s
      pause=$((1 + RANDOM % 4))
      kill -STOP "$(agentPid)"
      sleep "$pause"
      kill -CONT "$(agentPid)"
      fault agent_stop "${pause}s" ;;
    2)  # delete a running job's lease
      job=$(runningJob)
      [[ -n $job ]] || return 0
      "$CTL" lease delete --job "$job" >/dev/null 2>&1 || true
      fault lease_delete "job=$job" ;;
    3)  # kill one rank of a running job
      job=$(runningJob)
      [[ -n $job ]] || return 0
      pid=$(scontrol listpids "$job" 2>/dev/null | awk 'NR > 1 { print $1 }' | while read -r p; do
        comm=$(cat "/proc/$p/comm" 2>/dev/null || true)
        [[ $comm == switchagg-chaos || $comm == switchagg-train ]] && echo "$p"
      done | shuf -n 1)
      [[ -n $pid ]] || return 0
      kill -KILL "$pid" 2>/dev/null || true
      fault rank_kill "job=$job pid=$pid" ;;
    4)  # scancel a running job
      job=$(runningJob)
      [[ -n $job ]] || return 0
      scancel "$job" 2>/dev/null || true
      fault scancel "job=$job" ;;
    5)  # junk connections on the control API for 5 s (TCP and Unix, as nobody)
      local target
      for target in "$control_tcp" "unix:$DIR/agent.sock"; do
        setpriv --reuid=nobody --regid=nogroup --clear-groups "$tools/switchagg-test-control-flood" \
          --address "$target" --connections 200 --mode half --reopen-ms 1000 --seconds 5 >/dev/null 2>&1 &
      done
      sleep 5
      fault control_flood "200 tcp + 200 unix for 5s" ;;
  esac
}

echo "chaos soak: $minutes min, $loops job loops, seed $seed, cluster $DIR, results in $out"
for ((l = 1; l <= loops; l++)); do jobLoop "$l" & done
end=$(($(date +%s) + minutes * 60))
sleep 3
while (($(date +%s) < end)); do
  sleep "$((2 + RANDOM % 7)).$((RANDOM % 10))"
  (($(date +%s) < end)) || break
  chaosOnce
done
touch "$BASE/stop"
echo "chaos soak: chaos stopped, waiting for the running jobs to end"
# The job loops end after their current job (bounded by its timeout).
for pid in $(jobs -p); do wait "$pid" 2>/dev/null || true; done
# One clean job after the chaos: the system must still offload and answer right.
srun --switch-agg=require --switch-agg-slots=2 --mpi=pmix -n 2 --overcommit -J chaos-final \
  bash -c 'echo "job=$SLURM_JOB_ID"; exec "$0" "$@"' \
  "$tools/switchagg-chaos-check" --seconds 3 --log-dir "$out/logs" >"$out/logs/final.out" 2>&1 &&
  final_rc=0 || final_rc=$?
final_job=$(sed -n 's/^job=\([0-9]*\).*/\1/p' "$out/logs/final.out" | sed -n 1p)
# Every job has ended: its epilog must have deleted its lease.
leases_left=-1
for _ in $(seq 1 100); do
  leases_left=$("$CTL" leases --json 2>/dev/null | "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)["leases"]))' || echo -1)
  [[ $leases_left == 0 ]] && break
  sleep 0.3
done
"$CTL" leases >"$out/leases-left.txt" 2>&1 || true
"$CTL" metrics >"$out/agent-metrics.txt" 2>&1 || true
"$PY" "$here/chaos_figures.py" --out "$out" --leases-left "$leases_left" --final-rc "$final_rc" \
  --final-job "${final_job:-none}" --recovery-bound-ms "$RECOVERY_BOUND_MS" --min-switch-share "$MIN_SWITCH_SHARE" \
  --call-bound-ms "$CALL_BOUND_MS" --minutes "$minutes" --seed "$seed" --loops "$loops" | tee "$out/figures.txt"
grep -q '^verdict: PASS' "$out/figures.txt"
