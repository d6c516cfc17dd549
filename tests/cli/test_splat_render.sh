#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Tests of `rlx splat-render`: a small scene file rendered to a PNG, decoded here with Python's zlib
# (our PNG writer is checked by an independent reader) and compared pixel by pixel with the float64
# renderer of tests/reference/ref_splat.py (sRGB-encoded the same way, within 1 level); the --demo
# scene; scene-file and argument errors.
# usage: test_splat_render.sh PATH/TO/rlx SOURCE_DIR
set -u
RLX=${1:?usage: test_splat_render.sh RLX SOURCE_DIR}
SRC=${2:?usage: test_splat_render.sh RLX SOURCE_DIR}
PY=/usr/bin/python3
if ! "$PY" -c 'import numpy, torch' 2>/dev/null; then
  echo "FAIL: $PY cannot import numpy and torch (install python3-numpy python3-torch; scripts/setup.sh does)" >&2
  exit 1
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
source "$SRC/tests/cli/lib.sh"

cat >"$TMP/scene.txt" <<'SCENE'
# three splats in front of a grey-blue background
camera 0.3 0.2 -4  0 0 0  0 1 0  50  0.1 100
background 0.1 0.15 0.2
image 40 30 8
gaussian  0.0  0.0  0.0   0.5 0.2 0.2   0 0 0.38 0.92   0.8   1.0 0.2 0.1
gaussian  0.5  0.3  0.8   0.3 0.3 0.3   0 0 0 1         0.6   0.1 0.9 0.2
gaussian -0.6 -0.2 -0.5   0.2 0.4 0.1   0.3 0 0 0.95    0.9   0.2 0.3 1.0
SCENE
expect 0 "render a scene file" -- "$RLX" splat-render "$TMP/scene.txt" -o "$TMP/scene.png"
if "$PY" - "$TMP/scene.png" "$SRC/tests/reference" >"$TMP/py.out" 2>&1 <<'PYCHECK'
import math, struct, sys, zlib
import numpy as np
import torch
sys.path.insert(0, sys.argv[2])
import ref_splat
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG signature"
at, chunks = 8, []
while at < len(data):
    n, = struct.unpack(">I", data[at:at + 4]); kind = data[at + 4:at + 8]; body = data[at + 8:at + 8 + n]
    crc, = struct.unpack(">I", data[at + 8 + n:at + 12 + n])
    assert zlib.crc32(kind + body) == crc, "bad CRC in %s" % kind
    chunks.append((kind, body)); at += 12 + n
assert [c[0] for c in chunks] == [b"IHDR", b"IDAT", b"IEND"], [c[0] for c in chunks]
w, h, depth, ctype, comp, filt, inter = struct.unpack(">IIBBBBB", chunks[0][1])
assert (w, h, depth, ctype, inter) == (40, 30, 8, 2, 0), (w, h, depth, ctype, inter)
raw = zlib.decompress(chunks[1][1])
rows = [raw[y * (1 + 3 * w):(y + 1) * (1 + 3 * w)] for y in range(h)]
assert all(r[0] == 0 for r in rows), "unexpected row filter"
img = np.array([list(r[1:]) for r in rows], dtype=np.int64).reshape(h, w, 3)
g = [(0.0, 0.0, 0.0, 0.5, 0.2, 0.2, 0, 0, 0.38, 0.92, 0.8, 1.0, 0.2, 0.1),
     (0.5, 0.3, 0.8, 0.3, 0.3, 0.3, 0, 0, 0, 1, 0.6, 0.1, 0.9, 0.2),
     (-0.6, -0.2, -0.5, 0.2, 0.4, 0.1, 0.3, 0, 0, 0.95, 0.9, 0.2, 0.3, 1.0)]
f = lambda cols: torch.tensor(np.array(cols, dtype=np.float32).astype(np.float64))
scene = [f([v[0:3] for v in g]), f(np.log([v[3:6] for v in g])), f([v[6:10] for v in g]),
         f([math.log(v[10] / (1 - v[10])) for v in g]), f([v[11:14] for v in g]), torch.zeros(9, dtype=torch.float64)]
meta = [0.3, 0.2, -4, 0, 0, 0, 0, 1, 0, 50, 0.1, 100, 0.1, 0.15, 0.2] + [0] * 8
st = dict(W=40, H=30, tile=8, radius_scale=1.6, cutoff=1 / 255, steps=64, tmin=0.01, max_list=4096)
with torch.no_grad():
    ref = ref_splat.render(scene, meta, st).numpy().reshape(h, w, 4)[:, :, :3]
enc = np.where(ref <= 0.0031308, 12.92 * ref, 1.055 * np.power(np.clip(ref, 0, None), 1 / 2.4) - 0.055)
want = np.clip(np.round(enc * 255), 0, 255).astype(np.int64)
diff = np.abs(img - want).max()
assert diff <= 1, "max pixel difference %d" % diff
assert len(np.unique(img.reshape(-1, 3), axis=0)) > 50, "image has too few distinct colours"
print("ok", diff)
PYCHECK
then ok; else bad "scene.png differs from the float64 reference"; sed 's/^/  /' "$TMP/py.out" | head -n 10 >&2; fi

expect 0 "render the demo scene" -- "$RLX" splat-render --demo -o "$TMP/demo.png"
has "$TMP/err" "256 gaussians, 256 x 192 pixels" "demo summary"
expect 0 "size override" -- "$RLX" splat-render --demo --width 32 --height 24 -o "$TMP/small.png"
has "$TMP/err" "32 x 24 pixels" "size override summary"

# errors
expect 2 "no output" -- "$RLX" splat-render --demo
expect 2 "scene and demo" -- "$RLX" splat-render "$TMP/scene.txt" --demo -o "$TMP/x.png"
expect 2 "bad width" -- "$RLX" splat-render --demo --width 0 -o "$TMP/x.png"
printf 'camera 0 0 -4 0 0 0 0 1 0 50\ngaussian 0 0 0 1 1 1 0 0 0 1 1.5 1 1 1\n' >"$TMP/bad1.txt"
expect 1 "opacity out of range" -- "$RLX" splat-render "$TMP/bad1.txt" -o "$TMP/x.png"
has "$TMP/err" "bad1.txt:2: a gaussian needs positive axis lengths and an opacity in (0, 1)" "opacity message"
printf 'gaussian 0 0 0 1 1 1 0 0 0 1 0.5 1 1 1\n' >"$TMP/bad2.txt"
expect 1 "no camera" -- "$RLX" splat-render "$TMP/bad2.txt" -o "$TMP/x.png"
has "$TMP/err" "no camera line" "camera message"
printf 'camera 0 0 -4 0 0 0 0 1 0 50\nsplat 1 2 3\n' >"$TMP/bad3.txt"
expect 1 "unknown record" -- "$RLX" splat-render "$TMP/bad3.txt" -o "$TMP/x.png"
has "$TMP/err" "bad3.txt:2: expected" "record message"
printf 'camera 0 0 -4 0 0 0 0 0 1 50\ngaussian 0 0 0 1 1 1 0 0 0 1 0.5 1 1 1\n' >"$TMP/bad4.txt"
expect 1 "up parallel to the view" -- "$RLX" splat-render "$TMP/bad4.txt" -o "$TMP/x.png"
has "$TMP/err" "parallel to its view direction" "camera error message"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
