#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Determinism across thread counts (docs/cpu-backend.md): `rlx train --model cnn` for 4 steps
# (256 Fashion-MNIST images, batch 64) at --threads 1 and --threads 2 must write byte-identical
# weights.safetensors in deterministic mode (the default, and with --deterministic), and the
# files must differ with --no-deterministic (the conv weight gradient is then summed in one part
# per thread), which shows that the comparison can fail and that the mode is what makes the
# difference. Also: the same run twice at 2 threads gives the same bytes in both modes, and
# RLX_CPU_ISA with a bad value is a compile error naming the variable.
# usage: test_train_determinism.sh PATH/TO/rlx SOURCE_DIR
set -u
RLX=${1:?usage: test_train_determinism.sh RLX SOURCE_DIR}
SRC=${2:?usage: test_train_determinism.sh RLX SOURCE_DIR}
DATA=/usr/share/datasets/fashion-mnist
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
source "$SRC/tests/cli/lib.sh"

if [ ! -f "$DATA/train-images-idx3-ubyte.gz" ]; then
  bad "Fashion-MNIST is missing in $DATA: install Debian's dataset-fashion-mnist (scripts/setup.sh does)"
  echo "$passed passed, $failed failed"
  exit 1
fi

# train NAME THREADS [MODE]: weights in $TMP/NAME/weights.safetensors
train() {
  local name=$1 threads=$2
  shift 2
  expect 0 "train $name" -- "$RLX" train --model cnn --limit-train 256 --limit-test 100 --threads "$threads" \
    --seed 3 --out "$TMP/$name" "$@"
  [ -s "$TMP/$name/weights.safetensors" ] && ok || bad "$name: no weights.safetensors"
}
same() { if cmp -s "$TMP/$1/weights.safetensors" "$TMP/$2/weights.safetensors"; then ok; else bad "$3"; fi; }
differ() { if cmp -s "$TMP/$1/weights.safetensors" "$TMP/$2/weights.safetensors"; then bad "$3"; else ok; fi; }

train det1 1
train det2 2
train det2b 2 --deterministic
train det2c 2 --deterministic
same det1 det2 "deterministic (default): 1 and 2 threads give different weights"
same det1 det2b "--deterministic: 1 and 2 threads give different weights"
same det2b det2c "--deterministic: two runs at 2 threads give different weights"
train nd1 1 --no-deterministic
train nd2 2 --no-deterministic
train nd2b 2 --no-deterministic
differ nd1 nd2 "--no-deterministic: 1 and 2 threads give the same weights (the check above could not fail)"
same nd2 nd2b "--no-deterministic: two runs at 2 threads give different weights (must be reproducible per thread count)"

# a path name the backend does not know is an error naming RLX_CPU_ISA
RLX_CPU_ISA=avx9 expect 1 "RLX_CPU_ISA=avx9" -- "$RLX" train --model mlp --limit-train 64 --limit-test 10 --out "$TMP/isa"
has "$TMP/err" "RLX_CPU_ISA='avx9'" "bad RLX_CPU_ISA message"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
