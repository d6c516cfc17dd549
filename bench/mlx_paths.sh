#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Prints, per op kind the MLX backend claims, how its nodes were lowered in the conformance runs
# (RLX_MLX_TRACE): native (an MLX expression), composed (the shared decomposition, lowered
# natively), composed+host (a decomposition holding a host-evaluated node) or host (the CPU
# reference kernel inside the lazy MLX graph), with node counts. Kinds without a conformance
# case are listed as such. Usage: bench/mlx_paths.sh [BUILD_DIR]   (from the source root)
set -euo pipefail
BUILD=${1:-build}
SRC=$(pwd)
TRACE=$(mktemp)
trap 'rm -f "$TRACE"' EXIT
RLX_MLX_TRACE="$TRACE" RLX_SOURCE_DIR="$SRC" "$BUILD/tests/test_conformance" --no-test-backend >/dev/null 2>&1 || true
python3 - "$TRACE" "$SRC/tests/data/mlx_supported_ops.txt" <<'PY'
import collections, sys
seen = collections.defaultdict(collections.Counter)
for line in open(sys.argv[1]):
    op, path = line.split()
    seen[op][path] += 1
claims = [l.strip() for l in open(sys.argv[2]) if l.strip()]
print("| op | paths in the conformance runs (nodes) |")
print("|---|---|")
for op in claims:
    if op in ("Input", "Param", "Constant"):
        continue
    if op not in seen:
        print(f"| {op} | no conformance case |")
    else:
        print(f"| {op} | " + ", ".join(f"{p} {n}" for p, n in sorted(seen[op].items())) + " |")
PY
