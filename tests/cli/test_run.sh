#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Tests of `rlx run` and `rlx compile`: an MLP graph run on .npy inputs and params made with NumPy,
# its .npy outputs compared with a NumPy computation; argument and input errors; the dispatch
# report, also for a graph whose Custom op is not registered; --backend (an unknown one is a usage error);
# --dim bindings of symbolic dims (IR ?K and ONNX dim_param names), with errors; "not an ONNX
# model" for files of another kind; no doubled error prefixes.
# usage: test_run.sh PATH/TO/rlx SOURCE_DIR
set -u
RLX=${1:?usage: test_run.sh RLX SOURCE_DIR}
SRC=${2:?usage: test_run.sh RLX SOURCE_DIR}
PY=/usr/bin/python3
if ! "$PY" -c 'import numpy' 2>/dev/null; then
  echo "FAIL: $PY cannot import numpy (install python3-numpy; scripts/setup.sh does)" >&2
  exit 1
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

source "$SRC/tests/cli/lib.sh"
# py DESCRIPTION SCRIPT: runs a Python check; a non-zero exit is a failure.
py() {
  local what=$1
  if "$PY" -c "$2" >"$TMP/py.out" 2>&1; then ok; else bad "$what"; sed 's/^/  /' "$TMP/py.out" | head -n 10 >&2; fi
}

# ---- an MLP: logits = relu(x @ w1 + b1) @ w2 + b2 (unnamed output), probs = softmax(logits) ----
cat >"$TMP/mlp.rlx" <<'EOF'
graph @mlp {
  %0 = Input {name = "x"} : [4, 8] f32 "x"
  %1 = Param {name = "w1"} : [8, 16] f32 "w1"
  %2 = Param {name = "b1"} : [16] f32 "b1"
  %3 = Param {name = "w2"} : [16, 3] f32 "w2"
  %4 = Param {name = "b2"} : [3] f32 "b2"
  %5 = MatMul(%0, %1) : [4, 16] f32
  %6 = Binary(%5, %2) : [4, 16] f32
  %7 = Activation(%6) {kind = Relu} : [4, 16] f32
  %8 = MatMul(%7, %3) : [4, 3] f32
  %9 = Binary(%8, %4) : [4, 3] f32
  %10 = Softmax(%9) : [4, 3] f32 "probs"
  return %9, %10
}
EOF
mkdir -p "$TMP/params"
"$PY" - "$TMP" <<'EOF'
import sys, numpy as np
d = sys.argv[1]
rng = np.random.default_rng(7)
np.save(f"{d}/x.npy", rng.standard_normal((4, 8)).astype(np.float32))
np.save(f"{d}/x2.npy", rng.standard_normal((4, 8)).astype(np.float32))
np.save(f"{d}/x64.npy", rng.standard_normal((4, 8)))
np.save(f"{d}/xT.npy", rng.standard_normal((8, 4)).astype(np.float32))
for name, shape in [("w1", (8, 16)), ("b1", (16,)), ("w2", (16, 3)), ("b2", (3,))]:
    np.save(f"{d}/params/{name}.npy", rng.standard_normal(shape).astype(np.float32))
np.save(f"{d}/w1_other.npy", rng.standard_normal((8, 16)).astype(np.float32))
EOF

check_mlp() { # check_mlp OUTDIR X.npy W1.npy
  py "mlp outputs in $1 match NumPy" "
import numpy as np
d = '$TMP/params'
x = np.load('$2'); w1 = np.load('$3'); b1 = np.load(d + '/b1.npy'); w2 = np.load(d + '/w2.npy'); b2 = np.load(d + '/b2.npy')
h = np.maximum(x.astype(np.float64) @ w1 + b1, 0)
logits = h @ w2 + b2
e = np.exp(logits - logits.max(axis=1, keepdims=True))
probs = e / e.sum(axis=1, keepdims=True)
got_l = np.load('$1/output0.npy'); got_p = np.load('$1/probs.npy')
assert got_l.dtype == np.float32 and got_l.shape == (4, 3), (got_l.dtype, got_l.shape)
assert got_p.dtype == np.float32 and got_p.shape == (4, 3), (got_p.dtype, got_p.shape)
assert np.allclose(got_l, logits, rtol=1e-5, atol=1e-5), np.abs(got_l - logits).max()
assert np.allclose(got_p, probs, rtol=1e-5, atol=1e-6), np.abs(got_p - probs).max()
"
}

expect 0 "run mlp" -- "$RLX" run "$TMP/mlp.rlx" --input "x=$TMP/x.npy" --params "$TMP/params" --output-dir "$TMP/out1"
has "$TMP/out" "probs: [4, 3] f32 -> $TMP/out1/probs.npy" "run lists the written outputs"
has "$TMP/out" "output0: [4, 3] f32" "an unnamed output is output<i>"
check_mlp "$TMP/out1" "$TMP/x.npy" "$TMP/params/w1.npy"

# --param overrides --params; another input; an existing output directory is reused.
expect 0 "run mlp with --param" -- "$RLX" run "$TMP/mlp.rlx" --input "x=$TMP/x2.npy" --param "w1=$TMP/w1_other.npy" \
  --params "$TMP/params" --output-dir "$TMP/out1" --threads 1
check_mlp "$TMP/out1" "$TMP/x2.npy" "$TMP/w1_other.npy"

# every param given with --param, in binary IR
expect 0 "print --binary" -- "$RLX" print "$TMP/mlp.rlx" --binary -o "$TMP/mlp.bin"
expect 0 "run binary mlp" -- "$RLX" run "$TMP/mlp.bin" --input "x=$TMP/x.npy" --param "w1=$TMP/params/w1.npy" \
  --param "b1=$TMP/params/b1.npy" --param "w2=$TMP/params/w2.npy" --param "b2=$TMP/params/b2.npy" --output-dir "$TMP/out2"
check_mlp "$TMP/out2" "$TMP/x.npy" "$TMP/params/w1.npy"

# ---- errors in what is bound ----
P=(--params "$TMP/params" --output-dir "$TMP/out3")
expect 1 "missing input" -- "$RLX" run "$TMP/mlp.rlx" "${P[@]}"
has "$TMP/err" "missing input: 'x' [4, 8] f32" "missing input named"
expect 1 "wrong dtype" -- "$RLX" run "$TMP/mlp.rlx" --input "x=$TMP/x64.npy" "${P[@]}"
has "$TMP/err" "input 'x': expected [4, 8] f32, given [4, 8] f64" "wrong dtype named"
expect 1 "wrong shape" -- "$RLX" run "$TMP/mlp.rlx" --input "x=$TMP/xT.npy" "${P[@]}"
has "$TMP/err" "expected [4, 8] f32, given [8, 4] f32" "wrong shape named"
expect 1 "unknown input" -- "$RLX" run "$TMP/mlp.rlx" --input "x=$TMP/x.npy" --input "q=$TMP/x.npy" "${P[@]}"
has "$TMP/err" "unknown input 'q'" "unknown input named"
expect 1 "unset params" -- "$RLX" run "$TMP/mlp.rlx" --input "x=$TMP/x.npy" --output-dir "$TMP/out3"
has "$TMP/err" "'w1' [8, 16] f32, 'b1' [16] f32, 'w2' [16, 3] f32, 'b2' [3] f32" "every unset param named"
expect 1 "unknown --param" -- "$RLX" run "$TMP/mlp.rlx" --input "x=$TMP/x.npy" --param "nope=$TMP/x.npy" "${P[@]}"
has "$TMP/err" "no param named 'nope'" "unknown param named"
mkdir -p "$TMP/partial" && cp "$TMP/params/w1.npy" "$TMP/params/b1.npy" "$TMP/partial/"
expect 1 "params dir lacks a file" -- "$RLX" run "$TMP/mlp.rlx" --input "x=$TMP/x.npy" --params "$TMP/partial" --output-dir "$TMP/out3"
has "$TMP/err" "$TMP/partial/w2.npy does not exist" "missing param file named"
printf 'not an npy file' >"$TMP/junk.npy"
expect 1 "malformed input file" -- "$RLX" run "$TMP/mlp.rlx" --input "x=$TMP/junk.npy" "${P[@]}"
has "$TMP/err" "$TMP/junk.npy" "malformed input file named"
expect 1 "missing input file" -- "$RLX" run "$TMP/mlp.rlx" --input "x=$TMP/nothere.npy" "${P[@]}"
has "$TMP/err" "$TMP/nothere.npy" "missing input file named"
if [ -e "$TMP/out3" ]; then bad "failed runs created the output directory"; else ok; fi
expect 1 "missing graph" -- "$RLX" run "$TMP/nothere.rlx" --input "x=$TMP/x.npy" "${P[@]}"
has "$TMP/err" "$TMP/nothere.rlx" "missing graph file named"

# ---- argument errors ----
expect 2 "run without file" -- "$RLX" run --output-dir "$TMP/o"
expect 2 "run without --output-dir" -- "$RLX" run "$TMP/mlp.rlx" --input "x=$TMP/x.npy"
has "$TMP/err" "--output-dir" "missing --output-dir named"
expect 2 "--input without =" -- "$RLX" run "$TMP/mlp.rlx" --input "x" --output-dir "$TMP/o"
has "$TMP/err" "NAME=FILE.npy" "--input format explained"
expect 2 "--input without value" -- "$RLX" run "$TMP/mlp.rlx" --input
expect 2 "unknown option" -- "$RLX" run "$TMP/mlp.rlx" --frob
expect 2 "bad --threads" -- "$RLX" run "$TMP/mlp.rlx" --threads -3 --output-dir "$TMP/o"
expect 0 "run --help" -- "$RLX" run --help
has "$TMP/out" "usage: rlx run" "run --help"
expect 0 "compile --help" -- "$RLX" compile --help
has "$TMP/out" "usage: rlx compile" "compile --help"
expect 0 "--help lists run" -- "$RLX" --help
has "$TMP/out" "  run " "--help lists run"
has "$TMP/out" "  compile " "--help lists compile"

# ---- compile ----
expect 0 "compile" -- "$RLX" compile "$TMP/mlp.rlx"
has "$TMP/out" "$TMP/mlp.rlx: compiled for cpu: 11 nodes ->" "compile summary"
expect 0 "compile --report" -- "$RLX" compile "$TMP/mlp.rlx" --report
if grep -E -q '^MatMul +2 +native$' "$TMP/out"; then ok; else bad "report: MatMul 2 native"; cat "$TMP/out" >&2; fi
if grep -E -q '^Softmax +1 +native$' "$TMP/out"; then ok; else bad "report: Softmax 1 native"; fi
has "$TMP/out" "nodes: 11 before" "report counts nodes"
has "$TMP/out" "memory: arena" "report shows the arena"
has "$TMP/out" "compile-ready: yes" "report says compile-ready"
py "arena <= tensor bytes" "
import re
t = open('$TMP/out').read()
m = re.search(r'arena (\d+) bytes, tensors (\d+) bytes', t)
assert m, t
assert 0 < int(m.group(1)) <= int(m.group(2)), m.groups()
"
expect 2 "compile without file" -- "$RLX" compile
expect 2 "compile unknown option" -- "$RLX" compile "$TMP/mlp.rlx" --frob
# an unknown backend is a usage error (exit 2) that lists the registered backends
expect 2 "compile for an unknown backend" -- "$RLX" compile "$TMP/mlp.rlx" --backend nosuch
has "$TMP/err" "unknown backend 'nosuch' (registered: cpu" "compile: unknown backend named, registered listed"
expect 2 "run for an unknown backend" -- "$RLX" run "$TMP/mlp.rlx" --backend nosuch --output-dir "$TMP/o"
has "$TMP/err" "unknown backend 'nosuch' (registered: cpu" "run: unknown backend named, registered listed"
expect 0 "compile --backend cpu" -- "$RLX" compile "$TMP/mlp.rlx" --backend cpu

# A graph whose two Custom nodes name an op no extension registered: the CPU claims the Custom
# kind (the dispatch report lists it), but compiling fails and names both nodes and the op. (Every
# op kind has a CPU path now; an unregistered extension is what stays unrunnable.)
cat >"$TMP/ext.rlx" <<'EOF'
graph @ext {
  %0 = Input {name = "x"} : [3] f32 "x"
  %1 = Custom(%0) {name = "ext.render", num_inputs = 1} : [64] f32 "render_a"
  %2 = Custom(%0) {name = "ext.render", num_inputs = 1} : [64] f32 "render_b"
  %3 = Binary(%1, %2) : [64] f32
  return %3
}
EOF
expect 0 "check a graph with an unregistered Custom op" -- "$RLX" check "$TMP/ext.rlx"
expect 1 "compile unregistered Custom" -- "$RLX" compile "$TMP/ext.rlx" --report
if grep -E -q '^Custom +2 +native$' "$TMP/out"; then ok; else bad "report: Custom 2 native"; cat "$TMP/out" >&2; fi
has "$TMP/err" "render_a" "compile error names the first node"
has "$TMP/err" "render_b" "compile error names the second node"
has "$TMP/err" 'custom op "ext.render" is not registered' "compile error names the op"

# ---- symbolic dims: --dim ?K=N binds the symbols of an IR graph ----
cat >"$TMP/sym.rlx" <<'EOF'
graph @sym {
  %0 = Input {name = "x"} : [?0, 3] f32 "x"
  %1 = Param {name = "w"} : [3, 2] f32 "w"
  %2 = MatMul(%0, %1) : [?0, 2] f32 "y"
  return %2
}
EOF
"$PY" -c '
import numpy as np, sys
d = sys.argv[1]
np.save(d + "/sx.npy", np.arange(15, dtype=np.float32).reshape(5, 3) / 7)
np.save(d + "/sw.npy", np.array([[1, -2], [0.5, 3], [-1, 0.25]], dtype=np.float32))
' "$TMP"
expect 1 "unbound symbolic dim" -- "$RLX" run "$TMP/sym.rlx" --input x="$TMP/sx.npy" --param w="$TMP/sw.npy" --output-dir "$TMP/so"
has "$TMP/err" "dynamic shape [?0, 3] f32" "an unbound dim is named"
if grep -q "memory plan: memory plan" "$TMP/err"; then bad "doubled prefix: $(cat "$TMP/err")"; else ok; fi
expect 0 "run --dim ?0=5" -- "$RLX" run "$TMP/sym.rlx" --dim '?0=5' --input x="$TMP/sx.npy" --param w="$TMP/sw.npy" --output-dir "$TMP/so"
has "$TMP/out" "y: [5, 2] f32" "bound output shape"
py "--dim run matches numpy" "
import numpy as np
x = np.arange(15, dtype=np.float64).reshape(5, 3) / 7
w = np.array([[1, -2], [0.5, 3], [-1, 0.25]])
got = np.load('$TMP/so/y.npy')
assert got.shape == (5, 2) and got.dtype == np.float32, (got.shape, got.dtype)
assert np.allclose(got, x @ w, rtol=1e-6, atol=1e-6), got
"
expect 0 "compile --dim 0=5 (the ? is optional)" -- "$RLX" compile "$TMP/sym.rlx" --dim 0=5
expect 1 "--dim of the wrong size for the input" -- "$RLX" run "$TMP/sym.rlx" --dim '?0=4' --input x="$TMP/sx.npy" --param w="$TMP/sw.npy" --output-dir "$TMP/so2"
has "$TMP/err" "[4, 3]" "the size mismatch names the bound shape"
expect 1 "--dim of a symbol the graph lacks" -- "$RLX" compile "$TMP/sym.rlx" --dim '?0=5' --dim '?7=2'
has "$TMP/err" "--dim ?7=2: the graph has no symbolic dim ?7" "an unused --dim is named"
expect 2 "--dim without a size" -- "$RLX" run "$TMP/sym.rlx" --dim '?0=' --output-dir "$TMP/so"
expect 2 "--dim with a negative size" -- "$RLX" compile "$TMP/sym.rlx" --dim '?0=-1'
expect 2 "--dim with a name an IR graph cannot have" -- "$RLX" compile "$TMP/sym.rlx" --dim batch=2
has "$TMP/err" "write --dim ?K=SIZE" "a bad IR dim name says how to write it"
# the example graph of tests/graphs with a dynamic sequence length compiles once bound
expect 1 "attention.rlx unbound" -- "$RLX" compile "$SRC/tests/graphs/attention.rlx"
has "$TMP/err" "memory plan: node %0 (Input) has the dynamic shape" "the memory plan error names the node"
if grep -q "memory plan: memory plan" "$TMP/err"; then bad "doubled prefix: $(cat "$TMP/err")"; else ok; fi
expect 0 "attention.rlx --dim ?1=7" -- "$RLX" compile "$SRC/tests/graphs/attention.rlx" --dim '?1=7'

# ---- an ONNX model with a symbolic dim: run --dim NAME=N binds its dim_param ----
if ! "$PY" -c 'import onnx' 2>/dev/null; then
  bad "$PY cannot import onnx (install python3-onnx; scripts/setup.sh does)"
else
  "$PY" -c '
import numpy as np, onnx, sys
from onnx import helper, TensorProto
d = sys.argv[1]
g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), d + "/dyn.onnx")
np.save(d + "/dx.npy", np.array([[-1, 2, -3], [4, -5, 6]], dtype=np.float32))
' "$TMP"
  expect 1 "onnx with an unbound dim_param" -- "$RLX" compile "$TMP/dyn.onnx"
  expect 0 "compile onnx --dim batch=2" -- "$RLX" compile "$TMP/dyn.onnx" --dim batch=2
  expect 0 "run onnx --dim batch=2" -- "$RLX" run "$TMP/dyn.onnx" --dim batch=2 --input x="$TMP/dx.npy" --output-dir "$TMP/do"
  py "onnx --dim run output" "
import numpy as np
got = np.load('$TMP/do/y.npy')
assert got.shape == (2, 3) and (got == np.array([[0, 2, 0], [4, 0, 6]], np.float32)).all(), got
"
fi

# ---- a file that is not an ONNX model says so ----
cp "$SRC/README.md" "$TMP/readme.onnx"
head -c 200 /dev/zero | tr '\0' '\377' >"$TMP/ff.onnx"
printf 'hello world\n' >"$TMP/hello.onnx"
for f in readme ff hello; do
  for cmd in run compile import; do
    args=()
    [ "$cmd" = run ] && args=(--output-dir "$TMP/o")
    expect 1 "$cmd $f.onnx" -- "$RLX" "$cmd" "$TMP/$f.onnx" "${args[@]}"
    has "$TMP/err" "$TMP/$f.onnx: not an ONNX model: byte " "$cmd $f.onnx says it is not ONNX"
  done
done

echo "run cli: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
