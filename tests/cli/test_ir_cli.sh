#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Tests of the rlx tool's IR commands (ops, check, print, dot) and its argument handling.
# usage: test_ir_cli.sh PATH/TO/rlx SOURCE_DIR
set -u
RLX=${1:?usage: test_ir_cli.sh RLX SOURCE_DIR}
SRC=${2:?usage: test_ir_cli.sh RLX SOURCE_DIR}
if [ ! -x "$RLX" ]; then
  echo "FAIL: $RLX is not an executable" >&2
  echo "0 passed, 1 failed"
  exit 1
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

source "$SRC/tests/cli/lib.sh"
same() { if cmp -s "$1" "$2"; then ok; else bad "$3: $1 and $2 differ"; diff "$1" "$2" | head -n 10 >&2; fi; }

# ---- dispatcher ----
version=$(sed -n 's/^project(rlx VERSION \([0-9.]*\).*/\1/p' "$SRC/CMakeLists.txt")
expect 0 "--version" -- "$RLX" --version
has "$TMP/out" "rlx $version" "--version prints the project version"
expect 0 "--help" -- "$RLX" --help
for c in ops check print dot; do has "$TMP/out" "  $c " "--help lists $c"; done
expect 2 "no command" -- "$RLX"
has "$TMP/err" "usage: rlx <command>" "no command prints usage to stderr"
expect 2 "unknown command" -- "$RLX" frobnicate
has "$TMP/err" "unknown command 'frobnicate'" "unknown command named"
has "$TMP/err" "usage:" "unknown command prints usage"
expect 0 "help print" -- "$RLX" help print
has "$TMP/out" "usage: rlx print" "help COMMAND prints that command's usage"
expect 2 "help unknown" -- "$RLX" help frobnicate
for c in ops check print dot; do
  expect 0 "$c --help" -- "$RLX" "$c" --help
  has "$TMP/out" "usage: rlx $c" "$c --help"
done

# ---- ops ----
expect 0 "ops" -- "$RLX" ops
cp "$TMP/out" "$TMP/ops.txt"
awk '{print $1}' "$TMP/ops.txt" >"$TMP/ops-names.txt"
same "$TMP/ops-names.txt" "$SRC/tests/data/opkinds.txt" "ops lists exactly the 187 op kinds in order"
if [ "$(wc -l <"$TMP/ops.txt")" -eq 187 ]; then ok; else bad "ops: $(wc -l <"$TMP/ops.txt") lines, expected 187"; fi
# A few rows whose family, arity and properties follow from what the ops are.
row() { awk -v n="$1" '$1 == n' "$TMP/ops.txt"; }
check_row() { # check_row NAME FAMILY ARITY PROPERTY...
  local r name=$1 fam=$2 ar=$3
  shift 3
  r=$(row "$name")
  if [ "$(echo "$r" | awk '{print $2 " " $3}')" = "$fam $ar" ]; then ok; else bad "ops row '$r': expected family $fam, arity $ar"; fi
  for p in "$@"; do
    if echo "$r" | tr -s ' \t' '\n' | grep -qx "$p"; then ok; else bad "ops row '$r' lacks property $p"; fi
  done
}
check_row Input leaf 0 leaf
check_row MatMul linalg 2 blas differentiable
check_row Binary elementwise 2 elementwise broadcasting differentiable
check_row Where elementwise 3 elementwise broadcasting
check_row Concat shape '1..*'
check_row Cholesky linalg 1 differentiable
check_row Fma elementwise 3 elementwise broadcasting
check_row If control '1..*' subgraph
if row ArgSort | grep -qw differentiable; then bad "ArgSort listed as differentiable"; else ok; fi

expect 0 "ops --family linalg" -- "$RLX" ops --family linalg
if awk '$2 != "linalg" { exit 1 }' "$TMP/out"; then ok; else bad "ops --family linalg printed another family"; fi
if [ "$(wc -l <"$TMP/out")" -eq "$(awk '$2 == "linalg"' "$TMP/ops.txt" | wc -l)" ]; then ok; else bad "ops --family linalg: wrong count"; fi
has "$TMP/out" "MatMul" "ops --family linalg lists MatMul"
expect 2 "ops --family nosuch" -- "$RLX" ops --family nosuch
has "$TMP/err" "unknown family 'nosuch'" "bad family named"
has "$TMP/err" "linalg" "bad family lists the families"
expect 2 "ops --family without value" -- "$RLX" ops --family
expect 2 "ops unknown option" -- "$RLX" ops --frob
has "$TMP/err" "unknown option '--frob'" "unknown option named"
expect 2 "ops stray argument" -- "$RLX" ops extra

expect 0 "ops --json" -- "$RLX" ops --json
if ! /usr/bin/python3 -c 'import json' 2>/dev/null; then
  bad "/usr/bin/python3 not found (it checks ops --json): install python3 (scripts/setup.sh does)"
else
  if /usr/bin/python3 - "$TMP/out" "$SRC/tests/data/opkinds.txt" <<'EOF'
import json, sys
ops = json.load(open(sys.argv[1]))
names = [l.strip() for l in open(sys.argv[2]) if l.strip()]
by = {o["name"]: o for o in ops}
errors = []
def want(cond, msg):
    if not cond: errors.append(msg)
want([o["name"] for o in ops] == names, "names differ from opkinds.txt")
for o in ops:
    want(set(o) == {"name", "family", "min_inputs", "max_inputs", "properties", "attributes"},
         "%s: keys %s" % (o["name"], sorted(o)))
want(by["MatMul"]["min_inputs"] == 2 and by["MatMul"]["max_inputs"] == 2, "MatMul arity")
want(by["MatMul"]["attributes"] == [], "MatMul has no attributes")
want(by["Concat"]["max_inputs"] is None, "Concat max_inputs should be null (unbounded)")
conv = {a["name"]: a for a in by["Conv"]["attributes"]}
want(conv.get("groups", {}).get("type") == "i64" and conv["groups"].get("default") == 1, "Conv groups i64 = 1")
want(conv.get("stride", {}).get("type") == "ilist", "Conv stride is an ilist")
act = by["Activation"]["attributes"]
want(len(act) == 1 and act[0]["type"] == "enum" and act[0]["enum"] == "Activation", "Activation kind enum")
want("random" in by["RngUniform"]["properties"], "RngUniform is random")
want(by["Cast"]["attributes"][0] == {"name": "to", "type": "dtype", "default": "f32"}, "Cast to")
for e in errors: print("  json:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
EOF
  then ok; else bad "ops --json content"; fi
  expect 0 "ops --json --family quant" -- "$RLX" ops --json --family quant
  if /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(not (d and all(o["family"]=="quant" for o in d)))' "$TMP/out"; then ok; else bad "ops --json --family quant"; fi
fi

# ---- argument errors of check / print / dot ----
expect 2 "check without file" -- "$RLX" check
has "$TMP/err" "no FILE" "check without file says so"
expect 2 "check unknown option" -- "$RLX" check --frob x.rlx
expect 2 "print without file" -- "$RLX" print
expect 2 "print two files" -- "$RLX" print a.rlx b.rlx
expect 2 "print -o without value" -- "$RLX" print a.rlx -o
has "$TMP/err" "needs a value" "-o without value"
expect 2 "print --binary without -o" -- "$RLX" print a.rlx --binary
expect 2 "print -o twice" -- "$RLX" print a.rlx -o x -o y
expect 2 "dot --binary" -- "$RLX" dot a.rlx --binary
expect 2 "dot without file" -- "$RLX" dot

# ---- bad files: a clear error and exit 1, never a crash ----
: >"$TMP/empty.rlx"
printf 'this is not a graph {{{\n' >"$TMP/garbage.rlx"
printf 'RLXB\377\377\377\377\001\002' >"$TMP/garbage.bin"
head -c 3000 /dev/urandom >"$TMP/random.bin" 2>/dev/null || printf '\001\002\003' >"$TMP/random.bin"
for f in "$TMP/missing.rlx" "$TMP/empty.rlx" "$TMP/garbage.rlx" "$TMP/garbage.bin" "$TMP/random.bin" "$TMP"; do
  b=$(basename "$f")
  expect 1 "check $b" -- "$RLX" check "$f"
  has "$TMP/err" "$f" "check $b names the file"
  if [ -s "$TMP/out" ]; then bad "check $b printed to stdout"; else ok; fi
  expect 1 "print $b" -- "$RLX" print "$f"
  expect 1 "dot $b" -- "$RLX" dot "$f"
done

# ---- real graphs: the bundled examples plus one written here ----
# graph.rlx (canonical text, written by hand): 4 nodes, outputs %3 and %0.
cat >"$TMP/graph.rlx" <<'GRAPH'
graph @tiny {
  %0 = Input {name = "x"} : [?0, 3] f32
  %1 = Input {name = "w"} : [3, 4] f32
  %2 = MatMul(%0, %1) : [?0, 4] f32
  %3 = Activation(%2) {kind = Relu} : [?0, 4] f32
  return %3, %0
}
GRAPH
# The same graph with comments and blank lines: print must give the canonical text back.
{
  printf '// a comment before the graph\n\n'
  awk '/MatMul/ { print "  // the product"; print "" } { print }' "$TMP/graph.rlx"
  printf '// a comment after it\n'
} >"$TMP/commented.rlx"
graphs=("$TMP/graph.rlx")
for g in "$SRC"/tests/graphs/*.rlx; do [ -f "$g" ] && graphs+=("$g"); done

expect 0 "check graph.rlx" -- "$RLX" check "$TMP/graph.rlx"
has "$TMP/out" "$TMP/graph.rlx: ok (4 nodes, 2 outputs)" "check counts nodes and outputs"
expect 0 "print graph.rlx" -- "$RLX" print "$TMP/graph.rlx"
same "$TMP/out" "$TMP/graph.rlx" "print of a canonical graph gives it back"
expect 0 "print commented.rlx" -- "$RLX" print "$TMP/commented.rlx"
same "$TMP/out" "$TMP/graph.rlx" "print drops comments and blank lines"
# Parses but does not verify: the declared MatMul shape disagrees with its operands.
sed 's/%2 = MatMul(%0, %1) : \[?0, 4\] f32/%2 = MatMul(%0, %1) : [?0, 5] f32/' "$TMP/graph.rlx" >"$TMP/mismatch.rlx"
expect 1 "check mismatch.rlx" -- "$RLX" check "$TMP/mismatch.rlx"
has "$TMP/err" "MatMul" "verify error names the op"
# A use of an undefined id: a parse error naming file and line.
sed 's/MatMul(%0, %1)/MatMul(%0, %9)/' "$TMP/graph.rlx" >"$TMP/undefined.rlx"
expect 1 "check undefined.rlx" -- "$RLX" check "$TMP/undefined.rlx"
has "$TMP/err" "undefined.rlx:4" "parse error names file:line"

n=0
for g in "${graphs[@]}"; do
  n=$((n + 1))
  b=$(basename "$g")
  expect 0 "check $b" -- "$RLX" check "$g"
  has "$TMP/out" "$g: ok (" "check $b"
  expect 0 "print $b" -- "$RLX" print "$g"
  cp "$TMP/out" "$TMP/p$n.rlx"
  if [ -s "$TMP/p$n.rlx" ]; then ok; else bad "print $b printed nothing"; fi
  # canonical text is a fixed point of print
  expect 0 "print of printed $b" -- "$RLX" print "$TMP/p$n.rlx"
  same "$TMP/out" "$TMP/p$n.rlx" "print is idempotent on $b"
  # -o writes the same bytes as stdout
  expect 0 "print $b -o" -- "$RLX" print "$g" -o "$TMP/o$n.rlx"
  same "$TMP/o$n.rlx" "$TMP/p$n.rlx" "print -o $b"
  # binary round trip
  expect 0 "print --binary $b" -- "$RLX" print --binary "$g" -o "$TMP/b$n.bin"
  if head -c 4 "$TMP/b$n.bin" | grep -q '^RLXB'; then ok; else bad "binary of $b lacks the RLXB magic"; fi
  expect 0 "check binary $b" -- "$RLX" check "$TMP/b$n.bin"
  expect 0 "print binary $b" -- "$RLX" print "$TMP/b$n.bin"
  same "$TMP/out" "$TMP/p$n.rlx" "binary round trip of $b"
  # truncated binary files are rejected cleanly
  size=$(wc -c <"$TMP/b$n.bin")
  for cut in 0 4 8 $((size / 2)) $((size - 1)); do
    if [ "$cut" -lt 0 ] || [ "$cut" -ge "$size" ]; then continue; fi
    head -c "$cut" "$TMP/b$n.bin" >"$TMP/cut.bin"
    expect 1 "check $b binary cut at $cut" -- "$RLX" check "$TMP/cut.bin"
  done
  # dot
  expect 0 "dot $b" -- "$RLX" dot "$g"
  has "$TMP/out" "digraph" "dot $b is a digraph"
  cp "$TMP/out" "$TMP/d$n.dot"
  expect 0 "dot $b -o" -- "$RLX" dot "$g" -o "$TMP/d$n-o.dot"
  same "$TMP/d$n-o.dot" "$TMP/d$n.dot" "dot -o $b"
done
if ! command -v dot >/dev/null 2>&1; then
  bad "Graphviz's dot not found (it checks the dot output): install graphviz (scripts/setup.sh does)"
else
  expect 0 "graphviz accepts the dot output" -- dot -Tsvg "$TMP/d1.dot" -o "$TMP/d1.svg"
fi

# several files: good ones still reported, exit 1 because one failed
expect 1 "check good + missing" -- "$RLX" check "$TMP/graph.rlx" "$TMP/missing.rlx"
has "$TMP/out" "$TMP/graph.rlx: ok" "good file reported next to a bad one"
has "$TMP/err" "$TMP/missing.rlx" "bad file named next to a good one"
# a file whose name starts with '-' after --
cp "$TMP/graph.rlx" "$TMP/-dash.rlx"
expect 0 "check -- -dash.rlx" -- bash -c "cd '$TMP' && '$RLX' check -- -dash.rlx"
# unwritable output
expect 1 "print -o into a missing folder" -- "$RLX" print "$TMP/graph.rlx" -o "$TMP/no/such/dir/x.rlx"
has "$TMP/err" "$TMP/no/such/dir/x.rlx" "unwritable output named"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
