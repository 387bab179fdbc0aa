# Data-plane tests, included by tests/agent/CMakeLists.txt.
#   test_data_unit     wire codec, slot pool, engine (no UCX, no processes)
#   test_data_member   one group member as a process (driven by the tests below)
#   test_data_agent    real switchagg-agent + real member processes
set(SWITCHAGG_DATA_TEST_DIR ${CMAKE_CURRENT_LIST_DIR})

file(GLOB SWITCHAGG_DATA_UNIT_SOURCES CONFIGURE_DEPENDS
  ${SWITCHAGG_DATA_TEST_DIR}/test_data_wire*.cc ${SWITCHAGG_DATA_TEST_DIR}/test_data_engine*.cc)
file(GLOB SWITCHAGG_DATA_AGENT_SOURCES CONFIGURE_DEPENDS
  ${SWITCHAGG_DATA_TEST_DIR}/test_data_harness.cc ${SWITCHAGG_DATA_TEST_DIR}/test_data_agent*.cc)

if(SWITCHAGG_DATA_UNIT_SOURCES)
add_executable(test_data_unit ${SWITCHAGG_DATA_UNIT_SOURCES})
target_link_libraries(test_data_unit PRIVATE switchagg_engine_internal GTest::gtest_main)
switchagg_warnings(test_data_unit)
# gtest_add_tests (source scan) rather than gtest_discover_tests: CMake 3.25's
# discovery splits list-valued properties, so LABELS "agent;fault" would
# lose its second label.
# The engine's fault tests (bad members, revoked leases, fault points) also
# carry `fault`.
set(SWITCHAGG_DATA_UNIT_PLAIN ${SWITCHAGG_DATA_UNIT_SOURCES})
list(FILTER SWITCHAGG_DATA_UNIT_PLAIN EXCLUDE REGEX "_faults\\.cc$")
gtest_add_tests(TARGET test_data_unit SOURCES ${SWITCHAGG_DATA_UNIT_PLAIN}
  TEST_LIST SWITCHAGG_DATA_UNIT_TESTS)
set_tests_properties(${SWITCHAGG_DATA_UNIT_TESTS} PROPERTIES LABELS "unit;agent" TIMEOUT 60)
gtest_add_tests(TARGET test_data_unit SOURCES ${SWITCHAGG_DATA_TEST_DIR}/test_data_engine_faults.cc
  ${SWITCHAGG_DATA_TEST_DIR}/test_data_engine_placement_faults.cc
  TEST_LIST SWITCHAGG_DATA_UNIT_FAULT_TESTS)
set_tests_properties(${SWITCHAGG_DATA_UNIT_FAULT_TESTS} PROPERTIES LABELS "unit;agent;fault" TIMEOUT 60)
endif()

# The engine's per-chunk path allocates nothing once warm: its own
# executable, because it replaces the global operator new to count.
add_executable(test_engine_alloc ${SWITCHAGG_DATA_TEST_DIR}/test_engine_alloc.cc)
target_link_libraries(test_engine_alloc PRIVATE switchagg_engine_internal GTest::gtest_main)
switchagg_warnings(test_engine_alloc)
# GCC sees free() under the replaced operator delete and new's malloc() as a mismatch.
target_compile_options(test_engine_alloc PRIVATE -Wno-mismatched-new-delete)
gtest_add_tests(TARGET test_engine_alloc SOURCES ${SWITCHAGG_DATA_TEST_DIR}/test_engine_alloc.cc
  TEST_LIST SWITCHAGG_ENGINE_ALLOC_TESTS)
set_tests_properties(${SWITCHAGG_ENGINE_ALLOC_TESTS} PROPERTIES LABELS "unit;agent" TIMEOUT 60)

# The data plane's per-chunk path allocates nothing once warm: a real
# DataPlane and member clients in one process (its own executable, as above).
add_executable(test_dataplane_alloc ${SWITCHAGG_DATA_TEST_DIR}/test_dataplane_alloc.cc)
target_link_libraries(test_dataplane_alloc PRIVATE switchagg_dataplane_internal switchagg_dataclient
  GTest::gtest_main)
switchagg_warnings(test_dataplane_alloc)
target_compile_options(test_dataplane_alloc PRIVATE -Wno-mismatched-new-delete)
gtest_add_tests(TARGET test_dataplane_alloc
  SOURCES ${SWITCHAGG_DATA_TEST_DIR}/test_dataplane_alloc.cc TEST_LIST SWITCHAGG_DATAPLANE_ALLOC_TESTS)
set_tests_properties(${SWITCHAGG_DATAPLANE_ALLOC_TESTS} PROPERTIES LABELS agent TIMEOUT 60)

# Stripe cutting (StripedGroup, data_client.h): pure arithmetic.
add_executable(test_stripes ${SWITCHAGG_DATA_TEST_DIR}/test_stripes.cc)
target_link_libraries(test_stripes PRIVATE switchagg_dataclient GTest::gtest_main)
switchagg_warnings(test_stripes)
gtest_add_tests(TARGET test_stripes SOURCES ${SWITCHAGG_DATA_TEST_DIR}/test_stripes.cc
  TEST_LIST SWITCHAGG_STRIPES_TESTS)
set_tests_properties(${SWITCHAGG_STRIPES_TESTS} PROPERTIES LABELS "unit;agent" TIMEOUT 60)

add_executable(test_data_member ${SWITCHAGG_DATA_TEST_DIR}/test_data_member.cc)
target_link_libraries(test_data_member PRIVATE switchagg_dataclient)
switchagg_warnings(test_data_member)

if(TARGET switchagg_agent_fixture AND TARGET switchagg-agent AND SWITCHAGG_DATA_AGENT_SOURCES)
  add_executable(test_data_agent ${SWITCHAGG_DATA_AGENT_SOURCES})
  target_link_libraries(test_data_agent PRIVATE switchagg_agent_fixture switchagg_ctlclient
    switchagg_dataclient switchagg_ucx nlohmann_json::nlohmann_json GTest::gtest_main)
  add_dependencies(test_data_agent test_data_member switchagg-agent)
  target_compile_definitions(test_data_agent PRIVATE SWITCHAGG_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  switchagg_warnings(test_data_agent)
  # One agent per test; members are real processes. Fault tests also carry `fault`.
  list(FILTER SWITCHAGG_DATA_AGENT_SOURCES EXCLUDE REGEX "_faults\\.cc$")
  gtest_add_tests(TARGET test_data_agent SOURCES ${SWITCHAGG_DATA_AGENT_SOURCES}
    TEST_LIST SWITCHAGG_DATA_AGENT_TESTS)
  set_tests_properties(${SWITCHAGG_DATA_AGENT_TESTS} PROPERTIES LABELS "agent" TIMEOUT 120)
  gtest_add_tests(TARGET test_data_agent
    SOURCES ${SWITCHAGG_DATA_TEST_DIR}/test_data_agent_faults.cc
            ${SWITCHAGG_DATA_TEST_DIR}/test_data_agent_waiting_faults.cc
            ${SWITCHAGG_DATA_TEST_DIR}/test_data_agent_placement_faults.cc
            ${SWITCHAGG_DATA_TEST_DIR}/test_data_agent_credit_faults.cc
    TEST_LIST SWITCHAGG_DATA_FAULT_TESTS)
  set_tests_properties(${SWITCHAGG_DATA_FAULT_TESTS} PROPERTIES LABELS "agent;fault" TIMEOUT 120)
  # The agent SIGKILLed and restarted: leases survive (a fault test too).
  set_tests_properties(DataAgentRestart.LeasesSurviveACrash PROPERTIES LABELS "agent;fault")
endif()
