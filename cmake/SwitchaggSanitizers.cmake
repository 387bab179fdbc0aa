# -DSWITCHAGG_SANITIZE=ON builds every target with ASan + UBSan. The Open MPI
# component is a dlopen()ed module: under ASan run mpirun with
# LD_PRELOAD=$(gcc -print-file-name=libasan.so).
if(SWITCHAGG_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()
