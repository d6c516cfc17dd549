#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Sets up the machine, builds RLX in C (Release, into build/) and runs the main job.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/setup.sh

JOBS=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DRLX_SANITIZE=OFF -DRLX_FUZZ=OFF
cmake --build build -j"$JOBS"

# The main job: check and print every bundled example graph with the rlx tool.
main_job() {
  shopt -s nullglob
  local graphs=(tests/graphs/*.rlx)
  if [ ${#graphs[@]} -eq 0 ]; then
    echo "main: no example graphs in tests/graphs/" >&2
    return 1
  fi
  for g in "${graphs[@]}"; do
    echo "== $g"
    build/rlx check "$g"
    build/rlx print "$g"
  done
}

main_job   # <- THE MAIN JOB: replace this line to change what `bash scripts/main.sh` runs
