#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# The ONNX backend test suites on the MLX backend (`rlx onnx-conformance --backend mlx`; CMake
# registers it when the MLX backend is built): every test of the PyTorch-exported suites
# (pytorch-converted, pytorch-operator) must pass, as on the CPU, and at least
# tests/onnx/passed_count_mlx.txt node tests (the CPU's count less the documented MLX
# differences: DFT in complex64, docs/mlx-backend.md). No test may crash or time out.
# usage: mlx_onnx_conformance.sh PATH/TO/rlx SOURCE_DIR
set -u
RLX=${1:?usage: mlx_onnx_conformance.sh RLX SOURCE_DIR}
SRC=${2:?usage: mlx_onnx_conformance.sh RLX SOURCE_DIR}
DATA=/usr/include/onnx/backend/test/data
[ -d "$DATA/node" ] || { echo "FAIL: $DATA/node is missing (install libonnx-testdata; scripts/setup.sh does)" >&2; exit 1; }
want=$(tr -d ' \n' <"$SRC/tests/onnx/passed_count_mlx.txt")
out=$("$RLX" onnx-conformance "$DATA/node" "$DATA/pytorch-converted" "$DATA/pytorch-operator" --backend mlx --jobs 2 \
  --min-passed "$want" 2>/dev/null)
rc=$?
echo "$out"
failed=0
grep -q '^pytorch-converted tests: 82 passed, 0 failed, 0 unsupported of 82 (crashed 0, timeout 0)$' <<<"$out" ||
  { echo "FAIL: pytorch-converted does not pass entirely on mlx" >&2; failed=1; }
grep -q '^pytorch-operator tests: 35 passed, 0 failed, 0 unsupported of 35 (crashed 0, timeout 0)$' <<<"$out" ||
  { echo "FAIL: pytorch-operator does not pass entirely on mlx" >&2; failed=1; }
grep -q '^node tests: .*(crashed 0, timeout 0)$' <<<"$out" || { echo "FAIL: node tests crashed or timed out on mlx" >&2; failed=1; }
[ "$rc" -eq 0 ] || { echo "FAIL: fewer than $want node tests passed on mlx" >&2; failed=1; }
exit $failed
