# The PMPI library over Open MPI (libswitchagg_pmpi_openmpi.so; docs/pmpi.md
# "Over Open MPI"), for a site where the component is not installed:
# Open MPI's mpirun with Open MPI's own component path only and coll
# ^switchagg, the library preloaded into the Open MPI programs. The
# checkers find the library's diagnostics symbols as they find the
# component's. Label mpi (+ agent for the switch path).
if(NOT TARGET switchagg_pmpi_openmpi)
  return()
endif()
set(_ompi_pmpi_lib ${CMAKE_BINARY_DIR}/lib/libswitchagg_pmpi_openmpi.so)
set(_mpirun_no_component ${MPIEXEC_EXECUTABLE} --oversubscribe --bind-to none
  --mca btl self,vader --mca mca_base_component_path ${_ompi_pkglibdir} --mca coll ^switchagg)

# Every call of the checker served with the forced host algorithm (per-call
# diagnostics and counters); the verbose line names the library and Open MPI.
add_test(NAME openmpi_pmpi_allreduce_ring_np3 COMMAND ${_expect} "^PASS"
  "switchagg\\[pmpi\\] info: PMPI layer active \\(libswitchagg_pmpi_openmpi\\) over Open MPI"
  -- ${_mpirun_no_component} -np 3 -x LD_PRELOAD=${_ompi_pmpi_lib}
  -x SWITCHAGG_ALLREDUCE_ALGORITHM=ring -x SWITCHAGG_VERBOSE=1
  $<TARGET_FILE:mpi_allreduce_check> --expect ring --quick)
# The same mpirun without the library: no diagnostics symbols, the checker
# aborts with code 2 (the test above sees the library, not a component).
add_test(NAME openmpi_pmpi_without_library COMMAND ${_expect} --exit 2 --
  ${_mpirun_no_component} -np 2 $<TARGET_FILE:mpi_allreduce_check> --expect ring --quick)
# The OSU-style validated loop (mpi_liveness_check; Open MPI's own barrier,
# which does not drive switchagg's transport without the component, on
# WORLD around every ring allreduce on a duplicate, 8 KiB-32 MiB, every
# result checked).
add_test(NAME openmpi_pmpi_liveness_ring_np3 COMMAND ${_expect} "^PASS liveness"
  -- ${_mpirun_no_component} -np 3 -x LD_PRELOAD=${_ompi_pmpi_lib}
  -x SWITCHAGG_ALLREDUCE_ALGORITHM=ring -x SWITCHAGG_STALL_TIMEOUT=60
  $<TARGET_FILE:mpi_liveness_check> --sizes 8192,65536,65540,262144,1048580,8388608,16777216,33554432
  --iters 10 --between barrier --dup --expect ring)
set_tests_properties(openmpi_pmpi_allreduce_ring_np3 openmpi_pmpi_without_library
  openmpi_pmpi_liveness_ring_np3 PROPERTIES
  LABELS mpi TIMEOUT 120 ENVIRONMENT "${_env}" RESOURCE_LOCK mpirun)

# The switch path (a real agent and lease; test_switch_run.sh with
# MPI_FLAVOR=openmpi-pmpi): the dtype x op matrix, every call served by the
# switch; the routed collectives, every call through the switch and checked
# bitwise; three threads on their own communicators at MPI_THREAD_MULTIPLE;
# the agent SIGKILLed mid-run (every answer right, every call bounded).
if(TARGET switchagg-agent AND TARGET switchagg-ctl)
  # add_switch_test: switch_tests.cmake's, with the flavor set below.
  add_switch_test(openmpi_pmpi_switch_serve_np3 180 "mpi;agent" serve 3)
  add_switch_test(openmpi_pmpi_switch_routed_np3 180 "mpi;agent" routed 3 on)
  add_switch_test(openmpi_pmpi_switch_threads_np2 180 "mpi;agent" program 2
    --mca coll_switchagg_stall_timeout 60 $<TARGET_FILE:mpi_thread_check> --expect switch
    --threads 3 --iters 1000)
  add_switch_test(openmpi_pmpi_switch_fault_kill_np3 150 "mpi;agent;fault" kill 262144 random:300 3)
  set_tests_properties(openmpi_pmpi_switch_serve_np3 openmpi_pmpi_switch_threads_np2
    openmpi_pmpi_switch_fault_kill_np3 PROPERTIES ENVIRONMENT "MPI_FLAVOR=openmpi-pmpi")
  set_tests_properties(openmpi_pmpi_switch_routed_np3 PROPERTIES
    ENVIRONMENT "MPI_FLAVOR=openmpi-pmpi;SWITCHAGG_SWITCH_LEADERS=off")
endif()
