#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# docs/op-coverage.md is generated (test_conformance --coverage): regenerate it into a temporary
# file and fail when the committed one differs, so a stale coverage doc fails CI.
# usage: test_op_coverage_fresh.sh PATH/TO/rlx SOURCE_DIR   (test_conformance is found next to rlx)
set -u
RLX=${1:?usage: test_op_coverage_fresh.sh RLX SOURCE_DIR}
SRC=${2:?usage: test_op_coverage_fresh.sh RLX SOURCE_DIR}
BUILD="$(cd "$(dirname "$RLX")" && pwd)"
BIN="$BUILD/tests/test_conformance"
if [ ! -x "$BIN" ]; then
  echo "FAIL: $BIN not found (build the tests: cmake --build BUILD)" >&2
  exit 1
fi
if ! /usr/bin/python3 -c 'import numpy, torch' 2>/dev/null; then
  echo "FAIL: /usr/bin/python3 cannot import numpy and torch; install Debian's python3-numpy and python3-torch: run scripts/setup.sh" >&2
  exit 1
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
if ! (cd "$SRC" && RLX_SOURCE_DIR="$SRC" "$BIN" --coverage "$TMP/op-coverage.md" >"$TMP/log" 2>&1); then
  echo "FAIL: $BIN --coverage failed:" >&2
  sed 's/^/  /' "$TMP/log" | tail -n 20 >&2
  exit 1
fi
if ! diff -u "$SRC/docs/op-coverage.md" "$TMP/op-coverage.md" >"$TMP/diff"; then
  echo "FAIL: docs/op-coverage.md is stale (or was edited by hand). Regenerate it from the source root:" >&2
  echo "  (cd $SRC && $BIN --coverage docs/op-coverage.md)" >&2
  echo "differences (- committed, + regenerated):" >&2
  head -n 40 "$TMP/diff" >&2
  exit 1
fi
echo "docs/op-coverage.md is up to date"
