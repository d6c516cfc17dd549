#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Installs what RLX in C needs to build, test and run on Debian 12 (run as root, or with sudo
# available). Quick and offline when everything is already installed.
set -euo pipefail

PACKAGES=(
  build-essential cmake                # C17 compiler and build system
  clang libclang-rt-14-dev             # libFuzzer targets and their sanitizer runtimes
  libopenblas-dev liblapacke-dev       # BLAS / LAPACK for the CPU backend
  zlib1g-dev                           # gzip reader for the Fashion-MNIST idx files
  libprotobuf-c-dev protobuf-c-compiler libonnx-dev libonnx-testdata   # ONNX import + test data
  dataset-fashion-mnist                # data for the training example
  python3-numpy python3-torch          # independent reference values in tests
  python3-torchvision                  # real models exported to ONNX (tests/cli/test_onnx_models.sh)
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages already installed"
  exit 0
fi

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "setup: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  SUDO=(sudo)
fi

echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update
"${SUDO[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
