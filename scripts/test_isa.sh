#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Reruns the ctest of an already built tree with one instruction-set path of the CPU backend
# forced, both in our fast kernels (RLX_CPU_ISA) and in OpenBLAS (OPENBLAS_CORETYPE):
#   scalar  RLX_CPU_ISA=scalar  OPENBLAS_CORETYPE=Prescott   baseline x86-64: SSE2/SSE3 only
#   avx2    RLX_CPU_ISA=avx2    OPENBLAS_CORETYPE=Haswell    AVX2 + FMA
#   avx512  RLX_CPU_ISA=avx512  OPENBLAS_CORETYPE=SkylakeX   AVX-512 (F, BW, DQ, VL) + AVX2 + FMA
# usage: test_isa.sh BUILD_DIR PATH [ctest arguments...]
# Exit status: 0 all tests passed, 1 a test failed, 77 this CPU cannot run PATH (nothing was run;
# the caller reports it as NOT RUN, never as passed), 2 bad usage.
set -u
dir=${1:?usage: test_isa.sh BUILD_DIR scalar|avx2|avx512 [ctest args]}
isa=${2:?usage: test_isa.sh BUILD_DIR scalar|avx2|avx512 [ctest args]}
shift 2

flags=" $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | cut -d: -f2) "
missing() { local f; for f in "$@"; do case $flags in *" $f "*) ;; *) printf ' %s' "$f" ;; esac; done; }

case $isa in
  scalar) core=Prescott; need=(sse2) ;;
  avx2) core=Haswell; need=(avx2 fma) ;;
  avx512) core=SkylakeX; need=(avx2 fma avx512f avx512bw avx512dq avx512vl) ;;
  *) echo "test_isa: unknown path '$isa' (expected scalar, avx2 or avx512)" >&2; exit 2 ;;
esac
lacks=$(missing "${need[@]}")
if [ "$(uname -m)" != x86_64 ] || [ -n "$lacks" ]; then
  echo "test_isa: NOT RUN: path $isa needs an x86-64 CPU with ${need[*]}; this one lacks${lacks:- x86-64}"
  exit 77
fi
if [ ! -f "$dir/CTestTestfile.cmake" ]; then
  echo "test_isa: $dir is not a built ctest tree" >&2
  exit 1
fi
echo "test_isa: ctest in $dir with RLX_CPU_ISA=$isa OPENBLAS_CORETYPE=$core"
start=$(date +%s)
(cd "$dir" && RLX_CPU_ISA=$isa OPENBLAS_CORETYPE=$core ctest --output-on-failure --no-tests=error --timeout 600 "$@")
status=$?
echo "test_isa: path $isa took $(($(date +%s) - start)) s"
exit $status
