#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# GridSample, AffineGrid and RoiAlign import against PyTorch: tests/onnx/sample_torch_cases.py
# writes one-node ONNX tests whose expected outputs come from torch float64 (F.grid_sample,
# F.affine_grid, torchvision.ops.roi_align); every one of them must pass `rlx onnx-conformance`.
# usage: test_onnx_sample_torch.sh PATH/TO/rlx SOURCE_DIR
set -u
RLX=${1:?usage: test_onnx_sample_torch.sh RLX SOURCE_DIR}
SRC=${2:?usage: test_onnx_sample_torch.sh RLX SOURCE_DIR}
PY=/usr/bin/python3
if ! "$PY" -c 'import numpy, onnx, torch, torchvision' 2>/dev/null; then
  echo "FAIL: $PY cannot import numpy, onnx, torch and torchvision (install python3-numpy python3-onnx" \
    "python3-torch python3-torchvision; scripts/setup.sh does)" >&2
  exit 1
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
if ! written=$("$PY" "$SRC/tests/onnx/sample_torch_cases.py" "$TMP/sample" 2>"$TMP/gen.err"); then
  cat "$TMP/gen.err" >&2
  echo "FAIL: writing the PyTorch-referenced sampling tests failed" >&2
  exit 1
fi
"$RLX" onnx-conformance "$TMP/sample" --jobs 2 >"$TMP/out.txt" 2>"$TMP/err.txt"
totals=$(grep '^sample tests:' "$TMP/out.txt")
want="sample tests: $written passed, 0 failed, 0 unsupported of $written (crashed 0, timeout 0)"
if [ "$totals" != "$want" ] || [ "$written" -lt 50 ]; then
  cat "$TMP/err.txt" >&2
  echo "FAIL: got '$totals', want '$want'" >&2
  exit 1
fi
echo "ok: $totals"
