# 16-bit floats under Open MPI (issue 46): only an Open MPI whose headers
# define MPIX_C_FLOAT16 (Open MPI 5's shortfloat extension, mpi-ext.h; the
# Debian 13 root runs these in ompi5_debian13). Open MPI 4.1 has no such
# type: its MPI_T variable says so instead. mpi_fp16_check computes its own
# references and tallies verdicts point to point (MPICH twins:
# mpich_tests.cmake).
include(SwitchaggOmpiFloat16)
if(NOT SWITCHAGG_OMPI_FLOAT16)
  add_mpi_test(mpi_mpit_half_floats_np1 1 ring $<TARGET_FILE:switchagg-mpit>
    --cvar "half_floats=none: this MPI's headers define no 16-bit float datatype")
  return()
endif()
add_mpi_check_program(mpi_fp16_check)
add_mpi_test(mpi_mpit_half_floats_np1 1 ring $<TARGET_FILE:switchagg-mpit>
  --cvar "half_floats=MPIX_C_FLOAT16 as float16")
# Host algorithms (blocking: their roundings within the bound the checker
# states) and the switch path on one node (fp64 folds, one rounding:
# bitwise the exact sum rounded once, blocking and MPI_Iallreduce, as under
# MPICH).
foreach(alg IN LISTS _host_algorithms)
  add_mpi_test(mpi_fp16_${alg}_np3 3 ${alg} $<TARGET_FILE:mpi_fp16_check> --expect ${alg}
    --blocking-only)
endforeach()
add_switch_test(mpi_switch_fp16_np3 240 "mpi;agent" program 3
  $<TARGET_FILE:mpi_fp16_check> --expect switch --exact-switch)
# MPI_Reduce / MPI_Reduce_scatter_block through node leaders on 2 emulated
# nodes: the leaders' wide uplink, every mixed sum bitwise the exact sum
# rounded once (MPICH twin: mpich_switch_fp16_routed_exact_leaders_np4).
# Node leaders on 2 emulated nodes: the leaders' wide (fp64) uplink, every
# mixed sum bitwise the exact sum rounded once, blocking and MPI_Iallreduce
# (MPICH twin: mpich_switch_fp16_leaders_np4).
add_switch_test(mpi_switch_fp16_leaders_np4 240 "mpi;agent" program 4
  $<TARGET_FILE:mpi_fp16_check> --expect switch --exact-switch)
set_tests_properties(mpi_switch_fp16_leaders_np4 PROPERTIES ENVIRONMENT "PPN=2")
add_switch_test(mpi_switch_fp16_routed_exact_leaders_np4 120 "mpi;agent" program 4
  $<TARGET_FILE:mpi_fp16_check> --expect switch --exact-routed)
set_tests_properties(mpi_switch_fp16_routed_exact_leaders_np4 PROPERTIES ENVIRONMENT "PPN=2")
# Rail leaders (2 agents, 2 emulated nodes of 2 ranks, a leader per rail):
# each rail leader's fp64 stripe on the wide uplink, every mixed sum bitwise
# the exact sum rounded once (MPICH twin: mpich_switch_fp16_rail_leaders_np4).
add_switch_test(mpi_switch_fp16_rail_leaders_np4 120 "mpi;agent" stripes_program 4
  -x SWITCHAGG_SWITCH_RAIL_LEADERS=on $<TARGET_FILE:mpi_fp16_check> --expect switch --exact-switch
  --blocking-only)
set_tests_properties(mpi_switch_fp16_rail_leaders_np4 PROPERTIES ENVIRONMENT "PPN=2")
