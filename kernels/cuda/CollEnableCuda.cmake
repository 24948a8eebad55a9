# Included by the top-level CMakeLists.txt right after cmake/CollFeatures.cmake
# (so in the top folder, above every target with CUDA sources: kernels/cuda,
# tests/gpu): enables the CUDA language when check_language(CUDA) found nvcc.
#
# check_language() trusts a preset CMAKE_CUDA_COMPILER without running it;
# a preset that does not exist (-DCMAKE_CUDA_COMPILER=/nonexistent) turns
# CUDA off, with the report line saying why, instead of failing configure.
if(NOT COLL_HAVE_CUDA OR COLL_CUDA_EMULATION)
  return()
endif()

find_program(_coll_nvcc NAMES "${CMAKE_CUDA_COMPILER}" NO_CACHE)
if(NOT _coll_nvcc)
  set(COLL_HAVE_CUDA OFF)
  get_property(_coll_lines GLOBAL PROPERTY COLL_FEATURE_LINES)
  list(TRANSFORM _coll_lines REPLACE "^  \\[x\\] CUDA:.*"
       "  [ ] CUDA: NOT built - CMAKE_CUDA_COMPILER=${CMAKE_CUDA_COMPILER} does not exist (unset it, or install the CUDA toolkit)")
  set_property(GLOBAL PROPERTY COLL_FEATURE_LINES "${_coll_lines}")
  unset(_coll_lines)
  return()
endif()
unset(_coll_nvcc)

enable_language(CUDA)

# CMake < 3.26 knows no C++20 flag for nvcc, yet coll::kernels requires
# cxx_std_20, which CMake applies to CUDA sources as well: give it nvcc's
# -std=c++20 (nvcc >= 12.0 has it).
if(NOT DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION AND CMAKE_CUDA_COMPILER_VERSION VERSION_GREATER_EQUAL 12.0)
  set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
  set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
endif()
