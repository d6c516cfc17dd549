# SPDX-License-Identifier: MIT OR Apache-2.0
# The CUDA backend (src/backends/cuda/, docs/cuda.md). Option RLX_CUDA, on when nvcc is found.
# The kernels and the cuBLAS / cuSOLVER / cuFFT glue (*.cu; libs.cu loads those libraries at run
# time) build into the static library rlx_cuda_kernels for sm_90 (the H200); the C glue (backend.c: the contract, lower.c: the per-op lowering table) is
# added to rlx_objects, and rlx_add_backend(cuda) lists rlx_cuda_backend() in the registry's
# table. Without nvcc nothing of src/backends/cuda/ is built. Included by the root CMakeLists.txt
# after the rlx_objects target exists.
include(CheckLanguage)
check_language(CUDA)
# Default on when nvcc is found, except in the libFuzzer build (clang + -fsanitize=fuzzer: the
# fuzz targets exercise the loaders, not a GPU backend).
set(_rlx_cuda_default OFF)
if(CMAKE_CUDA_COMPILER AND NOT RLX_FUZZ)
  set(_rlx_cuda_default ON)
endif()
option(RLX_CUDA "Build the CUDA backend (needs nvcc and the CUDA toolkit; cuBLAS, cuSOLVER, cuFFT are loaded at run time)" ${_rlx_cuda_default})

if(RLX_CUDA)
  if(NOT CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 90)
  endif()
  enable_language(CUDA)
  # Targets made before CUDA was enabled need an architecture too (policy CMP0104).
  get_property(_rlx_targets DIRECTORY PROPERTY BUILDSYSTEM_TARGETS)
  foreach(t ${_rlx_targets})
    set_property(TARGET ${t} PROPERTY CUDA_ARCHITECTURES ${CMAKE_CUDA_ARCHITECTURES})
  endforeach()
  find_package(CUDAToolkit REQUIRED)
  # The root's -Wall -Wextra -Werror are host-compiler flags: give them to nvcc's host compiler
  # for .cu files, keep them as they are for C.
  get_directory_property(_rlx_opts COMPILE_OPTIONS)
  set(_rlx_c_opts "")
  foreach(o ${_rlx_opts})
    list(APPEND _rlx_c_opts "$<$<COMPILE_LANGUAGE:C>:${o}>")
  endforeach()
  set_directory_properties(PROPERTIES COMPILE_OPTIONS "${_rlx_c_opts}")
  file(GLOB RLX_CUDA_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/backends/cuda/*.cu)
  add_library(rlx_cuda_kernels OBJECT ${RLX_CUDA_SOURCES})
  set_target_properties(rlx_cuda_kernels PROPERTIES CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON
                        POSITION_INDEPENDENT_CODE ON CUDA_RUNTIME_LIBRARY Static)
  target_compile_options(rlx_cuda_kernels PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra,-Werror,-Wno-missing-field-initializers -Werror=all-warnings>)
  target_include_directories(rlx_cuda_kernels PRIVATE ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src/ir
                             ${PROJECT_SOURCE_DIR}/src)
  # cuBLAS, cuSOLVER and cuFFT are not linked: src/backends/cuda/libs.cu loads them when a device
  # is found (their soname first, then the toolkit folder found here), so librlx starts and runs
  # on the CPU where no CUDA library is installed, and CPU-only processes do not map them.
  get_target_property(_rlx_cublas CUDA::cublas IMPORTED_LOCATION)
  get_filename_component(_rlx_cuda_libdir "${_rlx_cublas}" DIRECTORY)
  target_compile_definitions(rlx_cuda_kernels PRIVATE RLX_CUDA_LIBDIR="${_rlx_cuda_libdir}")
  target_link_libraries(rlx_cuda_kernels PUBLIC CUDA::cudart_static ${CMAKE_DL_LIBS})
  # The kernels' objects go into librlx itself (both libraries); its users link the static CUDA
  # runtime and libdl (rlx.pc's Libs.private, the CMake package's link interface).
  list(APPEND RLX_EXTRA_OBJECTS $<TARGET_OBJECTS:rlx_cuda_kernels>)
  list(APPEND RLX_LINK_LIBS CUDA::cudart_static ${CMAKE_DL_LIBS})
  set(RLX_PC_CUDA_LIBS "-L${_rlx_cuda_libdir} -lcudart_static -ldl -lrt -lstdc++")
  list(APPEND RLX_INSTALL_LINK_NAMES ${_rlx_cuda_libdir}/libcudart_static.a dl rt stdc++)
  target_sources(rlx_objects PRIVATE ${PROJECT_SOURCE_DIR}/src/backends/cuda/backend.c
                 ${PROJECT_SOURCE_DIR}/src/backends/cuda/lower.c
                 ${PROJECT_SOURCE_DIR}/src/backends/cuda/lower_more.c
                 ${PROJECT_SOURCE_DIR}/src/backends/cuda/lower_fold.c
                 ${PROJECT_SOURCE_DIR}/src/backends/cuda/lower_ext.c
                 ${PROJECT_SOURCE_DIR}/src/backends/cuda/staged.c)
  rlx_add_backend(cuda)
  add_compile_definitions(RLX_HAVE_CUDA=1) # for the targets made after this file (tests, tool)
  if(EXISTS ${PROJECT_SOURCE_DIR}/bench/bench_cuda.c)
    add_executable(bench_cuda ${PROJECT_SOURCE_DIR}/bench/bench_cuda.c)
    target_link_libraries(bench_cuda PRIVATE rlx_static)
  endif()
  if(EXISTS ${PROJECT_SOURCE_DIR}/bench/bench_cuda_block.c)
    add_executable(bench_cuda_block ${PROJECT_SOURCE_DIR}/bench/bench_cuda_block.c)
    target_link_libraries(bench_cuda_block PRIVATE rlx_static m)
  endif()
  message(STATUS "RLX: CUDA backend ON (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, sm_${CMAKE_CUDA_ARCHITECTURES})")
else()
  message(STATUS "RLX: CUDA backend OFF (no nvcc found, or -DRLX_CUDA=OFF)")
endif()
