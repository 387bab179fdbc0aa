# -DSWITCHAGG_SANITIZE=ON builds every target with ASan + UBSan. The Open MPI
# component is a dlopen()ed module: under ASan run mpirun with
# LD_PRELOAD=$(gcc -print-file-name=libasan.so).
if(SWITCHAGG_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  # GCC 12 reports maybe-uninitialized inside libstdc++ (std::regex's
  # std::function) only under the sanitizers' instrumentation: a known false
  # positive that -Werror would turn into a failed build.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    add_compile_options(-Wno-maybe-uninitialized)
  endif()
  add_link_options(-fsanitize=address,undefined)
endif()
