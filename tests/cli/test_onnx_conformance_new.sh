#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# The ONNX conformance ratchet for opsets after 17: generates the node tests of PyPI onnx 1.23.2
# (all opsets, up to 28) with tests/onnx/gen_node_tests.py, in the venv scripts/setup.sh creates
# (RLX_ONNX_VENV, default ~/.cache/rlx/onnx-1.23.2), into a temporary folder, runs
# `rlx onnx-conformance` over them (2 processes) and fails when
#  - fewer tests pass than tests/onnx/passed_count_onnx123.txt says (a regression),
#  - any test crashed or timed out (a crash is a bug even in an unsupported test),
#  - the generator wrote a different number of tests than the count file's second line (another
#    onnx version: the counts would not be comparable).
# When more pass than committed, it passes and prints how to raise the count.
# usage: test_onnx_conformance_new.sh PATH/TO/rlx SOURCE_DIR
set -u
RLX=${1:?usage: test_onnx_conformance_new.sh RLX SOURCE_DIR}
SRC=${2:?usage: test_onnx_conformance_new.sh RLX SOURCE_DIR}
VENV=${RLX_ONNX_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/rlx/onnx-1.23.2}
PY="$VENV/bin/python"
COUNT_FILE="$SRC/tests/onnx/passed_count_onnx123.txt"

if ! "$PY" -c 'import onnx, sys; sys.exit(onnx.__version__ != "1.23.2")' 2>/dev/null; then
  echo "FAIL: no onnx 1.23.2 in $VENV (run scripts/setup.sh, which installs it there)" >&2
  exit 1
fi
committed=$(sed -n 1p "$COUNT_FILE" 2>/dev/null | tr -d ' ')
total_expected=$(sed -n 2p "$COUNT_FILE" 2>/dev/null | tr -d ' ')
case "$committed$total_expected" in
  '' | *[!0-9]*) echo "FAIL: $COUNT_FILE must hold two numbers: the committed pass count, then the generated test count" >&2; exit 1 ;;
esac
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

failed=0
bad() { failed=$((failed + 1)); echo "FAIL: $*" >&2; }

start=$(date +%s)
if ! "$PY" "$SRC/tests/onnx/gen_node_tests.py" "$TMP/onnx123" >"$TMP/gen.log" 2>"$TMP/gen.err"; then
  cat "$TMP/gen.log" "$TMP/gen.err" >&2
  echo "FAIL: generating the onnx 1.23 node tests failed" >&2
  exit 1
fi
cat "$TMP/gen.log"
generated=$(find "$TMP/onnx123" -mindepth 1 -maxdepth 1 -type d -name 'test_*' | wc -l)
[ "$generated" -eq "$total_expected" ] ||
  bad "the generator wrote $generated tests; $COUNT_FILE expects $total_expected (a different onnx version?)"
# tests the runner must pass (it can still fail them: tests/cli/test_onnx_conformance.sh checks
# the runner itself): one per opset-18..28 change or new op this importer handles
MUST_PASS="test_reduce_mean_default_axes_keepdims_example test_split_1d_uneven_split_opset18
  test_wrap_pad test_resize_upsample_sizes_nearest_not_larger test_group_normalization_example
  test_mod_mixed_sign_float32 test_spacetodepth_crd_mode_example test_reduce_max_bool_inputs
  test_averagepool_2d_dilations test_attention_4d_gqa test_rotary_embedding test_gelu_tanh_1
  test_rms_normalization_2d_axis0 test_swish test_cumprod_1d test_deform_conv_with_mask_bias
  test_col2im test_center_crop_pad_crop_and_pad test_lppool_2d_default test_tensorscatter_circular
  test_resize_downsample_scales_linear_antialias test_quantizelinear_blocked_asymmetric
  test_dequantizelinear_blocked test_bitcast_int8_to_uint8"
for t in $MUST_PASS; do
  [ -d "$TMP/onnx123/$t" ] || bad "the generator wrote no $t"
done
"$RLX" onnx-conformance "$TMP/onnx123" --jobs 2 --timeout 120 -v >"$TMP/out" 2>"$TMP/log"
rc=$?
end=$(date +%s)
grep -v '^passed ' "$TMP/log"
cat "$TMP/out"
[ "$rc" -eq 0 ] || bad "rlx onnx-conformance exited with $rc"
for t in $MUST_PASS; do
  grep -Eq "^passed +onnx123/$t(:|$)" "$TMP/log" || bad "$t did not pass: $(grep "onnx123/$t[: ]" "$TMP/log")"
done

# "onnx123 tests: P passed, F failed, U unsupported of T (crashed C, timeout O)"
line=$(grep '^onnx123 tests: ' "$TMP/out")
passed=$(echo "$line" | sed -n 's/^onnx123 tests: \([0-9]*\) passed.*/\1/p')
if [ -z "$passed" ]; then
  bad "no totals in the runner's output"
elif [ "$passed" -lt "$committed" ]; then
  bad "$passed onnx 1.23 node tests passed, fewer than the committed $committed ($COUNT_FILE): a regression"
elif [ "$passed" -gt "$committed" ]; then
  echo "NOTE: $passed onnx 1.23 node tests pass, more than the committed $committed. Raise the ratchet:"
  echo "  printf '%s\n%s\n' $passed $total_expected > tests/onnx/passed_count_onnx123.txt"
fi
crashed=$(grep -E '^(crashed|timeout) ' "$TMP/log")
[ -z "$crashed" ] || bad "tests crashed or timed out (each is a bug to fix):
$crashed"

if [ "$failed" -eq 0 ]; then
  echo "test_onnx_conformance_new: ok ($passed of $generated pass, committed $committed; $((end - start)) s)"
fi
[ "$failed" -eq 0 ]
