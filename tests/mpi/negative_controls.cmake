# Negative controls (docs/testing.md "Verdicts"): the test fault point
# SWITCHAGG_TEST_WRONG_RESULT makes switchagg's MPI_Allreduce (a) return
# success without writing its result (skip), or (b) write a wrong value on
# one rank (rank:1). Each checker family must then fail - its verdict
# travels point to point (tests/mpi/verdict.h), so the broken allreduce
# cannot vote - with the job's FAIL line from rank 0. A family that passed
# here could not see a wrong answer. Included from tests/mpi/CMakeLists.txt
# after the MPICH tests.
foreach(fault skip rank:1)
  string(REPLACE ":1" "" _f ${fault})
  # Open MPI, the component, ring forced.
  add_test(NAME mpi_negative_${_f}_np3 COMMAND ${_expect} --exit 1
    "^FAIL np=3 expect=ring: [0-9]+ cases checked on 3 ranks, [1-9][0-9]* failures"
    "test fault point SWITCHAGG_TEST_WRONG_RESULT=${fault}"
    -- ${_mpirun} -np 3 -x SWITCHAGG_TEST_WRONG_RESULT=${fault}
    --mca coll_switchagg_allreduce_algorithm ring $<TARGET_FILE:mpi_allreduce_check>
    --expect ring --quick)
  set_tests_properties(mpi_negative_${_f}_np3 PROPERTIES LABELS "mpi;fault" TIMEOUT 120
    ENVIRONMENT "${_env}" RESOURCE_LOCK mpirun)
  # The threads checker (MPI_THREAD_MULTIPLE, three threads).
  add_test(NAME mpi_negative_threads_${_f}_np2 COMMAND ${_expect} --exit 1
    "^FAIL 2 ranks x 3 threads" -- ${_mpirun} -np 2 -x SWITCHAGG_TEST_WRONG_RESULT=${fault}
    --mca coll_switchagg_allreduce_algorithm ring $<TARGET_FILE:mpi_thread_check>
    --expect ring --threads 3 --iters 50)
  set_tests_properties(mpi_negative_threads_${_f}_np2 PROPERTIES LABELS "mpi;fault" TIMEOUT 120
    ENVIRONMENT "${_env}" RESOURCE_LOCK mpirun)
  if(TARGET switchagg_pmpi)
    # MPICH through the PMPI library.
    add_test(NAME mpich_negative_${_f}_np3 COMMAND ${_expect} --exit 1
      "^FAIL np=3 expect=ring: [0-9]+ cases checked on 3 ranks, [1-9][0-9]* failures"
      "test fault point SWITCHAGG_TEST_WRONG_RESULT=${fault}"
      -- ${_mpiexec_mpich} -n 3 -genv LD_PRELOAD ${_mpich_lib}
      -genv SWITCHAGG_ALLREDUCE_ALGORITHM ring -genv SWITCHAGG_UCX_WAIT blocking
      -genv SWITCHAGG_TEST_WRONG_RESULT ${fault} ${_mpich_bin}/mpi_allreduce_check
      --expect ring --quick)
    set_tests_properties(mpich_negative_${_f}_np3 PROPERTIES LABELS "mpi;mpich;fault"
      TIMEOUT 120 RESOURCE_LOCK mpirun)
  endif()
  if(TARGET switchagg-agent AND TARGET switchagg-ctl)
    # The switch path with a real agent and lease, both MPIs.
    foreach(flavor openmpi mpich)
      set(_bin $<TARGET_FILE_DIR:mpi_allreduce_check>)
      set(_prefix mpi)
      set(_labels "mpi;agent;fault")
      if(flavor STREQUAL "mpich")
        if(NOT TARGET switchagg_pmpi)
          continue()
        endif()
        set(_bin ${_mpich_bin})
        set(_prefix mpich)
        set(_labels "mpi;mpich;agent;fault")
      endif()
      add_test(NAME ${_prefix}_switch_negative_${_f}_np3
        COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/test_switch_run.sh ${CMAKE_BINARY_DIR} program_fails 3
        "^FAIL np=3 expect=switch: [0-9]+ cases checked on 3 ranks, [1-9][0-9]* failures"
        -x SWITCHAGG_TEST_WRONG_RESULT=${fault} ${_bin}/mpi_allreduce_check --expect switch
        --quick)
      set_tests_properties(${_prefix}_switch_negative_${_f}_np3 PROPERTIES
        LABELS "${_labels}" TIMEOUT 180 RESOURCE_LOCK mpirun
        ENVIRONMENT "MPI_FLAVOR=${flavor}")
    endforeach()
  endif()
endforeach()
# The other checker programs of the issue's list, each once with one rank's
# result wrong (rank:1): the switch path's own checkers with a real agent
# and lease (test_switch_check, mpi_oneshot_check: their verdicts also
# travel point to point) and the tuner's checker (ring
# forced, so its one-path rule holds and only the wrong value can fail it).
# Each must fail with the job's FAIL line counting failures; each passes
# without the fault point (the same runs in their own tests).
set(_negative_fail "^FAIL .*: [0-9]+ cases checked on 3 ranks, [1-9][0-9]* failures")
if(TARGET switchagg-agent AND TARGET switchagg-ctl)
  foreach(check test_switch:test_switch_check:--repeat:1
                oneshot:mpi_oneshot_check:--mode:ok)
    string(REPLACE ":" ";" _parts ${check})
    list(GET _parts 0 _name)
    list(GET _parts 1 _prog)
    list(SUBLIST _parts 2 -1 _args)
    add_test(NAME mpi_negative_${_name}_np3
      COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/test_switch_run.sh ${CMAKE_BINARY_DIR} program_fails 3
      "${_negative_fail}" -x SWITCHAGG_TEST_WRONG_RESULT=rank:1
      $<TARGET_FILE:${_prog}> ${_args})
    set_tests_properties(mpi_negative_${_name}_np3 PROPERTIES LABELS "mpi;agent;fault"
      TIMEOUT 180 RESOURCE_LOCK mpirun ENVIRONMENT "MPI_FLAVOR=openmpi")
  endforeach()
endif()
add_test(NAME mpi_negative_tune_np3 COMMAND ${_expect} --exit 1 "${_negative_fail}"
  "test fault point SWITCHAGG_TEST_WRONG_RESULT=rank:1"
  -- ${_mpirun} -np 3 -x SWITCHAGG_TEST_WRONG_RESULT=rank:1
  --mca coll_switchagg_allreduce_algorithm ring
  $<TARGET_FILE:mpi_tune_check> --sizes 4096,65536 --expect any --warmup 4 --measure 2)
set_tests_properties(mpi_negative_tune_np3 PROPERTIES LABELS "mpi;fault" TIMEOUT 120
  ENVIRONMENT "${_env}" RESOURCE_LOCK mpirun)
