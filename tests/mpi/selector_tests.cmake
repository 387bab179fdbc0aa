# Unit tests of the pure selection code (registry, cost model, rules,
# selector): no MPI, so they build and run even where the component cannot.
# Included from tests/mpi/CMakeLists.txt (owned by the coll component).
set(_sel_core ${PROJECT_SOURCE_DIR}/mpi_coll/core)
if(TARGET switchagg_coll_select)
  add_executable(test_selector ${CMAKE_CURRENT_LIST_DIR}/test_selector.cc)
  target_link_libraries(test_selector PRIVATE switchagg_coll_select)
else()
  add_executable(test_selector ${CMAKE_CURRENT_LIST_DIR}/test_selector.cc
    ${_sel_core}/algorithms.cc ${_sel_core}/cost_model.cc
    ${_sel_core}/rules.cc ${_sel_core}/selector.cc)
endif()
target_include_directories(test_selector PRIVATE ${_sel_core})
target_link_libraries(test_selector PRIVATE switchagg_common GTest::gtest_main)
switchagg_warnings(test_selector)
gtest_discover_tests(test_selector PROPERTIES LABELS unit TIMEOUT 60)
# The shipped example rules file must parse.
target_compile_definitions(test_selector PRIVATE SWITCHAGG_SOURCE_DIR="${PROJECT_SOURCE_DIR}")

# switchagg-bench under real mpirun (label mpi): --check passes with the
# component serving (the algorithm column names a switchagg path, so it was
# not silently skipped), and --check catches a wrong MPI_Allreduce (exit 1).
if(TARGET switchagg-bench AND TARGET mca_coll_switchagg)
  execute_process(COMMAND ompi_info --path pkglibdir OUTPUT_VARIABLE _ompi_pkglib
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  string(REGEX REPLACE ".*: *" "" _ompi_pkglib "${_ompi_pkglib}")
  set(_bench_mpirun mpirun -np 2 --oversubscribe
      --mca mca_base_component_path ${_ompi_pkglib}:${CMAKE_BINARY_DIR}/lib/openmpi)
  set(_bench_env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1)
  foreach(alg recursive_doubling ring)
    add_test(NAME bench_check_${alg}
      COMMAND ${_bench_mpirun} --mca coll_switchagg_allreduce_algorithm ${alg}
              $<TARGET_FILE:switchagg-bench> --check --min 4 --max 256K --iters 3 --warmup 1
              --dtype int32 --csv -)
    set_tests_properties(bench_check_${alg} PROPERTIES LABELS mpi TIMEOUT 120
      ENVIRONMENT "${_bench_env}"
      PASS_REGULAR_EXPRESSION "262144,65536,[0-9]+,[0-9.]+,[0-9.]+,[0-9.]+,[0-9.]+,[0-9.]+,${alg},ok"
      FAIL_REGULAR_EXPRESSION "FAILED;n/a;not-serving")
  endforeach()
  add_test(NAME bench_check_detects_wrong_results
    COMMAND sh -c "out=$(\"$@\" 2>&1); rc=$?; echo \"$out\"; test $rc -eq 1 && echo \"$out\" | grep -q 'expected' && echo \"$out\" | grep -q 'validation FAILED'"
            sh ${_bench_mpirun} --mca coll ^switchagg
            -x LD_PRELOAD=$<TARGET_FILE:switchagg_test_corrupt_allreduce>
            $<TARGET_FILE:switchagg-bench> --check --max 4K --iters 2 --warmup 0)
  set_tests_properties(bench_check_detects_wrong_results PROPERTIES LABELS mpi TIMEOUT 120
    ENVIRONMENT "${_bench_env}")
endif()
