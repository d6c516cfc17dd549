#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Runs every test suite of RLX in C:
#   1. unit + CLI tests, RelWithDebInfo build in build-test/; then the same tests with the
#      scalar, AVX2 and AVX-512 paths forced in turn (scripts/test_isa.sh), those the CPU can run
#   2. the same under ASan + UBSan + LeakSanitizer in build-asan/
#   3. the Release build of scripts/main.sh, made again in build-release-check/, with a short
#      training run
#   4. each libFuzzer target (clang, build-fuzz/) for a bounded time on a copy of its seed corpus
# Every tree is this script's own: build/ belongs to scripts/main.sh (Release) and is never
# configured here, so running main.sh after this script rebuilds nothing.
# Prints one line per suite and ends with "N passed, N failed" (suites). Exit 0 iff all passed.
# RLX_FUZZ_SECONDS (default 30) sets the time per fuzz target.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
ROOT=$(pwd)

bash scripts/setup.sh || { echo "test: setup failed" >&2; echo "0 passed, 1 failed"; exit 1; }

JOBS=$(nproc 2>/dev/null || echo 2)
FUZZ_SECONDS=${RLX_FUZZ_SECONDS:-30}
ONNX_NODE_DATA=/usr/include/onnx/backend/test/data/node
export ASAN_OPTIONS=detect_leaks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

passed=0
failed=0
results=()
record() { # record NAME STATUS
  if [ "$2" -eq 0 ]; then
    passed=$((passed + 1)); results+=("PASS  $1")
  else
    failed=$((failed + 1)); results+=("FAIL  $1")
  fi
  echo "=== ${results[-1]}"
}

# build_and_test NAME DIR CMAKE_ARGS...: configure, build and ctest one tree.
build_and_test() {
  local name=$1 dir=$2
  shift 2
  echo "=== $name: building in $dir"
  if ! cmake -S "$ROOT" -B "$dir" "$@" || ! cmake --build "$dir" -j"$JOBS"; then
    echo "=== $name: build failed" >&2
    record "$name (build)" 1
    return
  fi
  (cd "$dir" && ctest --output-on-failure --no-tests=error --timeout 600 -j"$JOBS")
  record "$name" $?
}

build_and_test "tests (RelWithDebInfo)" build-test -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRLX_SANITIZE=OFF -DRLX_FUZZ=OFF -DRLX_TESTS=ON

# isa_suites DIR: DIR's ctest again with each instruction-set path forced (scripts/test_isa.sh:
# RLX_CPU_ISA + OPENBLAS_CORETYPE); a path this CPU cannot execute is listed as NOT RUN, which
# counts neither as passed nor as failed.
isa_suites() {
  local isa
  for isa in scalar avx2 avx512; do
    bash scripts/test_isa.sh "$1" "$isa" -j"$JOBS"
    case $? in
      0) record "tests (ISA=$isa)" 0 ;;
      77) results+=("NOT RUN  tests (ISA=$isa): this CPU cannot execute that path"); echo "=== ${results[-1]}" ;;
      *) record "tests (ISA=$isa)" 1 ;;
    esac
  done
}
isa_suites build-test
build_and_test "tests (ASan+UBSan)" build-asan -DCMAKE_BUILD_TYPE=Debug -DRLX_SANITIZE=ON -DRLX_FUZZ=OFF -DRLX_TESTS=ON

# ---- the Release build of scripts/main.sh (gcc -O3 warns where -O2 does not) + a short training ----
echo "=== release: building rlx in build-release-check as scripts/main.sh does"
train_out=$(mktemp -d)
cmake -S "$ROOT" -B build-release-check -DCMAKE_BUILD_TYPE=Release -DRLX_SANITIZE=OFF -DRLX_FUZZ=OFF -DRLX_TESTS=OFF &&
  cmake --build build-release-check -j"$JOBS" --target rlx &&
  build-release-check/rlx check tests/graphs/*.rlx &&
  build-release-check/rlx train --model mlp --epochs 1 --limit-train 1024 --limit-test 500 --out "$train_out"
record "release build + short training" $?
rm -rf "$train_out"

# ---- fuzzers ----
# A target's seed corpus is tests/fuzz/corpus/<target>/ (or <target without "fuzz_">); it is copied
# to a temporary folder so that new inputs never land in the source tree. libFuzzer's progress
# lines (#N NEW ...) are filtered out of the log; its INFO lines, crash reports and stats remain.
if [ ! -f tests/fuzz/CMakeLists.txt ]; then
  echo "=== fuzz: no tests/fuzz/CMakeLists.txt, no fuzz targets to run" >&2
  record "fuzz (no tests/fuzz/CMakeLists.txt)" 1
# Only the fuzz targets (and what they link) are built: `cmake --build` on the subfolder of the
# (Makefile) build tree.
elif ! cmake -S "$ROOT" -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
       -DRLX_FUZZ=ON -DRLX_TESTS=OFF -DRLX_SANITIZE=OFF -G "Unix Makefiles" ||
     ! cmake --build build-fuzz/tests/fuzz -j"$JOBS"; then
  record "fuzz (build)" 1
else
  mapfile -t targets < <(find build-fuzz/tests/fuzz -maxdepth 1 -type f -executable -name 'fuzz*' | sort)
  if [ ${#targets[@]} -eq 0 ]; then
    echo "=== fuzz: the fuzz build produced no target in build-fuzz/tests/fuzz/" >&2
    record "fuzz (no targets)" 1
  fi
  for bin in "${targets[@]}"; do
    name=$(basename "$bin")
    work=$(mktemp -d)
    mkdir -p "$work/corpus" "$work/artifacts"
    for seeds in "tests/fuzz/corpus/$name" "tests/fuzz/corpus/${name#fuzz_}"; do
      if [ -d "$seeds" ]; then cp -R "$seeds/." "$work/corpus/"; break; fi
    done
    # The importer also starts from every model of ONNX's node tests (Debian's libonnx-testdata),
    # so each op mapping is reached from the first second on.
    if [ "$name" = fuzz_onnx ] && [ -d "$ONNX_NODE_DATA" ]; then
      for m in "$ONNX_NODE_DATA"/*/model.onnx; do cp "$m" "$work/corpus/node_$(basename "$(dirname "$m")").onnx"; done
    fi
    echo "=== fuzz $name: ${FUZZ_SECONDS}s on $(find "$work/corpus" -type f | wc -l) seeds"
    (cd "$work" && "$ROOT/$bin" -max_total_time="$FUZZ_SECONDS" -timeout=20 -rss_limit_mb=2048 \
       -print_final_stats=1 -artifact_prefix="$work/artifacts/" corpus 2>&1 | awk '!/^#[0-9]+|^\tNEW_FUNC/')
    status=$?
    if [ -n "$(ls -A "$work/artifacts")" ]; then
      mkdir -p build-fuzz/artifacts
      cp "$work/artifacts/"* build-fuzz/artifacts/
      echo "=== fuzz $name: crash inputs saved in build-fuzz/artifacts/" >&2
      status=1
    fi
    rm -rf "$work"
    record "fuzz $name" $status
  done
fi

# The GPU half of the suite (conformance, gradient checks and training on the CUDA backend) needs
# an NVIDIA GPU: scripts/gpu-test.sh runs it there; here the CUDA code is only built and its
# no-device behaviour tested.
if ! nvidia-smi >/dev/null 2>&1; then
  results+=("NOT RUN  GPU tests (scripts/gpu-test.sh: no NVIDIA GPU here; the last GPU run is in docs/cuda.md)")
fi

echo
echo "=== summary"
printf '  %s\n' "${results[@]}"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
