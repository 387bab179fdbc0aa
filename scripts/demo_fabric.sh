#!/usr/bin/env bash
# The main job on an emulated cluster (`scripts/demo.sh --fabric`): four
# hosts on one switch, every host link shaped to 400 Mbit/s so the network,
# not the CPU, is the bottleneck, the switch agent on the switch. Runs
# switchagg-bench --check for the switch path, ring, hierarchical and Open
# MPI's tuned with 1 and 2 ranks per host, the training proxy with offload on
# and off, then the other deployment: agents on reducer hosts at the hosts'
# own link rate (a reducer pool, K = 1 and K = H per job) against the ring,
# then on a leaf-spine fabric (2 racks x 2 hosts, 2:1 uplinks) the
# agent tree against one flat agent and the ring, and prints one screen: time per size and path, the measured
# switch/ring ratio beside its theory, and the bytes each host put on its
# link per allreduce (interface counters) beside theirs. Plots and CSVs land
# in --out. Everything it started stops at the end, on Ctrl-C and on TERM.
#
#   scripts/demo_fabric.sh [--hosts H] [--rate MBIT] [--max SIZE] [--iters N]
#                          [--steps N] [--out DIR] [--no-build]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${SWITCHAGG_BUILD_DIR:-$root/build}
hosts=4 rate=400 max=8M iters=10 steps=20 out=$root/out/demo-fabric do_build=1
# shellcheck source=scripts/lib_demo.sh
source "$root/scripts/lib_demo.sh"  # value, say, demo_prepare
while (($#)); do
  case $1 in
    --hosts) hosts=$(value "$@"); shift 2 ;;
    --rate) rate=$(value "$@"); shift 2 ;;
    --max) max=$(value "$@"); shift 2 ;;
    --iters) iters=$(value "$@"); shift 2 ;;
    --steps) steps=$(value "$@"); shift 2 ;;
    --out) out=$(value "$@"); shift 2 ;;
    --no-build) do_build=0; shift ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "demo --fabric: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ $hosts =~ ^[0-9]+$ ]] && ((hosts >= 2 && hosts <= 8)) ||
  { echo "demo --fabric: --hosts must be 2..8 (2 cores run every rank)" >&2; exit 2; }
[[ $rate =~ ^[0-9]+$ ]] && ((rate >= 10)) || { echo "demo --fabric: --rate must be >= 10 Mbit/s" >&2; exit 2; }

demo_prepare
source "$root/scripts/lib_agent.sh"
source "$root/scripts/lib_fabric.sh"
# Ranks write their CSVs here (every emulated host has its own /tmp, so not
# there); they are copied to --out as they come.
work=$(mktemp -d /var/tmp/switchagg-demo-fabric.XXXXXX)
mkdir -p "$work/csv"
cleanup() {
  local rc=$?
  set +e
  trap '' INT TERM HUP
  agent_stop
  local p
  for p in "${TREE_PIDS[@]}"; do AGENT_PID=$p; agent_stop; done
  fabric_down   # also stops what still runs inside the hosts
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT
trap 'echo; echo "demo: interrupted; stopping everything it started" >&2; exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

say "emulated cluster: $hosts hosts on one switch, links shaped to $rate Mbit/s (scripts/fabric.py),"
say "and $hosts reducer hosts r1..r$hosts at the same rate"
fabric_up dm --hosts "$hosts" --rate "$rate" --reducers "$hosts" --subnet 10.88
fabric_py status dm | sed 's/^/  /'
say "switchagg-agent on the switch (host 'agent'), a lease"
fabric_agent_start "$work"
echo "  agent data plane $AGENT_DATA"
eval "$("$bin/switchagg-ctl" --agent "unix:$AGENT_SOCKET" lease create --job demo-fabric --slots 16 \
  --ttl 1h | grep '^export ')"
export SWITCHAGG_SWITCH_WINDOW=16

paths=(
  "switch|--mca coll_switchagg_offload on --mca coll_switchagg_allreduce_algorithm switch"
  "ring|--mca coll_switchagg_offload off --mca coll_switchagg_allreduce_algorithm ring"
  "hierarchical|--mca coll_switchagg_offload off --mca coll_switchagg_allreduce_algorithm hierarchical"
  "tuned|--mca coll ^switchagg"
)
job() {  # job NP PPN LOG ARGS... : one MPI job across the hosts, in the background
  local np=$1 ppn=$2 log=$3
  shift 3
  fabric_mpirun "$np" "$ppn" -x SWITCHAGG_AGENT -x SWITCHAGG_LEASE -x SWITCHAGG_MODE \
    -x SWITCHAGG_SWITCH_WINDOW "$@" >"$log" 2>&1 </dev/null &
  wait $! || { echo "demo: FAILED (log: $log)"; tail -20 "$log"; exit 1; }
}

for ppn in 1 2; do
  np=$((hosts * ppn))
  for p in "${paths[@]}"; do
    name=${p%%|*} args=${p#*|}
    say "mpirun -np $np ($ppn per host) switchagg-bench --check --min 64K --max $max: $name"
    # shellcheck disable=SC2086
    job "$np" "$ppn" "$out/bench-ppn$ppn-$name.log" $args "$bin/switchagg-bench" --check \
      --min 64K --max "$max" --iters "$iters" --min-iters 3 --warmup 1 --label "$name" \
      --csv "$work/csv/bench-ppn$ppn-$name.csv"
    cp "$work/csv/bench-ppn$ppn-$name.csv" "$out/"
    fabric_tx_bytes >"$work/b0"
    # shellcheck disable=SC2086
    job "$np" "$ppn" "$work/bytes.log" $args "$bin/mpi_liveness_check" --sizes 4194304 --iters 2 \
      --warmup 0
    fabric_tx_bytes >"$work/b1"
    fabric_tx_delta "$work/b0" "$work/b1" | awk -v name="$name" '{ s += $2; n++ }
      END { printf "%s %.2f\n", name, s / n / 2 / 4194304 }' >>"$out/bytes-ppn$ppn.txt.new"
  done
  mv "$out/bytes-ppn$ppn.txt.new" "$out/bytes-ppn$ppn.txt"
  "$root/scripts/plot_bench.sh" -o "$out/ppn$ppn" -t "allreduce, $hosts hosts x $ppn, $rate Mbit/s links" \
    "$out"/bench-ppn$ppn-*.csv >/dev/null 2>&1 || true
done
# A model whose gradients (~9 MB per step, 4 MiB buckets) make the
# allreduce bandwidth-bound, as data-parallel training is.
train=(--inputs 1024 --hidden 1024,1024 --bucket-bytes 4M --steps "$steps")
for mode in on off; do
  say "mpirun -np $hosts switchagg-train --check ${train[*]} (offload=$mode)"
  job "$hosts" 1 "$out/train-$mode.log" --mca coll_switchagg_offload "$mode" \
    "$bin/switchagg-train" --check "${train[@]}" --loss-file "$work/csv/loss-$mode.csv"
  cp "$work/csv/loss-$mode.csv" "$out/"
done

agent_line=$("$bin/switchagg-ctl" --agent "unix:$AGENT_SOCKET" metrics |
  awk '/^switchagg_(chunks_reduced|bytes_in|groups_created)_total/ { printf "%s=%s  ", $1, $2 }')

# The deployment a RoCE site can run today: an agent on each reducer host
# (links at a host's rate), all of them one reducer pool; a job takes K.
say "reducer hosts: an agent on each of r1..r$hosts, one reducer pool of the fabric map"
star_pid=$AGENT_PID
for k in $(seq 1 "$hosts"); do
  mkdir -p "$work/r$k"
  FABRIC_AGENT_HOST=r$k fabric_agent_start "$work/r$k" >/dev/null
  TREE_PIDS+=("$AGENT_PID")
  printf '[[agent]]\nname = "r%s"\ncontrol = "unix:%s"\n\n' "$k" "$AGENT_SOCKET" >>"$work/pool.toml"
done
printf '[[pool]]\nname = "reducers"\nagents = [%s]\nnodes = "h[1-%s]"\n' \
  "$(seq -s, -f '"r%g"' 1 "$hosts")" "$hosts" >>"$work/pool.toml"
AGENT_PID=$star_pid
red_min=1M
(($(numfmt --from=iec "${max%B}") < 1048576)) && red_min=$max
for k in 1 "$hosts"; do
  red_env=$("$bin/switchagg-ctl" lease create --job "demo-reducers-$k" --slots 16 --ttl 1h \
    --nodes "h[1-$hosts]" --fabric "$work/pool.toml" --reducers "$k" | grep '^export ')
  say "mpirun -np $hosts switchagg-bench --check --min $red_min --max $max: switch over K = $k reducer host(s)"
  fabric_mpirun_with "$red_env" "$hosts" 1 --mca coll_switchagg_offload on \
    --mca coll_switchagg_allreduce_algorithm switch -x SWITCHAGG_SWITCH_WINDOW \
    "$bin/switchagg-bench" --check --min "$red_min" --max "$max" --iters "$iters" --min-iters 3 \
    --warmup 1 --label "k$k" --csv "$work/csv/bench-reducers-k$k.csv" \
    >"$out/bench-reducers-k$k.log" 2>&1 </dev/null ||
    { echo "demo: FAILED (log: $out/bench-reducers-k$k.log)"; tail -20 "$out/bench-reducers-k$k.log"; exit 1; }
  cp "$work/csv/bench-reducers-k$k.csv" "$out/"
done

# A tree: two racks of two hosts whose uplinks carry half of what their
# hosts can send (2:1), a leaf agent per rack under the spine agent; the
# tree against one flat agent at the spine and the ring.
agent_stop
fabric_down
say "emulated leaf-spine: 2 racks x 2 hosts, $rate Mbit/s host links, $rate Mbit/s uplinks (2:1)"
fabric_up dt --topo leaf-spine --racks 2 --hosts 2 --rate "$rate" --uplink "$rate" --subnet 10.89
say "agents: spine on the spine, leaf1/leaf2 on the leaves (fabric map: parent = spine)"
fabric_tree_start "$work/tree" 2 2
tree_env=$("$bin/switchagg-ctl" lease create --job demo-tree --slots 16 --ttl 1h --nodes 'h[1-4]' \
  --fabric "$TREE_MAP" | grep '^export ')
flat_env=$("$bin/switchagg-ctl" --agent "unix:$SPINE_SOCKET" lease create --job demo-flat \
  --slots 16 --ttl 1h | grep '^export ')
echo "  $(sed -n 's/.*\(SWITCHAGG_AGENT_NAMES=[^ ]*\).*/\1/p' <<<"$tree_env") (the tree's lease)"
tree_paths=(
  "tree|tree|--mca coll_switchagg_offload on --mca coll_switchagg_allreduce_algorithm switch --mca coll_switchagg_verbose 1"
  "flat|flat|--mca coll_switchagg_offload on --mca coll_switchagg_allreduce_algorithm switch"
  "ring|none|--mca coll_switchagg_offload off --mca coll_switchagg_allreduce_algorithm ring"
)
tree_job() {  # tree_job ENTRY LOG PROGRAM ARGS...: 4 ranks, the entry's lease
  local entry=$1 log=$2 rest lease args exports=""
  shift 2
  rest=${entry#*|}
  lease=${rest%%|*} args=${rest#*|}
  case $lease in tree) exports=$tree_env ;; flat) exports=$flat_env ;; esac
  # shellcheck disable=SC2086
  fabric_mpirun_with "$exports" 4 1 $args -x SWITCHAGG_SWITCH_WINDOW "$@" >"$log" 2>&1 </dev/null ||
    { echo "demo: FAILED (log: $log)"; tail -20 "$log"; exit 1; }
}
# From 1 MiB (where the links, not latency, set the time) up to --max.
bytes_of() { numfmt --from=iec "${1%B}" 2>/dev/null || echo 0; }
tree_min=1M
(($(bytes_of "$max") < 1048576)) && tree_min=$max
: >"$out/bytes-tree.txt"
for p in "${tree_paths[@]}"; do
  name=${p%%|*}
  say "mpirun -np 4 (2 racks x 2 hosts) switchagg-bench --check --min $tree_min --max $max: $name"
  tree_job "$p" "$out/bench-tree-$name.log" "$bin/switchagg-bench" --check --min "$tree_min" --max "$max" \
    --iters "$iters" --min-iters 3 --warmup 1 --label "$name" --csv "$work/csv/bench-tree-$name.csv"
  cp "$work/csv/bench-tree-$name.csv" "$out/"
  [[ $name != tree ]] || grep -q "a tree over 2 leaf agents" "$out/bench-tree-$name.log" ||
    { echo "demo: FAILED: the tree path did not use the tree"; exit 1; }
  fabric_tx_bytes >"$work/b0"
  fabric_uplink_bytes >"$work/u0"
  tree_job "$p" "$work/bytes.log" "$bin/mpi_liveness_check" --sizes 4194304 --iters 2 --warmup 0
  fabric_tx_bytes >"$work/b1"
  fabric_uplink_bytes >"$work/u1"
  host=$(fabric_tx_delta "$work/b0" "$work/b1" | awk '{ s += $2; n++ } END { printf "%.2f", s / n / 2 / 4194304 }')
  up=$(paste "$work/u0" "$work/u1" | awk '{ s += $5 - $2; n++ } END { printf "%.2f", s / n / 2 / 4194304 }')
  echo "$name $host $up" >>"$out/bytes-tree.txt"
done
tree_agents=$(for s in "$work"/tree/l1/agent.sock "$work"/tree/l2/agent.sock "$SPINE_SOCKET"; do
  "$bin/switchagg-ctl" --agent "unix:$s" metrics | awk '/^switchagg_bytes_(in|up)_total/ { printf "%s ", $2 }'
  printf '| '
done)

# The screen.
printf '\n\033[1mswitchagg on an emulated cluster: %d hosts, %s Mbit/s links (%s MB/s)\033[0m\n' \
  "$hosts" "$rate" "$((rate / 8))"
for ppn in 1 2; do
  np=$((hosts * ppn))
  printf '\n%d rank(s) per host, np=%d: time per allreduce in ms (median p50 of switchagg-bench)\n' "$ppn" "$np"
  cat "$out"/bench-ppn$ppn-*.csv | awk -F, -v p="$np" -v k="$ppn" -v rate="$rate" \
    "$(cat "$root/benchmarks/lib/stats.awk")"'
    $1 == "label" { next }
    { v[$1 SUBSEP $5] = v[$1 SUBSEP $5] " " $15; sizes[$5] = 1 }
    END {
      printf "  %-8s %9s %9s %12s %9s | %11s %7s\n", "size", "switch", "ring", "hierarchical", "tuned", "switch/ring", "theory"
      n = sortedKeys(sizes, l)
      for (i = 1; i <= n; i++) {
        s = l[i]; sw = median(v["switch" SUBSEP s]) / 1000; rg = median(v["ring" SUBSEP s]) / 1000
        printf "  %-8s %9.1f %9.1f %12.1f %9.1f | %11.2f %7.2f\n", human(s), sw, rg,
          median(v["hierarchical" SUBSEP s]) / 1000, median(v["tuned" SUBSEP s]) / 1000, sw / rg, p / (2 * (p - 1))
      }
    }'
  printf '  bytes on each host link per allreduce, in N (measured / theory): '
  awk -v p="$np" -v k="$ppn" '
    { t = ($1 == "switch") ? 1 : ($1 == "tuned") ? -1 : 2 * (p - 1) / p
      if ($1 == "hierarchical") t = 2 * (p / k - 1) / (p / k)
      printf "%s %.2f / %s   ", $1, $2, t < 0 ? "?" : sprintf("%.2f", t) }' "$out/bytes-ppn$ppn.txt"
  echo
done
cat <<EOF

theory: per host link of B bytes/s, p ranks, k per host, vector N: the switch path puts N on
  each host link (node leaders: the host reduces first, one rank sends), the ring 2(p-1)/p·N,
  hierarchical 2(H-1)/H·N between H hosts; for large N time ≈ bytes / B, so switch/ring →
  p / (2(p-1)) (plus the in-host reduce and bcast at k > 1). Small sizes are latency-bound (TCP, the agent's round trip).
EOF
printf '\n\033[1mreducer hosts: agents on K ordinary hosts at %s Mbit/s (not in the switch), np=%d\033[0m\n' \
  "$rate" "$hosts"
cat "$out"/bench-reducers-k*.csv "$out"/bench-ppn1-ring.csv | awk -F, -v p="$hosts" \
  "$(cat "$root/benchmarks/lib/stats.awk")"'
  $1 == "label" { next }
  { v[$1 SUBSEP $5] = v[$1 SUBSEP $5] " " $15; if ($1 != "ring") sizes[$5] = 1 }
  END {
    kp = "k" p
    printf "  %-8s %9s %9s %9s | %9s %7s | %9s %7s\n", "size", "K=1", "K=" p, "ring", "K=1/ring", "theory", "K=" p "/ring", "theory"
    n = sortedKeys(sizes, l)
    for (i = 1; i <= n; i++) {
      s = l[i]; a = median(v["k1" SUBSEP s]) / 1000; b = median(v[kp SUBSEP s]) / 1000
      r = median(v["ring" SUBSEP s]) / 1000
      printf "  %-8s %9.1f %9.1f %9.1f | %9.2f %7.2f | %9.2f %7.2f\n", human(s), a, b, r, a / r,
        p * p / (2 * (p - 1)), b / r, p / (2 * (p - 1))
    }
  }'
cat <<EOF
theory: each reducer receives and sends p·N/K per call on a link of B, so a call takes
  max(N, p·N/K)/B against the ring's 2(p-1)/p·N/B: K = 1 loses by p²/(2(p-1)), K = p matches
  the switch in the switch's table above. Sizing and what to buy: docs/admin.md "Deployments".
EOF
printf '\n\033[1mtree: 2 racks x 2 hosts, %s Mbit/s host links, %s Mbit/s uplinks (2:1)\033[0m\n' "$rate" "$rate"
cat "$out"/bench-tree-*.csv | awk -F, "$(cat "$root/benchmarks/lib/stats.awk")"'
  $1 == "label" { next }
  { v[$1 SUBSEP $5] = v[$1 SUBSEP $5] " " $15; sizes[$5] = 1 }
  END {
    printf "  %-8s %9s %9s %9s | %9s %7s | %9s %7s\n", "size", "tree", "flat", "ring", "tree/flat", "theory", "tree/ring", "theory"
    n = sortedKeys(sizes, l)
    for (i = 1; i <= n; i++) {
      s = l[i]; t = median(v["tree" SUBSEP s]) / 1000; f = median(v["flat" SUBSEP s]) / 1000
      r = median(v["ring" SUBSEP s]) / 1000
      printf "  %-8s %9.1f %9.1f %9.1f | %9.2f %7.2f | %9.2f %7.2f\n", human(s), t, f, r, t / f, 0.5, t / r, 4 / 6
    }
  }'
printf '  bytes per allreduce in N (host link / rack uplink up), measured vs theory: '
awk '{ th = ($1 == "tree") ? "1 / 1" : ($1 == "flat") ? "1 / 2" : "1.50 / 1.50"
       printf "%s %s / %s (%s)   ", $1, $2, $3, th }' "$out/bytes-tree.txt"
echo
cat <<EOF
theory: the tree puts N on each host link and one partial up each uplink (the leaf reduces its
  rack first); a flat agent at the spine gets every rank's N across its rack's uplink, 2·N on a
  link of B: twice the time (tree/flat → 0.5); the ring 1.5·N per host link (tree/ring → 0.67).
agents (bytes in, bytes up): leaf1 | leaf2 | spine: $tree_agents
EOF
for mode in on off; do
  printf 'train (offload=%s): %s; %s\n' "$mode" \
    "$(grep -m1 '^time per step' "$out/train-$mode.log" | sed 's/ (mean.*//')" \
    "$(grep -m1 '^final loss' "$out/train-$mode.log")"
done
echo "agent (star): $agent_line"
echo "plots: $out/ppn1/allreduce_latency.png $out/ppn2/allreduce_latency.png"
echo "logs and CSV: $out"
