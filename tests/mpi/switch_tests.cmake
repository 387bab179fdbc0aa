# Switch path tests: a real switchagg-agent + real mpirun with
# coll_switchagg_offload=on. Labels mpi + agent (+ fault for the fault ones).
# Included from tests/mpi/CMakeLists.txt after the mpi test helpers exist.
if(NOT TARGET mca_coll_switchagg OR NOT TARGET switchagg-agent OR NOT TARGET switchagg-ctl)
  return()
endif()

add_mpi_check_program(test_switch_check switchagg-agent switchagg-ctl
  mpi_allreduce_check mpi_liveness_check mpi_tune_check mpi_thread_check mpi_fortran_types
  mpi_barrier_check mpi_routed_check mpi_oneshot_check
  switchagg-cg switchagg-train)

set(_switch_run ${CMAKE_CURRENT_SOURCE_DIR}/test_switch_run.sh ${CMAKE_BINARY_DIR})

# add_switch_test(NAME TIMEOUT LABELS SCENARIO ARGS...)
function(add_switch_test name timeout labels)
  add_test(NAME ${name} COMMAND ${_switch_run} ${ARGN})
  set_tests_properties(${name} PROPERTIES LABELS "${labels}" TIMEOUT ${timeout}
    RESOURCE_LOCK mpirun)
endfunction()

# Served by the switch: np 2 and 4 add the 5x repeated 16 MiB run; np 3
# and 4 the split/dup/churn communicators and 1M+3 elements.
add_switch_test(mpi_switch_serve_np2 180 "mpi;agent" serve 2)
add_switch_test(mpi_switch_serve_np3 240 "mpi;agent" serve 3 --large)
add_switch_test(mpi_switch_serve_np4 300 "mpi;agent" serve 4 --large)
add_switch_test(mpi_switch_serve_np8 240 "mpi;agent" serve 8)
# Without PPN all ranks share this host's node: node leaders, one agent
# member. PPN=1 (one rank per emulated node): every rank is a member.
set_tests_properties(mpi_switch_serve_np4 PROPERTIES ENVIRONMENT "PPN=1")
# Node leaders on emulated nodes: 2 nodes x 2 and 2 x 3 ranks; the checks
# assert that only each node's lowest rank sends (N per call), results
# exact and bitwise repeatable. Off: every rank a member again.
add_switch_test(mpi_switch_leaders_np4 300 "mpi;agent" serve 4 --large)
set_tests_properties(mpi_switch_leaders_np4 PROPERTIES ENVIRONMENT "PPN=2")
add_switch_test(mpi_switch_leaders_np6 300 "mpi;agent" serve 6)
set_tests_properties(mpi_switch_leaders_np6 PROPERTIES ENVIRONMENT "PPN=3")
add_switch_test(mpi_switch_leaders_off_np4 240 "mpi;agent" serve 4)
set_tests_properties(mpi_switch_leaders_off_np4 PROPERTIES
  ENVIRONMENT "PPN=2;SWITCHAGG_SWITCH_LEADERS=off")
# The node leaders' pipeline (segments of 1 MiB: 3 full and one of 5
# elements), bitwise against the same calls unpipelined; and the agent
# killed while calls of 4 segments are pipelined.
add_switch_test(mpi_switch_leaders_pipeline_np4 240 "mpi;agent" pipeline 4 3145768)
set_tests_properties(mpi_switch_leaders_pipeline_np4 PROPERTIES ENVIRONMENT "PPN=2")
add_switch_test(mpi_switch_fault_leaders_kill_pipelined 150 "mpi;agent;fault" kill 4194304 random:300 4)
set_tests_properties(mpi_switch_fault_leaders_kill_pipelined PROPERTIES
  ENVIRONMENT "PPN=2;SWITCHAGG_SWITCH_SEGMENT=1M")
# Fortran datatypes on the switch path.
add_switch_test(mpi_switch_fortran_types_np3 180 "mpi;agent" program 3
  $<TARGET_FILE:mpi_fortran_types> --expect switch)
# MPI_T: the switch path moves allreduce_switch by exactly the calls made
# and switch_bytes_sent, and no other path's counter (switchagg-mpit; host
# paths in CMakeLists.txt). (host_bytes_sent moves too: on one node the
# ranks reduce to their node leader first.)
add_switch_test(mpi_mpit_switch_np2 180 "mpi;agent" program 2 $<TARGET_FILE:switchagg-mpit>
  --calls 5 --expect allreduce_switch=5 --expect allreduce_previous=0 --expect allreduce_ring=0
  --expect allreduce_switch_failed=0 --expect "switch_bytes_sent>0")
# MPI_THREAD_MULTIPLE on the switch path: three threads, three groups.
add_switch_test(mpi_switch_threads_np2 180 "mpi;agent" program 2
  --mca coll_switchagg_stall_timeout 60 $<TARGET_FILE:mpi_thread_check> --expect switch
  --threads 3 --iters 1000)
# The same with five nonblocking calls beside each allreduce (Iallreduce,
# Iallgather, Ibcast, Ireduce_scatter_block, Ibarrier), every one served by
# the switch at MPI_THREAD_MULTIPLE: np 3 with every rank a member, np 4 on
# 2 emulated nodes x 2 (node leaders).
add_switch_test(mpi_switch_threads_nonblocking_np3 240 "mpi;agent" program 3
  --mca coll_switchagg_stall_timeout 60 $<TARGET_FILE:mpi_thread_check> --expect switch
  --threads 2 --iters 400 --nonblocking)
add_switch_test(mpi_switch_threads_nonblocking_leaders_np4 300 "mpi;agent" program 4
  --mca coll_switchagg_stall_timeout 60 $<TARGET_FILE:mpi_thread_check> --expect switch
  --threads 2 --iters 300 --nonblocking)
set_tests_properties(mpi_switch_threads_nonblocking_np3 PROPERTIES ENVIRONMENT "PPN=1")
set_tests_properties(mpi_switch_threads_nonblocking_leaders_np4 PROPERTIES ENVIRONMENT "PPN=2")
# MPI's progress rule across communicators on the switch path: an even rank
# blocked in the switch call on c2 still streams its c1 Iallreduce (4 MiB:
# beyond the first window), which the odd ranks wait for first; the same
# with every call agreed (the nonblocking agreement runs from inside the
# c2 wait), with MPI_Ibarrier, and with node leaders (2 emulated nodes x 2).
add_switch_test(mpi_switch_cross_progress_np2 150 "mpi;agent" program 2
  $<TARGET_FILE:mpi_cross_progress_check> --bytes 4194304 --expect-c2 switch)
add_switch_test(mpi_switch_cross_progress_agree_np3 150 "mpi;agent" program 3
  -x SWITCHAGG_SWITCH_KEEP=0 $<TARGET_FILE:mpi_cross_progress_check> --bytes 2097152
  --expect-c2 switch)
add_switch_test(mpi_switch_cross_progress_ibarrier_np3 150 "mpi;agent" program 3
  $<TARGET_FILE:mpi_cross_progress_check> --ibarrier --iters 20 --expect-c2 switch)
add_switch_test(mpi_switch_cross_progress_leaders_np4 150 "mpi;agent" program 4
  $<TARGET_FILE:mpi_cross_progress_check> --bytes 262144 --expect-c2 switch)
set_tests_properties(mpi_switch_cross_progress_np2 mpi_switch_cross_progress_agree_np3
  mpi_switch_cross_progress_ibarrier_np3 PROPERTIES ENVIRONMENT "PPN=1")
set_tests_properties(mpi_switch_cross_progress_leaders_np4 PROPERTIES ENVIRONMENT "PPN=2")
# mpi4py (MPI_THREAD_MULTIPLE, two Python threads) with offload on.
add_switch_test(mpi_switch_python_np2 180 "mpi;agent" program 2
  --mca coll_switchagg_stall_timeout 60 ${SWITCHAGG_PYTHON}
  ${CMAKE_CURRENT_SOURCE_DIR}/python_check.py --expect switch)
# mpi4py's FSDP step overlapped (MPI_THREAD_MULTIPLE): its Iallgathers and
# Ireduce_scatter_blocks through the switch, every rank a member and with
# node leaders (2 emulated nodes x 2).
add_switch_test(mpi_switch_python_fsdp_np3 240 "mpi;agent;apps" python_fsdp 3 ${SWITCHAGG_PYTHON}
  ${PROJECT_SOURCE_DIR}/apps/python/train_step.py)
add_switch_test(mpi_switch_python_fsdp_leaders_np4 240 "mpi;agent;apps" python_fsdp 4
  ${SWITCHAGG_PYTHON} ${PROJECT_SOURCE_DIR}/apps/python/train_step.py)
set_tests_properties(mpi_switch_python_fsdp_np3 PROPERTIES ENVIRONMENT "PPN=1")
set_tests_properties(mpi_switch_python_fsdp_leaders_np4 PROPERTIES ENVIRONMENT "PPN=2")
# The CG mini-application (MPI + OpenMP) with and without the switch.
add_switch_test(mpi_switch_cg_np2 180 "mpi;agent;apps" cg 2)
# At np 3 and 4 with every rank a member (the agent adds 3 or 4 sums; at 4
# in another order than tuned's) and at np 4 on 2 emulated nodes x 2 (node
# leaders): the switch's histories bitwise equal run to run, close to
# switchagg off in as many iterations (cg_history.sh).
add_switch_test(mpi_switch_cg_history_np3 180 "mpi;agent;apps" cg_history 3)
add_switch_test(mpi_switch_cg_history_members_np4 180 "mpi;agent;apps" cg_history 4)
add_switch_test(mpi_switch_cg_history_leaders_np4 180 "mpi;agent;apps" cg_history 4)
set_tests_properties(mpi_switch_cg_history_np3 mpi_switch_cg_history_members_np4 PROPERTIES
  ENVIRONMENT "PPN=1")
set_tests_properties(mpi_switch_cg_history_leaders_np4 PROPERTIES ENVIRONMENT "PPN=2")
# The training proxy in both modes (DDP allreduce, FSDP allgather +
# reduce-scatter): same losses, identical weights.
add_switch_test(mpi_switch_train_modes_np3 240 "mpi;agent;apps" train_modes 3)
# The same on 2 emulated nodes x 2 (node leaders): fsdp's reduce-scatter and
# allgather through the switch, its losses as with switchagg off.
add_switch_test(mpi_switch_train_modes_leaders_np4 240 "mpi;agent;apps" train_modes 4)
set_tests_properties(mpi_switch_train_modes_leaders_np4 PROPERTIES ENVIRONMENT "PPN=2")
add_switch_test(mpi_switch_two_jobs 180 "mpi;agent" two_jobs)
# Many communicators per job: 8 per rank (11 groups) on a 4-slot lease with
# window 2, calls interleaved; and two halves reducing at once on a lease of
# one window (per-call busy refusals, redone on the host, path kept).
add_switch_test(mpi_switch_many_comms_np4 180 "mpi;agent" comms 4 4 2 --comms 12)
add_switch_test(mpi_switch_busy_np4 180 "mpi;agent" comms 4 2 2 --busy 400)
# offload=auto with a lease on one node: online tuning settles on the host.
add_switch_test(mpi_switch_auto_np4 240 "mpi;agent" auto 4)
add_switch_test(mpi_switch_liveness_np3 240 "mpi;agent" liveness 3)
# MPI_Barrier through the switch (semantics, counters, agent metrics), with
# offload off (previous module), and the agent killed mid-loop; np 4 also
# as 2 emulated nodes x 2 (node leaders) and 4 x 1.
foreach(np 2 3 4)
  add_switch_test(mpi_switch_barrier_np${np} 180 "mpi;agent" barrier ${np} on)
endforeach()
add_switch_test(mpi_switch_barrier_leaders_np4 180 "mpi;agent" barrier 4 on)
set_tests_properties(mpi_switch_barrier_leaders_np4 PROPERTIES ENVIRONMENT "PPN=2")
add_switch_test(mpi_switch_barrier_members_np4 180 "mpi;agent" barrier 4 on)
set_tests_properties(mpi_switch_barrier_members_np4 PROPERTIES ENVIRONMENT "PPN=1")
add_switch_test(mpi_switch_barrier_off_np3 180 "mpi;agent" barrier 3 off)
add_switch_test(mpi_switch_barrier_auto_np3 180 "mpi;agent" barrier 3 auto)
add_switch_test(mpi_switch_fault_barrier_kill_np3 150 "mpi;agent;fault" barrier 3 kill)
add_switch_test(mpi_switch_fault_barrier_leaders_kill_np4 150 "mpi;agent;fault" barrier 4 kill)
set_tests_properties(mpi_switch_fault_barrier_leaders_kill_np4 PROPERTIES ENVIRONMENT "PPN=2")
# MPI_Reduce, MPI_Reduce_scatter(_block), MPI_Allgather, MPI_Bcast through
# the agent (mpi_routed_check: dtype x op x count x in place, bitwise, the
# counters say the switch served every call); offload off (the previous
# module, untried, op/avx off: it saturates small-integer sums); node
# leaders (bcast, reduce served; the others declined, counted) and an agent
# without routed calls (declined, counted); two agents (stripes); the agent killed and
# the lease deleted mid-loop (every op fails once, redone, right answers).
# All ranks share this host's node: node leaders off unless tested.
add_switch_test(mpi_switch_routed_np3 120 "mpi;agent" routed 3 on)
add_switch_test(mpi_switch_routed_np4 120 "mpi;agent" routed 4 on)
# np 2 (the smallest group) and np 8 (oversubscribed 4x here: counts 0, 1
# and 1001 only).
add_switch_test(mpi_switch_routed_np2 120 "mpi;agent" routed 2 on)
add_switch_test(mpi_switch_routed_np8 240 "mpi;agent" routed 8 quick)
set_tests_properties(mpi_switch_routed_np3 mpi_switch_routed_np4 mpi_switch_routed_np2
  mpi_switch_routed_np8 PROPERTIES
  ENVIRONMENT "SWITCHAGG_SWITCH_LEADERS=off")
add_switch_test(mpi_switch_routed_off_np3 120 "mpi;agent" routed 3 off)
add_switch_test(mpi_switch_routed_auto_np3 120 "mpi;agent" routed 3 auto)
add_switch_test(mpi_switch_routed_tuned_np4 180 "mpi;agent" routed 4 tuned)
add_switch_test(mpi_switch_routed_leaders_np4 240 "mpi;agent" routed 4 leaders)
add_switch_test(mpi_switch_fault_routed_leaders_kill_np4 150 "mpi;agent;fault" routed 4 leaders_kill)
# Node leaders: 2 emulated nodes x 2 ranks, every routed op through the
# leaders; 2 x 3 with each node's ranks not adjacent (rank r on node r mod 2:
# the blocks taken in node order); 3 x 2 for reduce-scatter's and
# allgather's uneven parts.
add_switch_test(mpi_switch_routed_leaders_cyclic_np6 300 "mpi;agent" routed 6 leaders)
add_switch_test(mpi_switch_routed_leaders_np6 300 "mpi;agent" routed 6 leaders)
add_switch_test(mpi_switch_fault_routed_leaders_kill_large_np4 150 "mpi;agent;fault" routed 4 leaders_kill)
set_tests_properties(mpi_switch_routed_leaders_np4 mpi_switch_fault_routed_leaders_kill_np4
  PROPERTIES ENVIRONMENT "PPN=2")
set_tests_properties(mpi_switch_fault_routed_leaders_kill_large_np4 PROPERTIES
  ENVIRONMENT "PPN=2;ROUTED_BYTES=2097152")
set_tests_properties(mpi_switch_routed_leaders_cyclic_np6 PROPERTIES
  ENVIRONMENT "PPN=3;EMU_LAYOUT=cyclic")
set_tests_properties(mpi_switch_routed_leaders_np6 PROPERTIES ENVIRONMENT "PPN=2")
add_switch_test(mpi_switch_routed_old_agent_np3 120 "mpi;agent" routed 3 old_agent)
add_switch_test(mpi_switch_routed_stripes_np3 120 "mpi;agent" routed 3 stripes)
add_switch_test(mpi_switch_fault_routed_kill_np3 120 "mpi;agent;fault" routed 3 kill)
add_switch_test(mpi_switch_fault_routed_delete_np4 120 "mpi;agent;fault" routed 4 delete)
set_tests_properties(mpi_switch_routed_off_np3 mpi_switch_routed_auto_np3
  mpi_switch_routed_tuned_np4
  mpi_switch_routed_old_agent_np3
  mpi_switch_routed_stripes_np3
  mpi_switch_fault_routed_kill_np3 mpi_switch_fault_routed_delete_np4 PROPERTIES
  ENVIRONMENT "SWITCHAGG_SWITCH_LEADERS=off")
# A rank late for I/O (issue 43): rank 3 sleeps 3 s outside MPI before
# every 25th of 60 one-float allreduces (twice), with the call bound at its
# default 2 s. The agent's WAITING keepalives carry the early ranks: every
# call exact and on the switch, none failed or recovered (--no-fallbacks
# reads the communicator's counters). Every rank a member, and node leaders
# on 2 emulated nodes x 2 (rank 3's leader waits in the node step, rank 0
# at the agent).
add_switch_test(mpi_switch_late_rank_np4 180 "mpi;agent" program 4
  $<TARGET_FILE:mpi_liveness_check> --sizes 4 --iters 60 --warmup 0 --between none
  --stall-rank 3 --stall-seconds 3 --stall-every 25 --expect switch --no-fallbacks --counters)
set_tests_properties(mpi_switch_late_rank_np4 PROPERTIES ENVIRONMENT "SWITCHAGG_SWITCH_LEADERS=off")
add_switch_test(mpi_switch_late_rank_leaders_np4 180 "mpi;agent" program 4
  $<TARGET_FILE:mpi_liveness_check> --sizes 4 --iters 60 --warmup 0 --between none
  --stall-rank 3 --stall-seconds 3 --stall-every 25 --expect switch --no-fallbacks --counters)
set_tests_properties(mpi_switch_late_rank_leaders_np4 PROPERTIES ENVIRONMENT "PPN=2")
# The same as MPI_Iallreduce + MPI_Wait (the core's nonblocking stream).
add_switch_test(mpi_switch_late_rank_nonblocking_np4 180 "mpi;agent" program 4
  $<TARGET_FILE:mpi_liveness_check> --sizes 4 --iters 60 --warmup 0 --between none
  --stall-rank 3 --stall-seconds 3 --stall-every 25 --nonblocking --no-fallbacks --counters)
set_tests_properties(mpi_switch_late_rank_nonblocking_np4 PROPERTIES
  ENVIRONMENT "SWITCHAGG_SWITCH_LEADERS=off")
# The same over two agents (stripes): each agent tells its stripe's members.
add_switch_test(mpi_switch_late_rank_stripes_np3 180 "mpi;agent" stripes_program 3
  $<TARGET_FILE:mpi_liveness_check> --sizes 8 --iters 60 --warmup 0 --between none
  --stall-rank 2 --stall-seconds 3 --stall-every 25 --expect switch --no-fallbacks --counters)
set_tests_properties(mpi_switch_late_rank_stripes_np3 PROPERTIES
  ENVIRONMENT "SWITCHAGG_SWITCH_LEADERS=off")
# A late rank and one of the two agents stopped meanwhile: the other agent's
# WAITING cannot hold the call past the stopped stripe's bound (2 s, before
# the late rank comes at 3 s); every answer exact.
add_switch_test(mpi_switch_fault_stripes_late_stall 150 "mpi;agent;fault" stripes_late_stall)
# Faults: SIGKILL at several sizes and moments, lease deleted, no agent.
add_switch_test(mpi_switch_fault_kill_64k 120 "mpi;agent;fault" kill 65536 0)
add_switch_test(mpi_switch_fault_kill_1m 120 "mpi;agent;fault" kill 1048576 random:300)
add_switch_test(mpi_switch_fault_kill_8m 150 "mpi;agent;fault" kill 8388608 random:200 4)
set_tests_properties(mpi_switch_fault_kill_8m PROPERTIES ENVIRONMENT "PPN=1")
# The agent killed under node leaders (2 nodes x 2): every rank redoes the
# call on the host.
add_switch_test(mpi_switch_fault_leaders_kill_1m 120 "mpi;agent;fault" kill 1048576 random:300 4)
set_tests_properties(mpi_switch_fault_leaders_kill_1m PROPERTIES ENVIRONMENT "PPN=2")
add_switch_test(mpi_switch_fault_delete 120 "mpi;agent;fault" delete 1048576 100)
add_switch_test(mpi_switch_fault_leaders_delete 120 "mpi;agent;fault" delete 1048576 100 4)
set_tests_properties(mpi_switch_fault_leaders_delete PROPERTIES ENVIRONMENT "PPN=2")
add_switch_test(mpi_switch_fault_stall_rejoin 150 "mpi;agent;fault" stall 1048576)
# The same with node leaders on an uneven layout (ranks 0,1 on one node,
# rank 2 alone): the leaders rejoin, the non-leader follows the agreement.
add_switch_test(mpi_switch_fault_leaders_stall_rejoin 150 "mpi;agent;fault" stall 1048576)
set_tests_properties(mpi_switch_fault_leaders_stall_rejoin PROPERTIES ENVIRONMENT "PPN=2")
# Rejoin by time: after the fallback the ranks call once every 200 ms and
# the call count (100000) never comes; SWITCHAGG_SWITCH_REJOIN_TIME=4s
# must bring the path back (rank 0's clock, told the others at checks:
# calls 1, 2, 4, 8, then where the rate says the time is up).
add_switch_test(mpi_switch_fault_stall_rejoin_time 150 "mpi;agent;fault" stall 1048576)
set_tests_properties(mpi_switch_fault_stall_rejoin_time PROPERTIES ENVIRONMENT
  "REJOIN_CALLS=100000;REJOIN_TIME=4s;GAP_MS=200")
add_switch_test(mpi_switch_fault_require_unreachable 120 "mpi;agent;fault" require_unreachable)
# Stripes: a lease over two agents (fabric map), each call cut in two.
add_switch_test(mpi_switch_stripes_np3 240 "mpi;agent" stripes 3)
# One agent whose two data-plane threads spread the lease: two stripes, one per thread.
add_switch_test(mpi_switch_thread_stripes_np2 180 "mpi;agent" thread_stripes 2)
# Trees: a spine agent and two leaf agents on this machine, 4 emulated nodes
# (2 per leaf): exact through the tree with 1 rank per node and with node
# leaders; a leaf killed, the spine killed, the spine's lease deleted mid-loop.
add_switch_test(mpi_switch_tree_np4 240 "mpi;agent" tree 4 1)
add_switch_test(mpi_switch_tree_leaders_np8 240 "mpi;agent" tree 8 2)
# A rank of leaf 2 late for I/O: the spine's WAITING relayed by leaf 1.
add_switch_test(mpi_switch_late_rank_tree_np4 120 "mpi;agent" tree 4 1 late)
add_switch_test(mpi_switch_tree_leaf_kill 150 "mpi;agent;fault" tree 4 1 leaf_kill)
add_switch_test(mpi_switch_tree_spine_kill 150 "mpi;agent;fault" tree 4 1 spine_kill)
add_switch_test(mpi_switch_tree_spine_delete 150 "mpi;agent;fault" tree 4 1 spine_delete)
# Routed collectives through the tree (every op exact, <op>:switch; the
# leaves' uplink bytes per shape), with node leaders (a node's ranks not
# adjacent: EMU_LAYOUT=cyclic), a leaf's ranks not adjacent without
# leaders (blocks staged in placement order), a leaf
# that predates routed trees (every routed call declined: agent-not-routed),
# a leaf or the spine killed mid-loop.
add_switch_test(mpi_switch_tree_routed_np4 300 "mpi;agent" tree 4 1 routed)
add_switch_test(mpi_switch_tree_routed_leaders_np8 300 "mpi;agent" tree 8 2 routed)
set_tests_properties(mpi_switch_tree_routed_leaders_np8 PROPERTIES ENVIRONMENT "EMU_LAYOUT=cyclic")
add_switch_test(mpi_switch_tree_routed_layout_np4 240 "mpi;agent" tree 4 1 routed_layout)
set_tests_properties(mpi_switch_tree_routed_layout_np4 PROPERTIES
  ENVIRONMENT "TREE_NODES1=emu[0,2];TREE_NODES2=emu[1,3]")
add_switch_test(mpi_switch_tree_routed_old_leaf_np4 180 "mpi;agent" tree 4 1 routed_old_leaf)
add_switch_test(mpi_switch_tree_routed_leaf_kill 180 "mpi;agent;fault" tree 4 1 routed_leaf_kill)
add_switch_test(mpi_switch_tree_routed_spine_kill 180 "mpi;agent;fault" tree 4 1 routed_spine_kill)
# The spine killed while a leaf's ranks are not adjacent (staged blocks,
# recovery folding the inputs leaf by leaf in placement order).
add_switch_test(mpi_switch_tree_routed_layout_spine_kill 180 "mpi;agent;fault" tree 4 1 routed_spine_kill)
set_tests_properties(mpi_switch_tree_routed_layout_spine_kill PROPERTIES
  ENVIRONMENT "TREE_NODES1=emu[0,2];TREE_NODES2=emu[1,3]")
add_switch_test(mpi_switch_stripes_kill_np3 150 "mpi;agent;fault" stripes_kill 1048576 100 3)
add_switch_test(mpi_switch_stripes_stall_rejoin 150 "mpi;agent;fault" stripes_stall 1048576)
add_switch_test(mpi_switch_stripes_mismatch 120 "mpi;agent;fault" stripes_mismatch)
# One-round-trip completion (docs/offload.md "Completion",
# mpi_oneshot_check): successful calls send no host message of the switch
# path (0 on its counter), one agreement above the keep limit; the agent's
# test fault point sends one call's result to member 0 only (and, _exit,
# then dies) and the component's cuts one member's group after a call: the
# others recover the result from a member that has it, every answer exact,
# every call bounded. Every rank a member (PPN=1) and node leaders (PPN=2).
add_switch_test(mpi_switch_oneshot_np3 120 "mpi;agent" oneshot 3 ok)
add_switch_test(mpi_switch_oneshot_members_np4 120 "mpi;agent" oneshot 4 ok)
add_switch_test(mpi_switch_oneshot_leaders_np4 120 "mpi;agent" oneshot 4 ok)
add_switch_test(mpi_switch_fault_oneshot_partial_np3 150 "mpi;agent;fault" oneshot 3 partial 2)
add_switch_test(mpi_switch_fault_oneshot_partial_exit_np3 150 "mpi;agent;fault" oneshot 3 partial_exit 2)
add_switch_test(mpi_switch_fault_oneshot_cut_np3 150 "mpi;agent;fault" oneshot 3 cut 1)
add_switch_test(mpi_switch_fault_oneshot_leaders_partial_np4 150 "mpi;agent;fault" oneshot 4 partial 1)
add_switch_test(mpi_switch_fault_oneshot_leaders_exit_np4 150 "mpi;agent;fault" oneshot 4 partial_exit 1)
set_tests_properties(mpi_switch_oneshot_members_np4 mpi_switch_fault_oneshot_cut_np3
  PROPERTIES ENVIRONMENT "PPN=1")
# Every rank a member, 10 calls (chunks) per loop iteration from chunk 3 on:
# chunk 36 is the fourth iteration's allreduce of 8192 doubles.
set_tests_properties(mpi_switch_fault_oneshot_partial_np3 mpi_switch_fault_oneshot_partial_exit_np3
  PROPERTIES ENVIRONMENT "PPN=1;FAULT_AT=36;EXPECT_RECOVERED=switch allreduce call 36 failed here")
set_tests_properties(mpi_switch_oneshot_leaders_np4 mpi_switch_fault_oneshot_leaders_partial_np4
  mpi_switch_fault_oneshot_leaders_exit_np4 PROPERTIES ENVIRONMENT "PPN=2")
# Member 0 done with the last call waits in MPI_Recv for the others, which
# recover that call's result from it meanwhile (Open MPI's MPI_Recv runs the
# component's progress callback; the MPICH twin: the layer's answering thread).
add_switch_test(mpi_switch_fault_oneshot_handoff_np3 120 "mpi;agent;fault" oneshot 3 handoff)
set_tests_properties(mpi_switch_fault_oneshot_handoff_np3 PROPERTIES ENVIRONMENT "PPN=1")
# The same under MPI_THREAD_MULTIPLE: two threads on their own
# communicators (mpi_thread_check), every call one round trip, the agent
# dying after one call's result reached member 0 only.
add_switch_test(mpi_switch_fault_oneshot_threads_np3 150 "mpi;agent;fault" oneshot 3 threads)
set_tests_properties(mpi_switch_fault_oneshot_threads_np3 PROPERTIES ENVIRONMENT "PPN=1")
# One fault aimed at one call of the loop: oneshot_fault(NAME NP MODE
# RECOVERED ENV): the oneshot scenario (FAULT_AT: the agent's result of
# that chunk reaches member 0 only; CUT_AT: rank 1's connection cut after
# that call) with the log line that names the recovered call.
# fault_test(NAME ENV SCENARIO ARGS...): any scenario's fault test so.
function(fault_test name env)
  add_switch_test(${name} 150 "mpi;agent;fault" ${ARGN})
  set_tests_properties(${name} PROPERTIES ENVIRONMENT "${env}")
endfunction()
function(oneshot_fault name np mode recovered env)
  fault_test(${name} "${env}" oneshot ${np} ${mode} ${recovered})
endfunction()
# Every rank a member, 10 calls a loop iteration from chunk 3 on: the
# fourth iteration's MPI_Iallreduce (chunk 41), settled from the other
# members without the nonblocking agreement; its MPI_Allgather (37), copied
# from the member that has it.
oneshot_fault(mpi_switch_fault_oneshot_iallreduce_np3 3 partial 2
  "PPN=1;FAULT_AT=41;EXPECT_RECOVERED=switch iallreduce call 41 failed here")
oneshot_fault(mpi_switch_fault_oneshot_allgather_np3 3 partial 2
  "PPN=1;FAULT_AT=37;EXPECT_RECOVERED=switch allgather call 37 failed here")
# A result per rank: MPI_Reduce_scatter_block (chunk 39; the agent then
# dies) and MPI_Reduce to rank 1 (chunk 40). The members that missed their
# result fold it from every member's input in the agent's order: the check
# asserts the agent's bits (order-sensitive floats). Then rank 1's
# connection cut after its reduce-scatter (call 19) succeeded: it folds its
# block from the others' inputs; the others' next call fails, they rejoin.
oneshot_fault(mpi_switch_fault_oneshot_reduce_scatter_np3 3 partial_exit 2
  "PPN=1;FAULT_AT=39;EXPECT_RECOVERED=switch reduce_scatter_block call 39 failed here.*folded from the members' inputs")
oneshot_fault(mpi_switch_fault_oneshot_reduce_np3 3 partial 2
  "PPN=1;FAULT_AT=40;EXPECT_RECOVERED=rank 1: switch reduce call 40 failed here.*folded from the members' inputs")
oneshot_fault(mpi_switch_fault_oneshot_reduce_scatter_cut_np3 3 cut 1
  "PPN=1;CUT_AT=19;EXPECT_RECOVERED=rank 1: switch reduce_scatter_block call 19 failed here \\(PeerFailed: test fault")
# Node leaders (2 ranks a node, 9 calls a loop iteration from chunk 3 on:
# 4 allreduces, bcast, reduce, allgather, reduce-scatter, barrier): the
# agent's result of call 26, an MPI_Reduce to rank 3 (a non-leader), of call
# 16, an MPI_Bcast from rank 1 (a non-leader), of call 27, an MPI_Allgather,
# and of call 37, an in-place MPI_Reduce_scatter_block, reaches node 0's
# leader only: node 1's leader folds the reduce or its node's part of the
# reduce-scatter from the leaders' inputs (the node's sums) and hands it to
# its ranks, or copies the bcast's or allgather's vector from node 0's
# leader; the folds checked bit for bit (each node, then the nodes).
oneshot_fault(mpi_switch_fault_oneshot_leaders_reduce_np4 4 partial 1
  "PPN=2;FAULT_AT=26;EXPECT_RECOVERED=rank 2: switch reduce call 26 failed here.*folded from the members' inputs")
oneshot_fault(mpi_switch_fault_oneshot_leaders_bcast_np4 4 partial 1
  "PPN=2;FAULT_AT=16;EXPECT_RECOVERED=rank 2: switch bcast call 16 failed here.*its result came from rank 0")
oneshot_fault(mpi_switch_fault_oneshot_leaders_allgather_np4 4 partial 1
  "PPN=2;FAULT_AT=27;EXPECT_RECOVERED=rank 2: switch allgather call 27 failed here.*its result came from rank 0")
oneshot_fault(mpi_switch_fault_oneshot_leaders_reduce_scatter_np4 4 partial_exit 1
  "PPN=2;FAULT_AT=37;EXPECT_RECOVERED=rank 2: switch reduce_scatter_block call 37 failed here.*folded from the members' inputs")
# The lease deleted 50-150 ms into the loop, the agent's slots 4 KiB (the
# calls of 1000 and 8192 doubles: 2 and 16 chunks, so the deletion falls
# between a call's chunks or between calls): nobody done, every rank redoes
# the call and the path goes off, every answer exact and bounded; every
# rank a member, and node leaders.
oneshot_fault(mpi_switch_fault_oneshot_revoke_np3 3 revoke 0 "PPN=1")
oneshot_fault(mpi_switch_fault_oneshot_leaders_revoke_np4 4 revoke 0 "PPN=2")
# The same at a chosen point: the agent's fault point (revoke:N) aborts the
# lease's groups as a revocation does right after chunk result N, the 6th
# (every rank a member: N = 90) or 7th (node leaders: N = 88) of the fourth
# iteration's 16-chunk allreduce; the agent's log must show chunks of that
# call still to come, the ranks that nobody had the result.
oneshot_fault(mpi_switch_fault_oneshot_revoke_chunk_np3 3 revoke_chunk 0 "PPN=1;FAULT_AT=90")
oneshot_fault(mpi_switch_fault_oneshot_leaders_revoke_chunk_np4 4 revoke_chunk 0 "PPN=2;FAULT_AT=88")
# The exchange of final outcomes (docs/offload.md "Completion", cases 8-11)
# at p = 8, every rank a member: the lease revoked mid-call fails every
# member at once; each learns that all failed in ceil(log2 8) = 3 question
# and answer pairs, so the recovery sends exactly 2 p log2 p = 48 messages
# over the ranks (asking every member: 2 p (p - 1) = 112 and more).
oneshot_fault(mpi_switch_fault_oneshot_revoke_messages_np8 8 revoke_chunk 0
  "PPN=1;FAULT_AT=90;ONESHOT_ITERS=6;MAX_CALL_MS=60000;MAX_RECOVERY_MESSAGES=48")
# One call's result reaching member 0 only (an allreduce, then a
# reduce-scatter with the agent exiting after it) at p = 8: the seven
# others find it through chains of the exchange's rounds (rank 7 asks 0
# first, rank 1 only rank 2, 3 and 5), copy it, or fold their block from
# every member's input, bit for bit.
oneshot_fault(mpi_switch_fault_oneshot_partial_np8 8 partial 7
  "PPN=1;FAULT_AT=36;ONESHOT_ITERS=6;EXPECT_RECOVERED=rank 1: switch allreduce call 36 failed here.*its result came from rank")
# A member dies while the others recover (case 10): every member's call
# fails (the lease revoked between chunks), rank 2 SIGKILLs itself as its
# recovery starts; every survivor's MPI_Allreduce returns an error within
# 25 s of the kill (at once through a failed connection to it, or a
# partner that could not decide; else at the 15 s stall bound), never a
# result and never a hang.
fault_test(mpi_switch_fault_recovery_death_np4 "" recovery_death 4 2)
# Its answerer dies after it took the question (case 12): rank 2 SIGKILLs
# itself as it takes the first question about the failed call, before it
# answers. Its asker's endpoint to it (shared memory) may look healthy:
# the failure sentinels' watch of rank 2 ends every survivor's call with an
# error naming the failed connection within 8 s of the kill (the stall
# bound is 30 s; before the watch the asker waited it out).
fault_test(mpi_switch_fault_recovery_death_asked_np4 "" recovery_death 4 2 asked)
oneshot_fault(mpi_switch_fault_oneshot_reduce_scatter_np8 8 partial_exit 7
  "PPN=1;FAULT_AT=39;ONESHOT_ITERS=6;EXPECT_RECOVERED=rank 1: switch reduce_scatter_block call 39 failed here.*folded from the members' inputs")
# The loop's last call (a barrier) reaches member 0 only, which then makes
# no MPI call but MPI_Finalize: the others recover the result from it
# there, every rank exact and bounded.
oneshot_fault(mpi_switch_fault_oneshot_finalize_np3 3 finalize 2 "PPN=1")
# The agent's partial result through stripes and trees: agent b of two
# stripes, leaf 2 of a tree (to its member 0 only) and the spine (to leaf 1
# only) withhold one chunk's result from the others; they recover it from a
# member that has it, every answer exact (a reduce-scatter through stripes
# folded bit for bit), every call bounded.
add_switch_test(mpi_switch_fault_oneshot_stripes_np3 150 "mpi;agent;fault" stripes 3 partial)
set_tests_properties(mpi_switch_fault_oneshot_stripes_np3 PROPERTIES ENVIRONMENT "PPN=1")
add_switch_test(mpi_switch_fault_oneshot_tree_leaf_np4 150 "mpi;agent;fault" tree 4 1 leaf_partial)
add_switch_test(mpi_switch_fault_oneshot_tree_spine_np4 150 "mpi;agent;fault" tree 4 1 spine_partial)
# The agent stalled past the bound for one member only: its fault point
# (miss:N:M) sends the N-th chunk result to every member but member M,
# whose call fails there (its bound, or the group aborted when the others'
# next call timed out waiting for it) and which copies it from a member that
# has it (switch:recovered, the log names who), every answer exact, every
# call bounded: every rank
# a member (rank 2 misses the fourth iteration's allreduce of 8192
# doubles), node leaders (node 0's leader misses an allreduce and takes it
# from node 1's), agent b of two stripes (rank 1 misses its stripe), a
# tree's leaf 2 (rank 3 misses) and its spine (leaf 1 misses: ranks 0 and 1).
oneshot_fault(mpi_switch_fault_oneshot_miss_np3 3 miss 1
  "PPN=1;FAULT_AT=36;MISS_MEMBER=2;EXPECT_RECOVERED=rank 2: switch allreduce call 36 failed here.*its result came from rank [01]")
oneshot_fault(mpi_switch_fault_oneshot_leaders_miss_np4 4 miss 1
  "PPN=2;FAULT_AT=30;MISS_MEMBER=0;EXPECT_RECOVERED=rank 0: switch allreduce call 30 failed here.*its result came from rank 2")
fault_test(mpi_switch_fault_oneshot_stripes_miss_np3
  "PPN=1;EXPECT_RECOVERED=rank 1: switch [a-z_]+ call [0-9]+ failed here"
  stripes 3 miss)
fault_test(mpi_switch_fault_oneshot_tree_leaf_miss_np4
  "EXPECT_RECOVERED=rank 3: switch [a-z_]+ call [0-9]+ failed here"
  tree 4 1 leaf_miss)
fault_test(mpi_switch_fault_oneshot_tree_spine_miss_np4
  "EXPECT_RECOVERED=rank [01]: switch [a-z_]+ call [0-9]+ failed here"
  tree 4 1 spine_miss)
# The member that missed a communicator's last call (miss:N:M) recovers it
# although the others freed that communicator and nine more at once: their
# retired ledgers stay until every member confirmed it is past their last
# calls (docs/offload.md "Completion", safety case 7); a lost question
# would fail the call at the test's 20 s stall bound.
fault_test(mpi_switch_fault_oneshot_retired_np3 "" retired 3)
# The same result sent to that member 1.2 s late (late:N:M:MS), past its
# bound, while a 2000-iteration loop still runs: the stale chunk is
# ignored, every answer exact; every rank a member and node leaders.
oneshot_fault(mpi_switch_fault_oneshot_late_np3 3 late 1
  "PPN=1;FAULT_AT=36;MISS_MEMBER=2;ONESHOT_ITERS=2000;EXPECT_RECOVERED=rank 2: switch allreduce call 36 failed here.*its result came from rank [01]")
oneshot_fault(mpi_switch_fault_oneshot_leaders_late_np4 4 late 1
  "PPN=2;FAULT_AT=30;MISS_MEMBER=0;ONESHOT_ITERS=2000;EXPECT_RECOVERED=rank 0: switch allreduce call 30 failed here.*its result came from rank 2")
# One member's connection cut while the others' live (SWITCHAGG_TEST_CUT)
# with node leaders (node 1's leader, rank 2, after its allreduce call 14),
# through two stripes (rank 1 drops both stripes' groups after call 16) and
# through a tree (rank 1, leaf 1's member, after call 16): it recovers the
# result from a peer, the others' next call fails and is redone alike.
oneshot_fault(mpi_switch_fault_oneshot_leaders_cut_np4 4 cut 1
  "PPN=2;CUT_RANK=2;CUT_AT=14;EXPECT_RECOVERED=rank 2: switch allreduce call 14 failed here \\(PeerFailed: test fault")
fault_test(mpi_switch_fault_oneshot_stripes_cut_np3
  "PPN=1;EXPECT_RECOVERED=rank 1: switch allreduce call 16 failed here \\(PeerFailed: test fault"
  stripes 3 cut)
fault_test(mpi_switch_fault_oneshot_tree_cut_np4
  "EXPECT_RECOVERED=rank 1: switch allreduce call 16 failed here \\(PeerFailed: test fault"
  tree 4 1 cut)
# The agent killed after a partial result, through stripes and a tree:
# agent b of two stripes, leaf 2 and the spine send one chunk's result to
# one member and exit 100 ms later; the result recovered from the member
# that has it, the calls after it fail and are redone on the host, every
# answer exact, every call bounded.
fault_test(mpi_switch_fault_oneshot_stripes_exit_np3 "PPN=1" stripes 3 partial_exit)
fault_test(mpi_switch_fault_oneshot_tree_leaf_exit_np4 "" tree 4 1 leaf_partial_exit)
fault_test(mpi_switch_fault_oneshot_tree_spine_exit_np4 "" tree 4 1 spine_partial_exit)
