#!/usr/bin/env bash
# One-round-trip completion (docs/offload.md "Completion"): small
# MPI_Allreduce (float64, 8 B - 64 KiB) and MPI_Barrier through the switch
# path as it runs now (one agent round trip, no host message) against the
# same path forced to end every call with the outcome agreement
# (SWITCHAGG_SWITCH_AGREE_EVERY_CALL=on, what every call paid before) and
# Open MPI's tuned (coll ^switchagg); interleaved runs, the median of the
# runs' p50 per size. With --fabric H: on an emulated cluster (H hosts, one
# rank each, links at --rate Mbit/s, the agent on its own host), and also
# the bytes each call put on the links between hosts (the sum of the hosts'
# tx minus what the agent's host received, from a long and a short run's
# difference, so start-up cancels). --wait: SWITCHAGG_UCX_WAIT (default
# blocking, the default of the transport). Writes --out (default
# benchmarks/results/oneshot.md, or oneshot_fabric.md).
#
#   benchmarks/oneshot_bench.sh [--build DIR] [--np "2 4"] [--reps 3]
#                               [--iters 400] [--max 64K] [--out FILE]
#                               [--fabric H [--rate 400]] [--wait blocking|busy]
#                               [--large]
# --large: 128 KiB - 4 MiB instead: every call with the agreement
# (SWITCHAGG_SWITCH_KEEP=0) against SWITCHAGG_SWITCH_KEEP=16M (one round
# trip and a copy of each result kept) - what each costs there.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build np_list="2 4" reps=3 iters=400 min=8 max=64K hosts= rate=400 out= wait=blocking large=
source "$root/benchmarks/lib/bench_args.sh"
bench_args oneshot_bench 2,17 "build np=np_list reps iters max out fabric=hosts rate wait" "large=large=1,min=128K,max=4M" "$@"
source "$root/benchmarks/lib/bench_env.sh"
bench_out oneshot "${large:+_large}"
bench_setup oneshot-bench
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 SWITCHAGG_UCX_WAIT=$wait
bench_agent oneshot-bench osb
run() {  # NP ARGS...: one job here or across the fabric (one rank per host)
  local np=$1
  shift
  bench_timeout=600 bench_mpirun "$np" --mca mpi_yield_when_idle 1 "$@"
}
# name|SWITCHAGG_SWITCH_AGREE_EVERY_CALL|mpirun arguments
paths=(
  "switch|off|--mca coll_switchagg_offload on --mca coll_switchagg_verbose 1"
  "switch+agreement|on|--mca coll_switchagg_offload on --mca coll_switchagg_verbose 1"
  "host|off|--mca coll_switchagg_offload off"
  "tuned|off|--mca coll ^switchagg"
)
if [[ -n $large ]]; then
  # "switch" with the agreement on every call (keep 0) against keep=16M:
  # one round trip and a kept copy of each result.
  paths[0]="switch|off|--mca coll_switchagg_offload on --mca coll_switchagg_verbose 1 -x SWITCHAGG_SWITCH_KEEP=0"
  paths[1]="switch-keep16M|off|--mca coll_switchagg_offload on --mca coll_switchagg_verbose 1 -x SWITCHAGG_SWITCH_KEEP=16M"
fi
# bench NP ITERS PATHARGS...: CSV rows: allreduce sizes into $work/run.csv, the barrier into bar.csv
bench() {
  local np=$1 it=$2
  shift 2
  # shellcheck disable=SC2068
  run "$np" $@ -x SWITCHAGG_AGENT -x SWITCHAGG_LEASE -x SWITCHAGG_MODE -x SWITCHAGG_UCX_WAIT \
    -x SWITCHAGG_SWITCH_AGREE_EVERY_CALL \
    "$bin/switchagg-bench" --dtype float64 --min "$min" --max "$max" --iters "$it" --csv - >"$work/run.csv" 2>"$work/run.err" ||
    { cat "$work/run.err" "$work/run.csv" >&2; exit 1; }
  run "$np" $@ -x SWITCHAGG_AGENT -x SWITCHAGG_LEASE -x SWITCHAGG_MODE -x SWITCHAGG_UCX_WAIT \
    -x SWITCHAGG_SWITCH_AGREE_EVERY_CALL \
    "$bin/switchagg-bench" --coll barrier --min 8 --max 8 --iters "$it" --csv - >"$work/bar.csv" 2>>"$work/run.err" ||
    { cat "$work/run.err" "$work/bar.csv" >&2; exit 1; }
}
declare -A samples wire
for np in $np_list; do
  for rep in $(seq 1 "$reps"); do
    for p in "${paths[@]}"; do
      IFS='|' read -r name agree args <<<"$p"
      export SWITCHAGG_SWITCH_AGREE_EVERY_CALL=$agree
      bench "$np" "$iters" "$args"
      if [[ $name == switch* ]] && ! cat "$work/run.err" "$work/run.csv" | grep "joined switch group" >/dev/null; then
        cat "$work/run.err" >&2; echo "oneshot_bench: the $name run did not join the agent" >&2; exit 1
      fi
      while IFS=, read -r _ _ _ _ bytes _ _ _ _ _ _ _ _ _ p50 _; do
        [[ $bytes =~ ^[0-9]+$ ]] && samples[$np,$name,$bytes]+="$p50 "
      done <"$work/run.csv"
      p50=$(awk -F, '$5 ~ /^[0-9]+$/ { print $15; exit }' "$work/bar.csv")
      [[ -n $p50 ]] && samples[$np,$name,barrier]+="$p50 "
      echo "np=$np rep=$rep $name done" >&2
    done
  done
  if [[ -n $hosts && -z $large ]]; then
    # Host-to-host bytes per 8-byte call: a long and a short run, differenced.
    for p in "${paths[@]}"; do
      IFS='|' read -r name agree args <<<"$p"
      export SWITCHAGG_SWITCH_AGREE_EVERY_CALL=$agree
      for coll in allreduce barrier; do
        per=()
        for it in 100 1100; do
          b0=$(fabric_host_bytes)
          # shellcheck disable=SC2086
          run "$np" $args -x SWITCHAGG_AGENT -x SWITCHAGG_LEASE -x SWITCHAGG_MODE -x SWITCHAGG_UCX_WAIT \
            -x SWITCHAGG_SWITCH_AGREE_EVERY_CALL "$bin/switchagg-bench" --coll "$coll" --dtype float64 \
            --min 8 --max 8 --iters "$it" --warmup 0 >/dev/null 2>&1
          per+=($(( $(fabric_host_bytes) - b0 )))
        done
        wire[$np,$name,$coll]=$(awk -v a="${per[0]}" -v b="${per[1]}" 'BEGIN { printf "%.1f", (b - a) / 1000 }')
      done
    done
  fi
done
sizes=$(for k in "${!samples[@]}"; do echo "${k##*,}"; done | grep -v barrier | sort -un)
{
  title="small allreduce and barrier"
  [[ -n $large ]] && title="calls above the keep limit"
  where="one node"
  [[ -n $hosts ]] && where="emulated cluster, $hosts hosts × 1 rank"
  echo "# One-round-trip completion, $title: $where"
  echo
  echo "Measured $(date -u '+%Y-%m-%d %H:%M UTC') on $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg);"
  if [[ -n $hosts ]]; then
    echo "an emulated cluster of $hosts hosts (one rank each, links shaped to $rate Mbit/s, TCP, the agent"
    echo "on its own emulated host). Command: \`benchmarks/oneshot_bench.sh --fabric $hosts --rate $rate --reps $reps --iters $iters --wait $wait${large:+ --large}\`"
  else
    echo "one machine (ranks and the agent share the cores; UCX over loopback to the agent, vader"
    echo "between ranks). Command: \`benchmarks/oneshot_bench.sh --np \"$np_list\" --reps $reps --iters $iters --wait $wait${large:+ --large}\`"
  fi
  echo
  echo "switchagg-bench p50 (µs per call on the slowest rank's median), float64 sum, median of $reps"
  echo "interleaved runs; \`mpi_yield_when_idle 1\` (ranks that spin on 2 shared cores"
  echo "measure the scheduler, FIELD_NOTES). Columns: *switch* = the switch path now (one agent"
  echo "round trip); *+agreement* = the same with SWITCHAGG_SWITCH_AGREE_EVERY_CALL=on (every"
  echo "call also runs the one-byte outcome allgather, as every call did before); *host* ="
  echo "switchagg's own host algorithms (offload off, the cost model's pick); *tuned* = Open"
  echo "MPI's own (coll ^switchagg)."
  for np in $np_list; do
    echo
    echo "np $np:"
    echo
    second=${paths[1]%%|*}
    echo "| size | switch | $second | host | tuned | switch / $second | switch / host | switch / tuned |"
    echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
    for key in $sizes barrier; do
      s=$(bench_median <<<"${samples[$np,switch,$key]:-}") a=$(bench_median <<<"${samples[$np,$second,$key]:-}")
      t=$(bench_median <<<"${samples[$np,tuned,$key]:-}") h=$(bench_median <<<"${samples[$np,host,$key]:-}")
      [[ -n $s && -n $a && -n $t && -n $h ]] || continue
      label=$key
      [[ $key != barrier ]] && label="$key B"
      echo "| $label | $s | $a | $h | $t | $(bench_ratio "$s" "$a") | $(bench_ratio "$s" "$h") | $(bench_ratio "$s" "$t") |"
    done
    if [[ -n $hosts && -z $large ]]; then
      echo
      echo "Bytes per 8-byte call on the links between hosts (all hosts together; measured:"
      echo "the hosts' tx minus the agent host's rx, 1100 calls minus 100 calls, / 1000):"
      echo
      echo "| path | allreduce | barrier |"
      echo "| --- | --- | --- |"
      for p in "${paths[@]}"; do
        name=${p%%|*}
        echo "| $name | ${wire[$np,$name,allreduce]} | ${wire[$np,$name,barrier]} |"
      done
    fi
  done
  echo
  echo "Theory: the switch path's call is one agent round trip (2 link latencies + the agent's"
  echo "turnaround), whatever p; the agreement adds a host allgather (⌈log2 p⌉ rounds of small"
  echo "messages, ~ a host allreduce of the same small vector); tuned's allreduce and barrier"
  echo "are ⌈log2 p⌉ host rounds, as are switchagg's host algorithms (recursive doubling for small"
  echo "calls). Between hosts the switch path now sends nothing (0 B per call"
  echo "expected); with the agreement each host sends its share of the allgather."
} >"$out"
cat "$out"
