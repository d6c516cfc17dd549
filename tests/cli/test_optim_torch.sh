#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Step-by-step parity of rlx_optim with torch.optim: tests/optim/torch_optim_ref.py writes initial
# params, 20 steps of gradients and torch's trajectories for ~30 optimizer / clipping / schedule
# configurations; `test_optim --torch DIR` (built next to the rlx binary, in tests/) replays them
# and compares the lr, the clipped gradient norm and every param after every step (rtol 1e-5,
# atol 1e-6 in f32). One check per configuration, plus checks that a corrupted reference is
# caught. Needs Debian's python3-torch and python3-numpy (scripts/setup.sh installs them).
# usage: test_optim_torch.sh PATH/TO/rlx SOURCE_DIR
set -u
RLX=${1:?usage: test_optim_torch.sh RLX SOURCE_DIR}
SRC=${2:?usage: test_optim_torch.sh RLX SOURCE_DIR}
PY=/usr/bin/python3
BIN="$(dirname "$RLX")/tests/test_optim"

passed=0
failed=0
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*" >&2; }
finish() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
  exit $?
}

if ! "$PY" -c 'import torch, numpy' 2>/dev/null; then
  bad "$PY cannot import torch and numpy: run scripts/setup.sh (installs python3-torch and python3-numpy)"
  finish
fi
if [ ! -x "$BIN" ]; then
  bad "test binary $BIN not found: build the test_optim target"
  finish
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# ---- reference trajectories ----
if "$PY" -W ignore "$SRC/tests/optim/torch_optim_ref.py" "$TMP/ref" >"$TMP/gen.out" 2>&1; then ok; else
  bad "torch_optim_ref.py failed"
  sed 's/^/  /' "$TMP/gen.out" | tail -n 15 >&2
  finish
fi
sed 's/^/  /' "$TMP/gen.out"
n_configs=$(grep -c '^config ' "$TMP/ref/manifest.txt")

# ---- replay: one check per configuration ----
"$BIN" --torch "$TMP/ref" >"$TMP/replay.out" 2>&1
rc=$?
while read -r line; do
  case "$line" in
    "ok config "*) ok ;;
    "FAIL config "*) bad "${line#FAIL }" ;;
  esac
done <"$TMP/replay.out"
n_ok=$(grep -c '^ok config ' "$TMP/replay.out")
if [ "$rc" -eq 0 ] && [ "$n_ok" -eq "$n_configs" ] && [ "$n_configs" -ge 25 ]; then ok; else
  bad "replay: exit $rc, $n_ok of $n_configs configurations matched"
  sed 's/^/  /' "$TMP/replay.out" | tail -n 10 >&2
fi

# ---- the comparison can fail: corrupt one value of a trajectory, one lr, one gradient norm ----
cp -r "$TMP/ref" "$TMP/bad"
"$PY" - "$TMP/bad" <<'PYEOF'
import sys, numpy as np
d = sys.argv[1]
p = np.load(f"{d}/adam_p0.npy"); p[10].flat[3] += 1e-4; np.save(f"{d}/adam_p0.npy", p)
lr = np.load(f"{d}/adamw_clip_warmup_cosine_lr.npy"); lr[7] *= 1.001
np.save(f"{d}/adamw_clip_warmup_cosine_lr.npy", lr)
n = np.load(f"{d}/sgd_clip_norm_norm.npy"); n[2] *= 1.001; np.save(f"{d}/sgd_clip_norm_norm.npy", n)
PYEOF
"$BIN" --torch "$TMP/bad" >"$TMP/bad.out" 2>&1
rc=$?
if [ "$rc" -ne 0 ]; then ok; else bad "replay of corrupted references passed"; fi
for want in "FAIL config adam: step 10: param p0[3]" "FAIL config adamw_clip_warmup_cosine: step 7: lr" \
            "FAIL config sgd_clip_norm: step 2: grad norm"; do
  if grep -qF "$want" "$TMP/bad.out"; then ok; else bad "corruption not reported: '$want'"; fi
done
if [ "$(grep -c '^ok config ' "$TMP/bad.out")" -eq $((n_configs - 3)) ]; then ok; else
  bad "corrupting 3 configurations should leave $((n_configs - 3)) passing"
fi

# ---- a missing reference directory is an error, not a pass ----
if "$BIN" --torch "$TMP/nowhere" >"$TMP/none.out" 2>&1; then bad "replay of a missing directory passed"; else ok; fi

finish
