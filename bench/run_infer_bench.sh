#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Inference benchmark: resnet18, mobilenet_v3_small (b1, b32) and a MiniLM-sized encoder (6 layers,
# d=384, seq 128; b1, b8), random seeded weights, on rlx (build/bench_onnx_infer: ONNX import +
# rlx_compile for cpu), ONNX Runtime (PyPI, CPU provider) and PyTorch eager, in one run at each
# thread count; checks rlx's outputs against ORT's (max abs diff) and writes the table between the
# infer-bench markers of docs/benchmarks.md (bench/infer_bench.py report).
#
# usage: bench/run_infer_bench.sh [BUILD_DIR]        (default build; needs its bench_onnx_infer)
# environment:
#   THREADS="1 2"   thread counts (default "1 2")
#   MODELS="..."    subset of: resnet18 mobilenet_v3_small encoder (default all three)
#   WARMUP=N        untimed runs before timing (default 3)
#   ITERS_B1=N      timed runs at batch 1 (default 30); ITERS_BATCH=N batched (default 6)
#   MODEL_DIR=DIR   where the models are generated (default bench/models, git-ignored; kept)
#   ORT_VENV=DIR    venv with PyPI onnxruntime (made when missing; default
#                   ~/.cache/rlx/ort-1.31.1)
#   DOC=PATH        the document to update (default docs/benchmarks.md; "-" = do not write)
#   LABEL=TEXT      a note printed with the table's header (e.g. "before pattern fusion")
#   BASELINE=PATH   another bench_onnx_infer (an older build) timed in the same run: the table
#                   then has its latency and its ratio to ORT next to the current build's
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUILD=${1:-build}
DRIVER=$BUILD/bench_onnx_infer
THREADS=${THREADS:-1 2}
MODELS=${MODELS:-resnet18 mobilenet_v3_small encoder}
WARMUP=${WARMUP:-3}
ITERS_B1=${ITERS_B1:-30}
ITERS_BATCH=${ITERS_BATCH:-6}
MODEL_DIR=${MODEL_DIR:-bench/models}
ORT_VERSION=1.31.1
ORT_VENV=${ORT_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/rlx/ort-$ORT_VERSION}
DOC=${DOC:-docs/benchmarks.md}
LABEL=${LABEL:-}
BASELINE=${BASELINE:-}
SYS_PY=/usr/bin/python3 # Debian's: torch 1.13, torchvision 0.14

# The benchmark measures the machine's own ISA: no OpenBLAS core override.
unset OPENBLAS_CORETYPE

[ -x "$DRIVER" ] || { echo "bench: $DRIVER is not built (cmake --build $BUILD --target bench_onnx_infer)" >&2; exit 1; }
"$SYS_PY" -c 'import torch, torchvision' 2>/dev/null || { echo "bench: $SYS_PY cannot import torch and torchvision (scripts/setup.sh installs them)" >&2; exit 1; }
if ! "$ORT_VENV/bin/python" -c "import onnxruntime, sys; sys.exit(onnxruntime.__version__ != '$ORT_VERSION')" 2>/dev/null; then
  echo "bench: installing onnxruntime $ORT_VERSION into $ORT_VENV" >&2
  rm -rf "$ORT_VENV"
  mkdir -p "$(dirname "$ORT_VENV")"
  python3 -m venv "$ORT_VENV"
  "$ORT_VENV/bin/pip" install --quiet --disable-pip-version-check "onnxruntime==$ORT_VERSION" numpy
fi

"$SYS_PY" bench/infer_bench.py export "$MODEL_DIR"

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
: >"$TMP/results.jsonl"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for model in $MODELS; do
  case $model in
    encoder) batches="1 8" ;;
    *) batches="1 32" ;;
  esac
  for b in $batches; do
    iters=$ITERS_B1
    [ "$b" = 1 ] || iters=$ITERS_BATCH
    onnx=$MODEL_DIR/${model}_b$b.onnx
    in=$MODEL_DIR/${model}_b$b.in.npy
    for t in $THREADS; do
      echo "== $model b$b threads $t ($iters runs)" >&2
      ort=$("$ORT_VENV/bin/python" bench/infer_bench.py ort "$onnx" "$in" "$t" "$WARMUP" "$iters" "$TMP/ort.npy")
      echo "   ort   $ort" >&2
      if rlx=$("$DRIVER" "$onnx" "$in" "$t" "$WARMUP" "$iters" "$TMP/rlx.npy" 2>"$TMP/rlx.err"); then
        diff=$("$SYS_PY" bench/infer_bench.py diff "$TMP/rlx.npy" "$TMP/ort.npy")
      else
        rlx=$(python3 -c 'import json,sys; print(json.dumps({"error": sys.argv[1]}))' "$(tail -n 1 "$TMP/rlx.err")")
        diff='{}'
      fi
      echo "   rlx   $rlx" >&2
      echo "   diff  $diff" >&2
      base='{}'
      if [ -n "$BASELINE" ]; then
        base=$("$BASELINE" "$onnx" "$in" "$t" "$WARMUP" "$iters" 2>/dev/null) || base='{}'
        echo "   base  $base" >&2
      fi
      tor=$("$SYS_PY" bench/infer_bench.py torch "$MODEL_DIR" "$model" "$b" "$t" "$WARMUP" "$iters")
      echo "   torch $tor" >&2
      printf '{"model": "%s", "batch": %s, "threads": %s, "rlx": %s, "ort": %s, "torch": %s, "diff": %s, "base": %s}\n' \
        "$model" "$b" "$t" "$rlx" "$ort" "$tor" "$diff" "$base" >>"$TMP/results.jsonl"
    done
  done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
cp "$TMP/results.jsonl" "$BUILD/infer_bench_results.jsonl"

commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD 2>/dev/null || commit="$commit+dirty"
python3 bench/infer_bench.py report --runs "$TMP" --doc "$DOC" --label "$LABEL" \
  --cpu "$(grep -m1 '^model name' /proc/cpuinfo | sed 's/^[^:]*: *//')" --cores "$(nproc)" \
  --load-before "$load_before" --load-after "$load_after" --commit "$commit"
