# Adds `switchagg-info --select` (select_cmd.cc, owned by selection) to the
# switchagg-info target. Included from apps/info/CMakeLists.txt after the
# target exists:   include(${CMAKE_CURRENT_SOURCE_DIR}/select_cmd.cmake)
# Selection is pure C++ (no MPI/UCX), so this works with SWITCHAGG_BUILD_MPI=OFF.
set(_sel_core ${PROJECT_SOURCE_DIR}/mpi_coll/core)
target_sources(switchagg-info PRIVATE ${CMAKE_CURRENT_LIST_DIR}/select_cmd.cc)
if(TARGET switchagg_coll_select)
  target_link_libraries(switchagg-info PRIVATE switchagg_coll_select)
else()
  target_sources(switchagg-info PRIVATE ${_sel_core}/algorithms.cc ${_sel_core}/cost_model.cc
    ${_sel_core}/rules.cc ${_sel_core}/selector.cc)
endif()
target_include_directories(switchagg-info PRIVATE ${_sel_core})
target_link_libraries(switchagg-info PRIVATE switchagg_common)
