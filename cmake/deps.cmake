# SPDX-License-Identifier: MIT OR Apache-2.0
# External libraries: OpenBLAS (cblas) for GEMM, LAPACKE for factorizations (Debian packages
# libopenblas-dev and liblapacke-dev; scripts/setup.sh installs them).
find_path(RLX_CBLAS_INCLUDE cblas.h
  PATHS /usr/include/x86_64-linux-gnu/openblas-pthread /usr/include/openblas /usr/include
  REQUIRED)
find_library(RLX_OPENBLAS_LIB NAMES openblas REQUIRED)
find_path(RLX_LAPACKE_INCLUDE lapacke.h PATHS /usr/include REQUIRED)
find_library(RLX_LAPACKE_LIB NAMES lapacke REQUIRED)
target_include_directories(rlx_objects PUBLIC ${RLX_CBLAS_INCLUDE} ${RLX_LAPACKE_INCLUDE})
list(APPEND RLX_LINK_LIBS ${RLX_LAPACKE_LIB} ${RLX_OPENBLAS_LIB})
# zlib reads the gzip-compressed idx files of Debian's dataset-fashion-mnist.
find_package(ZLIB REQUIRED)
list(APPEND RLX_LINK_LIBS ZLIB::ZLIB)
