# switchagg_warnings(target): the project's warning set; errors under
# SWITCHAGG_WERROR (CI turns it on).
function(switchagg_warnings target)
  target_compile_options(${target} PRIVATE
    -Wall -Wextra -Wformat=2 -Wundef
    $<$<COMPILE_LANGUAGE:CXX>:-Wold-style-cast -Woverloaded-virtual -Wnon-virtual-dtor>
    # GCC's -Wshadow=local; clang has no such spelling (fuzz builds use clang).
    $<$<C_COMPILER_ID:GNU>:-Wshadow=local>)
  if(SWITCHAGG_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
