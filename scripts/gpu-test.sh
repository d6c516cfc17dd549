#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Runs the CUDA backend's checks on a machine with an NVIDIA GPU (docs/cuda.md):
#   test_cuda_backend        larger graphs vs the CPU (cuBLAS paths, block reductions)
#   test_conformance -v      every conformance case on every registered, available backend vs
#                            the CPU (the cuda backend included), one line per case and backend
#   test_gradcheck           finite-difference gradient checks on every registered backend
# and writes the logs plus a per-kind summary (cuda-summary.md) into OUTDIR.
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
# cuSOLVER (libcusolver.so.12 and its cuSPARSE / nvJitLink): the toolkit's, else a wheel's
SOLVER_DIR=""
if [ -n "$CUBLAS_DIR" ] && [ -e "$CUBLAS_DIR/libcusolver.so.12" ]; then
  SOLVER_DIR=$CUBLAS_DIR
else
  f=$(find / -name 'libcusolver.so.12' -not -path '/proc/*' 2>/dev/null | head -1)
  [ -n "$f" ] && SOLVER_DIR=$(dirname "$f")
fi
log "cuSOLVER from: ${SOLVER_DIR:-not found}"
[ -n "$SOLVER_DIR" ] && [ "$SOLVER_DIR" != "$CUBLAS_DIR" ] && CUBLAS_DIR=$CUBLAS_DIR${CUBLAS_DIR:+:}$SOLVER_DIR
# cuFFT (libcufft.so.12, the Fft kernel): the toolkit's, else a wheel's
FFT_DIR=""
for d in ${SOLVER_DIR:-} /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -e "$d/libcufft.so.12" ] && FFT_DIR=$d && break
done
if [ -z "$FFT_DIR" ]; then
  f=$(find / -name 'libcufft.so.12' -not -path '/proc/*' 2>/dev/null | head -1)
  [ -n "$f" ] && FFT_DIR=$(dirname "$f")
fi
log "cuFFT from: ${FFT_DIR:-not found}"
case ":$CUBLAS_DIR:" in
*":$FFT_DIR:"*) ;;
*) [ -n "$FFT_DIR" ] && CUBLAS_DIR=$CUBLAS_DIR${CUBLAS_DIR:+:}$FFT_DIR ;;
esac

if [ -n "${RLX_GPU_PREBUILT:-}" ]; then
  PRE=$(mktemp -d)
  tar -xJf "$RLX_GPU_PREBUILT" -C "$PRE" || { log "cannot unpack $RLX_GPU_PREBUILT"; exit 1; }
  BIN=$PRE/bin
  export LD_LIBRARY_PATH=$PRE/lib${CUBLAS_DIR:+:$CUBLAS_DIR}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
else
  cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DRLX_TESTS=ON -DRLX_CUDA=ON > "$OUTDIR/build.log" 2>&1 &&
    cmake --build build-gpu -j"$(nproc)" --target test_conformance test_cuda_backend test_gradcheck rlx bench_cuda bench_cuda_block \
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
"$BIN/test_conformance" -v > "$OUTDIR/conformance.log" 2> "$OUTDIR/conformance.err" || rc=1 # stderr apart: its FAIL lines must not split the per-case lines parsed below
tail -3 "$OUTDIR/conformance.log"
log "test_gradcheck"
timeout 300 "$BIN/test_gradcheck" > "$OUTDIR/gradcheck.log" 2>&1 || rc=1
tail -3 "$OUTDIR/gradcheck.log"

# Per op kind: the cuda verdicts of its conformance cases (the -v lines are "case backend verdict
# (path)"; cases.txt maps case -> op), as a markdown table for docs/cuda.md.
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
{
  echo "Conformance cases on the cuda backend, $(date -u +%Y-%m-%d), ${GPU:-unknown GPU}:"
  echo
  echo "| op kind | cases | passed native | passed decomposed | failed | unsupported |"
  echo "| --- | --- | --- | --- | --- | --- |"
  awk 'NR == FNR { op[$2] = $3; next }
       $2 == "cuda" { k = op[$1]; n[k]++; v = $3 " " $4
         if (v == "ok (native)") a[k]++; else if ($3 == "ok") b[k]++; else if ($3 == "FAIL") f[k]++; else u[k]++ }
       END { for (k in n) printf "| %s | %d | %d | %d | %d | %d |\n", k, n[k], a[k], b[k], f[k], u[k] }' \
    "$OUTDIR/cases.txt" "$OUTDIR/conformance.log" | sort
} > "$OUTDIR/cuda-summary.md"
# The same per kind as docs/cuda-conformance.tsv (read by test_conformance --coverage for the cuda
# column of docs/op-coverage.md on machines without a GPU): commit it after a run.
{
  echo "# $(date -u +%Y-%m-%d) ${GPU:-unknown GPU}, driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)"
  awk -F'|' 'NR > 4 { gsub(/ /, ""); print $2, $3, $4, $5, $6, $7 }' "$OUTDIR/cuda-summary.md"
} > "$OUTDIR/cuda-conformance.tsv"
awk -F'|' 'NR > 4 { c += $3; p += $4 + $5; f += $6; u += $7 } END { printf "cuda: %d cases, %d passed, %d failed, %d unsupported\n", c, p, f, u }' \
  "$OUTDIR/cuda-summary.md" | tee -a "$OUTDIR/gpu-test.log"
# RLX_GPU_TRAIN=DATA_DIR: one epoch of the Fashion-MNIST CNN on the cpu and on the cuda backend
# (same seed), JSON summaries in train-cpu.json / train-cuda.json.
if [ -n "${RLX_GPU_TRAIN:-}" ]; then
  RLX=$BIN/rlx
  [ -x "$RLX" ] || RLX=build-gpu/rlx
  for be in cpu cuda; do
    log "rlx train --backend $be"
    timeout "${RLX_GPU_TRAIN_TIMEOUT:-240}" "$RLX" train --backend $be --data "$RLX_GPU_TRAIN" --out "$OUTDIR/train-$be" \
      --json > "$OUTDIR/train-$be.json" 2> "$OUTDIR/train-$be.err" || { rc=1; tail -5 "$OUTDIR/train-$be.err"; }
    tail -1 "$OUTDIR/train-$be.json"
    rm -rf "$OUTDIR/train-$be" "$OUTDIR/train-$be.err"
  done
fi
# RLX_GPU_BENCH=1: bench_cuda (rlx) and bench/bench_cuda_torch.py (PyTorch eager / torch.compile)
# on the same GPU, into bench-rlx.txt / bench-torch.txt.
if [ -n "${RLX_GPU_BENCH:-}" ]; then
  BENCH=$BIN/bench_cuda
  [ -x "$BENCH" ] || BENCH=build-gpu/bench_cuda
  log "bench_cuda"
  timeout "${RLX_GPU_BENCH_TIMEOUT:-240}" "$BENCH" > "$OUTDIR/bench-rlx.txt" 2>&1 || rc=1
  BLOCK=$BIN/bench_cuda_block
  [ -x "$BLOCK" ] || BLOCK=build-gpu/bench_cuda_block
  log "bench_cuda_block"
  timeout "${RLX_GPU_BENCH_TIMEOUT:-240}" "$BLOCK" >> "$OUTDIR/bench-rlx.txt" 2>&1 || rc=1
  # RLX_GPU_PROFILE=1: the f32 block again with every step timed by op kind (stderr)
  if [ -n "${RLX_GPU_PROFILE:-}" ]; then
    RLX_CUDA_PROFILE=1 timeout 120 "$BLOCK" f32 >> "$OUTDIR/bench-rlx.txt" 2>&1 || rc=1
    RLX_CUDA_PROFILE=1 timeout 120 "$BLOCK" bf16 >> "$OUTDIR/bench-rlx.txt" 2>&1 || rc=1
  fi
  cat "$OUTDIR/bench-rlx.txt"
  if [ "${RLX_GPU_TORCH:-1}" != 0 ]; then # RLX_GPU_TORCH=0: skip the PyTorch side
    log "bench_cuda_torch.py"
    PYTHONUNBUFFERED=1 timeout "${RLX_GPU_BENCH_TIMEOUT:-240}" python3 bench/bench_cuda_torch.py > "$OUTDIR/bench-torch.txt" 2>&1 || rc=1
    cat "$OUTDIR/bench-torch.txt"
  fi
fi
log "exit $rc"
exit $rc
