#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Packs the binaries scripts/gpu-test.sh needs (built here, Release, sm_90) with the shared
# libraries a bare GPU machine may lack (OpenBLAS, LAPACKE, protobuf-c and their dependencies)
# into one archive for RLX_GPU_PREBUILT (docs/cuda.md). The CUDA toolkit's libraries (cuBLAS,
# cuFFT, cuSOLVER and what it loads: cuSPARSE, nvJitLink) stay out: the GPU machine has them.
#   usage: scripts/gpu-pack.sh BUILD_DIR OUT.tar.xz
set -eu
B=$1
OUTF=$2
T=$(mktemp -d)
mkdir -p "$T/bin" "$T/lib"
for f in tests/test_conformance tests/test_cuda_backend tests/test_gradcheck rlx bench_cuda bench_cuda_block; do
  [ -x "$B/$f" ] && cp "$B/$f" "$T/bin/"
done
for f in "$T"/bin/*; do
  ldd "$f" | awk '/=>/ { print $3 }'
done | sort -u | grep -Ev 'libc\.so|libm\.so|libdl|librt|libpthread|libstdc\+\+|libgcc_s|libcublas|libcusolver|libcusparse|libcufft|libnvJitLink|ld-linux' |
  while read -r l; do cp -L "$l" "$T/lib/"; done
# xz -9 (a 64 MiB dictionary) stores the binaries' identical kernel images once: 14 MB instead of
# 47 MB for the six binaries (the device tool carries at most 64 MiB)
XZ_OPT=${XZ_OPT:--9 -T2} tar -cJf "$OUTF" -C "$T" bin lib
rm -rf "$T"
