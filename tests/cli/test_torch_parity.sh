#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# PyTorch autograd parity of RLX's autodiff: tests/unit/test_torch_parity (built next to the rlx
# binary, in tests/) dumps an MLP, a CNN and a transformer block with their RLX gradients as .npy;
# tests/autodiff/torch_parity.py rebuilds the same models in torch float64 and compares the loss and
# every parameter gradient.
# usage: test_torch_parity.sh PATH/TO/rlx SOURCE_DIR
set -u
RLX=${1:?usage: test_torch_parity.sh RLX SOURCE_DIR}
SRC=${2:?usage: test_torch_parity.sh RLX SOURCE_DIR}
PY=/usr/bin/python3
DUMPER="$(dirname "$RLX")/tests/test_torch_parity"
if ! "$PY" -c 'import numpy, torch' 2>/dev/null; then
  echo "FAIL: $PY cannot import numpy and torch (install python3-numpy and python3-torch; scripts/setup.sh does)" >&2
  exit 1
fi
if [ ! -x "$DUMPER" ]; then
  echo "FAIL: $DUMPER is missing (build the test_torch_parity target)" >&2
  exit 1
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
if ! RLX_TORCH_DUMP_DIR="$TMP" "$DUMPER" >"$TMP/dump.log" 2>&1; then
  echo "FAIL: $DUMPER failed:" >&2
  sed 's/^/  /' "$TMP/dump.log" | tail -n 20 >&2
  exit 1
fi
"$PY" "$SRC/tests/autodiff/torch_parity.py" "$TMP"
