# Lease persistence (state.lease_file), included by tests/agent/CMakeLists.txt.
#   test_lease_store   file format, atomic write, restore rules (unit)
#   test_agent_persist real agents on hand-written lease files (agent)
# The restart-and-rejoin test lives in test_data_agent_restart.cc, which
# data_tests.cmake builds into test_data_agent with the data-plane harness.
add_executable(test_lease_store ${CMAKE_CURRENT_LIST_DIR}/test_lease_store.cc)
target_link_libraries(test_lease_store PRIVATE switchagg_control_internal switchagg_test_support
  GTest::gtest_main)
switchagg_warnings(test_lease_store)
# gtest_add_tests, not gtest_discover_tests: CMake 3.25's discovery splits
# list-valued properties, so LABELS "unit;agent" would lose a label.
gtest_add_tests(TARGET test_lease_store SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_lease_store.cc
  TEST_LIST SWITCHAGG_LEASE_STORE_TESTS)
set_tests_properties(${SWITCHAGG_LEASE_STORE_TESTS} PROPERTIES LABELS "unit;agent" TIMEOUT 60)

add_executable(test_agent_persist ${CMAKE_CURRENT_LIST_DIR}/test_agent_persist.cc)
target_link_libraries(test_agent_persist PRIVATE switchagg_agent_fixture switchagg_ctlclient
  nlohmann_json::nlohmann_json GTest::gtest_main)
add_dependencies(test_agent_persist switchagg-agent switchagg-ctl)
switchagg_warnings(test_agent_persist)
gtest_add_tests(TARGET test_agent_persist SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_agent_persist.cc
  TEST_LIST SWITCHAGG_AGENT_PERSIST_TESTS)
set_tests_properties(${SWITCHAGG_AGENT_PERSIST_TESTS} PROPERTIES LABELS agent TIMEOUT 120)
