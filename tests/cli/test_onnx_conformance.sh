#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# The ONNX conformance ratchet: runs `rlx onnx-conformance` over the node, pytorch-converted,
# pytorch-operator and simple suites of Debian's libonnx-testdata (2 processes) and fails when
#  - fewer node tests pass than tests/onnx/passed_count.txt says (a regression),
#  - any test crashed or timed out (a crash is a bug even in an unsupported test),
#  - docs/onnx-conformance.md does not start with the committed count (regenerate it).
# When more node tests pass than committed, it passes and prints how to raise the count.
# usage: test_onnx_conformance.sh PATH/TO/rlx SOURCE_DIR
set -u
RLX=${1:?usage: test_onnx_conformance.sh RLX SOURCE_DIR}
SRC=${2:?usage: test_onnx_conformance.sh RLX SOURCE_DIR}
DATA=/usr/include/onnx/backend/test/data
SUITES="node pytorch-converted pytorch-operator simple"
COUNT_FILE="$SRC/tests/onnx/passed_count.txt"
DOC="$SRC/docs/onnx-conformance.md"

if [ ! -d "$DATA/node" ]; then
  echo "FAIL: $DATA/node is missing (install libonnx-testdata; scripts/setup.sh does)" >&2
  exit 1
fi
committed=$(tr -d ' \n' <"$COUNT_FILE" 2>/dev/null)
case "$committed" in
  '' | *[!0-9]*) echo "FAIL: $COUNT_FILE must hold one number, the committed node pass count" >&2; exit 1 ;;
esac
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

failed=0
bad() { failed=$((failed + 1)); echo "FAIL: $*" >&2; }

# ---- the runner itself can fail a test: a copy of test_add passes, the same with one output value
# negated fails, a garbage model.onnx fails cleanly (no crash) ----
S="$TMP/selfcheck"
mkdir -p "$S"
cp -r "$DATA/node/test_add" "$S/test_add"
cp -r "$DATA/node/test_add" "$S/test_add_wrong"
cp -r "$DATA/node/test_add" "$S/test_add_garbage"
head -c 200 /dev/zero | tr '\0' '\377' >"$S/test_add_garbage/model.onnx"
# raw_data (field 9) is the last field of the TensorProto: flip the sign bit of the last float
f="$S/test_add_wrong/test_data_set_0/output_0.pb"
size=$(stat -c %s "$f")
last=$(od -An -tu1 -j $((size - 1)) -N1 "$f" | tr -d ' ')
printf "$(printf '\\%03o' $((last ^ 128)))" | dd of="$f" bs=1 seek=$((size - 1)) conv=notrunc status=none
"$RLX" onnx-conformance "$S" --doc "$TMP/selfcheck.md" >"$TMP/self.out" 2>"$TMP/self.err"
grep -q '^selfcheck tests: 1 passed, 2 failed, 0 unsupported of 3 (crashed 0, timeout 0)$' "$TMP/self.out" ||
  bad "self-check: expected 1 passed, 2 failed; got: $(cat "$TMP/self.out" "$TMP/self.err")"
grep -q '^failed      selfcheck/test_add_wrong: output 0 (\[3, 4, 5\] f32): 1 of 60 values' "$TMP/self.err" ||
  bad "self-check: the corrupted output is not reported: $(cat "$TMP/self.err")"
head -n 1 "$TMP/selfcheck.md" | grep -q '^node tests: 0 passed, 0 failed, 0 unsupported of 0$' ||
  bad "self-check: the document's first line is $(head -n 1 "$TMP/selfcheck.md")"

# ---- the suites ----
dirs=()
for s in $SUITES; do dirs+=("$DATA/$s"); done
"$RLX" onnx-conformance "${dirs[@]}" --jobs 2 --timeout 120 --json >"$TMP/results.json" 2>"$TMP/log"
rc=$?
cat "$TMP/log"
[ "$rc" -eq 0 ] || bad "rlx onnx-conformance exited with $rc"

# "node tests: P passed, F failed, U unsupported of T (crashed C, timeout O)"
line=$(grep '^node tests: ' "$TMP/log")
passed=$(echo "$line" | sed -n 's/^node tests: \([0-9]*\) passed.*/\1/p')
if [ -z "$passed" ]; then
  bad "no node totals in the runner's output"
else
  if [ "$passed" -lt "$committed" ]; then
    bad "$passed node tests passed, fewer than the committed $committed (tests/onnx/passed_count.txt): a regression"
    echo "  the failing tests are listed above; see docs/onnx-conformance.md for the committed state" >&2
  elif [ "$passed" -gt "$committed" ]; then
    echo "NOTE: $passed node tests pass, more than the committed $committed. Raise the ratchet with"
    echo "  echo $passed > tests/onnx/passed_count.txt"
    echo "  rlx onnx-conformance ${dirs[*]} --jobs 2 --doc docs/onnx-conformance.md"
  fi
fi
crashed=$(grep -E '^(crashed|timeout) ' "$TMP/log")
[ -z "$crashed" ] || bad "tests crashed or timed out (each is a bug to fix):
$crashed"

# the generated document must describe the committed count
first=$(head -n 1 "$DOC" 2>/dev/null)
doc_passed=$(echo "$first" | sed -n 's/^node tests: \([0-9]*\) passed, [0-9]* failed, [0-9]* unsupported of [0-9]*$/\1/p')
if [ -z "$doc_passed" ]; then
  bad "docs/onnx-conformance.md must start with 'node tests: P passed, F failed, U unsupported of T'"
elif [ "$doc_passed" != "$committed" ]; then
  bad "docs/onnx-conformance.md says $doc_passed node tests pass but tests/onnx/passed_count.txt says $committed; regenerate it:
  rlx onnx-conformance ${dirs[*]} --jobs 2 --doc docs/onnx-conformance.md"
fi

if [ "$failed" -eq 0 ]; then echo "test_onnx_conformance: ok ($passed node tests pass, committed $committed)"; fi
[ "$failed" -eq 0 ]
