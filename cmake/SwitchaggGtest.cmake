# switchagg_discover_tests(<target> [gtest_discover_tests arguments...])
#
# gtest_discover_tests, with every label of PROPERTIES LABELS reaching CTest.
# CMake 3.25's discovery hands PROPERTIES to its build-time script as one
# -D list that the script splits again, so PROPERTIES LABELS "agent;fault"
# arrives as LABELS agent plus a property named "fault": only the first
# label survives (`ctest -L fault` then runs none of the tests). Here LABELS
# is taken out of PROPERTIES and set afterwards, by a CTest include file read
# after the discovered tests, on the discovered list (TEST_LIST).
# tests/check_labels.py (test ctest_labels) checks the result.
function(switchagg_discover_tests target)
  set(forward "")
  set(labels "")
  set(suffix "")
  set(in_properties FALSE)
  math(EXPR last "${ARGC} - 1")
  set(i 1)
  while(i LESS_EQUAL last)
    set(arg "${ARGV${i}}")
    math(EXPR next "${i} + 1")
    if(arg STREQUAL "PROPERTIES")
      set(in_properties TRUE)
    elseif(arg MATCHES "^(TEST_SUFFIX|TEST_PREFIX|EXTRA_ARGS|WORKING_DIRECTORY|TEST_LIST|TEST_FILTER|DISCOVERY_TIMEOUT|DISCOVERY_MODE|XML_OUTPUT_DIR)$")
      set(in_properties FALSE)
      if(arg STREQUAL "TEST_SUFFIX")
        set(suffix "${ARGV${next}}")
      endif()
    elseif(in_properties AND arg STREQUAL "LABELS")
      set(labels "${ARGV${next}}")
      math(EXPR i "${i} + 2")
      continue()
    endif()
    list(APPEND forward "${arg}")
    math(EXPR i "${i} + 1")
  endwhile()
  # A PROPERTIES keyword left with nothing after it is harmless to
  # gtest_discover_tests (it sets no property).
  string(MAKE_C_IDENTIFIER "${target}${suffix}" list_id)
  set(list_var "switchagg_tests_${list_id}")
  gtest_discover_tests(${target} ${forward} TEST_LIST ${list_var})
  if(labels STREQUAL "")
    return()
  endif()
  set(labels_file "${CMAKE_CURRENT_BINARY_DIR}/${list_id}_labels.cmake")
  file(WRITE "${labels_file}"
    "# Written by switchagg_discover_tests (cmake/SwitchaggGtest.cmake).\n"
    "if(NOT \"\${${list_var}}\" STREQUAL \"\")\n"
    "  set_tests_properties(\${${list_var}} PROPERTIES LABELS [==[${labels}]==])\n"
    "endif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${labels_file}")
endfunction()
