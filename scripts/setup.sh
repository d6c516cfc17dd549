#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Installs what RLX in C needs to build, test and run on Debian 12 (run as root, or with sudo
# available). Quick and offline when everything is already installed.
set -euo pipefail

PACKAGES=(
  build-essential cmake                # C17 compiler and build system
  pkgconf                              # pkg-config: tests/cli/test_install.sh builds against rlx.pc
  graphviz                             # dot: tests/cli/test_ir_cli.sh renders `rlx dot` output
  clang libclang-rt-14-dev             # libFuzzer targets and their sanitizer runtimes
  libopenblas-dev liblapacke-dev       # BLAS / LAPACK for the CPU backend
  zlib1g-dev                           # gzip reader for the Fashion-MNIST idx files
  libprotobuf-c-dev protobuf-c-compiler libonnx-dev libonnx-testdata   # ONNX import + test data
  dataset-fashion-mnist                # data for the training example
  python3-numpy python3-torch          # independent reference values in tests
  python3-scipy                        # SciPy matrix functions (tests/reference/ref_spd.py)
  python3-torchvision                  # real models exported to ONNX (tests/cli/test_onnx_models.sh)
  python3-onnx                         # one-node ONNX test models (tests/cli/test_onnx_sample_torch.sh)
  python3-venv                         # the venv of PyPI onnx 1.23.2 (below)
  libkissfft-dev                       # KISS FFT (BSD-3), only for the Fft comparison bench/bench_fft.c
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages already installed"
else
  SUDO=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || { echo "setup: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
    SUDO=(sudo)
  fi
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${SUDO[@]}" apt-get update
  "${SUDO[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
fi

# PyPI onnx 1.23.2 in its own venv, outside the repository: its test-case generators write the
# ONNX node tests of opsets 18..28 at test time (tests/cli/test_onnx_conformance_new.sh); Debian's
# libonnx-testdata stops at opset 17. No torch. Skipped when the venv already has it.
ONNX_VENV=${RLX_ONNX_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/rlx/onnx-1.23.2}
if "$ONNX_VENV/bin/python" -c 'import onnx, sys; sys.exit(onnx.__version__ != "1.23.2")' 2>/dev/null; then
  echo "setup: onnx 1.23.2 already in $ONNX_VENV"
else
  echo "setup: installing onnx 1.23.2 into $ONNX_VENV"
  rm -rf "$ONNX_VENV"
  mkdir -p "$(dirname "$ONNX_VENV")"
  # a failure (no network to PyPI) leaves the other suites runnable; the one test that needs the
  # venv then fails saying so
  if ! { python3 -m venv "$ONNX_VENV" &&
         "$ONNX_VENV/bin/pip" install --quiet --disable-pip-version-check \
           onnx==1.23.2 numpy==2.4.6 protobuf==7.36.2 ml_dtypes==0.6.0 typing_extensions==4.16.0; }; then
    rm -rf "$ONNX_VENV"
    echo "setup: WARNING: could not install onnx 1.23.2 (PyPI unreachable?); tests/cli/test_onnx_conformance_new.sh will fail until it is" >&2
  fi
fi

# PyPI gguf 0.19.0 + ml_dtypes 0.6.0 in their own venv (no torch): tests/reference/gguf_vectors.py
# writes the GGUF dequantization and FP8/FP6/FP4 rounding vectors at test time for
# tests/unit/test_gguf_dequant.c, which compares our decoders with them bit for bit.
GGUF_VENV=${RLX_GGUF_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/rlx/gguf-0.19.0}
if "$GGUF_VENV/bin/python" -c 'import gguf, ml_dtypes, sys; from importlib.metadata import version; sys.exit(version("gguf") != "0.19.0")' 2>/dev/null; then
  echo "setup: gguf 0.19.0 already in $GGUF_VENV"
else
  echo "setup: installing gguf 0.19.0 into $GGUF_VENV"
  rm -rf "$GGUF_VENV"
  mkdir -p "$(dirname "$GGUF_VENV")"
  if ! { python3 -m venv "$GGUF_VENV" &&
         "$GGUF_VENV/bin/pip" install --quiet --disable-pip-version-check \
           gguf==0.19.0 numpy==2.4.6 ml_dtypes==0.6.0 PyYAML==6.0.4 tqdm==4.70.1 requests==2.34.2 \
           urllib3==2.8.0 idna==3.20 certifi==2026.10.19.post1 charset_normalizer==3.5.3; }; then
    rm -rf "$GGUF_VENV"
    echo "setup: WARNING: could not install gguf 0.19.0 (PyPI unreachable?); tests/unit/test_gguf_dequant.c will fail until it is" >&2
  fi
fi

# The MLX backend's SDK: PyPI's mlx-cpu 0.32.4 wheel (C++ headers, libmlx.so, CMake config) unpacked
# into the checkout's ignored .deps/mlx-cpu, where cmake/mlx.cmake finds it; Python only installs
# it. Without it (no network) the build simply leaves the MLX backend out.
MLX_DIR_DEPS="$(cd "$(dirname "$0")/.." && pwd)/.deps/mlx-cpu"
if [ -f "$MLX_DIR_DEPS/mlx/share/cmake/MLX/MLXConfig.cmake" ] && [ -d "$MLX_DIR_DEPS/mlx_cpu-0.32.4.dist-info" ]; then
  echo "setup: mlx-cpu 0.32.4 already in $MLX_DIR_DEPS"
else
  echo "setup: installing mlx-cpu 0.32.4 into $MLX_DIR_DEPS"
  rm -rf "$MLX_DIR_DEPS"
  PIP=(python3 -m pip)
  if ! python3 -m pip --version >/dev/null 2>&1; then # Debian's python3 has no pip: a venv's
    PIP_VENV=${XDG_CACHE_HOME:-$HOME/.cache}/rlx/pip-venv
    [ -x "$PIP_VENV/bin/pip" ] || python3 -m venv "$PIP_VENV" || true
    PIP=("$PIP_VENV/bin/pip")
  fi
  if ! "${PIP[@]}" install --quiet --disable-pip-version-check --no-deps --target "$MLX_DIR_DEPS" mlx-cpu==0.32.4; then
    rm -rf "$MLX_DIR_DEPS"
    echo "setup: WARNING: could not install mlx-cpu 0.32.4 (PyPI unreachable?); the MLX backend is left out of the build" >&2
  fi
fi
