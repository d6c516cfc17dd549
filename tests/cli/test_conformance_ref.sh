#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# The CPU backend against the independent float64 reference: test_conformance --dump writes every
# conformance case (inputs, the CPU's output, a JSON description); tests/reference/conformance_ref.py
# recomputes each one with NumPy / PyTorch and compares (docs/testing.md).
# usage: test_conformance_ref.sh PATH/TO/rlx SOURCE_DIR   (test_conformance is found next to rlx)
set -u
RLX=${1:?usage: test_conformance_ref.sh RLX SOURCE_DIR}
SRC=${2:?usage: test_conformance_ref.sh RLX SOURCE_DIR}
PY=/usr/bin/python3
BIN="$(cd "$(dirname "$RLX")" && pwd)/tests/test_conformance"
if [ ! -x "$BIN" ]; then
  echo "FAIL: $BIN not found (build the tests: cmake --build BUILD)" >&2
  exit 1
fi
if ! "$PY" -c 'import numpy, torch' 2>/dev/null; then
  echo "FAIL: $PY cannot import numpy and torch; install Debian's python3-numpy and python3-torch: run scripts/setup.sh" >&2
  exit 1
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
if ! (cd "$SRC" && RLX_SOURCE_DIR="$SRC" "$BIN" --dump "$TMP/cases" >"$TMP/dump.log" 2>&1); then
  echo "FAIL: $BIN --dump failed:" >&2
  sed 's/^/  /' "$TMP/dump.log" | tail -n 20 >&2
  exit 1
fi
"$PY" "$SRC/tests/reference/conformance_ref.py" "$TMP/cases"
