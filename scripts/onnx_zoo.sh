#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# ONNX model zoo: exports real PyTorch models (torchvision classification and segmentation nets,
# recurrent layers, attention / transformer blocks, a small GPT, convolution / resampling /
# normalisation layers and many tensor ops; random weights from fixed seeds) with torch's default
# (dynamo, opset 20) and legacy (TorchScript, opset 17) exporters, with static and with dynamic
# batch / sequence dims, runs each through `rlx run` and compares with torch's output
# (max|rlx - torch| / max|torch| <= 1e-4; integer outputs exactly) and notes onnxruntime's error.
# Prints a table: model, exporter, shapes, opset, status, errors, times.
#
# Dev tool: needs a Python with recent torch, torchvision, onnx (and onnxruntime for the
# cross-check); CI runs tests/cli/test_onnx_models.sh instead.
#
# usage: scripts/onnx_zoo.sh [--rlx PATH] [--work DIR] [--markdown | --pivot] [-- EXPORT_OPTIONS...]
#   --markdown prints the table as markdown, --pivot one markdown row per model (as in docs/onnx.md).
#   EXPORT_OPTIONS go to tests/onnx/zoo_export.py export: --exporter dynamo|legacy|both,
#   --shapes static|dynamic|both, --only a,b  --skip a,b  --group vision,rnn,attention,conv,ops,
#   --force (re-export even when DIR already holds the case), --cached (only the cases DIR holds).
# env: PYTHON (default /opt/rlx-bench-venv/bin/python), RLX_ZOO_TIMEOUT (seconds per run, 600)
set -u
HERE=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-/opt/rlx-bench-venv/bin/python}
RLX="$HERE/build/rlx"
WORK="${TMPDIR:-/tmp}/rlx-onnx-zoo"
MD=""
TIMEOUT=${RLX_ZOO_TIMEOUT:-600}
while [ $# -gt 0 ]; do
  case "$1" in
    --rlx) RLX=$2; shift 2 ;;
    --work) WORK=$2; shift 2 ;;
    --markdown) MD=--markdown; shift ;;
    --pivot) MD=--pivot; shift ;;
    --) shift; break ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -x "$RLX" ] || { echo "no rlx binary at $RLX (build it, or pass --rlx)" >&2; exit 2; }
ZOO="$HERE/tests/onnx/zoo_export.py"
mkdir -p "$WORK"
echo "exporting into $WORK ..." >&2
# per-invocation logs, so that runs with different selections can share one WORK folder
TAG=$(date +%Y%m%d-%H%M%S).$$
LOG="$WORK/export.$TAG.log"
"$PY" "$ZOO" export "$WORK" "$@" >"$LOG" 2>&1 || { tail -n 20 "$LOG" >&2; exit 1; }
CASES="$WORK/cases.$TAG.txt"
grep -E '^[A-Za-z0-9_]+\.(dynamo|legacy)\.(static|dynamic):' "$LOG" | cut -d: -f1 >"$CASES"

RES="$WORK/results.$TAG.jsonl"
: >"$RES"
json_str() { "$PY" -c 'import json,sys; print(json.dumps(sys.stdin.read().strip()))'; }
while read -r c; do
  d="$WORK/$c"
  meta="$d/meta.json"
  err=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1])).get("export_error",""))' "$meta")
  if [ -n "$err" ]; then
    printf '{"case": "%s", "status": "export failed", "rel": null, "note": %s}\n' "$c" "$(printf '%s' "$err" | json_str)" >>"$RES"
    continue
  fi
  args=()
  k=0
  for n in $("$PY" -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))["inputs"]))' "$meta"); do
    args+=(--input "$n=$d/in_$k.npy")
    k=$((k + 1))
  done
  rm -rf "$d/rlx_out"
  t0=$EPOCHREALTIME
  timeout "$TIMEOUT" "$RLX" run "$d/model.onnx" "${args[@]}" --output-dir "$d/rlx_out" >"$d/rlx.log" 2>&1
  rc=$?
  t=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')
  if [ $rc -eq 0 ]; then
    # compared with torch's outputs by the table step (one Python start for all cases)
    printf '{"case": "%s", "status": "ran", "rel": null, "rlx_s": %s, "note": ""}\n' "$c" "$t" >>"$RES"
  else
    if grep -q 'unsupported op/opset/dtype gap' "$d/rlx.log"; then
      st="import gap"
      note=$(grep -A3 'unsupported op/opset/dtype gap' "$d/rlx.log" | sed -n '2,4p' | sed 's/^ *//' | tr '\n' ';')
    elif [ $rc -ge 124 ]; then
      st="crash"; note="exit $rc (timeout or signal)"
    else
      st="error"; note=$(grep -v '^\s*$' "$d/rlx.log" | head -n 2 | tr '\n' ' ')
    fi
    printf '{"case": "%s", "status": "%s", "rel": null, "rlx_s": %s, "note": %s}\n' "$c" "$st" "$t" \
      "$(printf '%s' "$note" | json_str)" >>"$RES"
  fi
  tail -n 1 "$RES" | cut -c1-200 >&2
done <"$CASES"

echo "# ONNX zoo $(date -u +%Y-%m-%d), $("$PY" -c 'import torch,onnx; print("torch", torch.__version__, "onnx", onnx.__version__)')"
"$PY" "$ZOO" table "$WORK" "$RES" $MD
