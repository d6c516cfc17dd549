#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# `rlx run` on ONNX models with sequence graph inputs and outputs (Debian's libonnx-testdata):
# a sequence input given as one SequenceProto .pb or as NAME.0, NAME.1, ... .npy files, sequence
# outputs written as NAME.0.npy, NAME.1.npy, ...; compared with the test's expected SequenceProto
# (read with Debian's python3-onnx). A sequence input given nowhere is an error saying how to give it.
# usage: test_onnx_sequences.sh PATH/TO/rlx SOURCE_DIR
set -u
RLX=${1:?usage: test_onnx_sequences.sh RLX SOURCE_DIR}
PY=/usr/bin/python3
DATA=/usr/include/onnx/backend/test/data/node
if ! "$PY" -c 'import numpy, onnx' 2>/dev/null; then
  echo "FAIL: $PY cannot import numpy and onnx (scripts/setup.sh installs python3-onnx)" >&2
  exit 1
fi
if [ ! -d "$DATA/test_sequence_insert_at_back" ]; then
  echo "FAIL: no ONNX test data in $DATA (install libonnx-testdata; scripts/setup.sh does)" >&2
  exit 1
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
passed=0
failed=0
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*" >&2; }

# same_as_sequence DIR STEM EXPECTED.pb: DIR/STEM.K.npy hold exactly the expected sequence's elements
same_as_sequence() {
  "$PY" - "$1" "$2" "$3" <<'PYEOF'
import os, sys
import numpy as np
import onnx
from onnx import numpy_helper
d, stem, exp_path = sys.argv[1:4]
seq = onnx.SequenceProto()
with open(exp_path, "rb") as f:
    seq.ParseFromString(f.read())
want = numpy_helper.to_list(seq)
got = sorted(n for n in os.listdir(d) if n.startswith(stem + ".") and n.endswith(".npy"))
if len(got) != len(want):
    sys.exit(f"{len(got)} element files, expected {len(want)}")
for k, w in enumerate(want):
    g = np.load(os.path.join(d, f"{stem}.{k}.npy"))
    if g.dtype != w.dtype or g.shape != w.shape or not np.array_equal(g, w):
        sys.exit(f"element {k}: got {g.dtype} {g.shape} {g.tolist()}, expected {w.dtype} {w.shape} {w.tolist()}")
PYEOF
}

# 1. SequenceInsert: the sequence input as one SequenceProto file
T="$DATA/test_sequence_insert_at_back"
if "$RLX" run "$T/model.onnx" --input sequence="$T/test_data_set_0/input_0.pb" \
  --input tensor="$T/test_data_set_0/input_1.pb" --output-dir "$TMP/a" >"$TMP/out" 2>"$TMP/err"; then
  if same_as_sequence "$TMP/a" output_sequence "$T/test_data_set_0/output_0.pb"; then ok; else bad "insert_at_back outputs"; fi
else
  bad "rlx run insert_at_back failed: $(head -c 400 "$TMP/err")"
fi

# 2. Identity of a sequence given element by element as .npy files
T="$DATA/test_identity_sequence"
"$PY" - "$T/test_data_set_0/input_0.pb" "$TMP" <<'PYEOF'
import sys
import numpy as np
import onnx
from onnx import numpy_helper
seq = onnx.SequenceProto()
with open(sys.argv[1], "rb") as f:
    seq.ParseFromString(f.read())
for k, t in enumerate(numpy_helper.to_list(seq)):
    np.save(f"{sys.argv[2]}/x{k}.npy", t)
PYEOF
args=()
for f in "$TMP"/x*.npy; do
  k=$(basename "$f" .npy)
  args+=(--input "x.${k#x}=$f")
done
if "$RLX" run "$T/model.onnx" "${args[@]}" --output-dir "$TMP/b" >"$TMP/out" 2>"$TMP/err"; then
  if same_as_sequence "$TMP/b" y "$T/test_data_set_0/output_0.pb"; then ok; else bad "identity_sequence outputs"; fi
else
  bad "rlx run identity_sequence failed: $(head -c 400 "$TMP/err")"
fi

# 3. the sequence input given nowhere
T="$DATA/test_sequence_insert_at_back"
if "$RLX" run "$T/model.onnx" --input tensor="$T/test_data_set_0/input_1.pb" --output-dir "$TMP/c" >"$TMP/out" 2>"$TMP/err"; then
  bad "a sequence input without elements ran"
elif grep -q 'graph input "sequence" is a sequence whose length is only known at run time' "$TMP/err"; then ok
else bad "unexpected message: $(head -c 400 "$TMP/err")"; fi

echo "onnx sequences: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
