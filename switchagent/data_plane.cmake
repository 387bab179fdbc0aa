# Data plane (H2b), included by switchagent/CMakeLists.txt:
#   switchagg_wire        wire codec (wire.h); no UCX, shared by agent and client
#   switchagg_engine      slot pool, reduce pool, aggregation engine; no UCX (unit tests)
#   switchagg_dataplane   DataPlane: the engine behind a UCX listener (the agent links it)
#   switchagg_dataclient  AggClient (data_client.h) for mpi_coll and tests
add_library(switchagg_wire STATIC src/wire.cc)
target_include_directories(switchagg_wire PUBLIC
  $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>)
target_link_libraries(switchagg_wire PUBLIC switchagg_common)
switchagg_warnings(switchagg_wire)

add_library(switchagg_engine STATIC
  src/slot_pool.cc src/reduce_pool.cc src/aggregation_engine.cc src/engine_contrib.cc)
target_include_directories(switchagg_engine PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/src)
target_link_libraries(switchagg_engine PUBLIC switchagg_wire switchagg_common Threads::Threads)
switchagg_warnings(switchagg_engine)

add_library(switchagg_dataplane STATIC src/data_plane.cc)
target_link_libraries(switchagg_dataplane PUBLIC switchagg_engine switchagg_ucx switchagg_control)
switchagg_warnings(switchagg_dataplane)

add_library(switchagg_dataclient STATIC client/data_client.cc client/client_stream.cc)
target_include_directories(switchagg_dataclient PUBLIC
  $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>)
target_link_libraries(switchagg_dataclient PUBLIC switchagg_wire switchagg_ucx switchagg_common)
switchagg_warnings(switchagg_dataclient)

# Benchmarks (benchmarks/agent_bench.sh drives them; not installed).
add_executable(agent_client_bench ${PROJECT_SOURCE_DIR}/benchmarks/agent_client_bench.cc)
target_link_libraries(agent_client_bench PRIVATE switchagg_dataclient)
switchagg_warnings(agent_client_bench)
find_package(benchmark QUIET)
if(benchmark_FOUND)
  add_executable(agent_kernel_bench ${PROJECT_SOURCE_DIR}/benchmarks/agent_kernel_bench.cc)
  # The plain loop it compares against must get -O3 like the kernels do.
  set_source_files_properties(${PROJECT_SOURCE_DIR}/benchmarks/agent_kernel_bench.cc
    PROPERTIES COMPILE_OPTIONS "-O3")
  target_link_libraries(agent_kernel_bench PRIVATE switchagg_engine benchmark::benchmark)
  switchagg_warnings(agent_kernel_bench)
endif()
