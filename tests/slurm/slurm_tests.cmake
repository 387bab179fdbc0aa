# Real-Slurm tests (label slurm): one private cluster + agent for all cases
# (CTest fixture slurm_cluster: started by slurm_cluster_start, stopped by
# slurm_cluster_stop even when a case fails), cases serialised on it.
add_test(NAME slurm_plugin_binary
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/check_plugin_binary.sh $<TARGET_FILE:switchagg_spank>)
set_tests_properties(slurm_plugin_binary PROPERTIES LABELS "unit;slurm" TIMEOUT 30)

if(NOT TARGET switchagg-agent OR NOT TARGET switchagg-ctl)
  message(WARNING "tests/slurm: no switchagg-agent/switchagg-ctl target, real-Slurm tests not registered")
  return()
endif()

# Under /tmp, not in the build tree: jobs of user nobody must reach the
# agent socket and their work files, whatever the checkout's permissions.
string(MD5 _build_hash "${CMAKE_BINARY_DIR}")
string(SUBSTRING "${_build_hash}" 0 10 _build_hash)
set(SWITCHAGG_SLURM_CLUSTER /tmp/switchagg-slurm-${_build_hash})
set(_fixture ${CMAKE_CURRENT_SOURCE_DIR}/slurm_cluster.sh)
add_test(NAME slurm_cluster_start
  COMMAND ${_fixture} start ${SWITCHAGG_SLURM_CLUSTER}
          --spank $<TARGET_FILE:switchagg_spank> --spank-args "max_slots=8 timeout=2s"
          --agent $<TARGET_FILE:switchagg-agent>)
# Removes the cluster directory; its logs stay in the build tree.
add_test(NAME slurm_cluster_stop COMMAND ${_fixture} stop ${SWITCHAGG_SLURM_CLUSTER}
  --logs-to ${CMAKE_CURRENT_BINARY_DIR}/cluster-logs)
set_tests_properties(slurm_cluster_start PROPERTIES FIXTURES_SETUP slurm_cluster)
set_tests_properties(slurm_cluster_stop PROPERTIES FIXTURES_CLEANUP slurm_cluster)
set_tests_properties(slurm_cluster_start slurm_cluster_stop PROPERTIES
  LABELS slurm TIMEOUT 120 RESOURCE_LOCK slurm_cluster)

set(SWITCHAGG_SLURM_CASE_ENV
  SWITCHAGG_TEST_CLUSTER=${SWITCHAGG_SLURM_CLUSTER}
  SWITCHAGG_CTL=$<TARGET_FILE:switchagg-ctl>)

# add_slurm_case(NAME [ENV...]): tests/slurm/slurm_cases.sh NAME on the cluster.
function(add_slurm_case name)
  add_test(NAME slurm_${name} COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/slurm_cases.sh ${name})
  set_tests_properties(slurm_${name} PROPERTIES LABELS slurm TIMEOUT 150
    FIXTURES_REQUIRED slurm_cluster RESOURCE_LOCK slurm_cluster
    ENVIRONMENT "${SWITCHAGG_SLURM_CASE_ENV};${ARGN}")
endfunction()

foreach(name require_srun sbatch_env salloc auto_agent_down require_agent_down require_quota
             concurrent scancel_and_time_limit task_signal invalid_options token_secrecy broken_plugstack
             fabric_map fabric_pool epilog_agent_down)
  add_slurm_case(${name})
endforeach()
# The agent down at job start, and at job end (the epilog retries, then the
# plugin's TTL): fault tests (ctest -L fault).
set_tests_properties(slurm_auto_agent_down slurm_require_agent_down slurm_epilog_agent_down
  PROPERTIES LABELS "slurm;fault")

if(TARGET switchagg-test-control-flood)
  add_slurm_case(prolog_under_flood SWITCHAGG_FLOOD=$<TARGET_FILE:switchagg-test-control-flood>)
endif()

# The MPI end-to-end (srun --mpi=pmix -n 4 switchagg-bench --check with
# offload): registered once the component and the bench are built and
# The MPI end-to-end case (srun + PMIx + the component + the switch path);
# -DSWITCHAGG_SLURM_MPI_TEST=OFF leaves it out (see docs/admin-slurm.md).
option(SWITCHAGG_SLURM_MPI_TEST "Run switchagg-bench with offload under srun in the slurm label" ON)
if(SWITCHAGG_SLURM_MPI_TEST AND TARGET mca_coll_switchagg AND TARGET switchagg-bench)
  execute_process(COMMAND ompi_info --path pkglibdir --parsable
    OUTPUT_VARIABLE _ompi_pkglibdir OUTPUT_STRIP_TRAILING_WHITESPACE)
  string(REGEX REPLACE "^path:pkglibdir:" "" _ompi_pkglibdir "${_ompi_pkglibdir}")
  add_slurm_case(mpi_offload
    SWITCHAGG_BENCH=$<TARGET_FILE:switchagg-bench>
    SWITCHAGG_OMPI_COMPONENT_PATH=${CMAKE_BINARY_DIR}/lib/openmpi:${_ompi_pkglibdir})
endif()

# An MPICH job (srun --mpi=pmi2) with the PMPI library and the switch path.
if(SWITCHAGG_SLURM_MPI_TEST AND TARGET switchagg_pmpi AND TARGET mpi_allreduce_check_mpich)
  add_slurm_case(mpich_offload
    SWITCHAGG_MPICH_CHECK=$<TARGET_FILE:mpi_allreduce_check_mpich>
    SWITCHAGG_MPICH_ICHECK=$<TARGET_FILE:mpi_iallreduce_check_mpich>
    SWITCHAGG_PMPI_LIB=$<TARGET_FILE:switchagg_pmpi>)
  # An MPICH job: ctest -L mpich selects it too.
  set_tests_properties(slurm_mpich_offload PROPERTIES LABELS "slurm;mpich")
endif()
