#!/usr/bin/env bash
# Stripes (issue 14): the switch path with the job's lease on one agent
# (K=1) vs on two (K=2, every call cut in two stripes streamed at once),
# two private agents on this machine and a fabric map naming them; the
# lease comes from switchagg-ctl lease create --nodes, as for mpirun users.
# switchagg-bench float32 sum, interleaved repetitions, median of the per-size
# p50. On one machine both agents share its cores with the ranks: this shows
# that striping costs nothing and the answers check out, not the capacity
# gain of agents with their own links. The striped wait spins (with a
# yield), where K=1 sleeps under SWITCHAGG_UCX_WAIT=blocking: run with
# SWITCHAGG_UCX_WAIT=busy (the default here) to compare like with like.
#
#   benchmarks/stripes_bench.sh [--build DIR] [--np 2] [--reps 3] [--min 64K] [--max 16M]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build np=2 reps=3 min=64K max=16M
source "$root/benchmarks/lib/bench_args.sh"
bench_args stripes_bench 2,13 "build np reps min max" "" "$@"
source "$root/benchmarks/lib/bench_env.sh"
bench_setup stripes-bench stripes_raw fresh
mkdir -p "$work/a" "$work/b"
agent_start "$root/config/agent.toml" "$work/a" --set agent.log_level=warn || exit 1
first_pid=$AGENT_PID first_socket=$AGENT_SOCKET
trap 'agent_stop; kill "$first_pid" 2>/dev/null; rm -rf "$work"' EXIT
agent_start "$root/config/agent.toml" "$work/b" --set agent.log_level=warn || exit 1
printf '[[agent]]\nname = "a"\ncontrol = "unix:%s"\nnodes = "n1"\n\n[[agent]]\nname = "b"\ncontrol = "unix:%s"\nnodes = "n2"\n' \
  "$first_socket" "$AGENT_SOCKET" >"$work/fabric.toml"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export SWITCHAGG_UCX_WAIT=${SWITCHAGG_UCX_WAIT:-busy} SWITCHAGG_SWITCH_WINDOW=4
for rep in $(seq 1 "$reps"); do
  for k in 1 2; do
    nodes=n1
    [[ $k == 2 ]] && nodes='n[1-2]'
    eval "$("$bin/switchagg-ctl" lease create --job "stripes-k$k" --slots 16 --ttl 1h \
      --nodes "$nodes" --fabric "$work/fabric.toml" | grep '^export ')"
    echo "rep $rep: K=$k" >&2
    timeout 600 mpirun --oversubscribe --bind-to none --mca btl self,vader \
      --mca mca_base_component_path "$comp_path" -np "$np" \
      --mca coll_switchagg_offload on --mca coll_switchagg_allreduce_algorithm switch \
      -x SWITCHAGG_AGENT -x SWITCHAGG_LEASE -x SWITCHAGG_MODE -x SWITCHAGG_UCX_WAIT \
      -x SWITCHAGG_SWITCH_WINDOW "$bin/switchagg-bench" --check --min "$min" --max "$max" \
      --iters 20 --min-iters 5 --warmup 2 --label "k$k" --csv "$raw/k${k}_rep$rep.csv" \
      >"$work/run.log" 2>&1 || { cat "$work/run.log" >&2; exit 1; }
    "$bin/switchagg-ctl" lease delete --job "stripes-k$k" --fabric "$work/fabric.toml" >/dev/null
  done
done
python3 - "$raw" <<'PY'
import collections, csv, glob, statistics, sys
p50 = collections.defaultdict(list)
for f in glob.glob(sys.argv[1] + "/k*_rep*.csv"):
    for row in csv.DictReader(open(f)):
        assert row["algorithm"] == "switch", f"{f}: {row['bytes']} B ran {row['algorithm']}"
        p50[(row["label"], int(row["bytes"]))].append(float(row["p50_us"]))
print("| bytes | K=1 p50 µs | K=2 p50 µs | K=2 / K=1 | K=1 runs | K=2 runs |")
print("| --- | --- | --- | --- | --- | --- |")
for b in sorted({b for _, b in p50}):
    one, two = p50[("k1", b)], p50[("k2", b)]
    m1, m2 = statistics.median(one), statistics.median(two)
    fmt = lambda xs: " ".join(f"{x:.0f}" for x in xs)
    print(f"| {b} | {m1:.0f} | {m2:.0f} | {m2 / m1:.2f} | {fmt(one)} | {fmt(two)} |")
PY
