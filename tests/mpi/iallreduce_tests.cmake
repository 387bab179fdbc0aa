# MPI_Iallreduce tests (test_iallreduce_run.sh): a real switchagg-agent and
# a real mpirun. Labels mpi + agent (+ fault). Included from
# tests/mpi/CMakeLists.txt after the switch tests.
if(NOT TARGET mca_coll_switchagg OR NOT TARGET switchagg-agent OR NOT TARGET switchagg-ctl)
  return()
endif()

add_mpi_check_program(mpi_iallreduce_check switchagg-agent switchagg-ctl)

set(_iallreduce_run ${CMAKE_CURRENT_SOURCE_DIR}/test_iallreduce_run.sh ${CMAKE_BINARY_DIR})

# add_iallreduce_test(NAME TIMEOUT LABELS ENV SCENARIO ARGS...)
function(add_iallreduce_test name timeout labels env)
  add_test(NAME ${name} COMMAND ${_iallreduce_run} ${ARGN})
  set_tests_properties(${name} PROPERTIES LABELS "${labels}" TIMEOUT ${timeout}
    RESOURCE_LOCK mpirun)
  if(env)
    set_tests_properties(${name} PROPERTIES ENVIRONMENT "${env}")
  endif()
endfunction()

# PPN=1: one rank per emulated node, every rank a member of the agent's
# group (node leaders: mpi_iallreduce_leaders_*).
add_iallreduce_test(mpi_iallreduce_np2 180 "mpi;agent" "PPN=1" matrix 2 on)
add_iallreduce_test(mpi_iallreduce_np3 240 "mpi;agent" "PPN=1" matrix 3 on --large)
add_iallreduce_test(mpi_iallreduce_np4 240 "mpi;agent" "PPN=1" matrix 4 on)
add_iallreduce_test(mpi_iallreduce_off_np3 180 "mpi;agent" "PPN=1" matrix 3 off)
add_iallreduce_test(mpi_iallreduce_leaders_np4 180 "mpi;agent" "" leaders 4)
add_iallreduce_test(mpi_iallreduce_leaders_nodes_np4 180 "mpi;agent" "PPN=2" leaders 4)
# The agent killed, the lease deleted, mid-loop of 64 KiB calls with node
# leaders (2 nodes x 2): every rank ends each call as its leader says.
add_iallreduce_test(mpi_iallreduce_fault_leaders_kill_np4 150 "mpi;agent;fault" "PPN=2" kill 4 65536)
add_iallreduce_test(mpi_iallreduce_fault_leaders_delete_np4 150 "mpi;agent;fault" "PPN=2" delete 4 65536)
add_iallreduce_test(mpi_iallreduce_multi_np4 180 "mpi;agent" "PPN=1" multi 4)
add_iallreduce_test(mpi_iallreduce_busy_np4 180 "mpi;agent" "PPN=1" busy 4)
add_iallreduce_test(mpi_iallreduce_overlap_np2 180 "mpi;agent" "PPN=1" overlap 2 8388608)
# MPI_Ibarrier through the switch: every rank a member, node leaders on 2
# emulated nodes x 2, and offload off (the previous module's, same checks).
add_iallreduce_test(mpi_ibarrier_np3 180 "mpi;agent" "PPN=1" ibarrier 3 on)
add_iallreduce_test(mpi_ibarrier_leaders_np4 180 "mpi;agent" "PPN=2" ibarrier 4 on)
add_iallreduce_test(mpi_ibarrier_off_np3 180 "mpi;agent" "PPN=1" ibarrier 3 off)
add_iallreduce_test(mpi_iallreduce_fault_kill_np3 150 "mpi;agent;fault" "PPN=1" kill 3 1048576)
add_iallreduce_test(mpi_iallreduce_fault_delete_np3 150 "mpi;agent;fault" "PPN=1" delete 3 1048576)
# MPI_Iallgather and MPI_Ibcast through the switch (every rank a member),
# mixed with Iallreduce under one Waitall; offload off: the previous
# module's; the agent killed mid-loop (64 KiB rounds: one round trip).
add_iallreduce_test(mpi_irouted_np3 180 "mpi;agent" "PPN=1" irouted 3 on)
add_iallreduce_test(mpi_irouted_np2 180 "mpi;agent" "PPN=1" irouted 2 on)
add_iallreduce_test(mpi_irouted_off_np3 180 "mpi;agent" "PPN=1" irouted 3 off)
add_iallreduce_test(mpi_irouted_leaders_np4 180 "mpi;agent" "PPN=2" irouted 4 leaders)
add_iallreduce_test(mpi_irouted_fault_kill_np3 150 "mpi;agent;fault" "PPN=1" irouted-kill 3 65536)
# With node leaders: 2 emulated nodes x 3 ranks not adjacent in the
# communicator (node order differs from rank order, local ranks 0-2); the
# agent killed mid-loop with node leaders, in one round trip (64 KiB) and
# above the keep limit (2 MiB: the leader's node message before the agreement).
add_iallreduce_test(mpi_irouted_leaders_cyclic_np6 300 "mpi;agent" "PPN=3;EMU_LAYOUT=cyclic"
  irouted 6 leaders)
# Uneven nodes (2, 2 and 1 ranks): a node whose leader is alone has no node step.
add_iallreduce_test(mpi_irouted_leaders_uneven_np5 240 "mpi;agent" "PPN=2" irouted 5 leaders)
add_iallreduce_test(mpi_irouted_fault_leaders_kill_np4 150 "mpi;agent;fault" "PPN=2"
  irouted-kill 4 65536)
add_iallreduce_test(mpi_irouted_fault_leaders_kill_large_np4 200 "mpi;agent;fault" "PPN=2"
  irouted-kill 4 2097152)
add_iallreduce_test(mpi_irouted_fault_leaders_delete_np4 150 "mpi;agent;fault" "PPN=2"
  irouted-delete 4 65536)
add_iallreduce_test(mpi_irouted_fault_leaders_delete_large_np4 200 "mpi;agent;fault" "PPN=2"
  irouted-delete 4 2097152)
add_iallreduce_test(mpi_irouted_leaders_late_np4 120 "mpi;agent;fault" "PPN=2" late 4 1)
add_iallreduce_test(mpi_irouted_leaders_late_leader_np4 120 "mpi;agent;fault" "PPN=2" late 4 0)
add_iallreduce_test(mpi_iallreduce_fault_leaders_kill_large_np4 200 "mpi;agent;fault" "PPN=2"
  kill 4 2097152)

# Nonblocking collectives of every kind in flight over 4 communicators,
# completed in random order by every completion call, random sleeps
# (mpi_nbc_mix_check.c, the pattern that hung the PMPI layer under MPICH):
# offload on (the component's Iallreduce / Ibarrier / Iallgather / Ibcast /
# Ireduce_scatter_block through the switch, the rest Open MPI's), off, and
# two threads posting at MPI_THREAD_MULTIPLE.
set(_program_run ${CMAKE_CURRENT_SOURCE_DIR}/test_switch_run.sh ${CMAKE_BINARY_DIR})
foreach(case "nbc_mix;on;--iters;1500;--expect;switch" "nbc_mix_off;off;--iters;1500;--expect;previous"
    "nbc_mix_threads;on;--iters;600;--threads;2;--comms;3;--expect;switch")
  list(POP_FRONT case _name _offload)
  add_test(NAME mpi_${_name}_np4 COMMAND ${_program_run} program 4
    $<TARGET_FILE:mpi_nbc_mix_check> ${case})
  set_tests_properties(mpi_${_name}_np4 PROPERTIES LABELS "mpi;agent" TIMEOUT 240
    RESOURCE_LOCK mpirun ENVIRONMENT "PPN=1;OFFLOAD=${_offload}")
endforeach()
