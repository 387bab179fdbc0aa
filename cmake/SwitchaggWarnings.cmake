# switchagg_warnings(target): the project's warning set; errors under
# SWITCHAGG_WERROR (CI turns it on).
function(switchagg_warnings target)
  target_compile_options(${target} PRIVATE
    -Wall -Wextra -Wshadow=local -Wnon-virtual-dtor -Wformat=2 -Wundef
    $<$<COMPILE_LANGUAGE:CXX>:-Wold-style-cast -Woverloaded-virtual>)
  if(SWITCHAGG_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
