#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Sets up the machine, builds the rlx tool (Release, into build/) and runs the main job: train the
# CNN on Fashion-MNIST for one epoch on the CPU and report its test accuracy (the last stdout line
# is a JSON summary; the weights and the loss curve go to build/train-out/).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/setup.sh

JOBS=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DRLX_SANITIZE=OFF -DRLX_FUZZ=OFF
cmake --build build -j"$JOBS" --target rlx

build/rlx train --epochs 1 --json --out build/train-out   # <- THE MAIN JOB: replace this line to change what `bash scripts/main.sh` runs
