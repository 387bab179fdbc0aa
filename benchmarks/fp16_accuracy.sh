#!/usr/bin/env bash
# The accuracy of 16-bit float sums (issue 46): benchmarks/fp16_accuracy.cc
# (MPIX_C_FLOAT16 SUM, random inputs of mixed magnitude, each element's
# distance in fp16 ulps from the exactly rounded sum) at every np of --np,
# on one node, through every switchagg path in turn, under MPICH 4.0.2 with
# the PMPI library (the same core as the Open MPI component): the host
# algorithms forced one by one (hierarchical on emulated nodes of 4 ranks),
# the switch path with every rank a member (one rank per emulated node),
# with node leaders (one node: blocking below and above the pipeline's
# threshold, 1 Mi elements, and MPI_Iallreduce; emulated nodes of 4
# ranks: a leader per node, each node's sum rounded, then the agent's) and
# over two
# stripes (two agents, one rank per emulated node). Then MPICH's own (no
# library: it aborts on the type) and, with --ompi5, Open MPI 5.0's own
# (the Debian 13 root of scripts/debian13_root.sh; the program compiled
# there with its mpicxx, switchagg not loaded). Accuracy, not time: np 16
# on 2 cores is oversubscribed on purpose. --before LIB: the host
# algorithms once more with another build's PMPI library (labels
# <algorithm>_before; e.g. a build from before they kept fp32 partials).
# Raw lines go to benchmarks/results/fp16_accuracy_raw/one_node.txt (and
# ompi5.txt).
#
#   benchmarks/fp16_accuracy.sh [--build DIR] [--np "4 8 16"] [--count 65536]
#                               [--iters 4] [--ompi5] [--before LIB]
#   benchmarks/fp16_accuracy.sh --speed H [--rate 400] [--reps 3] [--calls 5]
#   benchmarks/fp16_accuracy.sh --fabric H [--ppn "1 2 4"] [--count 65536] [--iters 4]
#
# --speed H: time instead (fp16_accuracy --time): fp16 against fp32
# MPI_Allreduce of the same element count, 512 Ki - 4 Mi elements (fp16
# 1 - 8 MiB), on an emulated cluster of H hosts, one rank each, links at
# --rate Mbit/s, the agent in the switch (its link H times a host's), MPICH
# with the PMPI library: the switch path and the ring; every repetition runs
# every cell once (the order rotating), the median over reps of each run's
# median call (the slowest rank's). The switch path's runs force the
# allreduce onto the switch with offload auto, so the barriers between
# timed calls stay on the host. Raw lines: fp16_speed_raw/fabric.txt.
#
# --fabric H: accuracy on an emulated cluster of H hosts (network
# namespaces, --rate Mbit/s links, the agent in the switch) at each ranks-
# per-host of --ppn (p = H x ppn): the host algorithms forced one by one
# (hierarchical where ppn > 1) and the switch path (every rank a member at
# ppn 1, node leaders above), MPICH with the PMPI library, real hosts'
# layouts instead of SWITCHAGG_NODE_NAME. Raw lines:
# fp16_accuracy_raw/fabric.txt.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build np_list="4 8 16" count=65536 iters=4 ompi5='' before='' hosts='' rate=400 reps=3 calls=5
fab_hosts='' ppn_list="1 2 4"
source "$root/benchmarks/lib/bench_args.sh"
bench_args fp16_accuracy 2,44 "build np=np_list count iters before speed=hosts rate reps calls fabric=fab_hosts ppn=ppn_list" \
  "ompi5=ompi5=1" "$@"
source "$root/benchmarks/lib/bench_env.sh"
# accuracy_cell NP LABEL OUT ENV... -- [PREFIX...] PROGRAM [OPTIONS...]: one
# run, its raw line appended to OUT (and shown); a run without its line
# prints its log and ends the script. (Across hosts a run may "fail" after
# its line: --no-finalize.)
accuracy_cell() {
  local np=$1 label=$2 out=$3
  shift 3
  if ! bench_mpich_run "$np" "$@" --label "$label" --out "$out" >"$work/run.log" 2>&1 &&
    ! grep -q '^fp16_accuracy' "$work/run.log"; then
    cat "$work/run.log" >&2
    echo "fp16_accuracy: $label np $np failed" >&2
    exit 1
  fi
  grep '^fp16_accuracy' "$work/run.log" >&2
}
# fabric_setup JOB FABRIC RAWDIR TIMEOUT [NOTE]: the emulated cluster of
# $hosts hosts with the agent in the switch, its lease in lease=(), the raw
# file $rawf started with the date, the hosts and the load.
fabric_setup() {
  bench_setup "$1" "$3"
  prog=$bin/mpich/fp16_accuracy lib=$build/lib/libswitchagg_pmpi.so
  bench_need "$prog" "$bin/switchagg-agent" "$bin/switchagg-ctl"
  export SWITCHAGG_UCX_WAIT=blocking BENCH_MPICH_TIMEOUT=${BENCH_MPICH_TIMEOUT:-$4}
  bench_agent "$1" "$2"
  lease=(SWITCHAGG_AGENT="$SWITCHAGG_AGENT" SWITCHAGG_LEASE="$SWITCHAGG_LEASE" SWITCHAGG_MODE="$SWITCHAGG_MODE")
  rawf=$raw/fabric.txt
  echo "# $(date -u '+%F %H:%M') UTC, $hosts hosts at $rate Mbit/s${5:+, $5}, load $(cut -d' ' -f1-3 /proc/loadavg)" >"$rawf"
}
if [[ -n $fab_hosts ]]; then
  hosts=$fab_hosts
  fabric_setup fp16-fabric f17 fp16_accuracy_raw 600 "ppn $ppn_list"
  for ppn in $ppn_list; do
    np=$((hosts * ppn))
    algs=(ring recursive_doubling rabenseifner)
    ((ppn > 1)) && algs+=(hierarchical)
    algs+=(switch)
    for a in "${algs[@]}"; do
      envs=(LD_PRELOAD="$lib" SWITCHAGG_VERBOSE=1 SWITCHAGG_ALLREDUCE_ALGORITHM="$a")
      label=$a
      if [[ $a == switch ]]; then
        envs+=(SWITCHAGG_OFFLOAD=on "${lease[@]}")
        label=switch_members
        ((ppn > 1)) && label=switch_leaders
      else
        envs+=(SWITCHAGG_OFFLOAD=off)
      fi
      echo "== np $np ($hosts hosts x $ppn) $label" >&2
      # --no-finalize: MPICH 4.0.2 across hosts may never leave MPI_Finalize
      # (fp16_accuracy.cc).
      BENCH_PPN=$ppn accuracy_cell "$np" "$label" "$rawf" "${envs[@]}" -- "$prog" --count "$count" \
        --iters "$iters" --no-finalize
      # The layout must be the hosts' (the switch's join names the nodes).
      if [[ $label == switch_leaders ]] && ! grep -q "node leaders for $np ranks" "$work/run.log"; then
        cat "$work/run.log" >&2; echo "fp16_accuracy --fabric: no node leaders at ppn $ppn" >&2; exit 1
      fi
    done
  done
  echo "# load after $(cut -d' ' -f1-3 /proc/loadavg)" >>"$rawf"
  cat "$rawf"
  exit 0
fi
if [[ -n $hosts ]]; then
  fabric_setup fp16-speed f16 fp16_speed_raw 60
  cells=()
  for n in 524288 1048576 2097152 4194304; do
    for path in switch ring; do
      for d in float16 float32; do cells+=("$n $path $d"); done
    done
  done
  for rep in $(seq 1 "$reps"); do
    for i in "${!cells[@]}"; do
      read -r n path d <<<"${cells[$(((i + rep) % ${#cells[@]}))]}"
      envs=(LD_PRELOAD="$lib" SWITCHAGG_VERBOSE=1 SWITCHAGG_ALLREDUCE_ALGORITHM="$path")
      if [[ $path == switch ]]; then envs+=(SWITCHAGG_OFFLOAD=auto "${lease[@]}"); else envs+=(SWITCHAGG_OFFLOAD=off); fi
      f32=()
      [[ $d == float32 ]] && f32=(--float32)
      if ! bench_mpich_run "$hosts" "${envs[@]}" -- "$prog" --count "$n" --time "$calls" --no-finalize "${f32[@]}" \
        --label "rep$rep-$path" >"$work/run.log" 2>&1 && ! grep -q '^fp16_time' "$work/run.log"; then
        cat "$work/run.log" >&2
        echo "fp16_accuracy --speed: $path $d $n failed" >&2
        exit 1
      fi
      grep '^fp16_time' "$work/run.log" | tee -a "$rawf" >&2
    done
  done
  echo "# load after $(cut -d' ' -f1-3 /proc/loadavg)" >>"$rawf"
  cat "$rawf"
  exit 0
fi
bench_setup fp16-accuracy fp16_accuracy_raw
mbin=$bin/mpich
lib=$build/lib/libswitchagg_pmpi.so
prog=$mbin/fp16_accuracy
emu=$root/tests/mpi/emulate_nodes.sh
bench_need "$prog" "$bin/switchagg-agent" "$bin/switchagg-ctl"
[[ -e $lib ]] || { echo "fp16_accuracy: $lib not built" >&2; exit 1; }
export SWITCHAGG_UCX_WAIT=blocking
raw_one=$raw/one_node.txt
: >"$raw_one"

# Two agents: a (one agent's lease) and b; a fabric map naming both and a
# lease over both (two stripes).
mkdir -p "$work/a" "$work/b"
agent_start "$root/config/agent.toml" "$work/a" --set agent.log_level=warn || exit 1
first_pid=$AGENT_PID first_socket=$AGENT_SOCKET
trap 'agent_stop; kill "$first_pid" 2>/dev/null; rm -rf "$work"' EXIT
bench_lease fp16-one 16
one=(SWITCHAGG_AGENT="$SWITCHAGG_AGENT" SWITCHAGG_LEASE="$SWITCHAGG_LEASE" SWITCHAGG_MODE="$SWITCHAGG_MODE")
agent_start "$root/config/agent.toml" "$work/b" --set agent.log_level=warn || exit 1
printf '[[agent]]\nname = "a"\ncontrol = "unix:%s"\nnodes = "n1"\n\n[[agent]]\nname = "b"\ncontrol = "unix:%s"\nnodes = "n2"\n' \
  "$first_socket" "$AGENT_SOCKET" >"$work/fabric.toml"
out=$("$bin/switchagg-ctl" lease create --job fp16-stripes --slots 16 --ttl 2h --nodes 'n[1-2]' \
  --fabric "$work/fabric.toml") || { echo "striped lease: $out" >&2; exit 1; }
eval "$(grep '^export ' <<<"$out")"
two=(SWITCHAGG_AGENT="$SWITCHAGG_AGENT" SWITCHAGG_LEASE="$SWITCHAGG_LEASE" SWITCHAGG_MODE="$SWITCHAGG_MODE")

# label|environment|program prefix|program options
host="LD_PRELOAD=$lib SWITCHAGG_OFFLOAD=off SWITCHAGG_VERBOSE=1 SWITCHAGG_ALLREDUCE_ALGORITHM"
switch="LD_PRELOAD=$lib SWITCHAGG_OFFLOAD=on SWITCHAGG_VERBOSE=1 SWITCHAGG_ALLREDUCE_ALGORITHM=switch"
paths=(
  "ring|$host=ring||"
  "recursive_doubling|$host=recursive_doubling||"
  "rabenseifner|$host=rabenseifner||"
  "hierarchical|$host=hierarchical|$emu 4|"
  "switch_members|$switch ${one[*]}|$emu 1|"
  "switch_leaders|$switch ${one[*]}||"
  "switch_leaders_pipelined|$switch ${one[*]}||--count 1048576 --iters 1"
  "switch_leaders_iallreduce|$switch ${one[*]}||--nonblocking"
  "switch_leaders_nodes4|$switch ${one[*]}|$emu 4|"
  "switch_stripes|$switch ${two[*]}|$emu 1|"
)
if [[ -n $before ]]; then
  old="LD_PRELOAD=$before SWITCHAGG_OFFLOAD=off SWITCHAGG_VERBOSE=1 SWITCHAGG_ALLREDUCE_ALGORITHM"
  for a in ring recursive_doubling rabenseifner; do paths+=("${a}_before|$old=$a||"); done
  paths+=("hierarchical_before|$old=hierarchical|$emu 4|")
fi
for np in $np_list; do
  for p in "${paths[@]}"; do
    IFS='|' read -r name envs pre opts <<<"$p"
    # shellcheck disable=SC2206
    envs=($envs) pre=($pre) opts=($opts)
    echo "== np $np $name" >&2
    # (options given last win over --count and --iters)
    accuracy_cell "$np" "$name" "$raw_one" "${envs[@]}" -- "${pre[@]}" "$prog" --count "$count" \
      --iters "$iters" "${opts[@]}"
    if [[ $name == switch_stripes ]] && ! grep -q "2 stripe(s)" "$work/run.log"; then
      cat "$work/run.log" >&2; echo "fp16_accuracy: $name did not cut 2 stripes" >&2; exit 1
    fi
  done
done
# MPICH's own: no library.
echo "== MPICH 4.0.2's own (no library), np 4" >&2
if bench_mpich_run 4 -- "$prog" --count "$count" --iters 1 --label mpich --out "$raw_one" \
  >"$work/mpich.log" 2>&1; then
  echo "mpich: served" >>"$raw_one"
else
  echo "mpich: failed: $(grep -m1 -o 'Assertion failed in file [^ ]*' "$work/mpich.log" || tail -1 "$work/mpich.log")" |
    tee -a "$raw_one" >&2
fi

if [[ -n $ompi5 ]]; then
  raw5=$raw/ompi5.txt
  : >"$raw5"
  d13=$build/debian13-fp16
  mkdir -p "$d13"
  "$root/scripts/debian13_root.sh" --run "
    set -e
    mpicxx -O2 -std=c++17 -I'$root/mpi_coll/include' '$root/benchmarks/fp16_accuracy.cc' \
      -o '$d13/fp16_accuracy' -ldl
    ompi_info --version | sed -n 1p >>'$raw5'
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    for np in $np_list; do
      for c in 'tuned|--mca coll ^han' 'tuned_ring|--mca coll ^han --mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm 4' \
               'tuned_rabenseifner|--mca coll ^han --mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm 6' \
               'tuned_recursive_doubling|--mca coll ^han --mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm 3'; do
        name=\${c%%|*} args=\${c#*|}
        timeout -s KILL 600 mpirun --oversubscribe --bind-to none --mca pml ob1 --mca btl self,vader \
          \$args -np \$np '$d13/fp16_accuracy' --count $count --iters $iters --label ompi5_\$name \
          --out '$raw5'
      done
    done" >&2
fi
cat "$raw_one" ${ompi5:+"$raw/ompi5.txt"}
