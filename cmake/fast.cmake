# SPDX-License-Identifier: MIT OR Apache-2.0
# The CPU fast kernels (src/backends/cpu/fast/): compiled at -O3 (and -fno-math-errno, so that
# sqrtf and friends vectorise; nothing reads errno) with the host's vector ISA
# chosen at run time (the sources themselves stay portable C; see docs/cpu-backend.md), plus the
# kernel benchmarks. Included by the root CMakeLists.txt after the rlx_objects target exists.
file(GLOB RLX_FAST_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/backends/cpu/fast/*.c)
set_source_files_properties(${RLX_FAST_SOURCES} TARGET_DIRECTORY rlx_objects PROPERTIES COMPILE_OPTIONS "-O3;-fno-math-errno")

option(RLX_BENCH "Build the kernel and CNN-step benchmarks (bench/)" ON)
if(RLX_BENCH)
  foreach(b bench_kernels bench_cnn_step bench_gemm bench_compile bench_onnx_infer)
    if(EXISTS ${PROJECT_SOURCE_DIR}/bench/${b}.c)
      add_executable(${b} ${PROJECT_SOURCE_DIR}/bench/${b}.c)
      target_include_directories(${b} PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/tests/common)
      target_link_libraries(${b} PRIVATE rlx_static)
    endif()
  endforeach()
  # The Fft comparison against KISS FFT (Debian's libkissfft-dev), built when it is installed.
  find_path(RLX_KISSFFT_INCLUDE kissfft/kiss_fft.h)
  find_library(RLX_KISSFFT_LIB kissfft-float)
  if(RLX_KISSFFT_INCLUDE AND RLX_KISSFFT_LIB)
    add_executable(bench_fft ${PROJECT_SOURCE_DIR}/bench/bench_fft.c)
    target_include_directories(bench_fft PRIVATE ${PROJECT_SOURCE_DIR}/src ${RLX_KISSFFT_INCLUDE})
    target_link_libraries(bench_fft PRIVATE rlx_static ${RLX_KISSFFT_LIB})
  endif()
endif()
