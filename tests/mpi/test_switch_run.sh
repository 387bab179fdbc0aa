#!/usr/bin/env bash
# test_switch_run.sh BUILD_DIR SCENARIO [ARGS...]
# Real switchagg-agent (scripts/lib_agent.sh) + real mpirun with the
# component loaded from BUILD_DIR, offload on. Scenarios:
#   serve NP [--large]    mpi_allreduce_check --expect switch (dtype x op
#                         matrix, odd counts, in place, dup/split/churn) and
#                         test_switch_check --repeat 5 (16 MiB case, bitwise
#                         repeatability); agent metrics show the traffic
#   auto NP               offload=auto (online tuning), one node: after
#                         warm-up every size is served by a host path
#   two_jobs              two mpirun jobs, two leases, one agent, at once
#   liveness NP           mpi_liveness_check --expect switch: Open MPI's own
#                         barrier around every allreduce, 8 KiB..16 MiB
#   kill BYTES DELAY_MS [NP]  SIGKILL the agent DELAY_MS after the switch served
#                         its first call of a loop of BYTES-byte allreduces
#   delete BYTES DELAY_MS delete the lease mid-run instead
#   stall BYTES           SIGSTOP the agent after the switch served a call;
#                         once the ranks fell back, SIGCONT it: the
#                         communicator must rejoin and use the switch again
#   program NP PROGRAM [ARGS...]  any check program that prints PASS (e.g.
#                         mpi_fortran_types --expect switch), offload on
#                         (OFFLOAD=off in the environment: off, no join;
#                         EXPECT_LOG=RE: the log must match RE too)
#   program_fails NP PATTERN PROGRAM [ARGS...]  the run must fail (a fault
#                         test) with a line matching PATTERN, well within
#                         mpirun_lease's kill
#   recovery_death NP RANK [asked]  mpi_recovery_death_check: every
#                         member's call fails (revoke between chunks) and
#                         rank RANK dies as its recovery starts (asked: as
#                         it takes the first question, before answering):
#                         every survivor's call errors within DEATH_BOUND_MS
#   retired NP            mpi_retired_check: a member still recovering a
#                         communicator's last call (miss:N:M) while the others
#                         freed it and more (COMMS, default 10): it gets its
#                         result from their retired ledgers
#   cg NP                 switchagg-cg without switchagg and with offload on:
#                         residual histories bitwise equal (cg_compare.sh)
#   cg_history NP         (NP >= 3, where summation order shows in the bits)
#                         switchagg-cg off once, on twice: the "on" runs
#                         served by the switch and bitwise equal, within
#                         1e-8 of "off" in as many iterations (cg_history.sh)
#   train_modes NP        switchagg-train --check in both modes, offload on:
#                         allreduce (DDP) and fsdp (MPI_Allgather of weights,
#                         MPI_Reduce_scatter_block of gradients), and fsdp
#                         --overlap (their nonblocking forms per layer); all
#                         learn, weights identical on every rank, and the
#                         loss curves agree (same arithmetic; 1e-5 relative)
#   pipeline NP BYTES     (with PPN) the BYTES case of test_switch_check with the
#                         node leaders' pipeline off and on: same bits
#   comms NP SLOTS WINDOW ARGS...  test_switch_check ARGS (--comms/--busy) with
#                         a SLOTS-slot lease and SWITCHAGG_SWITCH_WINDOW=WINDOW
#   require_unreachable   SWITCHAGG_MODE=require, no agent: one error line,
#                         right answers on the host
#   stripes NP            two agents, one fabric map, a lease over both
#                         (switchagg-ctl lease create --nodes): every call is
#                         cut into 2 stripes; the dtype x op matrix is exact
#                         and each agent received about half the bytes;
#                         mpi_thread_check (3 threads) stripes too, and
#                         mpi_barrier_check serves every barrier (1 element)
#   stripes NP partial|partial_exit|miss|cut  (PPN=1) mpi_oneshot_check --mode
#                         fault with agent b's test fault point armed, or a
#                         member's connection cut (below)
#   stripes_stall BYTES   as stall, with two agents: the second (one stripe's)
#                         is stopped: the call times out, runs on the host,
#                         and the communicator rejoins both agents
#   tree NP PPN [FAULT]   a spine agent and two leaf agents (its children in a
#                         fabric map), NP ranks on emulated nodes of PPN:
#                         the matrix exact through the tree, 5 runs bitwise
#                         alike, both leaves sent up, no lease left after
#                         delete; FAULT leaf_kill | spine_kill | spine_delete
#                         mid-loop: every answer right, every call bounded;
#                         FAULT (leaf|spine)_(partial|partial_exit|miss) | cut:
#                         mpi_oneshot_check --mode fault (below)
#   stripes_program NP PROGRAM [ARGS...]  as program (PPN too), over two agents (the
#                         stripes' lease): the program's PASS and 2 stripes
#   stripes_late_stall    (WAITING with stripes) two agents; rank 2 sleeps 3 s
#                         before call 25 of 40 and agent b is stopped when it
#                         does: agent a's WAITING cannot hold the call, which
#                         fails at its own 2 s bound naming stripe 1 (before
#                         rank 2 comes); every answer exact (on the host after)
#   thread_stripes NP     one agent, 2 data-plane threads spreading each lease
#                         over both (data.threads_per_job = 2): the lease lists
#                         both threads (one token each), every call is cut in 2
#                         stripes, the dtype x op matrix and THREAD_MULTIPLE
#                         exact, each thread carried half the bytes (/metrics),
#                         and each stripe is charged half the host's link
#   stripes_mismatch      SWITCHAGG_AGENT names two agents, SWITCHAGG_LEASE one
#                         token: one warning, no agent traffic, right answers
#   stripes_kill BYTES DELAY_MS NP  as kill, with two agents: the second
#                         (one stripe's) is SIGKILLed mid-run
#   barrier NP on|auto|off|kill  mpi_barrier_check: MPI_Barrier's semantics (no rank
#                         leaves before the last entered) over many barriers;
#                         on: every one through the switch (counters) and the
#                         agent saw them (metrics); off: offload off, every
#                         one in the previous module, the agent saw nothing;
#                         auto: a lease, but every barrier in the previous module;
#                         kill: the agent SIGKILLed at a random moment of the
#                         loop: every barrier still correct, failure counted
#   routed NP on|off|auto|leaders|leaders_kill|old_agent|stripes|kill|delete  mpi_routed_check: MPI_Reduce,
#                         MPI_Reduce_scatter(_block), MPI_Allgather, MPI_Bcast
#                         checked bitwise; on: every call through the switch
#                         (counters) and the agent saw the bytes; off: offload
#                         off, every call in the previous module (op/avx off),
#                         the agent saw nothing; auto: the model decides, each
#                         call counted once; leaders (with PPN): node leaders
#                         active, every bcast and reduce (every root, in place)
#                         through the switch, reduce-scatter and allgather
#                         declined for them; leaders_kill (with PPN): the agent
#                         killed mid-loop of bcast and reduce under node
#                         leaders: a counted failure, right answers, bounded
#                         calls; old_agent: an agent
#                         with data.routed = false, every call declined for
#                         it, allreduce still offloaded; stripes: two agents,
#                         both carried traffic; kill/delete: the agent killed
#                         or the lease deleted mid-loop: every op's call fails
#                         once, is redone, and every result is right
# PPN=K in the environment (serve, pipeline, kill, delete, stall, barrier,
# routed, cg_history): rank r runs on emulated node r / K (emulate_nodes.sh),
# so the switch path runs with node leaders (K > 1) or with one rank per
# node (K = 1); unset: every rank on this host's node.
# MPI_FLAVOR=mpich: the same scenarios on MPICH (mpiexec.mpich) with
# libswitchagg_pmpi.so preloaded and the check programs built with MPICH
# (BUILD_DIR/bin/mpich): --mca coll_switchagg_X V become SWITCHAGG_X=V,
# -x VAR[=V] the same variable (Hydra passes the environment on), other
# MCA parameters (Open MPI's own, e.g. op ^avx) are dropped.
# MPI_FLAVOR=openmpi-pmpi: Open MPI's mpirun without the component (Open
# MPI's own component path, coll ^switchagg) and the Open MPI programs with
# libswitchagg_pmpi_openmpi.so preloaded: --mca coll_switchagg_X V become
# -x SWITCHAGG_X=V, other options stay.
# Prints PASS on success; any failure exits non-zero with the logs.
set -uo pipefail
build=$1 scenario=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
source "$here/mpirun_lib.sh"  # root, bin, the agent (scripts/lib_agent.sh)
mpibin=$bin
[[ ${MPI_FLAVOR:-openmpi} == mpich ]] && mpibin=$bin/mpich

work=$(mktemp -d /tmp/switchagg-h5-test.XXXXXX)
# stripes: the first agent's pid while AGENT_* describe the second.
FIRST_AGENT_PID=
cleanup() {
  agent_stop
  if [[ -n $FIRST_AGENT_PID ]]; then AGENT_PID=$FIRST_AGENT_PID; agent_stop; fi
  local p
  for p in "${TREE_PIDS[@]}"; do AGENT_PID=$p; agent_stop; done
  rm -rf "$work"
}
trap cleanup EXIT

# run_mpi NP LOG PROGRAM ARGS...: mpirun_lease, output to LOG.
run_mpi() {
  local np=$1 log=$2
  shift 2
  mpirun_lease "$np" "$@" >"$log" 2>&1
}

# Two agents (work/a, work/b) and a fabric map: agent a serves node n1,
# agent b n2; a lease over both nodes, exported as for `lease`. Leaves
# AGENT_* describing b, FIRST_AGENT_PID/FIRST_SOCKET a.
# with_fault FAULT CMD...: CMD with the agent's test fault point armed
# (SWITCHAGG_AGENT_TEST_FAULT=FAULT), or as it is for an empty FAULT.
with_fault() {
  local fault=$1
  shift
  if [[ -n $fault ]]; then SWITCHAGG_AGENT_TEST_FAULT=$fault "$@"; else "$@"; fi
}
# The oneshot check in fault mode (partial results from an armed agent, or
# SWITCHAGG_TEST_CUT: a member's connection cut): every answer exact, every
# call bounded, results recovered from a peer (and EXPECT_RECOVERED, if set,
# in the log: who recovered what).
oneshot_fault_run() {  # LOG MPIRUN-ARGS...
  local log=$1
  shift
  export SWITCHAGG_TEST_CUT=${SWITCHAGG_TEST_CUT:-}
  SWITCHAGG_SWITCH_TIMEOUT_MS=1000 run_mpi "$np" "$log" -x SWITCHAGG_SWITCH_TIMEOUT_MS \
    -x SWITCHAGG_TEST_CUT --mca coll_switchagg_stall_timeout 60 "$@" "$mpibin/mpi_oneshot_check" \
    --mode fault --expect-recovered 1 --max-call-ms 10000 ${ONESHOT_LEAVES:+--leaves "$ONESHOT_LEAVES"} ||
    { cat "$log"; die "oneshot fault run failed"; }
  expect_pass "$log" "\(switch:recovered\)" ${EXPECT_RECOVERED:+"$EXPECT_RECOVERED"}
}
# The agent's test fault point for fault KIND (partial, partial_exit, miss
# or late) at chunk result FAULT_AT (default 30); miss leaves out member
# MISS_MEMBER (default MEMBER), late sends it to that member LATE_MS
# (default 1200) later.
agent_fault() {  # KIND MEMBER
  case $1 in
    partial) echo "partial:${FAULT_AT:-30}" ;;
    partial_exit) echo "partial:${FAULT_AT:-30}:exit" ;;
    miss) echo "miss:${FAULT_AT:-30}:${MISS_MEMBER:-$2}" ;;
    late) echo "late:${FAULT_AT:-30}:${MISS_MEMBER:-$2}:${LATE_MS:-1200}" ;;
    *) die "agent fault must be partial, partial_exit, miss or late, got '$1'" ;;
  esac
}
# An armed agent's log (LOG) says its fault point FAULT fired (and, for
# :exit, that the agent then exited; for late, checked as the job ends,
# that the held result went out while the job still ran).
expect_fault_fired() {  # LOG FAULT
  local log=$1 fault=$2 n m
  n=${fault#*:}
  n=${n%%:*}
  m=${fault#*:*:}
  case $fault in
    partial:*) grep -q "test fault: chunk result $n sent to member 0 only" "$log" ;;
    miss:*) grep -q "test fault: chunk result $n not sent to member $m\$" "$log" ;;
    late:*) grep -q "test fault: chunk result $n to member ${m%%:*} held for ${m#*:} ms" "$log" &&
      grep -q "test fault: held chunk result sent late" "$log" ;;
  esac || { cat "$log"; die "the armed agent's fault point ($fault) did not fire"; }
  if [[ $fault == *:exit ]]; then
    grep -q "test fault: exiting after a partial result" "$log" || die "the armed agent did not exit"
  fi
}
start_two_agents_and_lease() {
  mkdir -p "$work/a" "$work/b"
  # Different advertised links: the cost model must take the slower (b's).
  agent_start "$root/config/agent.toml" "$work/a" --set agent.log_level=info \
    --set data.link_mbps=4000 || die "agent a start"
  FIRST_AGENT_PID=$AGENT_PID FIRST_SOCKET=$AGENT_SOCKET
  # STRIPE_B_FAULT: agent b's test fault point (stripes partial).
  with_fault "${STRIPE_B_FAULT:-}" agent_start "$root/config/agent.toml" "$work/b" --set agent.log_level=info \
    --set data.link_mbps=400 || die "agent b start"
  cat >"$work/fabric.toml" <<EOF2
[[agent]]
name = "a"
control = "unix:$FIRST_SOCKET"
nodes = "n1"

[[agent]]
name = "b"
control = "unix:$AGENT_SOCKET"
nodes = "n2"
EOF2
  local out
  out=$("$bin/switchagg-ctl" lease create --job "$1" --slots 16 --ttl 10m --nodes 'n[1-2]' \
        --fabric "$work/fabric.toml") || die "fabric lease create: $out"
  echo "$out"
  eval "$(grep '^export ' <<<"$out")"
  [[ $SWITCHAGG_AGENT == *,* && $SWITCHAGG_LEASE == *,* ]] || die "one address and token per agent expected"
}
metric_at() { "$bin/switchagg-ctl" --agent "unix:$1" metrics | awk -v m="$2" '$1 == m { print $2 }'; }

# A tree on this machine: the spine agent (work/spine) and two leaf agents
# (work/l1, work/l2) whose parent it is in a fabric map; leaf 1 serves the
# emulated nodes emu[0-1], leaf 2 emu[2-3]; a lease over all three for job
# $1, exported with the map's names and path. SPINE_PID, LEAF_PID[1..2],
# LEAF_SOCKET[1..2]; AGENT_* describe the last agent started.
declare -a LEAF_PID LEAF_SOCKET
TREE_PIDS=()
start_leaf() {  # K [FAULT]; LEAF2_SET: one more setting for leaf 2
  local more=()
  [[ $1 == 2 && -n ${LEAF2_SET:-} ]] && more=(--set "$LEAF2_SET")
  with_fault "${2:-}" agent_start "$root/config/agent.toml" "$work/l$1" --set agent.log_level=info \
    --set fabric.map="$work/tree.toml" --set fabric.name="leaf$1" "${more[@]}" || die "leaf $1 start"
  LEAF_PID[$1]=$AGENT_PID LEAF_SOCKET[$1]=$AGENT_SOCKET
  TREE_PIDS+=("$AGENT_PID")
}
# MPI_Iallgather, MPI_Ibcast and MPI_Ireduce_scatter_block (mixed with
# Iallreduce under one Waitall) streamed through the tree, every one served.
# Every routed collective through the tree, exact, each call counted
# <op>:switch (reduce and bcast at every root); PATTERNS: what the log must
# also show.
tree_routed() {  # NP PATTERNS...
  run_mpi "$1" "$work/routed.log" "${tree_env[@]}" "${tree_emu[@]}" \
    "$mpibin/mpi_routed_check" --expect switch --all-roots ||
    { cat "$work/routed.log"; die "routed run failed"; }
  shift
  expect_pass "$work/routed.log" "a tree over 2 leaf agents" "$@"
}
tree_irouted() {  # NP
  run_mpi "$1" "$work/irouted.log" "${tree_env[@]}" "${tree_emu[@]}" \
    "$mpibin/mpi_iallreduce_check" --mode irouted --iters 6 --expect switch ||
    { cat "$work/irouted.log"; die "irouted run failed"; }
  expect_pass "$work/irouted.log" "a tree over 2 leaf agents" \
    "irouted: 24 iallgather, iallgather:switch 24 .*; 18 ibcast, ibcast:switch 18 " \
    "irouted: 18 ireduce_scatter_block, ireduce_scatter_block:switch 18 "
}
# The leaves' uplinks per routed shape (switchagg-bench, one 64 KiB size,
# every call through the tree): what each leaf sent its parent per call
# against the theory (docs/agent-protocol.md "Routed calls through a
# tree"), for NP ranks split evenly over the two leaves, bcast and reduce
# rooted at rank 0 (leaf 1). n: the vector's bytes; a leaf's members own
# n/2 of an allgather's or a reduce-scatter's vector.
tree_routed_bytes() {  # NP PPN
  local np=$1 ppn=$2 n=65536 coll want1 want2 up1 up2 b1 b2
  for coll in reduce reduce_scatter_block allgather bcast; do
    b1=$(metric_at "${LEAF_SOCKET[1]}" switchagg_bytes_up_total)
    b2=$(metric_at "${LEAF_SOCKET[2]}" switchagg_bytes_up_total)
    run_mpi "$np" "$work/bytes-$coll.log" "${tree_env[@]}" "${tree_emu[@]}" "$bin/switchagg-bench" \
      --coll "$coll" --min $n --max $n --iters 10 --warmup 0 --check ||
      { cat "$work/bytes-$coll.log"; die "$coll bench failed"; }
    awk -v n=$n '$1 == n && $(NF - 1) == "switch" { found = 1 } END { exit !found }' \
      "$work/bytes-$coll.log" || { cat "$work/bytes-$coll.log"; die "$coll: not through the switch"; }
    up1=$(($(metric_at "${LEAF_SOCKET[1]}" switchagg_bytes_up_total) - ${b1:-0}))
    up2=$(($(metric_at "${LEAF_SOCKET[2]}" switchagg_bytes_up_total) - ${b2:-0}))
    case $coll in
      reduce | reduce_scatter_block) want1=$n want2=$n ;;  # one partial per chunk
      allgather) want1=$((n / 2)) want2=$((n / 2)) ;;       # the leaf's members' pieces
      bcast) want1=$n want2=0 ;;                            # the root's leaf only
    esac
    echo "tree $coll $n bytes: leaf 1 sent $up1 bytes up, leaf 2 $up2 (theory per call: $want1, $want2)"
    # 10 timed calls (+ barriers through the tree: a few bytes each).
    awk -v u1="$up1" -v u2="$up2" -v w1="$want1" -v w2="$want2" -v c=10 \
      'BEGIN { exit !(u1 >= c * w1 && u1 <= c * w1 + 4096 && u2 >= c * w2 && u2 <= c * w2 + 4096) }' ||
      die "tree $coll: the uplinks carried $up1 and $up2 bytes for 10 calls, theory $want1 and $want2 per call"
  done
}
start_tree_and_lease() {
  mkdir -p "$work/spine" "$work/l1" "$work/l2"
  # SPINE_FAULT / LEAF2_FAULT: those agents' test fault points (tree partial).
  with_fault "${SPINE_FAULT:-}" agent_start "$root/config/agent.toml" "$work/spine" \
    --set agent.log_level=info || die "spine start"
  SPINE_PID=$AGENT_PID SPINE_SOCKET=$AGENT_SOCKET
  TREE_PIDS+=("$AGENT_PID")
  cat >"$work/tree.toml" <<EOF2
[[agent]]
name = "leaf1"
control = "unix:$work/l1/agent.sock"
nodes = "${TREE_NODES1:-emu[0-1]}"
parent = "spine"

[[agent]]
name = "leaf2"
control = "unix:$work/l2/agent.sock"
nodes = "${TREE_NODES2:-emu[2-3]}"
parent = "spine"

[[agent]]
name = "spine"
control = "unix:$SPINE_SOCKET"
data = "$AGENT_DATA"
EOF2
  start_leaf 1
  start_leaf 2 "${LEAF2_FAULT:-}"
  local out
  out=$("$bin/switchagg-ctl" lease create --job "$1" --slots 16 --ttl 10m --nodes 'emu[0-3]' \
        --fabric "$work/tree.toml") || die "tree lease create: $out"
  eval "$(grep '^export ' <<<"$out")"
  [[ ${SWITCHAGG_AGENT_NAMES:-} == leaf1,leaf2,spine ]] ||
    die "the lease is not over leaf1, leaf2 and the spine: $out"
}


case $scenario in
  serve)
    np=$1
    start_agent
    lease "serve-np$np"
    args=(--quick)
    [[ ${2:-} == --large ]] && args=(--large)
    run_mpi "$np" "$work/matrix.log" "${emu[@]}" "$mpibin/mpi_allreduce_check" --expect switch "${args[@]}" ||
      { cat "$work/matrix.log"; die "matrix run failed"; }
    expect_pass "$work/matrix.log" "joined switch group"
    if [[ ${2:-} == --large || $np -le 2 || -n ${PPN:-} ]]; then
      big=()
      [[ ${2:-} != --large && -n ${PPN:-} ]] && big=(--big 1048584)
      run_mpi "$np" "$work/repeat.log" "${emu[@]}" "$mpibin/test_switch_check" --repeat 5 "${big[@]}" ||
        { cat "$work/repeat.log"; die "repeat run failed"; }
      expect_pass "$work/repeat.log"
    fi
    in=$(metric switchagg_bytes_in_total)
    created=$(metric switchagg_groups_created_total)
    echo "agent metrics: bytes_in=$in groups_created=$created"
    [[ ${in%.*} -gt 0 && ${created%.*} -gt 0 ]] || die "the agent saw no traffic"
    ;;
  pipeline)
    # Node leaders' pipeline (PPN > 1): the BYTES case served with
    # SWITCHAGG_SWITCH_SEGMENT=0 (not pipelined) and =1M (pipelined): both
    # exact (int64) and bitwise the same.
    np=$1 bytes=$2
    start_agent
    lease "pipeline-np$np"
    SWITCHAGG_SWITCH_SEGMENT=0 run_mpi "$np" "$work/flat.log" "${emu[@]}" \
      "$mpibin/test_switch_check" --repeat 2 --big "$bytes" ||
      { cat "$work/flat.log"; die "unpipelined run failed"; }
    expect_pass "$work/flat.log" "node leaders" " 0 call\(s\) pipelined"
    SWITCHAGG_SWITCH_SEGMENT=1M run_mpi "$np" "$work/piped.log" "${emu[@]}" \
      "$mpibin/test_switch_check" --repeat 2 --big "$bytes" ||
      { cat "$work/piped.log"; die "pipelined run failed"; }
    expect_pass "$work/piped.log" "node leaders" " 4 call\(s\) pipelined"
    flat=$(grep -o 'int64 hash [0-9a-f]* double hash [0-9a-f]*' "$work/flat.log")
    piped=$(grep -o 'int64 hash [0-9a-f]* double hash [0-9a-f]*' "$work/piped.log")
    [[ -n $flat && $flat == "$piped" ]] || die "pipelined result bits ($piped) differ from unpipelined ($flat)"
    echo "same bits pipelined and not: $flat"
    ;;
  comms)
    np=$1 slots=$2
    export SWITCHAGG_SWITCH_WINDOW=$3
    shift 3
    start_agent
    out=$(ctl lease create --job "comms-np$np" --slots "$slots" --ttl 10m) || die "lease create: $out"
    eval "$(grep '^export ' <<<"$out")"
    run_mpi "$np" "$work/comms.log" "$mpibin/test_switch_check" "$@" ||
      { cat "$work/comms.log"; die "comms run failed"; }
    expect_pass "$work/comms.log" "joined switch group"
    ;;
  program)
    np=$1
    shift
    start_agent
    lease "program-np$np"
    with_emu "$@"
    run_mpi "$np" "$work/program.log" "${args[@]}" || { cat "$work/program.log"; die "program run failed"; }
    # OFFLOAD=off: nothing joins the agent (the program checks its counters).
    # EXPECT_LOG: a line the log must hold too (a fault test's recovery).
    if [[ ${OFFLOAD:-on} == off ]]; then expect_pass "$work/program.log"
    else expect_pass "$work/program.log" "joined switch group" ${EXPECT_LOG:+"$EXPECT_LOG"}; fi
    ;;
  stripes_program)
    np=$1
    shift
    start_two_agents_and_lease "stripes-program-np$np"
    with_emu "$@"
    run_mpi "$np" "$work/program.log" "${args[@]}" || { cat "$work/program.log"; die "program run failed"; }
    expect_pass "$work/program.log" "joined switch group .*\(2 stripe\(s\)"
    ;;
  stripes_late_stall)
    start_two_agents_and_lease stripes-late-stall  # the second agent is the one stopped
    run_mpi 3 "$work/fault.log" -x SWITCHAGG_SWITCH_LEADERS=off "$mpibin/mpi_liveness_check" \
      --sizes 8 --iters 40 --warmup 0 --between none --stall-rank 2 --stall-seconds 3 \
      --stall-every 25 --counters &
    pid=$!
    for _ in $(seq 1 1200); do grep -q "stalling 3 s" "$work/fault.log" && break
      kill -0 $pid 2>/dev/null || break; sleep 0.01; done
    grep -q "stalling 3 s" "$work/fault.log" || { wait $pid; cat "$work/fault.log"; die "rank 2 never stalled"; }
    kill -STOP "$AGENT_PID"
    for _ in $(seq 1 1000); do grep -q "switch allreduce failed" "$work/fault.log" && break
      kill -0 $pid 2>/dev/null || break; sleep 0.01; done
    kill -CONT "$AGENT_PID"
    wait $pid || { cat "$work/fault.log"; die "the job failed around the stall"; }
    expect_pass "$work/fault.log" "2 stripe\(s\)" "stripe\(s\) ([0-9],)*1 of 2 incomplete after"
    # The call ended at its bound (2 s, + scheduling), not when rank 2 came (3 s).
    ms=$(grep -o "incomplete after [0-9]* ms" "$work/fault.log" | sed -n 1p | grep -o "[0-9]*")
    [[ -n $ms && $ms -lt 2900 ]] || die "the call waited $ms ms: agent a's WAITING held it past stripe 1's bound"
    echo "PASS stripes_late_stall: the call failed after $ms ms"
    ;;
  program_fails)
    # program_fails NP PATTERN MPIRUN-ARGS... PROGRAM [ARGS...] (with PPN: on
    # emulated nodes, as program): the run must
    # end in an error (non-zero, before mpirun_lease's own 240 s kill) whose
    # output matches PATTERN (a fault test: the error names what failed).
    np=$1 pattern=$2
    shift 2
    start_agent
    lease "program-fails-np$np"
    started=$SECONDS
    with_emu "$@"
    if run_mpi "$np" "$work/program.log" "${args[@]}"; then
      cat "$work/program.log"
      die "the run succeeded; it must fail"
    fi
    cat "$work/program.log"
    ((SECONDS - started < 200)) || die "the run ended only after $((SECONDS - started)) s"
    grep -Eq -- "$pattern" "$work/program.log" || die "no line matches /$pattern/"
    echo "PASS failed as expected in $((SECONDS - started)) s: $(grep -Em1 -- "$pattern" "$work/program.log")"
    ;;
  cg)
    np=$1
    start_agent
    lease "cg-np$np"
    export SWITCHAGG_AGENT SWITCHAGG_LEASE SWITCHAGG_MODE
    "$here/cg_compare.sh" switch "$bin/switchagg-cg" -- bash -c 'mpirun_lease "$@"' _ "$np" ||
      die "CG on the switch differs from CG without switchagg"
    ;;
  cg_history)
    np=$1
    start_agent
    lease "cg-history-np$np"
    export SWITCHAGG_AGENT SWITCHAGG_LEASE SWITCHAGG_MODE
    "$here/cg_history.sh" "switch${PPN:+:$PPN}" "$bin/switchagg-cg" -- \
      bash -c 'mpirun_lease "$@"' _ "$np" ||
      die "CG on the switch is not repeatable or not close to CG without switchagg"
    ;;
  python_fsdp)
    # apps/python/train_step.py --mode fsdp --overlap under mpi4py (which
    # initialises MPI at MPI_THREAD_MULTIPLE): the shards' nonblocking
    # MPI_Iallgather / MPI_Ireduce_scatter_block go through the switch (with
    # PPN > 1 through the node leaders' posted node steps).
    np=$1 python=$2 script=$3
    start_agent
    lease "pyfsdp-np$np"
    run_mpi "$np" "$work/pyfsdp.log" --mca coll_switchagg_stall_timeout 60 -x OMP_NUM_THREADS=1 \
      "${emu[@]}" "$python" "$script" --steps 4 --mode fsdp --overlap ||
      { cat "$work/pyfsdp.log"; die "train_step.py --mode fsdp --overlap failed"; }
    cat "$work/pyfsdp.log"
    grep -q '^mode fsdp (overlapped): ' "$work/pyfsdp.log" || die "the run was not overlapped"
    grep -Eq 'iallgather:switch=[1-9][0-9]* iallgather:previous=0' "$work/pyfsdp.log" &&
      grep -Eq 'ireduce_scatter_block:switch=[1-9][0-9]* ireduce_scatter_block:previous=0' \
        "$work/pyfsdp.log" ||
      die "the nonblocking shards' collectives did not all go through the switch"
    echo PASS
    ;;
  train_modes)
    np=$1
    start_agent
    lease "train-np$np"
    for mode in allreduce fsdp; do
      run_mpi "$np" "$work/train-$mode.log" -x OMP_NUM_THREADS=1 "${emu[@]}" \
        "$bin/switchagg-train" --check --steps 15 --mode "$mode" \
        --loss-file "$work/loss-$mode.csv" ||
        { cat "$work/train-$mode.log"; die "switchagg-train --mode $mode failed"; }
      cat "$work/train-$mode.log"
      grep -q 'weights identical on all ranks: yes' "$work/train-$mode.log" ||
        die "--mode $mode: no weight check"
    done
    grep -q '^mode fsdp:' "$work/train-fsdp.log" || die "the fsdp run did not shard"
    grep -q 'via switch' "$work/train-allreduce.log" || die "no allreduce bucket went through the switch"
    # Step by step, two loss curves agree (different reduction orders may
    # differ in the last bits, nothing more).
    same_curve() {  # LABEL CSV CSV
      paste -d, "$2" "$3" | awk -F, -v label="$1" '
        NR == 1 { next }
        { n++; d = $2 - $4; if (d < 0) d = -d; r = d / ($2 < 0 ? -$2 : $2)
          if (r > worst) worst = r }
        END { printf "%s: %d steps, largest relative difference %.3g\n", label, n, worst
              exit !(n == 15 && worst <= 1e-5) }'
    }
    same_curve "loss curves, allreduce vs fsdp" "$work/loss-allreduce.csv" "$work/loss-fsdp.csv" ||
      die "the fsdp loss curve differs from the allreduce one"
    # FSDP overlapped (nonblocking allgather prefetch, a reduce-scatter per
    # bucket during the backward pass): the same collectives and arithmetic.
    run_mpi "$np" "$work/train-fsdp-overlap.log" -x OMP_NUM_THREADS=1 "${emu[@]}" \
      "$bin/switchagg-train" --check --steps 15 --mode fsdp --overlap \
      --loss-file "$work/loss-fsdp-overlap.csv" ||
      { cat "$work/train-fsdp-overlap.log"; die "switchagg-train --mode fsdp --overlap failed"; }
    grep -q 'weights identical on all ranks: yes' "$work/train-fsdp-overlap.log" &&
      grep -q '^mode fsdp: .*overlapped' "$work/train-fsdp-overlap.log" ||
      { cat "$work/train-fsdp-overlap.log"; die "--overlap: no overlapped run or no weight check"; }
    same_curve "loss curves, fsdp vs fsdp --overlap" "$work/loss-fsdp.csv" \
      "$work/loss-fsdp-overlap.csv" || die "the overlapped fsdp loss curve differs"
    if [[ -n ${PPN:-} && $PPN -gt 1 ]]; then
      # Several emulated nodes (node leaders): the shards' reduce-scatter and
      # allgather go through the switch, and the fsdp run learns as the same
      # run with switchagg off does (the previous module's reductions).
      grep -Eq ": reduce_scatter_block [0-9]+ bytes -> switch" "$work/train-fsdp.log" &&
        grep -Eq ": allgather [0-9]+ bytes -> switch" "$work/train-fsdp.log" ||
        die "fsdp under node leaders: reduce-scatter and allgather not through the switch"
      OFFLOAD=off run_mpi "$np" "$work/train-fsdp-off.log" -x OMP_NUM_THREADS=1 "${emu[@]}" \
        "$bin/switchagg-train" --check --steps 15 --mode fsdp --loss-file "$work/loss-fsdp-off.csv" ||
        { cat "$work/train-fsdp-off.log"; die "switchagg-train --mode fsdp, offload off, failed"; }
      same_curve "loss curves, fsdp on vs off" "$work/loss-fsdp.csv" "$work/loss-fsdp-off.csv" ||
        die "the fsdp loss curve through the switch differs from the one without it"
    fi
    echo PASS
    ;;
  liveness)
    np=$1
    start_agent
    lease "liveness-np$np"
    run_mpi "$np" "$work/liveness.log" --mca coll_switchagg_stall_timeout 60 \
      "$mpibin/mpi_liveness_check" --expect switch --iters 6 \
      --sizes 8192,65536,262144,1048580,8388608,16777216 ||
      { cat "$work/liveness.log"; die "liveness run failed"; }
    expect_pass "$work/liveness.log" "joined switch group"
    ;;
  retired)
    # retired NP: mpi_retired_check (docs/offload.md "Completion", safety
    # case 7): COMMS communicators (default 10, more than a process keeps
    # retired ledgers of unconfirmed) each make one allreduce of one
    # double, then the first one more, whose result the agent's fault point
    # withholds from the last rank (miss:COMMS+1:NP-1); the others return
    # and free them all at once. The last rank's call times out (1 s) and
    # must still take the result from a peer, well before the stall bound
    # (20 s here, so that a lost question fails fast). Every rank a member
    # (node leaders off).
    np=$1 comms=${COMMS:-10}
    fault=miss:$((comms + 1)):$((np - 1))
    SWITCHAGG_AGENT_TEST_FAULT=$fault start_agent
    lease "retired-np$np"
    SWITCHAGG_SWITCH_TIMEOUT_MS=1000 run_mpi "$np" "$work/retired.log" -x SWITCHAGG_SWITCH_TIMEOUT_MS \
      -x SWITCHAGG_SWITCH_LEADERS=off --mca coll_switchagg_stall_timeout 20 \
      "$mpibin/mpi_retired_check" --comms "$comms" --miss-rank $((np - 1)) --max-call-ms 10000 ||
      { cat "$work/retired.log"; die "retired run failed"; }
    expect_pass "$work/retired.log" \
      "rank $((np - 1)): switch allreduce call 2 failed here.*its result came from rank [0-9]"
    expect_fault_fired "$work/agent.log" "$fault"
    ;;
  recovery_death)
    # recovery_death NP RANK (docs/offload.md "Completion", safety case 10):
    # the agent's fault point revokes the lease between two chunks of a
    # call (revoke:FAULT_AT, 4 KiB slots: 16 chunks a call of 8192
    # doubles), so every member's call fails and they recover it; rank RANK
    # SIGKILLs itself as its recovery starts (SWITCHAGG_TEST_RECOVERY_KILL),
    # before it answered anyone. Every other rank's MPI_Allreduce of that
    # call must return an error, never a result and never a hang, within
    # DEATH_BOUND_MS (default 25 s) of the kill: a partner whose connection
    # to the dead rank failed ends its exchange at once (PeerFailed naming
    # it) and its askers hear gone; a partner whose question reached the
    # rank before it died may see no failed connection (shared memory) and
    # waits out the stall bound (15 s here), failing with the rank named.
    # Every rank a member; UCX's cma transport left out as in
    # mpi_peer_failure (UCX 1.13 aborts a survivor whose cma copy a dead
    # peer was in).
    #
    # asked (safety case 12): rank RANK dies as it takes the first question
    # about the call, before it answers: its asker's connection to it is on
    # shared memory and may look healthy, so only the failure sentinels'
    # watch of it tells the death. Stall bound 30 s, every survivor's error
    # within 8 s of the kill, and the error names the failed connection to
    # the dead rank, not the stall.
    np=$1 dead=$2 when=${3:-start}
    kill_var=SWITCHAGG_TEST_RECOVERY_KILL kill_what="as its recovery of call [0-9]* starts"
    stall=15 bound=${DEATH_BOUND_MS:-25000} named="connection to rank $dead failed|no final answer came from rank\(s\) $dead "
    if [[ $when == asked ]]; then
      kill_var=SWITCHAGG_TEST_RECOVERY_KILL_ASKED kill_what="asked about call [0-9]*"
      stall=30 bound=${DEATH_BOUND_MS:-8000} named="connection to rank $dead failed"
    fi
    with_fault "revoke:${FAULT_AT:-70}" agent_start "$root/config/agent.toml" "$work" \
      --set agent.log_level=info --set data.slot_bytes=4K || die "agent start"
    lease "death-np$np"
    SWITCHAGG_SWITCH_TIMEOUT_MS=1000 run_mpi "$np" "$work/death.log" --enable-recovery \
      -x SWITCHAGG_SWITCH_TIMEOUT_MS -x SWITCHAGG_SWITCH_LEADERS=off \
      -x "$kill_var=$dead:0" -x SWITCHAGG_UCX_PEER_TIMEOUT=2s -x UCX_TLS=^cma \
      --mca coll_switchagg_stall_timeout $stall "$mpibin/mpi_recovery_death_check"
    cat "$work/death.log"
    ! grep -q "WRONG_RESULT\|NO_ERROR" "$work/death.log" || die "a survivor got a result of the failed call"
    kill_line=$(grep -m1 "$kill_var: rank $dead killed $kill_what" \
      "$work/death.log") || die "the fault did not hit: rank $dead was not killed in its recovery ($when)"
    killed_at=$(sed -E 's/.*\(at ([0-9]+) ms\).*/\1/' <<<"$kill_line")
    grep -q "test fault: lease revoked after chunk result" "$work/agent.log" || die "the agent's fault point did not fire"
    for ((r = 0; r < np; ++r)); do
      ((r == dead)) && continue
      line=$(grep -m1 "^GOT_ERROR rank $r call " "$work/death.log") || die "rank $r got no error from the failed call"
      at=$(sed -E 's/^GOT_ERROR rank [0-9]+ call [0-9]+ at ([0-9]+) ms.*/\1/' <<<"$line")
      echo "rank $r: error $((at - killed_at)) ms after the kill (bound $bound ms)"
      ((at - killed_at <= bound)) || die "rank $r took $((at - killed_at)) ms, over $bound ms"
    done
    grep -Eq "$named" "$work/death.log" || die "no error line naming the dead rank ($named)"
    echo "PASS recovery_death $np $dead"
    ;;
  oneshot)
    # One-round-trip completion (docs/offload.md "Completion"): mpi_oneshot_check.
    np=$1 mode=$2 recovered=${3:-1}
    case $mode in
      ok) start_agent ;;
      partial | partial_exit | miss | late)
        # The agent sends one call's result to member 0 only (partial_exit:
        # and dies 100 ms later): the other members recover it from member 0.
        # miss: to every member but MISS_MEMBER (default 1), which times out
        # and recovers it from a peer; late: and sends it to that member
        # LATE_MS later, past its bound (ONESHOT_ITERS: a loop long enough
        # to be running then). FAULT_AT: which chunk result (default 30,
        # mid-loop).
        fault=$(agent_fault "$mode" 1) || exit 1
        SWITCHAGG_AGENT_TEST_FAULT=$fault start_agent ;;
      cut) start_agent ;;
      # 4 KiB slots: the loop's calls of 1000 and 8192 doubles are 2 and 16
      # chunks, so the deletion can fall between the chunks of a call;
      # revoke_chunk: the agent's fault point revokes the lease right after
      # chunk result FAULT_AT (default 90: the 6th of the fourth iteration's
      # 16 with every rank a member).
      revoke | revoke_chunk)
        fault=
        [[ $mode == revoke_chunk ]] && fault=revoke:${FAULT_AT:-90}
        with_fault "$fault" agent_start "$root/config/agent.toml" "$work" --set agent.log_level=info \
          --set data.slot_bytes=4K || die "agent start" ;;
      threads) SWITCHAGG_AGENT_TEST_FAULT=partial:100:exit start_agent ;;
      finalize | handoff)
        # 3 iterations of 10 calls after 2 warm-up calls: chunk result 32
        # is the loop's last call, a barrier, reaching member 0 only.
        SWITCHAGG_AGENT_TEST_FAULT=partial:32 start_agent ;;
      *) die "oneshot mode must be ok, partial, partial_exit, miss, late, cut, revoke, revoke_chunk, threads, finalize or handoff, got '$mode'" ;;
    esac
    lease "oneshot-np$np"
    if [[ $mode == threads ]]; then
      # MPI_THREAD_MULTIPLE, two threads on their own communicators, the
      # agent dying after a partial result: every answer exact (the check),
      # the missed result recovered from a peer.
      # Every call on the switch, each one round trip (the check's largest
      # call, 20000 doubles, is under a 256 KiB keep limit).
      SWITCHAGG_SWITCH_TIMEOUT_MS=1000 SWITCHAGG_SWITCH_KEEP=256K run_mpi "$np" "$work/oneshot.log" \
        -x SWITCHAGG_SWITCH_TIMEOUT_MS -x SWITCHAGG_SWITCH_KEEP --mca coll_switchagg_stall_timeout 60 \
        --mca coll_switchagg_allreduce_algorithm switch \
        "${emu[@]}" "$mpibin/mpi_thread_check" --expect auto --threads 2 --iters 300 ||
        { cat "$work/oneshot.log"; die "oneshot threads run failed"; }
      expect_pass "$work/oneshot.log" "its result came from rank"
      grep -q "test fault: chunk result 100 sent to member 0 only" "$work/agent.log" ||
        die "the agent's fault point did not fire"
    elif [[ $mode == revoke* ]]; then
      # The lease deleted mid-loop (between or inside calls' chunks): the
      # agent aborts the group for every member, nobody is done, every rank
      # redoes the call on the host and the path goes off, every answer exact.
      # revoke_chunk: revoked by the agent's fault point with chunks of the
      # call still to come (its log says how many).
      # MAX_RECOVERY_MESSAGES: the recovery's messages over the ranks at
      # most that (the exchange: 2 p ceil(log2 p) per failure where every
      # member failed); SWITCHAGG_TEST_RECOVERY_ASK_ALL=1 asks every member
      # instead (the protocol before it, for comparison).
      SWITCHAGG_SWITCH_TIMEOUT_MS=1000 run_mpi "$np" "$work/oneshot.log" -x SWITCHAGG_SWITCH_TIMEOUT_MS \
        ${SWITCHAGG_TEST_RECOVERY_ASK_ALL:+-x SWITCHAGG_TEST_RECOVERY_ASK_ALL} \
        --mca coll_switchagg_stall_timeout 60 "${emu[@]}" "$mpibin/mpi_oneshot_check" --mode fault \
        --iters "${ONESHOT_ITERS:-300}" --max-call-ms "${MAX_CALL_MS:-10000}" --ready "$work/ready" \
        ${MAX_RECOVERY_MESSAGES:+--max-recovery-messages "$MAX_RECOVERY_MESSAGES"} &
      pid=$!
      if [[ $mode == revoke ]]; then
        fire_fault $pid "$work/oneshot.log" delete "oneshot-np$np" $((50 + RANDOM % 100))
      fi
      wait $pid || { cat "$work/oneshot.log"; die "oneshot $mode run failed"; }
      expect_pass "$work/oneshot.log" "lease|revoked|switch path disabled" \
        "joined switch group .*window [0-9]+ x 4096 bytes"
      if [[ $mode == revoke_chunk ]]; then
        grep -Eq "test fault: lease revoked after chunk result ${FAULT_AT:-90}, [1-9][0-9]* chunk\(s\) of its call left" \
          "$work/agent.log" || { cat "$work/agent.log"; die "the lease was not revoked between a call's chunks"; }
        expect_pass "$work/oneshot.log" "switch allreduce failed .*lease revoked: test fault.*no member had the result"
      fi
      fallbacks=$(sed -n 's/.*fallbacks (all ranks) \([0-9]*\).*/\1/p' "$work/oneshot.log")
      [[ ${fallbacks:-0} -ge 1 ]] || die "the lease's deletion failed no call (fallbacks ${fallbacks:-none})"
    elif [[ $mode == finalize ]]; then
      # Member 0 is done with the last call and goes straight into
      # MPI_Finalize; the others time out, ask, and get the result from it
      # there (it makes no other MPI call). Every rank exact and bounded.
      SWITCHAGG_SWITCH_TIMEOUT_MS=1000 run_mpi "$np" "$work/oneshot.log" -x SWITCHAGG_SWITCH_TIMEOUT_MS \
        --mca coll_switchagg_stall_timeout 60 "${emu[@]}" "$mpibin/mpi_oneshot_check" --mode fault \
        --iters 3 --max-call-ms 10000 --finalize-early ||
        { cat "$work/oneshot.log"; die "oneshot finalize run failed"; }
      cat "$work/oneshot.log"
      grep -q "test fault: chunk result 32 sent to member 0 only" "$work/agent.log" ||
        die "the agent's fault point did not fire"
      grep -q "rank 0: 3 iterations, recovered 0, failures 0; into MPI_Finalize" "$work/oneshot.log" ||
        die "rank 0 did not reach MPI_Finalize cleanly"
      for r in $(seq 1 $((np - 1))); do
        grep -q "rank $r: 3 iterations, recovered 1, failures 0" "$work/oneshot.log" ||
          die "rank $r did not recover the last call's result"
        grep -Eq "rank $r: switch barrier call 32 failed here.*its result came from rank 0" \
          "$work/oneshot.log" || die "rank $r: no line naming rank 0 as the source of call 32"
      done
    elif [[ $mode == handoff ]]; then
      # Member 0 is done with the last call and waits in MPI_Recv (a call
      # no switchagg code serves) for a word from each other rank, which
      # each sends once its own last call completed: they time out (3 s),
      # ask rank 0 and must get the result from it while it sits there.
      # The stall bound 10 s: a rank 0 that never answers fails the run in
      # about 11 s instead of 300 s. The call bound 3 s (not the 1 s of the
      # other oneshot faults): a rank 1 s late to an early call on loaded
      # cores must not end the switch path before call 32.
      SWITCHAGG_SWITCH_TIMEOUT_MS=3000 run_mpi "$np" "$work/oneshot.log" -x SWITCHAGG_SWITCH_TIMEOUT_MS \
        --mca coll_switchagg_stall_timeout 10 "${emu[@]}" "$mpibin/mpi_oneshot_check" --mode fault \
        --iters 3 --max-call-ms 8000 --handoff --expect-recovered $((np - 1)) ||
        { cat "$work/oneshot.log"; die "oneshot handoff run failed"; }
      cat "$work/oneshot.log"
      expect_fault_fired "$work/agent.log" partial:32
      grep -q "rank 0: 3 iterations, recovered 0, failures 0; handoff" "$work/oneshot.log" ||
        die "rank 0 did not end its handoff cleanly"
      # Each from rank 0 or from a rank that already recovered it from rank 0.
      for r in $(seq 1 $((np - 1))); do
        grep -Eq "rank $r: switch barrier call 32 failed here.*its result came from rank [0-9]" \
          "$work/oneshot.log" || die "rank $r: no line naming the source of call 32"
      done
      grep -Eq "switch barrier call 32 failed here.*its result came from rank 0 " "$work/oneshot.log" ||
        die "nobody got call 32's result from rank 0"
      expect_pass "$work/oneshot.log" "\\(switch:recovered\\)"
    elif [[ $mode == ok ]]; then
      run_mpi "$np" "$work/oneshot.log" "${emu[@]}" "$mpibin/mpi_oneshot_check" --mode ok ||
        { cat "$work/oneshot.log"; die "oneshot run failed"; }
      expect_pass "$work/oneshot.log" "host messages 0 "
    else
      # cut: rank CUT_RANK (default 1) drops its group right after its
      # one-round-trip call CUT_AT (default 16: an allreduce with every rank
      # a member; with node leaders CUT_RANK must be a leader).
      export SWITCHAGG_TEST_CUT=
      [[ $mode == cut ]] && SWITCHAGG_TEST_CUT=${CUT_RANK:-1}:${CUT_AT:-16}
      SWITCHAGG_SWITCH_TIMEOUT_MS=1000 run_mpi "$np" "$work/oneshot.log" \
        -x SWITCHAGG_TEST_CUT -x SWITCHAGG_SWITCH_TIMEOUT_MS --mca coll_switchagg_stall_timeout 60 \
        "${emu[@]}" "$mpibin/mpi_oneshot_check" --mode fault --expect-recovered "$recovered" \
        --iters "${ONESHOT_ITERS:-30}" --max-call-ms "${MAX_CALL_MS:-10000}" ||
        { cat "$work/oneshot.log"; die "oneshot $mode run failed"; }
      expect_pass "$work/oneshot.log" "\\(switch:recovered\\)" ${EXPECT_RECOVERED:+"$EXPECT_RECOVERED"}
      [[ $mode == cut ]] || expect_fault_fired "$work/agent.log" "$fault"
    fi
    ;;
  barrier)
    np=$1 mode=$2
    start_agent
    lease "barrier-np$np"
    case $mode in
      on)
        run_mpi "$np" "$work/barrier.log" "${emu[@]}" "$mpibin/mpi_barrier_check" --expect switch \
          --iters 60 --delay-ms 10 || { cat "$work/barrier.log"; die "barrier run failed"; }
        expect_pass "$work/barrier.log" "joined switch group"
        # One int32 per member per barrier, nothing else ran on the switch.
        in=$(metric switchagg_bytes_in_total)
        echo "agent metrics: bytes_in=$in"
        [[ ${in%.*} -ge 240 ]] || die "the agent saw ${in:-no} bytes for 60 barriers"
        ;;
      auto)
        # A lease, offload=auto: the barrier stays in the previous module
        # (barrierUsesSwitch); the final allreduce may still join the agent.
        OFFLOAD=auto run_mpi "$np" "$work/barrier.log" "${emu[@]}" "$mpibin/mpi_barrier_check" \
          --expect previous --iters 30 --delay-ms 10 ||
          { cat "$work/barrier.log"; die "barrier run failed"; }
        expect_pass "$work/barrier.log"
        ;;
      off)
        OFFLOAD=off run_mpi "$np" "$work/barrier.log" "${emu[@]}" "$mpibin/mpi_barrier_check" \
          --expect previous --iters 30 --delay-ms 10 ||
          { cat "$work/barrier.log"; die "barrier run failed"; }
        expect_pass "$work/barrier.log"
        expect_no_offload "$work/barrier.log"
        ;;
      kill)
        delay_ms=$((RANDOM % 1500))
        echo "killing the agent ${delay_ms} ms after the first switch barrier"
        run_mpi "$np" "$work/barrier.log" "${emu[@]}" "$mpibin/mpi_barrier_check" --expect fault \
          --fault "$work" --iters 400 --delay-ms 4 --max-ms 6000 &
        pid=$!
        fire_fault $pid "$work/barrier.log" kill "" "$delay_ms"
        wait $pid || { cat "$work/barrier.log"; die "the job failed after the fault"; }
        expect_pass "$work/barrier.log" "switch-failed [1-9]" \
          "switch barrier failed .*barrier completed by the agreement"
        ;;
      *) die "barrier mode must be on, auto, off or kill, got '$mode'" ;;
    esac
    ;;
  routed)
    np=$1 mode=$2
    if [[ $mode == stripes ]]; then
      start_two_agents_and_lease "routed-np$np"
    elif [[ $mode == old_agent ]]; then
      agent_start "$root/config/agent.toml" "$work" --set agent.log_level=info \
        --set data.routed=false || die "agent start"
      lease "routed-np$np"
    else
      start_agent
      lease "routed-np$np"
    fi
    case $mode in
      on | stripes | quick)
        quick=()
        [[ $mode == quick ]] && quick=(--quick)
        run_mpi "$np" "$work/routed.log" "$mpibin/mpi_routed_check" --expect switch "${quick[@]}" ||
          { cat "$work/routed.log"; die "routed run failed"; }
        expect_pass "$work/routed.log" "joined switch group"
        if [[ $mode == stripes ]]; then
          grep -q "2 stripe(s)" "$work/routed.log" || die "the job did not stripe over both agents"
          # Stripe 0's agent tells 4000 Mbit/s, stripe 1's 400: stripes cut
          # in proportion end together, so the model takes two links of
          # their mean rate; both agents listen on 127.0.0.1, one host whose
          # link they share, so each counts half: (2000 + 200) / 2 = 1100
          # (docs/offload.md "Unequal agents").
          grep -q "advertises .* link 1100 Mbit/s" "$work/routed.log" ||
            die "the cost model did not take the stripes' mean link rate (4000 and 400 on one host: 1100)"
          a=$(metric_at "$FIRST_SOCKET" switchagg_bytes_in_total)
          b=$(metric_at "$AGENT_SOCKET" switchagg_bytes_in_total)
          echo "bytes in: agent a $a, agent b $b"
          [[ ${a%.*} -gt 0 && ${b%.*} -gt 0 ]] || die "a stripe's agent saw no traffic: a=$a b=$b"
        else
          in=$(metric switchagg_bytes_in_total)
          echo "agent metrics: bytes_in=$in"
          [[ ${in%.*} -gt 0 ]] || die "the agent saw no traffic"
        fi
        ;;
      off)
        OFFLOAD=off run_mpi "$np" "$work/routed.log" --mca op ^avx "$mpibin/mpi_routed_check" \
          --expect previous || { cat "$work/routed.log"; die "routed run failed"; }
        expect_pass "$work/routed.log"
        expect_no_offload "$work/routed.log"
        ;;
      leaders)
        # Node leaders (PPN > 1: several emulated nodes; EMU_LAYOUT=cyclic:
        # a node's ranks not adjacent): every routed op through the switch,
        # bcast and reduce at every root (leaders and not), in place too;
        # reduce-scatter and allgather through the node's reduce or gather
        # and the leader's scatter or broadcast.
        [[ -n ${PPN:-} && $PPN -gt 1 ]] || die "routed leaders needs PPN > 1"
        run_mpi "$np" "$work/routed.log" "${emu[@]}" "$mpibin/mpi_routed_check" \
          --expect switch --all-roots || { cat "$work/routed.log"; die "routed run failed"; }
        expect_pass "$work/routed.log" "joined switch group .*$((np / PPN)) node leaders" \
          ": reduce [0-9]+ bytes -> switch" ": bcast [0-9]+ bytes -> switch" \
          ": reduce_scatter_block [0-9]+ bytes -> switch" ": reduce_scatter [0-9]+ bytes -> switch" \
          ": allgather [0-9]+ bytes -> switch"
        in=$(metric switchagg_bytes_in_total)
        echo "agent metrics: bytes_in=$in"
        [[ ${in%.*} -gt 0 ]] || die "the agent saw no traffic"
        ;;
      leaders_kill)
        # The agent killed mid-loop of every routed op under node leaders;
        # ROUTED_BYTES above the keep limit (1 MiB): calls that end with the
        # outcome agreement.
        [[ -n ${PPN:-} && $PPN -gt 1 ]] || die "routed leaders_kill needs PPN > 1"
        delay_ms=$((RANDOM % 300))
        echo "injecting kill ${delay_ms} ms after the switch served every routed op"
        run_mpi "$np" "$work/routed.log" "${emu[@]}" "$mpibin/mpi_routed_check" --expect fault \
          --fault "$work" --bytes "${ROUTED_BYTES:-262144}" --max-call-ms 6000 &
        pid=$!
        fire_fault $pid "$work/routed.log" kill "routed-np$np" "$delay_ms"
        wait $pid || { cat "$work/routed.log"; die "the job failed after the fault"; }
        expect_pass "$work/routed.log" "joined switch group .*node leaders" \
          "switch (reduce|reduce_scatter|reduce_scatter_block|allgather|bcast) failed .*redone on the previous module"
        ;;
      auto)
        # offload auto: the model picks per call (op/avx off: the previous
        # module may serve small-integer sums); every result right.
        OFFLOAD=auto run_mpi "$np" "$work/routed.log" --mca op ^avx "$mpibin/mpi_routed_check" \
          --expect auto || { cat "$work/routed.log"; die "routed run failed"; }
        expect_pass "$work/routed.log" "joined switch group"
        ;;
      tuned)
        # offload auto with online tuning on one node, where the agent (a
        # third party sharing the cores, a TCP round trip per chunk) is
        # several times slower than the previous module for small calls:
        # the switch is measured (it serves the tuner's first calls) and
        # then every timed call of every size runs in the previous module.
        for coll in reduce_scatter_block allgather bcast reduce; do
          OFFLOAD=auto run_mpi "$np" "$work/$coll.log" "$bin/switchagg-bench" --coll "$coll" \
            --min 4K --max 16K --iters 40 --warmup 20 --csv "$work/$coll.csv" ||
            { cat "$work/$coll.log"; die "$coll run failed"; }
          cat "$work/$coll.log"
          grep -Eq "$coll [0-9]+ bytes -> switch \(tuned: measuring\)" "$work/$coll.log" ||
            die "$coll: online tuning never measured the switch"
          awk -F, -v coll="$coll" 'NR > 1 { n++; if ($13 != "previous") { print "FAIL: " coll " " $5 " bytes: " $13 " after tuning"; bad = 1 } }
            END { if (n != 3) { print "FAIL: " coll ": " n " sizes"; bad = 1 }; exit bad }' "$work/$coll.csv" ||
            die "$coll: auto kept the slower switch"
        done
        echo PASS
        ;;
      old_agent)
        # An agent that refuses routed calls (as one that predates them):
        # the group joins, allreduce and barrier stay offloaded, the routed
        # calls go to the previous module, counted (op/avx off).
        run_mpi "$np" "$work/routed.log" --mca op ^avx "$mpibin/mpi_routed_check" \
          --expect previous:agent-not-routed --quick ||
          { cat "$work/routed.log"; die "routed run failed"; }
        expect_pass "$work/routed.log" "joined switch group" "the agent does not route calls" \
          "allreduce .* -> switch"
        ;;
      kill | delete)
        delay_ms=$((RANDOM % 300))
        echo "injecting $mode ${delay_ms} ms after the switch served every routed op"
        run_mpi "$np" "$work/routed.log" "$mpibin/mpi_routed_check" --expect fault --fault "$work" \
          --bytes 262144 --max-call-ms 6000 &
        pid=$!
        fire_fault $pid "$work/routed.log" "$mode" "routed-np$np" "$delay_ms"
        wait $pid || { cat "$work/routed.log"; die "the job failed after the fault"; }
        expect_pass "$work/routed.log" "switch (reduce|reduce_scatter|reduce_scatter_block|allgather|bcast) failed .*redone on the previous module"
        ;;
      *) die "routed mode must be on, quick, off, auto, tuned, leaders, leaders_kill, old_agent, stripes, kill or delete, got '$mode'" ;;
    esac
    ;;
  auto)
    # offload=auto with a lease on one node: after warm-up, online tuning
    # serves every size on the host (the switch was measured and lost).
    np=$1
    start_agent
    lease "auto-np$np"
    OFFLOAD=auto run_mpi "$np" "$work/auto.log" "$mpibin/mpi_tune_check" \
      --sizes 8,1024,16384,262144,4194304 --expect host ||
      { cat "$work/auto.log"; die "auto run failed"; }
    expect_pass "$work/auto.log" "joined switch group" "size 4194304: settled on"
    ;;
  two_jobs)
    start_agent
    lease jobA
    run_mpi 2 "$work/a.log" "$mpibin/mpi_allreduce_check" --expect switch --quick &
    pa=$!
    lease jobB
    run_mpi 2 "$work/b.log" "$mpibin/mpi_allreduce_check" --expect switch --quick &
    pb=$!
    wait $pa; ra=$?
    wait $pb; rb=$?
    [[ $ra -eq 0 && $rb -eq 0 ]] || { cat "$work/a.log" "$work/b.log"; die "a job failed ($ra, $rb)"; }
    expect_pass "$work/a.log" "joined switch group"
    expect_pass "$work/b.log" "joined switch group"
    ctl metrics | grep -E 'switchagg_job_bytes_in_total\{job="job[AB]"\}' | tee "$work/jobs.txt"
    [[ $(grep -c . "$work/jobs.txt") -eq 2 ]] || die "both jobs' traffic should show in the metrics"
    ;;
  kill | delete | stripes_kill)
    bytes=$1 delay_ms=$2 np=${3:-3}
    # random:MAX -> a random moment in [0, MAX) ms after the first switch call.
    [[ $delay_ms == random:* ]] && delay_ms=$((RANDOM % ${delay_ms#random:}))
    echo "injecting $scenario ${delay_ms} ms after the switch served its first call"
    if [[ $scenario == stripes_kill ]]; then
      start_two_agents_and_lease "fault-$scenario"  # the second agent is the one killed
    else
      start_agent
      lease "fault-$scenario"
    fi
    run_mpi "$np" "$work/fault.log" "${emu[@]}" "$mpibin/test_switch_check" --fault "$work" \
      --bytes "$bytes" --max-call-ms 6000 &
    pid=$!
    fire_fault $pid "$work/fault.log" "$scenario" "fault-$scenario" "$delay_ms"
    wait $pid || { cat "$work/fault.log"; die "the job failed after the fault"; }
    expect_pass "$work/fault.log" "switch allreduce failed .*recomputed on the host"
    # With the node leaders' pipeline asked for, the calls before the fault ran it.
    if [[ ${SWITCHAGG_SWITCH_SEGMENT:-0} != 0 ]]; then
      grep -Eq ", [1-9][0-9]* pipelined$" "$work/fault.log" || die "no call was pipelined"
    fi
    if [[ $scenario == stripes_kill ]]; then
      grep -q "2 stripe(s)" "$work/fault.log" || die "the job did not stripe over both agents"
      kill -0 "$FIRST_AGENT_PID" || die "the surviving agent died"
    fi
    ;;
  stall | stripes_stall)
    bytes=$1
    if [[ $scenario == stripes_stall ]]; then
      start_two_agents_and_lease fault-stall  # the second agent is the one stopped
    else
      start_agent
      lease fault-stall
    fi
    # Short call bound and rejoin interval keep the test quick. REJOIN_TIME
    # and GAP_MS (rejoin by time): SWITCHAGG_SWITCH_REJOIN_TIME, and the
    # ranks sleep GAP_MS between calls after the fallback (REJOIN_CALLS,
    # default 8, then set high: only the time can bring the path back).
    SWITCHAGG_SWITCH_TIMEOUT_MS=500 SWITCHAGG_SWITCH_REJOIN_CALLS=${REJOIN_CALLS:-8} \
      SWITCHAGG_SWITCH_REJOIN_TIME=${REJOIN_TIME:-60s} \
      run_mpi 3 "$work/fault.log" -x SWITCHAGG_SWITCH_TIMEOUT_MS -x SWITCHAGG_SWITCH_REJOIN_CALLS \
      -x SWITCHAGG_SWITCH_REJOIN_TIME \
      "${emu[@]}" "$mpibin/test_switch_check" --fault "$work" --bytes "$bytes" --rejoin --max-call-ms 20000 \
      --gap-ms "${GAP_MS:-0}" &
    pid=$!
    for _ in $(seq 1 600); do [[ -f $work/ready ]] && break; kill -0 $pid 2>/dev/null || break; sleep 0.05; done
    [[ -f $work/ready ]] || { wait $pid; cat "$work/fault.log"; die "the switch never served"; }
    kill -STOP "$AGENT_PID"
    for _ in $(seq 1 600); do [[ -f $work/fellback ]] && break; kill -0 $pid 2>/dev/null || break; sleep 0.05; done
    kill -CONT "$AGENT_PID"
    [[ -f $work/fellback ]] || { wait $pid; cat "$work/fault.log"; die "no fallback while the agent was stopped"; }
    touch "$work/fired"
    wait $pid || { cat "$work/fault.log"; die "the job failed around the stall"; }
    expect_pass "$work/fault.log" "switch allreduce failed .*rejoin attempts follow" \
      "switch path back after a failure" "rejoin\(s\)"
    if [[ $scenario == stripes_stall ]]; then
      grep -q "2 stripe(s)" "$work/fault.log" || die "the job did not stripe over both agents"
      grep -q "stripe(s) 1 of 2 incomplete" "$work/fault.log" || die "the timeout does not name stripe 1"
    fi
    ;;
  stripes)
    # stripes NP [partial|partial_exit|miss|cut]: partial: agent b sends one
    # chunk's result (FAULT_AT, default 30) to member 0 only (partial_exit:
    # and exits 100 ms later; miss: to every member but MISS_MEMBER, default
    # 1); cut: rank CUT_RANK (default 1) drops its group (both stripes)
    # right after its call CUT_AT (default 16). The others recover it.
    np=$1 fault=${2:-}
    if [[ -n $fault ]]; then
      [[ -n ${PPN:-} ]] || die "stripes $fault needs PPN (members on emulated nodes)"
      armed=
      if [[ $fault == cut ]]; then
        export SWITCHAGG_TEST_CUT=${CUT_RANK:-1}:${CUT_AT:-16}
      else
        armed=$(agent_fault "$fault" 1) || exit 1
      fi
      STRIPE_B_FAULT=$armed start_two_agents_and_lease stripes
      oneshot_fault_run "$work/oneshot.log" "${emu[@]}"
      expect_pass "$work/oneshot.log" "2 stripe\(s\)"
      [[ -z $armed ]] || expect_fault_fired "$work/b/agent.log" "$armed"
      echo "PASS stripes $*"
      exit 0
    fi
    start_two_agents_and_lease stripes
    run_mpi "$np" "$work/matrix.log" "$mpibin/mpi_allreduce_check" --expect switch --quick ||
      { cat "$work/matrix.log"; die "matrix run failed"; }
    expect_pass "$work/matrix.log" "joined switch group .*\(2 stripe\(s\)"
    # MPI_THREAD_MULTIPLE: three threads, three communicators striping at once.
    run_mpi "$np" "$work/threads.log" --mca coll_switchagg_stall_timeout 60 \
      "$mpibin/mpi_thread_check" --expect switch --threads 3 --iters 300 ||
      { cat "$work/threads.log"; die "threads run failed"; }
    expect_pass "$work/threads.log" "2 stripe\(s\)"
    # Barriers: one int32 per call, fewer elements than stripes.
    run_mpi "$np" "$work/barrier.log" "$mpibin/mpi_barrier_check" --expect switch --iters 20 \
      --delay-ms 5 || { cat "$work/barrier.log"; die "barrier run failed"; }
    expect_pass "$work/barrier.log" "2 stripe\(s\)"
    # The nonblocking calls over both stripes: Iallreduces, Iallgathers,
    # Ibcasts, Ireduce_scatter_blocks under one Waitall, in place and not,
    # above the keep limit too; every one counted <op>:switch, exact (every
    # rank a member: on one node the leaders would have nothing to route).
    run_mpi "$np" "$work/irouted.log" -x SWITCHAGG_SWITCH_LEADERS=off \
      "$mpibin/mpi_iallreduce_check" --mode irouted --iters 4 \
      --expect switch || { cat "$work/irouted.log"; die "irouted run failed"; }
    expect_pass "$work/irouted.log" "2 stripe\(s\)" \
      "irouted: 16 iallgather, iallgather:switch 16 .*; 12 ibcast, ibcast:switch 12 " \
      "irouted: 12 ireduce_scatter_block, ireduce_scatter_block:switch 12 "
    # One round trip over both stripes: no host message on success.
    run_mpi "$np" "$work/oneshot.log" "$mpibin/mpi_oneshot_check" --mode ok ||
      { cat "$work/oneshot.log"; die "oneshot run failed"; }
    expect_pass "$work/oneshot.log" "2 stripe\(s\)" "host messages 0 "
    a=$(metric_at "$FIRST_SOCKET" switchagg_bytes_in_total)
    b=$(metric_at "$AGENT_SOCKET" switchagg_bytes_in_total)
    echo "bytes in: agent a $a, agent b $b"
    # Agent a tells 4000 Mbit/s, b 400: the stripes follow the rates, so a
    # takes 10/11 of the bytes, b 1/11 (within 5 % of the total; both carry
    # traffic). Equal stripes would split them in halves.
    awk -v a="${a:-0}" -v b="${b:-0}" 'BEGIN { d = a / (a + b) - 10 / 11; if (d < 0) d = -d;
      exit !(a > 0 && b > 0 && d <= 0.05) }' ||
      die "the stripes do not follow the agents' rates 4000:400: a=$a b=$b"
    ;;
  tree)
    # tree NP PPN [leaf_kill|spine_kill|spine_delete|late|fp16]: NP ranks on emulated
    # nodes of PPN ranks, through the tree (node leaders with PPN > 1).
    # fp16 (MPI_FLAVOR=mpich): mpi_fp16_check through the tree.
    # leaf_partial / spine_partial: leaf 2 (to its member 0) or the spine
    # (to leaf 1) sends one chunk's result (FAULT_AT, default 30) to one
    # member only; the members that missed it recover it from a peer.
    # leaf_partial_exit / spine_partial_exit: the same, and that agent exits
    # 100 ms later. leaf_miss / spine_miss: leaf 2 or the spine sends it to
    # every member but MISS_MEMBER (default: leaf 2's member 1, the spine's
    # member 0, leaf 1). cut: rank CUT_RANK (default 1) drops its group
    # right after its call CUT_AT (default 16).
    np=$1 ppn=$2 fault=${3:-}
    armed=
    case $fault in
      leaf_partial | leaf_partial_exit | leaf_miss)
        armed=$(agent_fault "${fault#leaf_}" 1) || exit 1
        LEAF2_FAULT=$armed start_tree_and_lease tree ;;
      spine_partial | spine_partial_exit | spine_miss)
        armed=$(agent_fault "${fault#spine_}" 0) || exit 1
        SPINE_FAULT=$armed start_tree_and_lease tree ;;
      routed_old_leaf) LEAF2_SET=data.routed_trees=false start_tree_and_lease tree ;;
      *) start_tree_and_lease tree ;;
    esac
    tree_emu=("$here/emulate_nodes.sh" "$ppn")
    ONESHOT_LEAVES=2  # the folds of routed reductions: leaf by leaf
    tree_env=(-x SWITCHAGG_AGENT_NAMES -x SWITCHAGG_FABRIC)
    if [[ -n $armed || $fault == cut ]]; then
      [[ $fault == cut ]] && export SWITCHAGG_TEST_CUT=${CUT_RANK:-1}:${CUT_AT:-16}
      oneshot_fault_run "$work/oneshot.log" "${tree_env[@]}" "${tree_emu[@]}"
      expect_pass "$work/oneshot.log" "a tree over 2 leaf agents"
      if [[ -n $armed ]]; then
        log=$work/l2/agent.log
        [[ $fault == spine_* ]] && log=$work/spine/agent.log
        expect_fault_fired "$log" "$armed"
      fi
    elif [[ $fault == routed ]]; then
      # Every routed collective through the tree, exact, each call counted
      # <op>:switch (reduce and bcast at every root); then each shape alone
      # (switchagg-bench) with the leaves' uplink bytes against the theory.
      tree_routed "$np" ": reduce [0-9]+ bytes -> switch" ": bcast [0-9]+ bytes -> switch" \
        ": reduce_scatter_block [0-9]+ bytes -> switch" ": reduce_scatter [0-9]+ bytes -> switch" \
        ": allgather [0-9]+ bytes -> switch"
      # The nonblocking forms (mixed with Iallreduce under one Waitall):
      # streamed through the tree, with node leaders (ppn 2) through their
      # posted node steps.
      tree_irouted "$np"
      tree_routed_bytes "$np" "$ppn"
    elif [[ $fault == routed_layout ]]; then
      # A leaf's ranks not adjacent (TREE_NODES: leaf 1 serves emu0 and
      # emu2) without node leaders: the blocks of reduce-scatter and
      # allgather staged in placement order, every op through the tree,
      # blocking and not.
      tree_routed "$np" ": reduce_scatter [0-9]+ bytes -> switch" ": allgather [0-9]+ bytes -> switch"
      tree_irouted "$np"
    elif [[ $fault == routed_old_leaf ]]; then
      # Leaf 2 as an agent before routed calls through trees: its members
      # join the tree again without them, allreduce goes through the tree,
      # every routed call is declined (agent-not-routed; op/avx off).
      run_mpi "$np" "$work/routed.log" "${tree_env[@]}" --mca op ^avx "${tree_emu[@]}" \
        "$mpibin/mpi_routed_check" --expect previous:agent-not-routed --quick ||
        { cat "$work/routed.log"; die "routed run failed"; }
      expect_pass "$work/routed.log" "a tree over 2 leaf agents" \
        "a leaf agent does not route calls through a tree" "allreduce .* -> switch"
      [[ $(metric_at "${LEAF_SOCKET[2]}" 'switchagg_rejected_total{reason="malformed"}') -ge 2 ]] ||
        die "leaf 2 did not refuse the routed tree JOINs"
    elif [[ $fault == routed_leaf_kill || $fault == routed_spine_kill ]]; then
      # A leaf or the spine killed mid-loop of every routed op: every result
      # exact, every call bounded, each op's call failed once and redone.
      AGENT_PID=${LEAF_PID[2]}
      [[ $fault == routed_spine_kill ]] && AGENT_PID=$SPINE_PID
      run_mpi "$np" "$work/routed.log" "${tree_env[@]}" "${tree_emu[@]}" \
        "$mpibin/mpi_routed_check" --expect fault --fault "$work" --bytes 262144 \
        --max-call-ms 8000 &
      pid=$!
      fire_fault $pid "$work/routed.log" kill tree $((RANDOM % 200))
      wait $pid || { cat "$work/routed.log"; die "the job failed after the fault"; }
      expect_pass "$work/routed.log" "a tree over 2 leaf agents" \
        "switch (reduce|reduce_scatter|reduce_scatter_block|allgather|bcast) failed .*redone on the previous module"
    elif [[ $fault == late ]]; then
      # A rank late for I/O (docs/agent-protocol.md "Waiting members", case
      # 11): rank 3 (leaf 2) sleeps 3 s outside MPI before the 15th call,
      # past the 2 s call bound. Leaf 2 tells rank 2 WAITING, the spine
      # tells leaf 1, which relays it to ranks 0 and 1: every call exact on
      # the switch, none failed.
      run_mpi "$np" "$work/late.log" "${tree_env[@]}" "${tree_emu[@]}" \
        "$mpibin/mpi_liveness_check" --sizes 4 --iters 20 --warmup 0 --between none \
        --stall-rank $((np - 1)) --stall-seconds 3 --stall-every 15 --expect switch \
        --no-fallbacks --counters || { cat "$work/late.log"; die "the late-rank run failed"; }
      expect_pass "$work/late.log" "a tree over 2 leaf agents"
      relayed=$(metric_at "${LEAF_SOCKET[1]}" switchagg_waiting_relayed_total)
      echo "leaf 1 relayed ${relayed:-0} WAITING(s) from the spine"
      [[ ${relayed:-0} -gt 0 ]] || die "leaf 1 relayed no WAITING from the spine"
    elif [[ $fault == fp16 ]]; then
      # 16-bit float sums through the tree (MPICH, mpi_fp16_check). With
      # node leaders (PPN > 1) on every leaf the leaders' call is a float64
      # SUM, added in fp64 at the leaves and the spine and rounded once by
      # each leader: bitwise the exact sum rounded once (--exact-switch),
      # blocking calls and MPI_Iallreduce.
      # One rank per node: 16-bit partials per level, held to the bound.
      exact=()
      [[ $ppn -gt 1 ]] && exact=(--exact-switch)
      run_mpi "$np" "$work/fp16.log" "${tree_env[@]}" "${tree_emu[@]}" \
        "$mpibin/mpi_fp16_check" --expect switch "${exact[@]}" ||
        { cat "$work/fp16.log"; die "fp16 run failed"; }
      expect_pass "$work/fp16.log" "a tree over 2 leaf agents"
      [[ $ppn -eq 1 ]] || grep -q "$((np / ppn)) node leaders for $np ranks" "$work/fp16.log" ||
        die "no node leaders at $ppn ranks per node"
      if [[ $ppn -gt 1 ]]; then
        # coll_switchagg_half_uplink float32 through the tree: the leaders'
        # node sums rounded once to fp32, summed in fp32 at the leaves and
        # the spine, rounded once to 16 bits (docs/offload.md "Wide partials
        # on the leaders' uplink"): within FP16_TREE_F32_ULP of the exact sum
        # rounded once, and not 0 (0 would mean fp64 on the wire).
        run_mpi "$np" "$work/fp16_f32.log" "${tree_env[@]}" --mca coll_switchagg_half_uplink float32 \
          "${tree_emu[@]}" "$mpibin/mpi_fp16_check" --expect switch \
          --blocking-only --one-rounding --max-ulp "${FP16_TREE_F32_ULP:-1}" ||
          { cat "$work/fp16_f32.log"; die "fp16 run with float32 partials failed"; }
        expect_pass "$work/fp16_f32.log" "a tree over 2 leaf agents"
        grep -q "max 0.00 ulp" "$work/fp16_f32.log" &&
          { cat "$work/fp16_f32.log"; die "float32 partials gave 0 ulp: not fp32 on the wire"; }
      fi
    elif [[ -z $fault ]]; then
      run_mpi "$np" "$work/matrix.log" "${tree_env[@]}" "${tree_emu[@]}" \
        "$mpibin/mpi_allreduce_check" --expect switch --quick ||
        { cat "$work/matrix.log"; die "matrix run failed"; }
      expect_pass "$work/matrix.log" "a tree over 2 leaf agents"
      [[ $ppn -eq 1 ]] || grep -q "$((np / ppn)) node leaders for $np ranks" "$work/matrix.log" ||
        die "no node leaders at $ppn ranks per node"
      run_mpi "$np" "$work/repeat.log" "${tree_env[@]}" "${tree_emu[@]}" \
        "$mpibin/test_switch_check" --repeat 5 || { cat "$work/repeat.log"; die "repeat run failed"; }
      expect_pass "$work/repeat.log" "a tree over 2 leaf agents"
      # One round trip through the tree: no host message on success.
      run_mpi "$np" "$work/oneshot.log" "${tree_env[@]}" "${tree_emu[@]}" \
        "$mpibin/mpi_oneshot_check" --mode ok --leaves 2 ||
        { cat "$work/oneshot.log"; die "oneshot run failed"; }
      expect_pass "$work/oneshot.log" "a tree over 2 leaf agents" "host messages 0 "
      for k in 1 2; do
        up=$(metric_at "${LEAF_SOCKET[$k]}" switchagg_bytes_up_total)
        echo "leaf $k sent ${up:-0} bytes up"
        [[ ${up:-0} -gt 0 ]] || die "leaf $k sent nothing up"
      done
      spine_in=$(metric_at "$SPINE_SOCKET" switchagg_bytes_in_total)
      [[ ${spine_in:-0} -gt 0 ]] || die "the spine reduced nothing"
      "$bin/switchagg-ctl" lease delete --job tree --fabric "$work/tree.toml" >/dev/null ||
        die "lease delete"
      for sock in "${LEAF_SOCKET[1]}" "${LEAF_SOCKET[2]}" "$SPINE_SOCKET"; do
        left=$("$bin/switchagg-ctl" --agent "unix:$sock" lease list | grep -c tree || true)
        [[ $left -eq 0 ]] || die "a lease is left at $sock"
      done
    else
      case $fault in
        leaf_kill) AGENT_PID=${LEAF_PID[2]} ;;
        spine_kill | spine_delete) AGENT_PID=$SPINE_PID AGENT_SOCKET=$SPINE_SOCKET ;;
        *) die "tree fault must be leaf_kill, spine_kill, spine_delete, cut or leaf_/spine_ partial, partial_exit or miss, got '$fault'" ;;
      esac
      run_mpi "$np" "$work/fault.log" "${tree_env[@]}" "${tree_emu[@]}" \
        "$mpibin/test_switch_check" --fault "$work" --bytes 1048576 --max-call-ms 8000 &
      pid=$!
      # spine_delete: the lease goes at the spine only (its control socket).
      fire_fault $pid "$work/fault.log" "${fault#*_}" tree $((RANDOM % 200))
      wait $pid || { cat "$work/fault.log"; die "the job failed after the fault"; }
      expect_pass "$work/fault.log" "a tree over 2 leaf agents" \
        "switch allreduce failed .*recomputed on the host"
      for k in 1 2; do
        [[ $fault == leaf_kill && $k == 2 ]] && continue
        kill -0 "${LEAF_PID[$k]}" || die "leaf $k died"
      done
    fi
    ;;
  thread_stripes)
    np=$1
    agent_start "$root/config/agent.toml" "$work" --set agent.log_level=info \
      --set data.plane_threads=2 --set data.threads_per_job=2 --set data.link_mbps=4000 ||
      die "agent start"
    # A lease whose home is thread 0 (listed first), so thread 1 serves it
    # only as part of its spread (thread 0 serves any lease): 30 tries miss
    # with probability 2^-30.
    zero=$(ctl --json status | python3 -c 'import json,sys; print(json.load(sys.stdin)["data_address"])')
    for i in $(seq 30); do
      out=$(ctl lease create --job "threads-np$np-$i" --slots 8 --ttl 10m) || die "lease create: $out"
      eval "$(grep '^export ' <<<"$out")"
      [[ ${SWITCHAGG_AGENT%%,*} == "$zero" ]] && break
      # Not homed at 0: given back, so the uid's slot quota never runs out.
      ctl lease delete --job "threads-np$np-$i" >/dev/null || die "lease delete threads-np$np-$i"
    done
    echo "$out"
    [[ ${SWITCHAGG_AGENT%%,*} == "$zero" ]] || die "no lease with its home at thread 0 ($zero) in 30"
    [[ $SWITCHAGG_AGENT =~ ^[^,]+:[0-9]+,[^,]+:[0-9]+$ ]] ||
      die "the lease should list both threads' addresses: SWITCHAGG_AGENT=$SWITCHAGG_AGENT"
    [[ $SWITCHAGG_LEASE =~ ^([0-9a-f]{32}),([0-9a-f]{32})$ && ${BASH_REMATCH[1]} == "${BASH_REMATCH[2]}" ]] ||
      die "one token per thread address expected: SWITCHAGG_LEASE=$SWITCHAGG_LEASE"
    run_mpi "$np" "$work/matrix.log" "$mpibin/mpi_allreduce_check" --expect switch --quick ||
      { cat "$work/matrix.log"; die "matrix run failed"; }
    # The two stripes share the host's 4000 Mbit/s link: 2000 each, not 4000.
    expect_pass "$work/matrix.log" "joined switch group .*\(2 stripe\(s\)" \
      "the agent advertises .* link 2000 Mbit/s"
    run_mpi "$np" "$work/threads.log" --mca coll_switchagg_stall_timeout 60 \
      "$mpibin/mpi_thread_check" --expect switch --threads 2 --iters 100 ||
      { cat "$work/threads.log"; die "threads run failed"; }
    expect_pass "$work/threads.log" "2 stripe\(s\)"
    # Each thread's bytes from /metrics: both carried traffic, about half each.
    ctl metrics >"$work/metrics.txt" || die "metrics"
    t0=$(awk 'index($1, "switchagg_thread_bytes_in_total{thread=\"0\"") == 1 { print $2 }' "$work/metrics.txt")
    t1=$(awk 'index($1, "switchagg_thread_bytes_in_total{thread=\"1\"") == 1 { print $2 }' "$work/metrics.txt")
    echo "bytes in: thread 0 $t0, thread 1 $t1"
    [[ -n $t0 && -n $t1 && $t0 -gt 0 && $t1 -gt 0 ]] || die "a thread carried nothing: $t0 / $t1"
    awk -v a="$t0" -v b="$t1" 'BEGIN { r = a / (a + b); exit !(r > 0.4 && r < 0.6) }' ||
      die "the stripes are not even over the threads: $t0 / $t1"
    echo "PASS thread_stripes $np"
    ;;
  stripes_mismatch)
    export SWITCHAGG_AGENT=127.0.0.1:9,127.0.0.1:10 SWITCHAGG_MODE=require
    export SWITCHAGG_LEASE=0123456789abcdef0123456789abcdef
    run_mpi 2 "$work/mm.log" "$mpibin/mpi_allreduce_check" --expect auto --counts 1,37,1001 ||
      { cat "$work/mm.log"; die "mismatch run failed"; }
    expect_pass "$work/mm.log" "SWITCHAGG_AGENT names 2 agent\(s\) but SWITCHAGG_LEASE 1 token"
    ! grep -q "joined switch group" "$work/mm.log" || die "joined with a mismatched lease"
    n=$(grep -c "names 2 agent" "$work/mm.log")
    [[ $n -eq 1 ]] || die "expected the warning once per job, saw $n"
    ;;
  require_unreachable)
    export SWITCHAGG_AGENT=127.0.0.1:9 SWITCHAGG_MODE=require
    export SWITCHAGG_LEASE=0123456789abcdef0123456789abcdef
    VERBOSE=0 run_mpi 4 "$work/req.log" "$mpibin/mpi_allreduce_check" --expect auto --counts 1,37,1001 ||
      { cat "$work/req.log"; die "require run failed"; }
    expect_pass "$work/req.log" "SWITCHAGG_MODE=require but the switch agent at 127.0.0.1:9 cannot be joined"
    n=$(grep -c "SWITCHAGG_MODE=require" "$work/req.log")
    [[ $n -eq 1 ]] || die "expected one require error line per job, saw $n"
    ;;
  *) die "unknown scenario $scenario" ;;
esac
echo "PASS $scenario $*"
