#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Compile-time benchmark: bench_compile over generated graphs of about 1k / 10k / 100k nodes (an MLP
# training graph and an elementwise chain), cold (compile cache off) and cached, plus `rlx check`
# (parse + verify of the graph's text form); then the planned arena against the old greedy-by-size
# planner. Writes the tables into docs/benchmarks.md between the compile-bench markers.
#
# usage: bench/run_compile_bench.sh [BUILD_DIR]        (default build; needs its bench_compile)
# environment:
#   SIZES=1000,10000,100000   node counts
#   REPEATS=N                 runs of each, the best is reported (default 5)
#   DOC=PATH                  the document to update (default docs/benchmarks.md; "-" = do not write)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUILD=${1:-build}
SIZES=${SIZES:-1000,10000,100000}
REPEATS=${REPEATS:-5}
DOC=${DOC:-docs/benchmarks.md}
BIN="$BUILD/bench_compile"
[ -x "$BIN" ] || { echo "bench: $BIN is not built (cmake --build $BUILD --target bench_compile)" >&2; exit 1; }

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
"$BIN" --json --sizes "$SIZES" --repeats "$REPEATS" | tee "$TMP/times.jsonl" >&2
"$BIN" --plan | tee "$TMP/plan.txt" >&2
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD 2>/dev/null || commit="$commit+dirty"
cpu=$(grep -m1 '^model name' /proc/cpuinfo | sed 's/^[^:]*: *//')
[ "$DOC" = "-" ] && exit 0

python3 - "$DOC" "$TMP/times.jsonl" "$TMP/plan.txt" "$cpu" "$(nproc)" "$load_before" "$load_after" "$commit" \
  "$REPEATS" <<'PY'
import datetime, json, sys
doc, times, plan, cpu, cores, lb, la, commit, repeats = sys.argv[1:]
rows = [json.loads(l) for l in open(times) if l.strip()]
now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
out = [f"Latest run: **{now}**, commit `{commit}`, on **{cpu}, {cores} cores**, load average {lb} before",
       f"and {la} after; best of {repeats} runs each (`bench/run_compile_bench.sh`).", "",
       "| graph | nodes | compiled nodes | cold compile ms | cached compile ms | `rlx check` ms | arena bytes |",
       "| --- | --- | --- | --- | --- | --- | --- |"]
for r in rows:
    out.append(f"| {r['graph']} | {r['nodes']} | {r['nodes_after']} | {r['cold_ms']:.2f} | {r['cached_ms']:.3f} | "
               f"{r['check_ms']:.2f} | {r['arena_bytes']} |")
# growth: ms per 1k nodes, per graph kind
out += ["", "Cold compile time per 1,000 nodes (flat = linear):", ""]
kinds = sorted({r["graph"] for r in rows})
for k in kinds:
    pts = [r for r in rows if r["graph"] == k]
    out.append(f"- {k}: " + ", ".join(f"{r['nodes']} nodes {1000 * r['cold_ms'] / r['nodes']:.2f} ms" for r in pts))
out += ["", "Planned arena against the planner before (greedy by size, O(n^2 log n)) and the lower bound (the",
        "most bytes live at one step):", "", "```"]
out += [l.rstrip() for l in open(plan) if l.strip()]
out += ["```"]
text = open(doc).read()
b, e = "<!-- compile-bench:begin", "<!-- compile-bench:end -->"
i, j = text.find(b), text.find(e)
if i < 0 or j < 0:
    sys.exit(f"bench: {doc} has no compile-bench markers")
i = text.index("\n", i) + 1
open(doc, "w").write(text[:i] + "\n".join(out) + "\n" + text[j:])
print(f"bench: wrote the compile table into {doc}", file=sys.stderr)
PY
