#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Sets up the machine, builds the rlx tool and librlx (Release, into build/; `cmake --install build
# --prefix P` then installs them, see README) and runs the main job: train the
# CNN on Fashion-MNIST for one epoch on the CPU and report its test accuracy (the last stdout line
# is a JSON summary; the weights and the loss curve go to build/train-out/).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/setup.sh

JOBS=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DRLX_SANITIZE=OFF -DRLX_FUZZ=OFF
# build/ is this script's own tree (scripts/test.sh builds elsewhere), so a rerun rebuilds nothing
cmake --build build -j"$JOBS" --target rlx rlx_shared rlx_static

build/rlx train --epochs 1 --json --out build/train-out   # <- THE MAIN JOB: replace this line to change what `bash scripts/main.sh` runs
