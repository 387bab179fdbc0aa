# -DSWITCHAGG_SANITIZE=ON (or =address) builds every target with ASan +
# UBSan; -DSWITCHAGG_SANITIZE=thread with ThreadSanitizer (the two cannot be
# combined: their own build dirs, scripts/sanitize.sh and
# scripts/sanitize_thread.sh). The Open MPI component is a dlopen()ed module:
# the programs mpirun starts are built here too, so they carry the runtime.
string(TOLOWER "${SWITCHAGG_SANITIZE}" _switchagg_sanitize)
if(_switchagg_sanitize STREQUAL "thread")
  # Frame pointers: whole stacks in the reports, through the uninstrumented
  # MPI and UCX libraries too.
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  # GCC warns (-Wtsan) that TSan does not model atomic_thread_fence. switchagg
  # uses none; Open MPI's inline request completion (opal_atomic_wmb, reached
  # from the glue's ompi_request_complete) does. Not an error here: what the
  # fence orders is Open MPI's request state, and any report it causes names
  # Open MPI's frames (tests/sanitize/tsan.supp).
  if(CMAKE_C_COMPILER_ID STREQUAL "GNU")
    add_compile_options(-Wno-tsan)
  endif()
  add_link_options(-fsanitize=thread)
elseif(_switchagg_sanitize MATCHES "^(on|yes|true|1|address)$")
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  # GCC 12 reports maybe-uninitialized inside libstdc++ (std::regex's
  # std::function) only under the sanitizers' instrumentation: a known false
  # positive that -Werror would turn into a failed build.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    add_compile_options(-Wno-maybe-uninitialized)
  endif()
  add_link_options(-fsanitize=address,undefined)
elseif(SWITCHAGG_SANITIZE)
  message(FATAL_ERROR "SWITCHAGG_SANITIZE=${SWITCHAGG_SANITIZE}: expected OFF, ON, address or thread")
endif()
