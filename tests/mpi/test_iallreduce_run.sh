#!/usr/bin/env bash
# test_iallreduce_run.sh BUILD_DIR SCENARIO [ARGS...]
# MPI_Iallreduce with a real switchagg-agent (scripts/lib_agent.sh) and a
# real mpirun, the component loaded from BUILD_DIR. Scenarios:
#   matrix NP on|off [ARGS]   mpi_iallreduce_check --mode matrix: dtype x op x
#                             count x in place, Wait/Test/Waitall; on: offload
#                             on, served by the switch (counters) and the agent
#                             saw the bytes; off: offload off, every call in the
#                             previous module, the agent saw nothing
#   leaders NP                offload on, node leaders (every rank on this
#                             host's node, or PPN's emulated nodes): calls up to
#                             the keep limit served by the switch, the 8 MiB
#                             ones (--large) by the previous module
#   multi NP                  several calls outstanding on three communicators
#   busy NP                   as multi on a 2-slot lease: busy refusals redone
#   overlap NP BYTES          compute between Iallreduce and Wait overlaps it
#   ibarrier NP on|off        MPI_Ibarrier: nobody done before the last rank
#                             posted; mixed with Iallreduce under one Waitall
#   irouted NP on|off|leaders MPI_Iallgather / MPI_Ibcast / MPI_Ireduce_scatter_block
#                             mixed with Iallreduce
#                             under one Waitall (--mode irouted): on: every one
#                             served by the switch; off: every one by the
#                             previous module, the agent saw nothing;
#                             leaders (PPN>1): node leaders, every one served
#                             by the switch through the node steps
#   late NP RANK              node leaders, RANK posts past the stall timeout:
#                             the job ends with an error naming it, bounded
#   irouted-kill|irouted-delete NP BYTES
#                             as kill/delete, each round also an Iallgather, an Ibcast
#                             and an Ireduce_scatter_block outstanding (--routed)
#   kill|delete NP BYTES      the agent SIGKILLed / the lease deleted at a random
#                             moment of an Iallreduce loop: right answers, redo
#                             counted, no call over --max-ms
# PPN=K puts rank r on emulated node r / K (emulate_nodes.sh). MPI_FLAVOR=mpich:
# the checker built with MPICH under mpiexec.mpich with the PMPI library
# preloaded (mpirun_lib.sh), its MPI_Iallreduce on the layer's progress
# thread (docs/pmpi.md). Prints PASS.
set -uo pipefail
build=$1 scenario=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
source "$here/mpirun_lib.sh"  # root, bin, the agent (scripts/lib_agent.sh)

work=$(mktemp -d /tmp/switchagg-iallreduce-test.XXXXXX)
cleanup() {
  agent_stop
  rm -rf "$work"
}
trap cleanup EXIT

# run NP LOG ARGS...: mpi_iallreduce_check under mpirun_lease, output to LOG.
run() {
  local np=$1 log=$2
  shift 2
  mpirun_lease "$np" "${emu[@]}" "$checker" "$@" >"$log" 2>&1
}
checker=$bin/mpi_iallreduce_check
[[ ${MPI_FLAVOR:-openmpi} == mpich ]] && checker=$bin/mpich/mpi_iallreduce_check

case $scenario in
  matrix)
    np=$1 mode=$2
    shift 2
    start_agent
    lease "imatrix-np$np"
    if [[ $mode == on ]]; then
      run "$np" "$work/run.log" --mode matrix --expect switch "$@" || { cat "$work/run.log"; die "run failed"; }
      expect_pass "$work/run.log" "joined switch group"
      in=$(metric switchagg_bytes_in_total)
      echo "agent metrics: bytes_in=$in"
      [[ ${in%.*} -ge 1000000 ]] || die "the agent saw ${in:-no} bytes"
    else
      OFFLOAD=off run "$np" "$work/run.log" --mode matrix --expect previous "$@" ||
        { cat "$work/run.log"; die "run failed"; }
      expect_pass "$work/run.log"
      expect_no_offload "$work/run.log"
    fi
    ;;
  leaders)
    np=$1
    start_agent
    lease "ileaders-np$np"
    run "$np" "$work/run.log" --mode matrix --expect switch --large ||
      { cat "$work/run.log"; die "run failed"; }
    expect_pass "$work/run.log" "joined switch group .* node leaders for $np ranks" \
      "iallreduce:switch [1-9][0-9]* previous 0"
    ;;
  multi)
    np=$1
    start_agent
    lease "imulti-np$np"
    run "$np" "$work/run.log" --mode multi --iters 6 --expect switch || { cat "$work/run.log"; die "run failed"; }
    expect_pass "$work/run.log" "joined switch group"
    ;;
  busy)
    # A lease of one window (2 slots): the three communicators' calls stream
    # at once, the agent refuses some busy; those are redone on the host,
    # every result exact, the path kept.
    np=$1
    start_agent
    lease "ibusy-np$np" 2
    run "$np" "$work/run.log" --mode multi --iters 6 --expect auto || { cat "$work/run.log"; die "run failed"; }
    expect_pass "$work/run.log" "joined switch group" "redo:switch-busy [1-9]"
    ;;
  overlap)
    np=$1 bytes=$2
    start_agent
    lease "ioverlap-np$np"
    run "$np" "$work/run.log" --mode overlap --bytes "$bytes" --iters 8 --min-hidden 0.5 \
      --expect switch || { cat "$work/run.log"; die "run failed"; }
    expect_pass "$work/run.log" "^overlap: "
    ;;
  irouted)
    np=$1 mode=$2
    start_agent
    lease "irouted-np$np"
    if [[ $mode == leaders ]]; then
      # Node leaders (PPN's emulated nodes; EMU_LAYOUT=cyclic: not adjacent):
      # the node steps posted, every one served by the switch (those above
      # the keep limit on the agreement), results exact.
      run "$np" "$work/run.log" --mode irouted --iters 6 --expect switch ||
        { cat "$work/run.log"; die "run failed"; }
      expect_pass "$work/run.log" "joined switch group .* node leaders for $np ranks" \
        "irouted: 24 iallgather, iallgather:switch 24 .*; 18 ibcast, ibcast:switch 18 " \
        "irouted: 18 ireduce_scatter_block, ireduce_scatter_block:switch 18 " \
        "irouted: previous:one-node iallgather 0 ibcast 0 ireduce_scatter_block 0"
    elif [[ $mode == on ]]; then
      run "$np" "$work/run.log" --mode irouted --iters 6 --expect switch ||
        { cat "$work/run.log"; die "run failed"; }
      expect_pass "$work/run.log" "joined switch group" \
        "irouted: 24 iallgather, iallgather:switch 24 .*; 18 ibcast, ibcast:switch 18 " \
        "irouted: 18 ireduce_scatter_block, ireduce_scatter_block:switch 18 "
    else
      OFFLOAD=off run "$np" "$work/run.log" --mode irouted --iters 6 --expect previous ||
        { cat "$work/run.log"; die "run failed"; }
      expect_pass "$work/run.log" \
        "irouted: 24 iallgather, iallgather:switch 0 previous 24 .*; 18 ibcast, ibcast:switch 0 previous 18 " \
        "irouted: 18 ireduce_scatter_block, ireduce_scatter_block:switch 0 previous 18 "
      expect_no_offload "$work/run.log"
    fi
    ;;
  late)
    # A rank posts its MPI_Iallgather past coll_switchagg_stall_timeout
    # (node leaders, 2 emulated nodes x 2): rank 1 (a non-leader) - its
    # leader's bound ends the job with an error naming it; rank 0 (a leader)
    # - the other leader's recovery names it. Never a hang.
    np=$1 late=$2
    start_agent
    lease "ilate-np$np"
    start=$(date +%s)
    OMPI_MCA_coll_switchagg_stall_timeout=2 run "$np" "$work/run.log" --mode late --late-ms 30000 \
      --late-rank "$late" &&
      { cat "$work/run.log"; die "the job succeeded: the late rank was not bounded"; }
    took=$(($(date +%s) - start))
    if ((late == 1)); then
      # Its leader's bound names it; both bounds are 2 s, so sometimes the
      # other leader's recovery (waiting for rank 0, which waits for rank 1)
      # ends the job first, naming rank 0: the chain's first link.
      named="node leader: rank 1's MPI_Iallgather input did not arrive within [0-9]* ms|no final answer for [0-9]* s from rank\(s\) 0"
    else
      named="no final answer for [0-9]* s from rank\(s\) 0|the node leader \(rank 0\) sent no MPI_Iallgather outcome"
    fi
    grep -Eq "$named" "$work/run.log" ||
      { cat "$work/run.log"; die "no error naming the late rank"; }
    ((took < 60)) || die "the job took ${took} s to end"
    grep -E "switchagg\[coll\] (error|warn)" "$work/run.log"
    echo "the job ended after ${took} s with the leader's error"
    echo PASS
    ;;
  irouted-kill | irouted-delete)
    # As kill/delete below, with an Iallgather and an Ibcast in each round:
    # the fault meets any of the four kinds; every result exact, bounded.
    np=$1 bytes=$2 action=${scenario#irouted-}
    delay_ms=$((RANDOM % 300))
    echo "injecting $action ${delay_ms} ms after the switch served its first Iallreduce"
    start_agent
    lease "ifault-routed"
    run "$np" "$work/run.log" --mode fault --routed --fault "$work" --bytes "$bytes" --max-ms 8000 &
    pid=$!
    fire_fault $pid "$work/run.log" "$action" "ifault-routed" "$delay_ms"
    wait $pid || { cat "$work/run.log"; die "the job failed after the fault"; }
    expect_pass "$work/run.log" \
      "switch (allreduce|barrier|allgather|bcast|reduce_scatter_block) failed .*(recomputed|redone) on the" \
      "fault: iallgather:switch [1-9][0-9]* redo [1-9]" "ibcast:switch [1-9][0-9]* redo [1-9]" \
      "fault: ireduce_scatter_block:switch [1-9][0-9]* redo [1-9]"
    ;;
  kill | delete)
    np=$1 bytes=$2
    delay_ms=$((RANDOM % 300))
    echo "injecting $scenario ${delay_ms} ms after the switch served its first Iallreduce"
    start_agent
    lease "ifault-$scenario"
    run "$np" "$work/run.log" --mode fault --fault "$work" --bytes "$bytes" --max-ms 8000 &
    pid=$!
    fire_fault $pid "$work/run.log" "$scenario" "ifault-$scenario" "$delay_ms"
    wait $pid || { cat "$work/run.log"; die "the job failed after the fault"; }
    # The fault meets an Iallreduce or an Ibarrier: either fails and is
    # redone; the calls after it are redone too (the path is off).
    expect_pass "$work/run.log" "switch (allreduce|barrier) failed .*(recomputed|redone) on the host" \
      "redo:switch-failed [1-9]" "fault: ibarrier:switch [1-9][0-9]* redo [1-9]"
    # MPICH: the layer's progress thread is not MPI_THREAD_MULTIPLE: the
    # blocking allreduce after the path was lost is still tuned online
    # (docs/selection.md "Threads").
    if [[ ${MPI_FLAVOR:-openmpi} == mpich ]]; then
      grep -q "MPI_THREAD_SINGLE, MPI_Iallreduce through the layer's progress thread" \
        "$work/run.log" || die "the layer's progress thread was not on"
      grep -Eq -- "-> [a-z_]+ \(tuned: " "$work/run.log" ||
        die "no online tuning beside the progress thread"
    fi
    ;;
  ibarrier)
    # MPI_Ibarrier through the switch (offload on): the late-rank rounds and
    # the mixed Waitall, every call on the switch; OFFLOAD=off: every one
    # on the previous module, the same checks.
    np=$1 mode=$2
    start_agent
    lease "ibarrier-np$np"
    if [[ $mode == on ]]; then
      run "$np" "$work/run.log" --mode ibarrier --iters 12 --expect switch --max-ms 20000 ||
        { cat "$work/run.log"; die "run failed"; }
      expect_pass "$work/run.log" "joined switch group" "ibarrier: 36 posted, ibarrier:switch 36 "
    else
      OFFLOAD=off run "$np" "$work/run.log" --mode ibarrier --iters 12 --expect previous \
        --max-ms 20000 || { cat "$work/run.log"; die "run failed"; }
      expect_pass "$work/run.log" "ibarrier: 36 posted, ibarrier:switch 0 "
    fi
    ;;
  *) die "unknown scenario '$scenario'" ;;
esac
echo PASS
