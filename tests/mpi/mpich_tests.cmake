# The PMPI library (libswitchagg_pmpi.so) on MPICH: the same check programs,
# built with MPICH (BUILD_DIR/bin/mpich), run with mpiexec.mpich and the
# library preloaded. Labels mpi;mpich (+ agent, fault as their Open MPI
# twins). Parameters go as SWITCHAGG_* variables (pmpi_params.h).
if(NOT TARGET switchagg_pmpi)
  return()
endif()

# switchagg_add_mpich_program (mpi_coll/pmpi/CMakeLists.txt): a program
# built against MPICH into bin/mpich.
foreach(prog mpi_allreduce_check mpi_fallback_check mpi_routed_check mpi_barrier_check
    test_switch_check mpi_liveness_check mpi_iallreduce_check mpi_oneshot_check)
  switchagg_add_mpich_program(${prog} ${prog}.cc)
endforeach()
switchagg_add_mpich_program(mpi_thread_check mpi_thread_check.c)
switchagg_add_mpich_program(mpi_fp16_check mpi_fp16_check.cc)
switchagg_add_mpich_program(mpi_cross_progress_check mpi_cross_progress_check.c)
switchagg_add_mpich_program(mpi_nbc_mix_check mpi_nbc_mix_check.c)
# The bench app on MPICH (benchmarks/mpich_bench.sh): plain MPICH against
# the library preloaded, the same program.
set(_bench_src ${PROJECT_SOURCE_DIR}/apps/bench)
switchagg_add_mpich_program(switchagg-bench ${_bench_src}/main.cc ${_bench_src}/bench_coll.cc
  ${_bench_src}/bench_options.cc ${_bench_src}/bench_data.cc ${_bench_src}/bench_report.cc
  ${_bench_src}/gamma.cc ${_bench_src}/component_query.cc)
target_include_directories(switchagg-bench_mpich PRIVATE ${_bench_src})
target_link_libraries(switchagg-bench_mpich PRIVATE switchagg_common)
# The bench's corrupting shim against MPICH (its binary16 results too).
add_library(switchagg_test_corrupt_allreduce_mpich MODULE ${_bench_src}/testing/corrupt_allreduce.c)
target_include_directories(switchagg_test_corrupt_allreduce_mpich SYSTEM BEFORE PRIVATE
  ${SWITCHAGG_MPICH_INCLUDE_DIRS})
target_link_libraries(switchagg_test_corrupt_allreduce_mpich PRIVATE ${SWITCHAGG_MPICH_LINK}
  ${CMAKE_DL_LIBS})
switchagg_warnings(switchagg_test_corrupt_allreduce_mpich)

set(_mpich_lib ${CMAKE_BINARY_DIR}/lib/libswitchagg_pmpi.so)
set(_mpiexec_mpich ${SWITCHAGG_MPICH_BINDIR}/mpiexec.mpich)
if(SWITCHAGG_MPICH_HOME)
  set(_mpiexec_mpich ${SWITCHAGG_MPICH_HOME}/bin/mpiexec)
endif()
set(_mpich_bin ${CMAKE_BINARY_DIR}/bin/mpich)

# add_mpich_test(NAME NP ALGORITHM PROGRAM ARGS...): the program under
# mpiexec.mpich with the library preloaded and the algorithm forced.
function(add_mpich_test name np algorithm program)
  set(launch ${_mpiexec_mpich} -n ${np} -genv LD_PRELOAD ${_mpich_lib}
    -genv SWITCHAGG_ALLREDUCE_ALGORITHM ${algorithm} -genv SWITCHAGG_UCX_WAIT blocking)
  if(algorithm STREQUAL "hierarchical")
    list(APPEND launch ${CMAKE_CURRENT_SOURCE_DIR}/emulate_nodes.sh 2)
  endif()
  add_test(NAME ${name} COMMAND ${_expect} "^PASS" -- ${launch} ${_mpich_bin}/${program} ${ARGN})
  set_tests_properties(${name} PROPERTIES LABELS "mpi;mpich" TIMEOUT 300 RESOURCE_LOCK mpirun)
endfunction()

# Every host algorithm at np 3 and 4: WORLD's dtype x op matrix (np 4 also
# dup/split/churn communicators and 1M+3 elements); the checker asserts
# per call that switchagg served it with the forced algorithm (it fails
# when the library is not active: no diagnostics symbols).
foreach(alg IN LISTS _host_algorithms)
  add_mpich_test(mpich_allreduce_${alg}_np3 3 ${alg} mpi_allreduce_check --expect ${alg} --quick)
  add_mpich_test(mpich_allreduce_${alg}_np4 4 ${alg} mpi_allreduce_check --expect ${alg} --large)
endforeach()
add_mpich_test(mpich_allreduce_auto_np4 4 auto mpi_allreduce_check --expect auto --quick)
# auto with the cost model alone (no online tuning): small calls go to
# MPICH's own allreduce, except where MPICH's answer departs from C
# semantics (unsigned MIN/MAX, switchagg_mpi_types.c): there switchagg
# serves them on the host. Without that, 40 unsigned MIN/MAX cases fail.
add_mpich_test(mpich_allreduce_model_np4 4 auto mpi_allreduce_check --expect auto --quick)
set_tests_properties(mpich_allreduce_model_np4 PROPERTIES ENVIRONMENT "SWITCHAGG_TUNE=off")
# MPI_THREAD_MULTIPLE: three threads per rank, each on its own duplicate of
# WORLD, 1000 allreduces each (ring forced; every result exact, every call
# counted as ring on its communicator). The switch path's twin is below.
add_mpich_test(mpich_threads_ring_np2 2 ring mpi_thread_check --expect ring --threads 3
  --iters 1000)
# The OSU-style validated loop (mpi_liveness_check: the pattern of
# osu_allreduce -c, MPICH's own barrier or neighbour sendrecv around every
# allreduce, every result checked, every call served by the forced
# algorithm): sizes across the UCX eager/rendezvous, clear-to-send and
# ring-segment switches. A rank that left a call while a peer still needed
# its transport ends in the stall error (60 s) before the CTest timeout.
set(_mpich_liveness_sizes 8192,65536,65540,262144,1048580,8388608,16777216,33554432)
add_mpich_test(mpich_liveness_ring_np3 3 ring mpi_liveness_check --sizes ${_mpich_liveness_sizes}
  --iters 10 --between barrier --expect ring)
add_mpich_test(mpich_liveness_rabenseifner_sendrecv_np4 4 rabenseifner mpi_liveness_check
  --sizes ${_mpich_liveness_sizes} --iters 6 --between sendrecv --expect rabenseifner)
# The allreduces on a duplicate of WORLD, MPICH's barrier on WORLD: a rank
# that left a ring allreduce waits in another communicator's call.
add_mpich_test(mpich_liveness_ring_dup_np3 3 ring mpi_liveness_check --sizes ${_mpich_liveness_sizes}
  --iters 10 --between barrier --dup --expect ring)
set_tests_properties(mpich_threads_ring_np2 mpich_liveness_ring_np3
  mpich_liveness_rabenseifner_sendrecv_np4 mpich_liveness_ring_dup_np3 PROPERTIES
  ENVIRONMENT "SWITCHAGG_STALL_TIMEOUT=60")
# MPI's progress rule across communicators (mpi_cross_progress_check.c):
# a rank in switchagg's ring allreduce on c2 still progresses MPICH's
# Iallreduce on c1, which its peer waits for before it joins c2.
add_mpich_test(mpich_cross_progress_ring_np2 2 ring mpi_cross_progress_check --bytes 1048576
  --expect-c2 ring)
# Calls handed to MPICH's own (user-defined op, derived datatype, ...):
# counted as fallback:<reason>, right answers.
add_mpich_test(mpich_fallback_np3 3 ring mpi_fallback_check --expect ring)
# 16-bit floats (MPIX_C_FLOAT16, issue 46): every host algorithm, and auto
# without tuning (small calls would go to MPICH's own, which aborts on the
# type: switchagg_mpi_types.c marks it as differing, so switchagg serves
# them on the host). Sums of small integers and MIN/MAX exact, mixed sums
# within the host algorithms' bound (mpi_fp16_check.cc). MPI_Iallreduce
# too: without an agent the layer runs such a call on a host algorithm at
# post (MPICH's own would abort on the type; docs/offload.md "16-bit floats").
foreach(alg IN LISTS _host_algorithms)
  add_mpich_test(mpich_fp16_${alg}_np3 3 ${alg} mpi_fp16_check --expect ${alg})
endforeach()
add_mpich_test(mpich_fp16_auto_np4 4 auto mpi_fp16_check --expect auto)
set_tests_properties(mpich_fp16_auto_np4 PROPERTIES ENVIRONMENT "SWITCHAGG_TUNE=off")
# MPI_Reduce, MPI_Reduce_scatter_block and MPI_Ireduce_scatter_block of
# MPIX_C_FLOAT16 without an agent: each on a host allreduce, each rank
# keeping its part (reduce:host; the nonblocking one completed at post),
# every result within the fp16 bound. MPICH's own aborts on each of them.
add_mpich_test(mpich_fp16_routed_np3 3 auto mpi_fp16_check --expect auto --routed)
# switchagg-bench --dtype float16 under the library (MPICH's own aborts on
# the type): its exact check passes on a host algorithm, and fails (exit 1,
# naming the expected value) when the corrupting shim changes one binary16
# element of rank 1's results.
add_test(NAME mpich_bench_fp16_check_np3 COMMAND ${_mpiexec_mpich} -n 3 -genv LD_PRELOAD
  ${_mpich_lib} -genv SWITCHAGG_ALLREDUCE_ALGORITHM ring -genv SWITCHAGG_UCX_WAIT blocking
  ${_mpich_bin}/switchagg-bench --dtype float16 --check --min 2 --max 64K --iters 2 --warmup 1
  --csv -)
set_tests_properties(mpich_bench_fp16_check_np3 PROPERTIES LABELS "mpi;mpich" TIMEOUT 120
  RESOURCE_LOCK mpirun FAIL_REGULAR_EXPRESSION "FAILED" PASS_REGULAR_EXPRESSION
  "65536,32768,[0-9]+,[0-9.]+,[0-9.]+,[0-9.]+,[0-9.]+,[0-9.]+,ring,ok")
add_test(NAME mpich_bench_fp16_check_detects_wrong
  COMMAND sh -c "out=$(\"$@\" 2>&1); rc=$?; echo \"$out\"; test $rc -eq 1 && echo \"$out\" | grep -q 'expected' && echo \"$out\" | grep -q 'validation FAILED'"
          sh ${_mpiexec_mpich} -n 2 -genv LD_PRELOAD
          $<TARGET_FILE:switchagg_test_corrupt_allreduce_mpich>:${_mpich_lib}
          -genv SWITCHAGG_ALLREDUCE_ALGORITHM ring -genv SWITCHAGG_UCX_WAIT blocking
          ${_mpich_bin}/switchagg-bench --dtype float16 --check --max 4K --iters 2 --warmup 0)
set_tests_properties(mpich_bench_fp16_check_detects_wrong PROPERTIES LABELS "mpi;mpich"
  TIMEOUT 120 RESOURCE_LOCK mpirun)
# The same program under plain MPICH 4.0.2 (Debian 12), no library: it
# aborts inside MPICH on its first MPIX_C_FLOAT16 sum ("Assertion failed in
# file src/mpi/datatype/typerep/src/typerep_yaksa_pack.c ... actual_pack_bytes
# == data_sz"): what users get without switchagg. Should a newer MPICH serve
# the type, this test fails and says so: drop it then.
add_test(NAME mpich_fp16_without_library COMMAND ${_expect} --exit 1
  "Assertion failed in file .*typerep_yaksa_pack.c" --
  ${_mpiexec_mpich} -n 2 ${_mpich_bin}/mpi_fp16_check --plain --blocking-only)
set_tests_properties(mpich_fp16_without_library PROPERTIES LABELS "mpi;mpich" TIMEOUT 120
  RESOURCE_LOCK mpirun)
# SWITCHAGG_ALLREDUCE_ALGORITHM=previous: decided once per communicator
# (the layer only classifies and counts each call, benchmarks/mpich_bench.sh
# measures that cost): every call on MPICH's own, counted as previous, the
# user-defined ops by reason, on 130 live communicators too.
add_mpich_test(mpich_fallback_previous_np3 3 previous mpi_fallback_check --expect previous)
# Without the library the same checker must fail (it proves the checks
# above see switchagg, not MPICH): it aborts with code 2, no diagnostics.
# The exit code, not the abort message: Hydra sometimes kills the ranks
# before their output reaches it (2 runs in 6 printed nothing).
add_test(NAME mpich_allreduce_without_library COMMAND ${_expect} --exit 2 --
  ${_mpiexec_mpich} -n 2 ${_mpich_bin}/mpi_allreduce_check --expect ring --quick)
set_tests_properties(mpich_allreduce_without_library PROPERTIES LABELS "mpi;mpich" TIMEOUT 120
  RESOURCE_LOCK mpirun)

# The switch path: a real agent and a lease (test_switch_run.sh with
# MPI_FLAVOR=mpich).
if(TARGET switchagg-agent AND TARGET switchagg-ctl)
  add_custom_target(switchagg_mpich_switch_deps ALL DEPENDS switchagg-agent switchagg-ctl
    switchagg_pmpi mpi_allreduce_check_mpich mpi_routed_check_mpich mpi_barrier_check_mpich
    test_switch_check_mpich mpi_thread_check_mpich mpi_liveness_check_mpich
    mpi_iallreduce_check_mpich mpi_fp16_check_mpich mpi_oneshot_check_mpich)
  function(add_mpich_switch_test name timeout labels)
    add_test(NAME ${name} COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/test_switch_run.sh
      ${CMAKE_BINARY_DIR} ${ARGN})
    set_tests_properties(${name} PROPERTIES LABELS "${labels}" TIMEOUT ${timeout}
      RESOURCE_LOCK mpirun ENVIRONMENT "MPI_FLAVOR=mpich")
  endfunction()
  add_mpich_switch_test(mpich_switch_serve_np3 240 "mpi;mpich;agent" serve 3 --large)
  add_mpich_switch_test(mpich_switch_serve_np4 300 "mpi;mpich;agent" serve 4)
  # One agent's two data-plane threads spreading the lease: two stripes through the PMPI layer.
  add_mpich_switch_test(mpich_switch_thread_stripes_np2 180 "mpi;mpich;agent" thread_stripes 2)
  add_mpich_switch_test(mpich_switch_routed_np3 180 "mpi;mpich;agent" routed 3 on)
  add_mpich_switch_test(mpich_switch_routed_np4 180 "mpi;mpich;agent" routed 4 on)
  add_mpich_switch_test(mpich_switch_barrier_np3 180 "mpi;mpich;agent" barrier 3 on)
  # The validated loop on the switch path (mpi_switch_liveness_np3's twin).
  add_mpich_switch_test(mpich_switch_liveness_np3 240 "mpi;mpich;agent" liveness 3)
  # MPI_THREAD_MULTIPLE on the switch path: three threads per rank, each on
  # its own communicator (three groups at the agent), every call exact and
  # counted as served by the switch (mpi_switch_threads_np2's twin).
  add_mpich_switch_test(mpich_switch_threads_np2 180 "mpi;mpich;agent" program 2
    --mca coll_switchagg_stall_timeout 60 ${_mpich_bin}/mpi_thread_check --expect switch
    --threads 3 --iters 1000)
  # MPI_Iallreduce through the switch path on the layer's progress thread
  # (docs/pmpi.md "MPI_Iallreduce"): dtype x op x count x in place, MPI_Wait,
  # MPI_Test loops, MPI_Waitall, every result exact and every communicating
  # call counted iallreduce:switch, calls queued behind each other.
  add_mpich_switch_test(mpich_switch_iallreduce_np3 180 "mpi;mpich;agent" program 3
    ${_mpich_bin}/mpi_iallreduce_check --mode matrix --expect switch)
  # 16-bit floats through the agent (issue 46), blocking and MPI_Iallreduce.
  # One rank per node: the agent sums all in fp64 (exact) and rounds once,
  # so mixed sums are bitwise the exact sum rounded once. One node: the
  # leader's MPI_Iallreduce fold and its blocking node reduce (a binomial
  # tree) are fp64 sums too, rounded once by the leader, and the agent
  # passes one member through: exact as well (docs/offload.md "16-bit
  # floats").
  add_mpich_switch_test(mpich_switch_fp16_np3 240 "mpi;mpich;agent" program 3
    ${_mpich_bin}/mpi_fp16_check --expect switch --exact-switch)
  add_mpich_switch_test(mpich_switch_fp16_ppn1_np4 240 "mpi;mpich;agent" program 4
    ${_mpich_bin}/mpi_fp16_check --expect switch --exact-switch)
  set_tests_properties(mpich_switch_fp16_ppn1_np4 PROPERTIES ENVIRONMENT "MPI_FLAVOR=mpich;PPN=1")
  # Node leaders on two emulated nodes (PPN=2): the leaders stream their
  # nodes' fp64 sums, the agent sums them in fp64 and each leader rounds
  # once, so blocking and MPI_Iallreduce mixed sums are bitwise the exact
  # sum rounded once (16-bit partials on the uplink gave element 0: 1 + 2^-10
  # for 1 + 3 2^-11). A leader that streams 16-bit partials (rank 2 alone
  # with coll_switchagg_half_uplink=half) is refused by the agent naming both
  # dtypes (docs/offload.md "Wide partials on the leaders' uplink", case 4).
  add_mpich_switch_test(mpich_switch_fp16_leaders_np4 240 "mpi;mpich;agent" program 4
    ${_mpich_bin}/mpi_fp16_check --expect switch --exact-switch)
  set_tests_properties(mpich_switch_fp16_leaders_np4 PROPERTIES ENVIRONMENT "MPI_FLAVOR=mpich;PPN=2")
  # coll_switchagg_half_uplink=float32: the leaders' node sums rounded once
  # to fp32 on the uplink (2x the 16-bit bytes): every switch mixed sum
  # within one fp16 ulp plus p 2^-24 sum |x| of the exact sum (--one-rounding)
  # and at most 1 ulp from the exact sum rounded once - and exactly 1 for
  # these inputs (fp64 partials give 0: the pattern pins fp32 on the wire;
  # half_uplink=half fails the bound: 0xcbfc for 0xcbfb). Blocking and
  # MPI_Iallreduce, ~6 s.
  add_mpich_switch_test(mpich_switch_fp16_leaders_f32_np4 120 "mpi;mpich;agent" program 4
    ${_mpich_bin}/mpi_fp16_check --expect switch --one-rounding --max-ulp 1)
  set_tests_properties(mpich_switch_fp16_leaders_f32_np4 PROPERTIES
    ENVIRONMENT "MPI_FLAVOR=mpich;PPN=2;SWITCHAGG_HALF_UPLINK=float32"
    PASS_REGULAR_EXPRESSION "PASS fp16 allreduce .*max 1.00 ulp on the switch")
  # Case 3 of "Wide partials on the leaders' uplink" under a fault: node 1's
  # leader (rank 2) has its agent connection cut after its one-round-trip
  # call 41 succeeded (SWITCHAGG_TEST_CUT; the mixed sum of count 7, whose
  # elements 0 and 1 round differently through fp32), so it takes the result
  # from rank 0's ledger: every rank's result bitwise the exact sum rounded
  # once and the same as rank 0's, the calls after it redone on the host
  # with the reason named (fallback:switch-failed). A recovered leader that
  # rounds its own fp64 result through fp32 instead fails it (element 1:
  # 0x3c00 for 0x3c01, on ranks 2 and 3). ~4 s.
  add_mpich_switch_test(mpich_switch_fault_fp16_leaders_cut_np4 120 "mpi;mpich;agent;fault"
    program 4 --mca coll_switchagg_stall_timeout 60
    ${_mpich_bin}/mpi_fp16_check --expect auto --exact-switch --blocking-only)
  set_tests_properties(mpich_switch_fault_fp16_leaders_cut_np4 PROPERTIES ENVIRONMENT
    "MPI_FLAVOR=mpich;PPN=2;SWITCHAGG_TEST_CUT=2:41;EXPECT_LOG=rank 2: switch allreduce call 41 failed here \\(PeerFailed: test fault.*its result came from rank 0 \\(switch:recovered\\)")
  # The same cut in MPI_Ireduce_scatter_block through node leaders on the
  # wide uplink (call 45: mixed sums, 1001 per rank; inputs differ per call):
  # rank 2's stream result is dropped, its settle folds the leaders' fp64
  # inputs from rank 0's ledger and rounds its node's part once (bitwise
  # the exact sum rounded once). A recovery that folds in 16 bits (inf and
  # 0 for 156.25) or keeps a stale part fails it. The calls after the cut,
  # with the switch path disabled, run on a host allreduce, not on MPICH's
  # own fp16 reduce (which aborts). ~4 s.
  add_mpich_switch_test(mpich_switch_fault_fp16_ireduce_cut_np4 120 "mpi;mpich;agent;fault"
    program 4 --mca coll_switchagg_stall_timeout 60
    ${_mpich_bin}/mpi_fp16_check --expect auto --exact-routed)
  set_tests_properties(mpich_switch_fault_fp16_ireduce_cut_np4 PROPERTIES ENVIRONMENT
    "MPI_FLAVOR=mpich;PPN=2;SWITCHAGG_TEST_CUT=2:45;EXPECT_LOG=rank 2: switch reduce_scatter_block call 45 failed here \\(PeerFailed: test fault.*rank 0 had finished it, so its result was folded")
  add_mpich_switch_test(mpich_switch_fp16_leaders_mixed_np4 120 "mpi;mpich;agent;fault"
    program_fails 4 "sent float16/sum, others float64/sum|sent float64/sum, others float16/sum"
    ${_mpich_bin}/mpi_fp16_check --expect switch --blocking-only)
  set_tests_properties(mpich_switch_fp16_leaders_mixed_np4 PROPERTIES
    ENVIRONMENT "MPI_FLAVOR=mpich;PPN=2;EMU_RANK_ENV=2:SWITCHAGG_HALF_UPLINK=half")
  # The routed reductions with a mismatched leader (docs/offload.md "Wide
  # partials on the leaders' uplink", cases 4 and 6): rank 2 alone sends
  # 16-bit partials, the agent refuses the leaders' routed reduce naming
  # both types, the call is redone on a host allreduce (MPICH's own fp16
  # reduce aborts) and every result holds (exact where the switch served).
  add_mpich_switch_test(mpich_switch_fp16_routed_leaders_mixed_np4 120 "mpi;mpich;agent;fault"
    program 4 ${_mpich_bin}/mpi_fp16_check --expect auto --exact-routed)
  set_tests_properties(mpich_switch_fp16_routed_leaders_mixed_np4 PROPERTIES ENVIRONMENT
    "MPI_FLAVOR=mpich;PPN=2;EMU_RANK_ENV=2:SWITCHAGG_HALF_UPLINK=half;EXPECT_LOG=op_mismatch\\): rank [0-9] sent float(16/sum, others float64|64/sum, others float16)/sum")
  # Through an agent tree (a spine, two leaves): 4 emulated nodes of 2 ranks,
  # 2 node leaders per leaf, the leaders' fp64 call summed in fp64 at every
  # level: bitwise the exact sum rounded once (blocking calls and
  # MPI_Iallreduce). With the leaders' 16-bit partials (main) element 0 was
  # 0x3c03, not 0x3c04. A second run with half_uplink=float32 (blocking):
  # within 1 ulp and not 0 (~20 s both).
  add_mpich_switch_test(mpich_switch_tree_fp16_leaders_np8 240 "mpi;mpich;agent" tree 8 2 fp16)
  # MPI_Reduce and MPI_Reduce_scatter_block of MPIX_C_FLOAT16 through the
  # switch's routed calls with node leaders (2 emulated nodes x 2 ranks):
  # served (reduce:switch, reduce_scatter_block:switch counted), MIN, MAX and
  # integer sums bitwise, mixed sums within p 2^-11 sum |x| (~2 s). Coverage
  # of the routed path's 16-bit partials (docs/offload.md "16-bit floats").
  add_mpich_switch_test(mpich_switch_fp16_routed_leaders_np4 120 "mpi;mpich;agent" program 4
    ${_mpich_bin}/mpi_fp16_check --expect switch --routed)
  set_tests_properties(mpich_switch_fp16_routed_leaders_np4 PROPERTIES
    ENVIRONMENT "MPI_FLAVOR=mpich;PPN=2")
  # The same calls with the leaders' wide uplink (docs/offload.md "Wide
  # partials on the leaders' uplink", default half_uplink=exact): the
  # leaders' routed reduce / reduce-scatter carries their nodes' fp64 sums
  # and each result is rounded once, so every mixed sum is bitwise the exact
  # sum rounded once (with 16-bit partials: reduce element 0, 1 + 3 2^-11,
  # came out 0x3c01 for 0x3c02). ~3 s.
  add_mpich_switch_test(mpich_switch_fp16_routed_exact_leaders_np4 120 "mpi;mpich;agent" program 4
    ${_mpich_bin}/mpi_fp16_check --expect switch --exact-routed)
  set_tests_properties(mpich_switch_fp16_routed_exact_leaders_np4 PROPERTIES
    ENVIRONMENT "MPI_FLAVOR=mpich;PPN=2")
  # Rail leaders on 2 emulated nodes of 2 ranks over 2 agents (a leader per
  # rail, docs/offload.md "Rail leaders"): each rail leader streams its
  # stripe of the node's fp64 sum on the wide uplink and rounds the agent's
  # result once: every mixed sum bitwise the exact sum rounded once. With
  # the rails' 16-bit partials: "got 0x3c01, want 0x3c02". ~4 s.
  add_mpich_switch_test(mpich_switch_fp16_rail_leaders_np4 120 "mpi;mpich;agent" stripes_program 4
    ${_mpich_bin}/mpi_fp16_check --expect switch --exact-switch --blocking-only)
  set_tests_properties(mpich_switch_fp16_rail_leaders_np4 PROPERTIES
    ENVIRONMENT "MPI_FLAVOR=mpich;PPN=2;SWITCHAGG_SWITCH_RAIL_LEADERS=on")
  # One rank per emulated node (PPN=1): every rank an agent member, no node
  # leaders (the run above has one node: a leader for the three).
  add_mpich_switch_test(mpich_switch_iallreduce_ppn1_np3 180 "mpi;mpich;agent" program 3
    ${_mpich_bin}/mpi_iallreduce_check --mode matrix --expect switch)
  set_tests_properties(mpich_switch_iallreduce_ppn1_np3 PROPERTIES
    ENVIRONMENT "MPI_FLAVOR=mpich;PPN=1")
  # SWITCHAGG_PROGRESS_THREAD=off: every call to MPICH's own
  # PMPI_Iallreduce (iallreduce:previous), the same checks.
  add_mpich_switch_test(mpich_switch_iallreduce_thread_off_np3 180 "mpi;mpich;agent" program 3
    --mca coll_switchagg_progress_thread off
    ${_mpich_bin}/mpi_iallreduce_check --mode matrix --expect previous)
  # Three communicators, several calls outstanding on each, a blocking
  # allreduce among them (it waits for WORLD's queue), one MPI_Waitall.
  add_mpich_switch_test(mpich_switch_iallreduce_multi_np4 240 "mpi;mpich;agent" program 4
    ${_mpich_bin}/mpi_iallreduce_check --mode multi --iters 6 --expect switch)
  # The program that hangs when a posted call moves only while its own rank
  # tests or waits for it: rank 0 in MPI_Recv from rank 1, which waits for
  # its 8 MiB Iallreduce first (docs/pmpi.md). Bounded per round.
  add_mpich_switch_test(mpich_switch_iallreduce_recv_np3 180 "mpi;mpich;agent" program 3
    ${_mpich_bin}/mpi_iallreduce_check --mode recv --iters 6 --max-ms 30000 --expect switch)
  # Compute between MPI_Iallreduce and MPI_Wait (MPI_Test every ~200 us):
  # at least half of the shorter of the two vanishes from the total.
  add_mpich_switch_test(mpich_switch_iallreduce_overlap_np3 240 "mpi;mpich;agent" program 3
    ${_mpich_bin}/mpi_iallreduce_check --mode overlap --bytes 8388608 --iters 6 --expect switch)
  # MPI_THREAD_MULTIPLE, two threads on their own communicators, each
  # allreduce with five nonblocking calls (Iallreduce, Iallgather, Ibcast,
  # Ireduce_scatter_block, Ibarrier), all on the layer's thread and counted
  # :switch, every result exact (one rank per emulated node: the routed
  # calls need two nodes).
  add_mpich_switch_test(mpich_switch_threads_nonblocking_np2 240 "mpi;mpich;agent" program 2
    --mca coll_switchagg_stall_timeout 60 ${_mpich_bin}/mpi_thread_check --expect switch
    --threads 2 --iters 300 --nonblocking)
  # MPI_Iallgather / MPI_Ibcast / MPI_Ireduce_scatter_block with
  # MPI_Iallreduce under one MPI_Waitall (strided datatypes staged, calls
  # above the keep limit ending on the agreement), and MPI_Ibarrier (nobody
  # done before the last rank posted), through the thread.
  add_mpich_switch_test(mpich_switch_irouted_np3 240 "mpi;mpich;agent" program 3
    ${_mpich_bin}/mpi_iallreduce_check --mode irouted --iters 4 --expect switch)
  add_mpich_switch_test(mpich_switch_ibarrier_np3 180 "mpi;mpich;agent" program 3
    ${_mpich_bin}/mpi_iallreduce_check --mode ibarrier --iters 6 --max-ms 20000 --expect switch)
  set_tests_properties(mpich_switch_threads_nonblocking_np2 mpich_switch_irouted_np3
    mpich_switch_ibarrier_np3 PROPERTIES ENVIRONMENT "MPI_FLAVOR=mpich;PPN=1")
  # The pattern of MPICH's own coll/nonblocking3 test, which hung the layer
  # (docs/pmpi.md "Completion calls that never make progress"): up to 20
  # nonblocking calls of every kind in flight over 4 communicators (the
  # five the layer's thread serves, the rest MPICH's own, Isend/Irecv
  # pairs), completed by Wait/Test/any/some/all in random order, random
  # sleeps; every result exact, verdicts point to point, a watchdog fails a
  # rank that completes nothing for 60 s. Offload on (node leaders: one
  # node), off (nothing :switch), and two threads posting at
  # MPI_THREAD_MULTIPLE (every rank a member).
  add_mpich_switch_test(mpich_switch_nbc_mix_np4 240 "mpi;mpich;agent" program 4
    ${_mpich_bin}/mpi_nbc_mix_check --iters 1500 --expect switch)
  add_mpich_switch_test(mpich_switch_nbc_mix_off_np4 240 "mpi;mpich;agent" program 4
    ${_mpich_bin}/mpi_nbc_mix_check --iters 1500 --expect previous)
  add_mpich_switch_test(mpich_switch_nbc_mix_threads_np4 240 "mpi;mpich;agent" program 4
    ${_mpich_bin}/mpi_nbc_mix_check --iters 600 --threads 2 --comms 3 --expect switch)
  set_tests_properties(mpich_switch_nbc_mix_off_np4 PROPERTIES
    ENVIRONMENT "MPI_FLAVOR=mpich;OFFLOAD=off")
  set_tests_properties(mpich_switch_nbc_mix_threads_np4 PROPERTIES
    ENVIRONMENT "MPI_FLAVOR=mpich;PPN=1")
  # The bound on every wait in the layer: the thread never moves rank 1's
  # fifth call (SWITCHAGG_TEST_STALL_IJOB); within the stall timeout (4 s)
  # a wait ends in an error naming its call and where it stood instead of
  # hanging: rank 1's names #5 (its own, "not started", or a later one
  # queued behind #5), a peer's the call of its own that waits for rank 1
  # (its own numbering: the mix posts on several communicators).
  # Whichever bound runs out first ends the job under MPI_ERRORS_ARE_FATAL.
  add_mpich_switch_test(mpich_switch_nbc_stall_np4 120 "mpi;mpich;agent;fault" program_fails 4
    "rank (1: MPI_I[a-z_]+ #([0-9]+ \\([0-9]+ [a-z]+\\), queued behind MPI_I[a-z_]+ #)?5 |[023]: MPI_I[a-z_]+ #[0-9]+ )[^:]*, [a-z].*: no progress for 4 s"
    --mca coll_switchagg_stall_timeout 4 -x SWITCHAGG_TEST_STALL_IJOB=1:5
    ${_mpich_bin}/mpi_nbc_mix_check --iters 300 --expect switch)
  # The agent SIGKILLed / the lease deleted at a random moment of an
  # Iallreduce loop (test_iallreduce_run.sh): every answer right (the failed
  # call and the later ones redone on the host over the core's transport),
  # no call over 8 s; 256 KiB calls settle in one agent round trip, 4 MiB
  # ones (above the keep limit) through the outcome agreement.
  foreach(fault kill delete)
    foreach(size 262144 4194304)
      set(_suffix "")
      if(size EQUAL 4194304)
        set(_suffix "_large")
      endif()
      add_test(NAME mpich_iallreduce_fault_${fault}${_suffix}_np3
        COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/test_iallreduce_run.sh ${CMAKE_BINARY_DIR} ${fault} 3
        ${size})
      set_tests_properties(mpich_iallreduce_fault_${fault}${_suffix}_np3 PROPERTIES
        LABELS "mpi;mpich;agent;fault" TIMEOUT 180 RESOURCE_LOCK mpirun
        ENVIRONMENT "MPI_FLAVOR=mpich")
    endforeach()
  endforeach()
  # Every rank a member (PPN=1): the agreement and the redo of 4 MiB calls;
  # each round also an Iallgather, an Ibcast and an Ireduce_scatter_block
  # (irouted-*: every kind redone on the host over the transport, exact).
  foreach(case "kill;4194304;kill_large" "irouted-kill;262144;irouted_kill"
      "irouted-delete;4194304;irouted_delete_large")
    list(GET case 0 _scenario)
    list(GET case 1 _bytes)
    list(GET case 2 _name)
    add_test(NAME mpich_iallreduce_fault_${_name}_ppn1_np3
      COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/test_iallreduce_run.sh ${CMAKE_BINARY_DIR} ${_scenario} 3
      ${_bytes})
    set_tests_properties(mpich_iallreduce_fault_${_name}_ppn1_np3 PROPERTIES
      LABELS "mpi;mpich;agent;fault" TIMEOUT 180 RESOURCE_LOCK mpirun
      ENVIRONMENT "MPI_FLAVOR=mpich;PPN=1")
  endforeach()
  # The agent SIGKILLed mid-run: every answer right, every call bounded.
  add_mpich_switch_test(mpich_switch_fault_kill_np3 150 "mpi;mpich;agent;fault"
    kill 262144 random:300 3)
  add_mpich_switch_test(mpich_switch_fault_routed_kill_np3 150 "mpi;mpich;agent;fault"
    routed 3 kill)
  # A rank done with a switch call waits in MPI_Recv (not served by the
  # layer) for the peers that missed that call's result: the layer's
  # answering thread answers their recovery questions (docs/pmpi.md
  # "Progress"; without it they failed at the stall bound).
  add_mpich_switch_test(mpich_switch_fault_oneshot_handoff_np3 120 "mpi;mpich;agent;fault"
    oneshot 3 handoff)
  set_tests_properties(mpich_switch_fault_oneshot_handoff_np3 PROPERTIES
    ENVIRONMENT "MPI_FLAVOR=mpich;PPN=1")
  # A rank late for I/O through the PMPI library (switch_tests.cmake's
  # mpi_switch_late_rank_np4): every call on the switch, none failed.
  add_mpich_switch_test(mpich_switch_late_rank_np4 180 "mpi;mpich;agent" program 4
    $<TARGET_FILE:mpi_liveness_check_mpich> --sizes 4 --iters 60 --warmup 0 --between none
    --stall-rank 3 --stall-seconds 3 --stall-every 25 --expect switch --no-fallbacks --counters)
  set_tests_properties(mpich_switch_late_rank_np4 PROPERTIES
    ENVIRONMENT "MPI_FLAVOR=mpich;SWITCHAGG_SWITCH_LEADERS=off")
  set_tests_properties(mpich_switch_serve_np4 PROPERTIES ENVIRONMENT "MPI_FLAVOR=mpich;PPN=1")
  set_tests_properties(mpich_switch_routed_np3 mpich_switch_routed_np4
    mpich_switch_fault_routed_kill_np3 PROPERTIES
    ENVIRONMENT "MPI_FLAVOR=mpich;SWITCHAGG_SWITCH_LEADERS=off")
endif()

# Fortran (mpifort.mpich; MPICH's Fortran bindings call the C MPI_*, so
# the library serves them): apps/fortran/dot_product.f90's three
# MPI_ALLREDUCEs (DOUBLE PRECISION, INTEGER, LOGICAL) all through ring,
# answers as on plain MPICH.
find_program(SWITCHAGG_MPICH_FC NAMES mpifort.mpich mpifort HINTS ${SWITCHAGG_MPICH_BINDIR}
  NO_DEFAULT_PATH)
if(SWITCHAGG_MPICH_FC)
  set(_dot ${_mpich_bin}/dot_product)
  add_custom_command(OUTPUT ${_dot}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${_mpich_bin}
    COMMAND ${SWITCHAGG_MPICH_FC} -O2 -w -o ${_dot} ${PROJECT_SOURCE_DIR}/apps/fortran/dot_product.f90
    DEPENDS ${PROJECT_SOURCE_DIR}/apps/fortran/dot_product.f90
    WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}
    COMMENT "mpifort.mpich dot_product.f90")
  add_custom_target(dot_product_mpich ALL DEPENDS ${_dot})
  add_test(NAME mpich_fortran_dot_product COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/mpich_fortran.sh
    ${_mpiexec_mpich} ${_mpich_lib} ${_dot})
  set_tests_properties(mpich_fortran_dot_product PROPERTIES LABELS "mpi;mpich" TIMEOUT 120
    RESOURCE_LOCK mpirun)
  # A bad parameter: one error line naming the variable, the job runs on MPICH.
  add_test(NAME mpich_bad_parameter COMMAND ${_expect}
    "switchagg\\[pmpi\\] error: .*SWITCHAGG_OFFLOAD.*bogus.*switchagg disabled"
    "dot = " -- ${_mpiexec_mpich} -n 2 -genv LD_PRELOAD ${_mpich_lib} -genv SWITCHAGG_OFFLOAD bogus
    ${_dot})
  set_tests_properties(mpich_bad_parameter PROPERTIES LABELS "mpi;mpich" TIMEOUT 120
    RESOURCE_LOCK mpirun)
  # coll_switchagg_half_uplink's twin: the error names it and its values.
  add_test(NAME mpich_bad_half_uplink COMMAND ${_expect}
    "switchagg\\[pmpi\\] error: .*SWITCHAGG_HALF_UPLINK.*bogus.*exact.*float32.*half.*switchagg disabled"
    "dot = " -- ${_mpiexec_mpich} -n 2 -genv LD_PRELOAD ${_mpich_lib} -genv SWITCHAGG_HALF_UPLINK
    bogus ${_dot})
  set_tests_properties(mpich_bad_half_uplink PROPERTIES LABELS "mpi;mpich" TIMEOUT 120
    RESOURCE_LOCK mpirun)
endif()

# switchagg-info lists the library's variables (pmpi_params.h).
if(TARGET switchagg-info)
  add_test(NAME mpich_info_lists_params COMMAND ${_expect} "SWITCHAGG_OFFLOAD=auto"
    "SWITCHAGG_ALLREDUCE_ALGORITHM=auto" "SWITCHAGG_TUNE=online" "SWITCHAGG_STALL_TIMEOUT=300"
    -- $<TARGET_FILE:switchagg-info>)
  set_tests_properties(mpich_info_lists_params PROPERTIES LABELS "mpi;mpich" TIMEOUT 60)
endif()
