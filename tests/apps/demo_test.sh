#!/usr/bin/env bash
# demo_test.sh CASE: scripts/demo.sh (the main job) end to end with small
# sizes, real agent, mpirun or Slurm cluster (label apps). Needs
# SWITCHAGG_BUILD_DIR (a built tree; the demo runs with --no-build).
#   run, slurm       the demo (--slurm) finishes; its summary has both paths
#                    at every size, the switch path with offload on, the path
#                    offload=auto settled on at every size and auto's median
#                    time within 2x the better of on and off, a final
#                    loss for both training runs (and for slurm, the lease the
#                    plugin created and deleted); CSVs and PNG plots in --out;
#                    nothing it started is left running
#   options          --help documents every option the parser takes; an
#                    unknown option or a missing value is refused, naming it
#   fabric           demo --fabric (emulated 4-host cluster) finishes: both
#                    ranks-per-host tables with every path and the theory, the
#                    bytes per host link (switch 1.00 N at 1 rank per host),
#                    both training runs, the reducer-hosts table (K = 1 and
#                    K = 4 against the ring, with the theory), plots; the
#                    fabric, its agents and its links are gone afterwards
#   fabric_interrupt SIGINT to demo --fabric's process group while an MPI job
#                    runs: exits non-zero within 60 s, the fabric is gone
#   interrupt,       SIGINT to the demo's process group (what Ctrl-C does)
#   slurm_interrupt  while its first MPI job runs: it exits non-zero within
#                    60 s, no process it started is left, its temp dir is gone
# A process "of the demo" has its temp dir in its environment (the demo's
# SWITCHAGG_DEMO_WORK marker, the cluster's SLURM_CONF) or command line; never
# matched by name alone
# (other engineers' agents and clusters run on the same machine).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
case=${1:?usage: $0 run|slurm|fabric|interrupt|slurm_interrupt|fabric_interrupt}
export SWITCHAGG_BUILD_DIR=${SWITCHAGG_BUILD_DIR:?a built build directory}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# The Slurm fixture's watchdog: a cluster of a killed test goes after 10 min.
export SWITCHAGG_CLUSTER_MAX_S=${SWITCHAGG_CLUSTER_MAX_S:-600}
t=$(mktemp -d /tmp/switchagg-apps-test.XXXXXX)
log=$t/demo.log pid="" work=""

fail() {
  echo "FAIL $case: $*" >&2
  [[ -f $log ]] && { echo "--- demo output (last 40 lines):" >&2; tail -40 "$log" >&2; }
  exit 1
}
onExit() {
  local rc=$?
  set +e
  if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then kill -TERM -- "-$pid" 2>/dev/null; wait "$pid" 2>/dev/null; fi
  rm -rf "$t"
  exit "$rc"
}
trap onExit EXIT

running() {  # running PID: alive and not a zombie
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  [[ ${stat%% *} != Z ]]
}
# "PID COMM" of every live process of the demo whose temp dir is $1.
demoProcesses() {
  local f p
  for f in $(grep -lsaF "$1" /proc/[0-9]*/environ /proc/[0-9]*/cmdline); do
    p=${f#/proc/}
    p=${p%/*}
    [[ $p == "$$" || $p == "$BASHPID" ]] && continue
    if running "$p"; then echo "$p $(cat "/proc/$p/comm" 2>/dev/null)"; fi
  done | sort -un
}
workDir() { { sed -n 's/^work dir \(\/tmp\/switchagg-demo\.[A-Za-z0-9]*\)$/\1/p' "$log" 2>/dev/null || true; } | sed -n 1p; }
nothingLeft() {
  [[ -n $work ]] || fail "the demo did not print its work dir"
  local left
  left=$(demoProcesses "$work")
  [[ -z $left ]] || fail "processes of the demo still running after it exited: $(tr "\n" " " <<<"$left")"
  [[ ! -e $work ]] || fail "the demo left its temp dir $work"
}

# Bytes -> the summary's size column (8, 1K, 64K, 4M).
human() { local b=$1; ((b >= 1048576)) && echo "$((b / 1048576))M" && return; ((b >= 1024)) && echo "$((b / 1024))K" || echo "$b"; }

checkSummary() {
  local s=$t/screen out=$t/out size row on off auto rows=0 switched=0 f
  sed 's/\x1b\[[0-9;]*m//g' "$log" >"$s"
  grep -q '^switchagg demo summary (np=4)$' "$s" || fail "no summary screen"
  for ((size = 8; size <= 65536; size *= 2)); do
    row=$(grep -E "^$(human "$size") +\|" "$s") || fail "no summary row for $(human "$size")"
    on=$(awk -F'|' '{ split($2, a, " "); print a[1] }' <<<"$row")
    off=$(awk -F'|' '{ split($3, a, " "); print a[1] }' <<<"$row")
    [[ -n $on && -n $off && $on != n/a && $off != n/a ]] || fail "row without a path on both runs: $row"
    [[ $off != switch ]] || fail "offload=off ran the switch path: $row"
    [[ $on == switch ]] && switched=$((switched + 1))
    # offload=auto: the path online tuning settled on (the component's
    # last-algorithm diagnostic after the timed calls), a real one.
    auto=$(awk -F'|' '{ split($5, a, " "); print a[1] }' <<<"$row")
    [[ $auto =~ ^(switch|ring|recursive_doubling|rabenseifner|hierarchical|previous)$ ]] ||
      fail "no path for offload=auto in: $row"
    rows=$((rows + 1))
  done
  ((switched > 0)) || fail "offload=on never took the switch path"
  # The promise of auto: never much slower than the better of on and off
  # (its median over the sizes within 2x; noise on shared cores is 10-30 %).
  local ratio
  ratio=$(sed -n 's/^auto\/best over [0-9]* sizes: median \([0-9.]*\), worst .*/\1/p' "$s")
  [[ -n $ratio ]] || fail "no auto/best line in the summary"
  awk -v r="$ratio" 'BEGIN { exit !(r <= 2.0) }' || fail "offload=auto's median time is ${ratio}x the better of on and off"
  [[ -s $out/bench-auto.csv ]] || fail "no bench-auto.csv in $out"
  # Beside allreduce: MPI_Barrier and MPI_Reduce_scatter_block, through the
  # agent with offload on (every timed call), Open MPI's own with it off,
  # every result checked.
  grep -Eq '^  - +\| switch +[0-9.]+ \| previous +[0-9.]+ \| +[0-9.]+ \| ok/ok$' "$s" ||
    fail "no MPI_Barrier row served by the switch (on) and the previous module (off)"
  for size in 4K 256K; do
    grep -Eq "^  $size +\| switch +[0-9.]+ \| previous +[0-9.]+ \| +[0-9.]+ \| ok/ok\$" "$s" ||
      fail "no MPI_Reduce_scatter_block row at $size served by the switch (on) and previous (off)"
  done
  grep -Eq '^train \(offload=on\): time per step: .*final loss: [0-9.]+$' "$s" || fail "no final loss for offload=on"
  grep -Eq '^train \(offload=off\): time per step: .*final loss: [0-9.]+$' "$s" || fail "no final loss for offload=off"
  grep -Eq 'switchagg_groups_created_total=[1-9]' "$s" || fail "the agent created no aggregation group"
  grep -q "^logs and CSV: $out\$" "$s" || fail "summary does not name the out dir"
  for f in bench-switch.csv bench-host.csv loss-switch.csv loss-host.csv \
    barrier-switch.csv reduce_scatter_block-switch.csv; do
    [[ -s $out/$f ]] || fail "no $f in $out"
  done
  for f in allreduce_latency.png allreduce_busbw.png; do
    [[ $(head -c 4 "$out/$f" 2>/dev/null | tail -c 3) == PNG ]] || fail "no PNG plot $f in $out"
    grep -q "^plots: .*$out/$f" "$s" || fail "summary does not name the plot $f"
  done
  echo "summary: $rows sizes, switch path at $switched of them"
}

checkSlurmLines() {
  local s=$t/screen name
  for name in bench train; do
    grep -Eq "^  job [0-9]+ $name --switch-agg=require: SWITCHAGG_MODE=require, token \(32 chars\), agent [0-9.]+:[0-9]+; lease created: uid 0 slots 8 .*; deleted at job end$" "$s" ||
      fail "no line saying the plugin created and deleted $name's lease"
    grep -Eq "^  job [0-9]+ $name --switch-agg=off: SWITCHAGG_MODE=off, no token, no lease$" "$s" ||
      fail "no line saying $name's host run had no lease"
  done
}

runCase() {  # runCase [--slurm]
  local rc=0
  "$root/scripts/demo.sh" "$@" --no-build --max 64K --iters 50 --steps 20 --out "$t/out" >"$log" 2>&1 || rc=$?
  work=$(workDir)
  ((rc == 0)) || fail "demo exited with $rc"
  checkSummary
  [[ ${1:-} == --slurm ]] && checkSlurmLines
  nothingLeft
}

# Waits (up to 240 s) until ranks of the demo's first MPI job run.
waitForRanks() {
  local end=$((SECONDS + 240)) p
  while ((SECONDS < end)); do
    kill -0 "$pid" 2>/dev/null || fail "the demo ended before its MPI job ran"
    work=$(workDir)
    for p in $(pgrep -x switchagg-bench); do
      [[ -n $work ]] && grep -qsxzF "SWITCHAGG_DEMO_WORK=$work" "/proc/$p/environ" && return 0
    done
    sleep 0.2
  done
  fail "no switchagg-bench rank of the demo within 240 s"
}

# The fabric demo's fabric (name dm), its bridge ports and its agent are gone.
fabricGone() {
  [[ ! -e /run/switchagg-fabric/dm ]] || fail "the fabric's state /run/switchagg-fabric/dm is left"
  ! ip -o link show | grep ': dms0' >/dev/null || fail "the fabric's bridge or ports are left"
  ! grep -lsaF "switchagg-demo-fabric." /proc/[0-9]*/cmdline >/dev/null ||
    fail "a process of the fabric demo is left: $(grep -lsaF switchagg-demo-fabric. /proc/[0-9]*/cmdline | sed -n 1,3p)"
}

fabricCase() {
  "$root/scripts/demo.sh" --fabric --no-build --max 1M --steps 20 --out "$t/out" >"$log" 2>&1 ||
    fail "demo --fabric exited non-zero"
  local ppn
  for ppn in 1 2; do
    grep -q "^$ppn rank(s) per host" "$log" || fail "no table for $ppn rank(s) per host"
    grep -Eq "^  1 MiB +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ \| +[0-9.]+ +[0-9.]+$" "$log" ||
      fail "no 1 MiB row with every path and the theory"
    [[ -s $t/out/ppn$ppn/allreduce_latency.png ]] || fail "no plot for $ppn rank(s) per host"
  done
  grep -Eq "switch 1\.0[0-9] / 1\.00 +ring 1\.5[0-9] / 1\.50" "$log" ||
    fail "bytes per host link at 1 rank per host should be N for the switch path and 1.5 N for the ring"
  [[ $(grep -c '^train (offload=\(on\|off\)): time per step.*final loss' "$log") -eq 2 ]] ||
    fail "both training runs should report time per step and a final loss"
  # The other deployment: K = 1 and K = 4 reducer hosts against the ring,
  # each ratio beside its theory (2.67 and 0.67 at 4 hosts).
  grep -A2 'reducer hosts: agents on K ordinary hosts' "$log" |
    grep -Eq "^  1 MiB +[0-9.]+ +[0-9.]+ +[0-9.]+ \| +[0-9.]+ +2\.67 \| +[0-9.]+ +0\.67$" ||
    fail "no reducer-hosts table with K = 1, K = 4, the ring and the theory"
  fabricGone
  echo "demo --fabric: $(grep -m1 'bytes on each host link' "$log" | sed 's/^ *//')"
}

# startDemo ARGS...: demo.sh ARGS in the background ($pid), in a process
# group of its own as a terminal's foreground job is; its output in $log.
startDemo() {
  set -m
  "$root/scripts/demo.sh" "$@" --no-build --out "$t/out" >"$log" 2>&1 &
  pid=$!
  set +m
}

# interruptDemo WHAT: SIGINT to the demo's process group; it (WHAT in the
# messages) ends within 60 s, not with 0, and says it was interrupted. Sets
# the caller's start (when) and rc (its exit code).
interruptDemo() {
  start=$SECONDS
  kill -INT -- "-$pid"
  while kill -0 "$pid" 2>/dev/null && ((SECONDS - start < 60)); do sleep 0.2; done
  kill -0 "$pid" 2>/dev/null && fail "$1 still runs 60 s after SIGINT"
  wait "$pid" || rc=$?
  pid=""
  ((rc != 0)) || fail "$1 exited 0 after SIGINT"
  grep -q 'demo: interrupted' "$log" || fail "the demo did not say it was interrupted"
}

fabricInterruptCase() {
  local rc=0 start
  startDemo --fabric
  for _ in $(seq 1 600); do grep -q 'switchagg-bench --check' "$log" && break; sleep 0.1; done
  grep -q 'switchagg-bench --check' "$log" || fail "the demo never started its first MPI job"
  sleep 2
  interruptDemo "demo --fabric"
  fabricGone
  echo "interrupted: exit $rc after $((SECONDS - start)) s; fabric, agent and links gone"
}

interruptCase() {  # interruptCase [--slurm]
  local before want p comm rc=0 start
  # Default sizes: the first job runs long enough to be interrupted.
  startDemo "$@"
  waitForRanks
  sleep 1
  before=$(demoProcesses "$work")
  want="switchagg-agent mpirun"
  [[ ${1:-} == --slurm ]] && want="switchagg-agent srun slurmctld slurmd slurmstepd"
  for comm in $want; do
    grep -q " $comm\$" <<<"$before" || fail "no $comm of the demo running before the interrupt: $(tr "\n" " " <<<"$before")"
  done
  interruptDemo "the demo"
  while read -r p comm; do
    running "$p" && fail "$comm (pid $p) of the demo still runs after it exited"
  done <<<"$before"
  nothingLeft
  echo "interrupted: exit $rc after $((SECONDS - start)) s; stopped: $(awk '{ print $2 }' <<<"$before" | sort | uniq -c | xargs)"
}

optionsCase() {
  local demo=$root/scripts/demo.sh help opt out rc
  help=$("$demo" --help) || fail "--help failed"
  for opt in $(grep -oE '^ +(-h\|)?--[a-z-]+\)' "$demo" | grep -oE -- '--[a-z-]+'); do
    grep -qE -- "^  $opt( |,|$)|, $opt " <<<"$help" || fail "--help does not document $opt"
  done
  grep -qE -- "^  -h, --help" <<<"$help" || fail "--help does not document itself"
  rc=0; out=$("$demo" --frobnicate 2>&1) || rc=$?
  ((rc == 2)) && grep -q "unknown option '--frobnicate'" <<<"$out" || fail "unknown option: rc $rc, '$out'"
  rc=0; out=$("$demo" --max 2>&1) || rc=$?
  ((rc == 2)) && grep -q -- "--max needs a value" <<<"$out" || fail "missing value: rc $rc, '$out'"
}

case $case in
  options) optionsCase ;;
  fabric) fabricCase ;;
  fabric_interrupt) fabricInterruptCase ;;
  run) runCase ;;
  slurm) runCase --slurm ;;
  interrupt) interruptCase ;;
  slurm_interrupt) interruptCase --slurm ;;
  *) echo "unknown case $case" >&2; exit 2 ;;
esac
echo "PASS $case"
