#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Real models through the ONNX importer: tests/onnx/export_models.py exports, with Debian's
# python3-torch / python3-torchvision (TorchScript exporter, random weights), torchvision resnet18,
# mobilenet_v3_small, squeezenet1_0, efficientnet_b0 and regnet_y_400mf, a 2-layer
# TransformerEncoder, a tiny GPT (int64 token ids), stacked LSTM / GRU layers and a block of
# transposed convolution / pixel shuffle / upsampling / group and instance norm, together with a
# random input and torch's outputs (models with symbolic batch or sequence dims are run on other
# sizes than they were exported with). Each model is run with `rlx run MODEL.onnx --input x=X.npy`
# and every output compared with torch: max|rlx - torch| / max|torch| <= 1e-4.
# Models live in a temporary folder, never in the repository.
# A missing package, a failed export or a failed run is a failure (no skip).
# An optional third argument names the backend the models run on (default cpu; CMake adds an mlx
# run of the same models when the MLX backend is built), always compared with torch.
# usage: test_onnx_models.sh PATH/TO/rlx SOURCE_DIR [BACKEND]
set -u
RLX=${1:?usage: test_onnx_models.sh RLX SOURCE_DIR [BACKEND]}
SRC=${2:?usage: test_onnx_models.sh RLX SOURCE_DIR [BACKEND]}
BACKEND=${3:-cpu}
PY=/usr/bin/python3
MODELS="resnet18 mobilenet_v3_small squeezenet1_0 efficientnet_b0 regnet_y_400mf transformer_encoder gpt rnn resample"
TOL=1e-4

if ! "$PY" -c 'import numpy, torch, torchvision' 2>/dev/null; then
  echo "FAIL: $PY cannot import numpy, torch and torchvision (install python3-numpy python3-torch" \
       "python3-torchvision; scripts/setup.sh does)" >&2
  exit 1
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

passed=0
failed=0
bad() { failed=$((failed + 1)); echo "FAIL: $*" >&2; }

if ! "$PY" "$SRC/tests/onnx/export_models.py" "$TMP" >"$TMP/export.log" 2>&1; then
  bad "export_models.py failed"
  grep -v -i 'warning' "$TMP/export.log" | tail -n 15 | sed 's/^/  /' >&2
  exit 1
fi

for m in $MODELS; do
  out="$TMP/$m.out"
  if ! "$RLX" run "$TMP/$m.onnx" --input "x=$TMP/$m.x.npy" --output-dir "$out" --backend "$BACKEND" >"$TMP/$m.log" 2>&1; then
    bad "$m: rlx run failed"
    sed 's/^/  /' "$TMP/$m.log" | head -n 20 >&2
    # which ops are missing, if that is the reason
    "$RLX" import --report "$TMP/$m.onnx" 2>&1 | sed 's/^/  report: /' | head -n 20 >&2
    continue
  fi
  for want in "$TMP/$m".y*.npy; do
    o=${want#"$TMP/$m."}
    o=${o%.npy}
    if "$PY" - "$out/$o.npy" "$want" "$TOL" "$m:$o" >"$TMP/$m.$o.cmp" 2>&1 <<'PYEOF'
import os
import sys
import numpy as np
got_path, want_path, tol, name = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
if not os.path.exists(got_path):
    sys.exit(f"{name}: rlx wrote no {os.path.basename(got_path)}")
got, want = np.load(got_path), np.load(want_path)
if got.shape != want.shape or got.dtype != want.dtype:
    sys.exit(f"{name}: output {got.shape} {got.dtype}, torch gives {want.shape} {want.dtype}")
if not np.all(np.isfinite(got)):
    sys.exit(f"{name}: output has {np.count_nonzero(~np.isfinite(got))} non-finite values")
rel = float(np.abs(got.astype(np.float64) - want).max() / np.abs(want).max())
print(f"{name}: output {list(want.shape)}, max|rlx - torch| / max|torch| = {rel:.3g}")
sys.exit(0 if rel <= tol else f"{name}: relative error {rel:.3g} exceeds {tol:g}")
PYEOF
    then
      passed=$((passed + 1))
      cat "$TMP/$m.$o.cmp"
    else
      bad "$(tail -n 1 "$TMP/$m.$o.cmp")"
    fi
  done
done

echo "test_onnx_models ($BACKEND): $passed passed, $failed failed"
[ "$failed" -eq 0 ]
