# Walls between the parts (docs/design.md, "Walls"): a library's own folder
# is a PRIVATE include directory; what may look inside (the same part's
# other targets, the tests, a benchmark of that very code) links
# <target>_internal, which adds the folder. tests/check_walls.py checks
# that no other target publishes a folder outside an include/ tree and that
# *_internal targets are linked PRIVATE, from their own part or the tests.
#
# switchagg_internal_headers(<target> <dir>...): <dir>s private to
# <target>, and <target>_internal, the INTERFACE target that exposes them.
function(switchagg_internal_headers target)
  target_include_directories(${target} PRIVATE ${ARGN})
  add_library(${target}_internal INTERFACE)
  target_include_directories(${target}_internal INTERFACE ${ARGN})
  target_link_libraries(${target}_internal INTERFACE ${target})
endfunction()
