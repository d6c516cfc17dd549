#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Every CPU benchmark of docs/benchmarks.md in one command, on one machine, in one go:
#   1. GEMM 64..2048, rlx MatMul vs OpenBLAS sgemm in one process (bench_gemm), 1 and 2 threads,
#      deterministic and not                                  -> the gemm-bench block
#   2. compile time of ~1k / 10k / 100k-node graphs (bench/run_compile_bench.sh) -> compile-bench
#   3. inference: resnet18, mobilenet_v3_small, the MiniLM-sized encoder vs ONNX Runtime and
#      PyTorch eager (bench/run_infer_bench.sh)               -> infer-bench
#   4. Fashion-MNIST CNN training vs PyTorch eager, 1 and 2 threads (bench/run_train_bench.sh,
#      Debian's PyTorch)                                      -> train-bench
# Each block records its date, machine, load average and commit.
#
# usage: bench/run_cpu_bench.sh [BUILD_DIR]     (default build-bench: configured Release and built here)
# environment: PARTS="gemm compile infer train" (a subset), GEMM_SECONDS=S (time per GEMM case,
# default 1), and each part's own variables (THREADS, REPEATS, ... see the scripts above).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUILD=${1:-build-bench}
PARTS=${PARTS:-gemm compile infer train}
GEMM_SECONDS=${GEMM_SECONDS:-1}
DOC=${DOC:-docs/benchmarks.md}
unset OPENBLAS_CORETYPE # the machine's own ISA, for rlx and the peers alike

cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DRLX_TESTS=OFF -DRLX_BENCH=ON >/dev/null
cmake --build "$BUILD" -j"$(nproc)" --target rlx bench_gemm bench_compile bench_onnx_infer

commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD 2>/dev/null || commit="$commit+dirty"
cpu=$(grep -m1 '^model name' /proc/cpuinfo | sed 's/^[^:]*: *//')

for part in $PARTS; do
  case $part in
    gemm)
      TMP=$(mktemp -d)
      load_before=$(cut -d' ' -f1-3 /proc/loadavg)
      for t in 1 2; do
        for mode in "" --no-deterministic; do
          echo "== gemm: $t thread(s) ${mode:-deterministic}" >&2
          {
            echo
            echo "${t} thread(s), ${mode:+non-}deterministic:"
            echo
            "$BUILD/bench_gemm" "$t" "$GEMM_SECONDS" $mode | grep '^|'
          } >>"$TMP/gemm.md"
        done
      done
      load_after=$(cut -d' ' -f1-3 /proc/loadavg)
      {
        echo
        echo "$(date -u '+%Y-%m-%d %H:%M UTC'), commit $commit, $cpu, $(nproc) cores, load average" \
          "$load_before before / $load_after after; \`$BUILD/bench_gemm THREADS $GEMM_SECONDS [--no-deterministic]\`" \
          "(Release; OpenBLAS $(dpkg-query -W -f '${Version}' libopenblas0-pthread 2>/dev/null || echo '?'))."
        cat "$TMP/gemm.md"
        echo
      } >"$TMP/block.md"
      python3 - "$DOC" "$TMP/block.md" <<'PY'
import sys
doc, block = sys.argv[1], open(sys.argv[2]).read()
b, e = "<!-- gemm-bench:begin (written by bench/run_cpu_bench.sh; edits inside are lost) -->", "<!-- gemm-bench:end -->"
s = open(doc).read()
if b in s and e in s:
    s = s[: s.index(b) + len(b)] + "\n" + block + s[s.index(e):]
else:
    s += "\n## GEMM: the latest run of bench/run_cpu_bench.sh\n\n" + b + "\n" + block + e + "\n"
open(doc, "w").write(s)
PY
      rm -rf "$TMP"
      ;;
    compile) DOC=$DOC bash bench/run_compile_bench.sh "$BUILD" ;;
    infer) DOC=$DOC bash bench/run_infer_bench.sh "$BUILD" ;;
    train) DOC=$DOC THREADS=${THREADS:-1 2} TORCH_PY=${TORCH_PY:-/usr/bin/python3} bash bench/run_train_bench.sh "$BUILD/rlx" ;;
    *) echo "bench: unknown part '$part' (gemm compile infer train)" >&2; exit 2 ;;
  esac
done
echo "bench: wrote $DOC" >&2
