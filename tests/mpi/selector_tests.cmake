# Unit tests of the pure selection code (registry, cost model, rules,
# selector): no MPI, so they build and run even where the component cannot.
# Included from tests/mpi/CMakeLists.txt (owned by the coll component).
foreach(test test_selector test_tuner)
  add_executable(${test} ${CMAKE_CURRENT_LIST_DIR}/${test}.cc)
  target_link_libraries(${test} PRIVATE switchagg_coll_select_internal GTest::gtest_main)
  switchagg_warnings(${test})
  gtest_discover_tests(${test} PROPERTIES LABELS unit TIMEOUT 60)
endforeach()
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
      PASS_REGULAR_EXPRESSION "262144,65536,[0-9]+,[0-9.]+,[0-9.]+,[0-9.]+,[0-9.]+,[0-9.]+,${alg},ok,[0-9.]+"
      FAIL_REGULAR_EXPRESSION "FAILED;n/a;not-serving")
  endforeach()
  add_test(NAME bench_check_detects_wrong_results
    COMMAND sh -c "out=$(\"$@\" 2>&1); rc=$?; echo \"$out\"; test $rc -eq 1 && echo \"$out\" | grep -q 'expected' && echo \"$out\" | grep -q 'validation FAILED'"
            sh ${_bench_mpirun} --mca coll ^switchagg
            -x LD_PRELOAD=$<TARGET_FILE:switchagg_test_corrupt_allreduce>
            $<TARGET_FILE:switchagg-bench> --check --max 4K --iters 2 --warmup 0)
  set_tests_properties(bench_check_detects_wrong_results PROPERTIES LABELS mpi TIMEOUT 120
    ENVIRONMENT "${_bench_env}")
  # --settle: after one warm-up call, untimed calls while online tuning
  # still measures the size (offload auto, no lease: the host candidates),
  # so no timed call measures a candidate; with too few it says so.
  add_test(NAME bench_settle_np2
    COMMAND ${_bench_mpirun} $<TARGET_FILE:switchagg-bench> --min 64K --max 64K --iters 3
            --warmup 1 --settle 60 --csv -)
  set_tests_properties(bench_settle_np2 PROPERTIES LABELS mpi TIMEOUT 120
    ENVIRONMENT "${_bench_env}" PASS_REGULAR_EXPRESSION "65536,16384,3,"
    FAIL_REGULAR_EXPRESSION "timed calls measured;still measuring;n/a")
  add_test(NAME bench_settle_says_when_not_settled
    COMMAND ${_bench_mpirun} $<TARGET_FILE:switchagg-bench> --min 64K --max 64K --iters 3
            --warmup 1 --settle 2 --csv -)
  set_tests_properties(bench_settle_says_when_not_settled PROPERTIES LABELS mpi TIMEOUT 120
    ENVIRONMENT "${_bench_env}"
    PASS_REGULAR_EXPRESSION "65536 bytes: online tuning still measuring after 2 calls.*65536 bytes: [0-9]+ of the 3 timed calls measured")
  # Open MPI 4.1 has no 16-bit float type: --dtype float16 is refused,
  # naming what is missing (exit 2), not run as something else.
  add_test(NAME bench_fp16_refused_without_the_type
    COMMAND ${_bench_mpirun} $<TARGET_FILE:switchagg-bench> --dtype float16 --check --max 4K)
  set_tests_properties(bench_fp16_refused_without_the_type PROPERTIES LABELS mpi TIMEOUT 120
    ENVIRONMENT "${_bench_env}" PASS_REGULAR_EXPRESSION "this MPI defines no MPIX_C_FLOAT16")
  # --coll: every other collective's check passes at np 3 (odd: blocks of
  # p elements) and catches a wrong result of that collective.
  foreach(coll reduce_scatter_block allgather reduce bcast barrier iallreduce)
    add_test(NAME bench_check_coll_${coll}
      COMMAND ${_bench_mpirun} -np 3 $<TARGET_FILE:switchagg-bench> --coll ${coll} --check
              --min 4 --max 64K --iters 3 --warmup 1 --csv -)
    set_tests_properties(bench_check_coll_${coll} PROPERTIES LABELS mpi TIMEOUT 120
      ENVIRONMENT "${_bench_env}" PASS_REGULAR_EXPRESSION ",ok,"
      FAIL_REGULAR_EXPRESSION "FAILED")
    if(NOT coll STREQUAL "barrier")
      add_test(NAME bench_check_coll_${coll}_detects_wrong
        COMMAND sh -c "out=$(\"$@\" 2>&1); rc=$?; echo \"$out\"; test $rc -eq 1 && echo \"$out\" | grep -q 'expected' && echo \"$out\" | grep -q 'validation FAILED'"
                sh ${_bench_mpirun} -np 3 --mca coll ^switchagg
                -x LD_PRELOAD=$<TARGET_FILE:switchagg_test_corrupt_allreduce>
                $<TARGET_FILE:switchagg-bench> --coll ${coll} --check --max 4K --iters 2 --warmup 0)
      set_tests_properties(bench_check_coll_${coll}_detects_wrong PROPERTIES LABELS mpi TIMEOUT 120
        ENVIRONMENT "${_bench_env}")
    endif()
  endforeach()
endif()

# `switchagg-info --select` as docs/selection.md shows it (label unit: no MPI).
if(TARGET switchagg-info)
  add_test(NAME info_select_with_rules
    COMMAND switchagg-info --select --np 64 --ppn 8 --rules ${PROJECT_SOURCE_DIR}/config/selection.rules)
  set_tests_properties(info_select_with_rules PROPERTIES LABELS unit TIMEOUT 30
    PASS_REGULAR_EXPRESSION "4 KiB \\.\\. 64 MiB +hierarchical +[0-9.]+ us \\.\\. [0-9.]+ ms +rule .*selection.rules:[0-9]+")
  add_test(NAME info_select_offload_on
    COMMAND switchagg-info --select --np 4 --switch --offload on --window 4 --slot-bytes 64K)
  set_tests_properties(info_select_offload_on PROPERTIES LABELS unit TIMEOUT 30
    PASS_REGULAR_EXPRESSION "8 B \\.\\. 64 MiB +switch .*offload=on")
  # The dumped table is a valid rules file that reproduces the same decisions.
  add_test(NAME info_select_dump_round_trip
    COMMAND sh -c "\"$1\" --select --dump-cost-model > \"$2\" && \"$1\" --select --np 8 > \"$2.a\" && \"$1\" --select --np 8 --rules \"$2\" | sed 's|rules=.*|rules=(none)|' > \"$2.b\" && diff \"$2.a\" \"$2.b\""
            sh $<TARGET_FILE:switchagg-info> ${CMAKE_CURRENT_BINARY_DIR}/dumped_cost.rules)
  set_tests_properties(info_select_dump_round_trip PROPERTIES LABELS unit TIMEOUT 30)
  add_test(NAME info_select_bad_rules_line
    COMMAND sh -c "printf 'allreduce bytes=0-4K algorithm=ring\\nallreduce color=red algorithm=ring\\n' > \"$2\"; \"$1\" --select --rules \"$2\"; test $? -eq 2"
            sh $<TARGET_FILE:switchagg-info> ${CMAKE_CURRENT_BINARY_DIR}/bad.rules)
  set_tests_properties(info_select_bad_rules_line PROPERTIES LABELS unit TIMEOUT 30
    PASS_REGULAR_EXPRESSION "bad.rules:2: unknown key 'color'")
  # An agent on a 400 Mbit/s link for 8 one-rank nodes: the switch row is
  # link-bound and the model no longer picks it for large messages.
  add_test(NAME info_select_agent_capacity
    COMMAND switchagg-info --select --np 8 --ppn 1 --switch --agent-link-mbps 400 --min 1M --max 16M)
  set_tests_properties(info_select_agent_capacity PROPERTIES LABELS unit TIMEOUT 30
    PASS_REGULAR_EXPRESSION "1 MiB \\.\\. 16 MiB +rabenseifner +[0-9.]+ us")
  # The routed collectives' lines: with the default rows, 8 one-rank nodes,
  # allgather (p·b into each member) switches only for small blocks.
  add_test(NAME info_select_routed
    COMMAND switchagg-info --select --np 8 --ppn 1 --switch)
  set_tests_properties(info_select_routed PROPERTIES LABELS unit TIMEOUT 30
    PASS_REGULAR_EXPRESSION "allgather: switch for 8 B \\.\\. [0-9]+ KiB \\(cost model\\), previous module for [0-9]+ KiB \\.\\. 64 MiB \\(cost model\\)")
  # A tune file (as coll_switchagg_tune_file writes it) shows measured vs modeled.
  add_test(NAME info_select_measured
    COMMAND sh -c "printf 'allreduce bytes=4096-8191 np=4 ppn=4 nodes=1 switch=no algorithm=previous\nmeasured bytes=4096-8191 np=4 ppn=4 nodes=1 switch=no us:ring=41.5 us:previous=12.5\n' > \"$2\" && \"$1\" --select --np 4 --rules \"$2\" --max 8K"
            sh $<TARGET_FILE:switchagg-info> ${CMAKE_CURRENT_BINARY_DIR}/tuned.rules)
  set_tests_properties(info_select_measured PROPERTIES LABELS unit TIMEOUT 30
    PASS_REGULAR_EXPRESSION "4096 previous +previous +41\\.5 / [0-9]+ .* 12\\.5 / [0-9]+")
endif()
