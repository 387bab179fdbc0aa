# SWITCHAGG_OMPI_FLOAT16: whether the Open MPI found (MPI::MPI_CXX) defines
# MPIX_C_FLOAT16 (Open MPI 5's shortfloat extension, mpi-ext.h). Open MPI
# 4.1 has no such type. The fp16 tests (tests/mpi/fp16_tests.cmake) and the
# fp16 accuracy benchmark (benchmarks/) build only where it does.
include_guard(GLOBAL)
include(CheckCXXSourceCompiles)
set(CMAKE_REQUIRED_LIBRARIES MPI::MPI_CXX)
check_cxx_source_compiles("
#include <mpi.h>
#if defined(OPEN_MPI) && defined(__has_include)
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif
#endif
#ifndef MPIX_C_FLOAT16
#error no MPIX_C_FLOAT16
#endif
int main() { return 0; }" SWITCHAGG_OMPI_FLOAT16)
unset(CMAKE_REQUIRED_LIBRARIES)
