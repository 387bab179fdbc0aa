#!/usr/bin/env bash
# The node's local phases over shared memory or over the NIC's loopback
# (issue 45): on one node, NP ranks, the hierarchical algorithm (its local
# reduce and broadcast are the whole call on one node) and the switch path
# with node leaders (the local reduce to the leader and the broadcast back,
# around the leader's agent call), each with
#   sentinel  SWITCHAGG_UCX_FAILURE_DETECTION=sentinel: plain lanes, UCX
#             keeps its shared-memory transports (what `node` gives ranks
#             of one node, the default with an RDMA device)
#   peer      SWITCHAGG_UCX_FAILURE_DETECTION=peer: error handling on every
#             lane, which makes UCX 1.13 drop shared memory: ranks of one
#             node talk through the network's loopback (TCP loopback here,
#             standing in for a RoCE NIC's)
# and the ring under both as a reference. switchagg-bench (float32 sum),
# interleaved repetitions, medians of the per-size p50. Writes
# benchmarks/results/node_local.md.
#
#   benchmarks/node_local_bench.sh [--build DIR] [--np 4] [--reps 3] [--min 64K] [--max 8M] [--out FILE]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build np=4 reps=3 min=64K max=8M
out=$root/benchmarks/results/node_local.md
source "$root/benchmarks/lib/bench_args.sh"
bench_args node_local_bench 2,17 "build np reps min max out" "" "$@"
source "$root/benchmarks/lib/bench_env.sh"
bench_setup node-local-bench "$(basename "$out" .md)_raw" fresh
bench_agent node-local ""
export SWITCHAGG_UCX_WAIT=blocking OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

agent_bytes_in() {
  "$bin/switchagg-ctl" --agent "unix:$AGENT_SOCKET" --json status |
    /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["counters"]["bytes_in"])'
}
paths=(
  "hierarchical|--mca coll_switchagg_offload off --mca coll_switchagg_allreduce_algorithm hierarchical"
  "leaders|--mca coll_switchagg_offload on --mca coll_switchagg_allreduce_algorithm switch -x SWITCHAGG_SWITCH_LEADERS=on -x SWITCHAGG_AGENT -x SWITCHAGG_LEASE"
  "ring|--mca coll_switchagg_offload off --mca coll_switchagg_allreduce_algorithm ring"
)
for rep in $(seq 1 "$reps"); do
  # Odd reps start with shared memory, even ones with the loopback.
  if ((rep % 2)); then modes="sentinel peer"; else modes="peer sentinel"; fi
  for p in "${paths[@]}"; do
    for mode in $modes; do
      name=${p%%|*}_$mode
      echo "rep $rep: $name" >&2
      before=$(agent_bytes_in)
      # shellcheck disable=SC2086
      bench_mpirun "$np" ${p#*|} -x SWITCHAGG_UCX_FAILURE_DETECTION="$mode" -x SWITCHAGG_UCX_WAIT \
        "$bin/switchagg-bench" --min "$min" --max "$max" --iters 10 --min-iters 5 --warmup 2 \
        --label "$name" --csv "$raw/${name}_rep$rep.csv" >"$work/run.log" 2>&1 ||
        { cat "$work/run.log" >&2; exit 1; }
      # The leaders' runs must have reached the agent (else a host figure).
      if [[ $name == leaders_* && $(agent_bytes_in) == "$before" ]]; then
        echo "node_local_bench: $name sent nothing to the agent" >&2
        exit 1
      fi
    done
  done
done

{
  cat <<EOF
# The node's local phases: shared memory vs the network's loopback, one node, $np ranks

Command: \`benchmarks/node_local_bench.sh --np $np --reps $reps --min $min --max $max\`,
$(date -u '+%Y-%m-%d %H:%M UTC'), 2 cores, load average at the end $(cut -d' ' -f1-3 /proc/loadavg).
Deployment: one node, no RDMA device (UCX over shared memory and TCP loopback); the agent a
process on the same node. *shm*: \`SWITCHAGG_UCX_FAILURE_DETECTION=sentinel\` (what \`node\`,
the default with an RDMA device, gives ranks of one node: UCX keeps shared memory);
*loopback*: \`peer\` (UCX 1.13 drops shared memory from endpoints with error handling: the
ranks of a node talk through the network's loopback, TCP here where a RoCE NIC's would be).
Each cell: median over $reps interleaved runs of switchagg-bench's per-size p50, ms.

EOF
  cat "$raw"/*_rep*.csv | awk -F, "$(cat "$root/benchmarks/lib/stats.awk")"'
    $1 == "label" { next }
    { key = $1 SUBSEP $5; v[key] = v[key] " " $15; sizes[$5] = 1 }
    END {
      split("hierarchical leaders ring", P, " ")
      printf "| bytes"
      for (j = 1; j <= 3; j++) printf " | %s shm ms | %s loopback ms | loopback / shm", P[j], P[j]
      printf " |\n| ---:"
      for (j = 1; j <= 3; j++) printf " | ---: | ---: | ---:"
      printf " |\n"
      n = sortedKeys(sizes, list)
      for (i = 1; i <= n; i++) {
        s = list[i]
        printf "| %s", human(s)
        for (j = 1; j <= 3; j++) {
          a = median(v[P[j] "_sentinel" SUBSEP s]) / 1000; b = median(v[P[j] "_peer" SUBSEP s]) / 1000
          printf " | %.2f | %.2f | %s", a, b, (a > 0 ? sprintf("%.2f", b / a) : "—")
        }
        printf " |\n"
      }
    }'
  bench_notes
} >"$out.tmp"
mv "$out.tmp" "$out"
echo "node_local_bench: wrote ${out#$root/}" >&2
