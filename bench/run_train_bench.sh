#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Fashion-MNIST training benchmark: `rlx train --epochs 1 --json` (the CNN) against the same model
# and hyper-parameters in PyTorch eager (bench/train_fashion_mnist_torch.py), in one run on one
# machine with the same thread count, then records both in docs/benchmarks.md
# (bench/train_bench_report.py: the "latest" block is replaced, rows are appended to the history).
#
# usage: bench/run_train_bench.sh [RLX_BINARY]        (default build/rlx)
# environment:
#   THREADS="N ..." thread counts to compare at, each for both (default: all cores, nproc)
#   REPEATS=N       runs of each per thread count, alternating rlx/torch; the best images/s of each
#                   is reported, every run is listed (default 1; use more on a busy machine)
#   EPOCHS=N        epochs (default 1)
#   TORCH_PY=PATH   Python with torch 2.x and numpy (default /opt/rlx-bench-venv/bin/python)
#   DATA=DIR        Fashion-MNIST folder (default /usr/share/datasets/fashion-mnist)
#   DOC=PATH        the document to update (default docs/benchmarks.md; "-" = do not write)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
RLX=${1:-build/rlx}
THREADS=${THREADS:-$(nproc)}
REPEATS=${REPEATS:-1}
EPOCHS=${EPOCHS:-1}
TORCH_PY=${TORCH_PY:-/opt/rlx-bench-venv/bin/python}
DATA=${DATA:-/usr/share/datasets/fashion-mnist}
DOC=${DOC:-docs/benchmarks.md}

[ -x "$RLX" ] || { echo "bench: $RLX is not built (cmake --build build)" >&2; exit 1; }
"$TORCH_PY" -c 'import torch, numpy' 2>/dev/null || { echo "bench: $TORCH_PY cannot import torch and numpy" >&2; exit 1; }

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for t in $THREADS; do
  for r in $(seq 1 "$REPEATS"); do
    echo "== threads $t, run $r/$REPEATS: rlx train" >&2
    "$RLX" train --epochs "$EPOCHS" --json --threads "$t" --data "$DATA" --out "$TMP/rlx-out" \
      >"$TMP/rlx.$t.$r.json" 2>"$TMP/rlx.$t.$r.log" || { cat "$TMP/rlx.$t.$r.log" >&2; exit 1; }
    grep -E '^(trained|test accuracy)' "$TMP/rlx.$t.$r.log" >&2
    echo "== threads $t, run $r/$REPEATS: PyTorch eager" >&2
    "$TORCH_PY" bench/train_fashion_mnist_torch.py --epochs "$EPOCHS" --threads "$t" --data "$DATA" \
      >"$TMP/torch.$t.$r.json" 2>"$TMP/torch.$t.$r.log" || { cat "$TMP/torch.$t.$r.log" >&2; exit 1; }
    tail -n 1 "$TMP/torch.$t.$r.log" >&2
  done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD 2>/dev/null || commit="$commit+dirty"
python3 bench/train_bench_report.py --runs "$TMP" --repeats "$REPEATS" --threads "$THREADS" --doc "$DOC" \
  --cpu "$(grep -m1 '^model name' /proc/cpuinfo | sed 's/^[^:]*: *//')" --cores "$(nproc)" \
  --load-before "$load_before" --load-after "$load_after" --commit "$commit" \
  --torch-version "$("$TORCH_PY" -c 'import torch; print(torch.__version__)')"
