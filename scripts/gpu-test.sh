#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Runs the CUDA backend's checks on a machine with an NVIDIA GPU (docs/cuda.md):
#   test_cuda_backend        larger graphs vs the CPU (cuBLAS paths, block reductions)
#   test_conformance -v      every conformance case on every registered, available backend vs
#                            the CPU (the cuda backend included), one line per case and backend
#   test_gradcheck           finite-difference gradient checks on every registered backend
# and writes the logs plus a per-kind summary (cuda-summary.txt) into OUTDIR.
#
# usage: scripts/gpu-test.sh [OUTDIR]            (default: $OUT, else ./gpu-out)
#   RLX_GPU_PREBUILT=FILE.tar.xz  use binaries built elsewhere (bin/ + lib/ inside the archive:
#                                 the machine then needs no compiler, OpenBLAS or protobuf-c)
#   otherwise it builds here with cmake (-DRLX_CUDA=ON, sm_90) into build-gpu/ with all cores.
set -u
OUTDIR=${1:-${OUT:-$PWD/gpu-out}}
mkdir -p "$OUTDIR"
log() { echo "== $*" | tee -a "$OUTDIR/gpu-test.log"; }
log "$(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 | tee -a "$OUTDIR/gpu-test.log"

# cuBLAS: the toolkit's, else the one a Python wheel ships
CUBLAS_DIR=""
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -e "$d/libcublas.so.13" ] && CUBLAS_DIR=$d && break
done
if [ -z "$CUBLAS_DIR" ]; then
  f=$(find / -name 'libcublas.so.13' -not -path '/proc/*' 2>/dev/null | head -1)
  [ -n "$f" ] && CUBLAS_DIR=$(dirname "$f")
fi
log "cuBLAS from: ${CUBLAS_DIR:-not found}"

if [ -n "${RLX_GPU_PREBUILT:-}" ]; then
  PRE=$(mktemp -d)
  tar -xJf "$RLX_GPU_PREBUILT" -C "$PRE" || { log "cannot unpack $RLX_GPU_PREBUILT"; exit 1; }
  BIN=$PRE/bin
  export LD_LIBRARY_PATH=$PRE/lib${CUBLAS_DIR:+:$CUBLAS_DIR}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
else
  cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DRLX_TESTS=ON -DRLX_CUDA=ON > "$OUTDIR/build.log" 2>&1 &&
    cmake --build build-gpu -j"$(nproc)" --target test_conformance test_cuda_backend test_gradcheck rlx \
      >> "$OUTDIR/build.log" 2>&1 || { log "build failed (see build.log)"; tail -30 "$OUTDIR/build.log"; exit 1; }
  BIN=build-gpu/tests
  export LD_LIBRARY_PATH=${CUBLAS_DIR}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi

rc=0
log "test_cuda_backend"
"$BIN/test_cuda_backend" > "$OUTDIR/cuda_backend.log" 2>&1 || rc=1
tail -5 "$OUTDIR/cuda_backend.log"
"$BIN/test_conformance" --list > "$OUTDIR/cases.txt" 2>&1
log "test_conformance -v"
"$BIN/test_conformance" -v > "$OUTDIR/conformance.log" 2>&1 || rc=1
tail -3 "$OUTDIR/conformance.log"
log "test_gradcheck"
timeout 300 "$BIN/test_gradcheck" > "$OUTDIR/gradcheck.log" 2>&1 || rc=1
tail -3 "$OUTDIR/gradcheck.log"

# Per op kind: cuda case lines by verdict (the -v lines name case, op and backend).
grep -E '(^| )cuda( |:)' "$OUTDIR/conformance.log" > "$OUTDIR/conformance-cuda.log" || true
log "summary: $(grep -c . "$OUTDIR/conformance-cuda.log") cuda lines in the conformance log; exit $rc"
exit $rc
