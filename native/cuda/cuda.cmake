# The cuda backend (included from native/CMakeLists.txt, whose directory holds every target that links
# it, as enable_language wants). ATTN_WITH_CUDA: AUTO builds it when nvcc is found, ON requires it, OFF
# skips it. Never needed for the rest of the project.
if(ATTN_WITH_CUDA STREQUAL "OFF")
  message(STATUS "cuda backend not built: ATTN_WITH_CUDA=OFF")
  return()
endif()
if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
  set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)  # the toolkit's usual place, often not on PATH
endif()
include(CheckLanguage)
check_language(CUDA)
if(NOT CMAKE_CUDA_COMPILER)
  if(ATTN_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "ATTN_WITH_CUDA=ON but no CUDA compiler (nvcc) was found; set CMAKE_CUDA_COMPILER")
  endif()
  message(STATUS "cuda backend not built: no CUDA compiler (nvcc) found")
  return()
endif()
# Ampere (A100) and Hopper (H100/H200); nvcc 13 no longer targets the architectures CMake defaults to.
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES 80 90)
endif()
enable_language(CUDA)
find_package(CUDAToolkit REQUIRED)

# The kernels, on raw pointers; no xtensor and none of the project's host warning flags (nvcc's own).
add_library(attn_cuda_kernels STATIC "${CMAKE_CURRENT_LIST_DIR}/cuda_ops.cu")
target_include_directories(attn_cuda_kernels PRIVATE "${PROJECT_SOURCE_DIR}")
target_compile_features(attn_cuda_kernels PRIVATE cuda_std_17)
# cuBLAS is opened at run time (cuda_ops.cu says why): from the loader's paths, else from this toolkit.
target_compile_definitions(attn_cuda_kernels PRIVATE ATTN_CUDA_LIBRARY_DIR="${CUDAToolkit_LIBRARY_DIR}")
# The runtime linked statically: attn starts, and its cuda backend says why it cannot run, where the
# toolkit is missing.
target_link_libraries(attn_cuda_kernels PUBLIC CUDA::cudart_static ${CMAKE_DL_LIBS})

add_library(attn_cuda STATIC "${CMAKE_CURRENT_LIST_DIR}/cuda_backend.cpp")
target_link_libraries(attn_cuda PUBLIC attn_core PRIVATE attn_cuda_kernels)
attn_target_defaults(attn_cuda)
