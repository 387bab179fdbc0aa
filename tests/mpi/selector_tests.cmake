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
