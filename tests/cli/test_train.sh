#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Tests of `rlx train`: a short CNN run on the first 2,048 training / 1,000 test images of
# Fashion-MNIST (a correctness smoke test, not a timing test): the JSON line parses, the accuracy
# beats 0.5 (chance is 0.1), the loss curve is an SVG line chart and weights.safetensors holds the
# eight tensors with PyTorch's names and shapes (checked by a Python parser of the format, and by
# loading them into the same torch model and re-measuring the accuracy). A missing dataset or
# torch is a failure, not a skip. Then bad data: a missing folder, a truncated gzip file, a wrong magic, a truncated
# IDX body and an image/label count mismatch all exit 1 with a message naming the file; bad
# options exit 2.
# usage: test_train.sh PATH/TO/rlx SOURCE_DIR
set -u
RLX=${1:?usage: test_train.sh RLX SOURCE_DIR}
SRC=${2:?usage: test_train.sh RLX SOURCE_DIR}
PY=/usr/bin/python3
TORCH_PY=/opt/rlx-bench-venv/bin/python   # PyPI torch; Debian's python3-torch also does
[ -x "$TORCH_PY" ] || TORCH_PY=$PY
DATA=/usr/share/datasets/fashion-mnist
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

source "$SRC/tests/cli/lib.sh"
py() {
  local what=$1 interp=$2
  if "$interp" -c "$3" "$TMP" >"$TMP/py.out" 2>&1; then ok; else bad "$what"; sed 's/^/  /' "$TMP/py.out" | tail -n 10 >&2; fi
}

# ---- bad options ----
expect 2 "unknown model" -- "$RLX" train --model rnn
has "$TMP/err" "unknown model 'rnn'" "unknown model"
expect 2 "batch 0" -- "$RLX" train --batch 0
expect 2 "bad lr" -- "$RLX" train --lr -1
expect 2 "missing value" -- "$RLX" train --epochs
expect 2 "unknown option" -- "$RLX" train --frobnicate 3
expect 2 "unknown backend" -- "$RLX" train --backend nosuch
has "$TMP/err" "unknown backend 'nosuch' (registered: cpu" "unknown backend lists the registered ones"
expect 0 "help" -- "$RLX" train --help
has "$TMP/out" "--backend NAME" "help text names --backend"
has "$TMP/out" "--limit-train" "help text"

# ---- bad data (made in a temp folder; no real data needed) ----
mkdir -p "$TMP/bad"
"$PY" - "$TMP/bad" <<'EOF'
import gzip, os, struct, sys
d = sys.argv[1]
def idx(magic, dims, body):
    return struct.pack(">I", magic) + b"".join(struct.pack(">I", x) for x in dims) + body
good_img = idx(0x803, (100, 28, 28), bytes(100 * 784))
good_lab = idx(0x801, (100,), bytes(i % 10 for i in range(100)))
def case(name, img, lab, test_img=None, test_lab=None, truncate_gz=False):
    c = os.path.join(d, name); os.makedirs(c)
    for split, i, l in (("train", img, lab), ("t10k", test_img or good_img, test_lab or good_lab)):
        for kind, data in (("images-idx3", i), ("labels-idx1", l)):
            z = gzip.compress(data)
            if truncate_gz and split == "train" and kind == "images-idx3":
                z = z[: len(z) // 2]
            open(os.path.join(c, f"{split}-{kind}-ubyte.gz"), "wb").write(z)
case("ok", good_img, good_lab)
case("truncated_gz", good_img, good_lab, truncate_gz=True)
case("wrong_magic", idx(0x801, (100, 28, 28), bytes(100 * 784)), good_lab)
case("truncated_idx", good_img[:-500], good_lab)
case("count_mismatch", good_img, idx(0x801, (99,), bytes(99)))
case("bad_label", good_img, idx(0x801, (100,), bytes([12] * 100)))
EOF
expect 1 "missing data folder" -- "$RLX" train --data "$TMP/nope" --out "$TMP/o"
has "$TMP/err" "$TMP/nope/train-images-idx3-ubyte.gz: cannot open: No such file or directory" "missing folder"
expect 1 "truncated gzip" -- "$RLX" train --data "$TMP/bad/truncated_gz" --out "$TMP/o"
has "$TMP/err" "train-images-idx3-ubyte.gz: corrupt or truncated gzip data" "truncated gzip"
expect 1 "wrong magic" -- "$RLX" train --data "$TMP/bad/wrong_magic" --out "$TMP/o"
has "$TMP/err" "train-images-idx3-ubyte.gz: wrong magic 0x00000801" "wrong magic"
expect 1 "truncated idx" -- "$RLX" train --data "$TMP/bad/truncated_idx" --out "$TMP/o"
has "$TMP/err" "train-images-idx3-ubyte.gz: truncated: the header announces 78400 bytes of images but only 77900 follow" "truncated idx"
expect 1 "count mismatch" -- "$RLX" train --data "$TMP/bad/count_mismatch" --out "$TMP/o"
has "$TMP/err" "holds 99 labels but" "count mismatch"
expect 1 "label out of range" -- "$RLX" train --data "$TMP/bad/bad_label" --out "$TMP/o"
has "$TMP/err" "label 0 is 12" "bad label"
expect 1 "fewer images than a batch" -- "$RLX" train --data "$TMP/bad/ok" --batch 128 --out "$TMP/o"
has "$TMP/err" "100 training images are fewer than one batch of 128" "small set"
[ ! -e "$TMP/o" ] && ok || bad "a failed run left an output folder behind"

# ---- a short real run ----
# The data and torch are requirements, not options: scripts/setup.sh installs both, and their
# absence fails the test instead of skipping what needs them.
if [ ! -r "$DATA/train-images-idx3-ubyte.gz" ] || [ ! -r "$DATA/t10k-images-idx3-ubyte.gz" ]; then
  bad "$DATA/{train,t10k}-images-idx3-ubyte.gz not found: install Debian's dataset-fashion-mnist (scripts/setup.sh does)"
else
  expect 0 "smoke run" -- "$RLX" train --limit-train 2048 --limit-test 1000 --epochs 1 --json --out "$TMP/run"
  cp "$TMP/out" "$TMP/run.stdout"
  has "$TMP/err" "re-read and verified" "weights re-read by our reader"
  py "JSON line, accuracy, SVG, safetensors" "$PY" '
import json, struct, sys, xml.etree.ElementTree as ET
d = sys.argv[1]
lines = open(d + "/run.stdout").read().splitlines()
assert len(lines) == 1, "stdout must be exactly the JSON line, got %r" % lines
r = json.loads(lines[-1])
for k in ("test_accuracy", "train_images_per_second", "epochs"):
    assert k in r, k
assert r["epochs"] == 1 and r["test_images"] == 1000 and r["train_images"] == 2048 == r["train_set_images"], r
assert r["test_accuracy"] > 0.5, "accuracy %s" % r["test_accuracy"]
assert r["train_images_per_second"] > 0
svg = ET.parse(d + "/run/loss_curve.svg").getroot()
ns = "{http://www.w3.org/2000/svg}"
assert svg.tag == ns + "svg"
lines = svg.findall(".//" + ns + "polyline")
assert len(lines) == 2, "expected the loss and its moving average"
pts = lines[0].get("points").split()
assert len(pts) == 32, "one point per step (2048 / 64), got %d" % len(pts)
texts = " ".join(t.text or "" for t in svg.iter(ns + "text"))
assert "training step" in texts and "loss" in texts
b = open(d + "/run/weights.safetensors", "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
meta = h.pop("__metadata__")
assert meta["model"] == "cnn" and meta["epochs"] == "1", meta
want = {"conv1.weight": [16, 1, 3, 3], "conv1.bias": [16], "conv2.weight": [32, 16, 3, 3], "conv2.bias": [32],
        "fc1.weight": [128, 1568], "fc1.bias": [128], "fc2.weight": [10, 128], "fc2.bias": [10]}
assert {k: v["shape"] for k, v in h.items()} == want, h
assert all(v["dtype"] == "F32" for v in h.values())
end = max(v["data_offsets"][1] for v in h.values())
assert len(b) == 8 + n + end == 8 + n + 4 * 206922, (len(b), n, end)
'
  if ! "$TORCH_PY" -c 'import torch, numpy' 2>/dev/null; then
    bad "$TORCH_PY cannot import torch and numpy (needed to cross-check the weights): install Debian's python3-torch and python3-numpy (scripts/setup.sh does)"
  else
    # The same weights in the same torch model must give the same accuracy on the same images.
    py "weights load into the torch model" "$TORCH_PY" '
import json, struct, sys, gzip, numpy as np, torch, torch.nn as nn, torch.nn.functional as F
d = sys.argv[1]
b = open(d + "/run/weights.safetensors", "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n]); h.pop("__metadata__")
sd = {k: torch.from_numpy(np.frombuffer(b, np.float32, int(np.prod(v["shape"])), 8 + n + v["data_offsets"][0]).reshape(v["shape"]).copy()) for k, v in h.items()}
class CNN(nn.Module):
    def __init__(s):
        super().__init__()
        s.conv1 = nn.Conv2d(1, 16, 3, padding=1); s.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        s.fc1 = nn.Linear(1568, 128); s.fc2 = nn.Linear(128, 10)
    def forward(s, x):
        x = F.max_pool2d(F.relu(s.conv1(x)), 2); x = F.max_pool2d(F.relu(s.conv2(x)), 2)
        return s.fc2(F.relu(s.fc1(torch.flatten(x, 1))))
m = CNN(); m.load_state_dict(sd)
raw = gzip.open("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz").read()
lab = gzip.open("/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz").read()
x = torch.from_numpy(np.frombuffer(raw, np.uint8, 1000 * 784, 16).astype(np.float32).reshape(1000, 1, 28, 28) / 255)
y = torch.from_numpy(np.frombuffer(lab, np.uint8, 1000, 8).astype(np.int64))
with torch.no_grad(): acc = (m(x).argmax(1) == y).float().mean().item()
r = json.loads(open(d + "/run.stdout").read().splitlines()[-1])
assert abs(acc - r["test_accuracy"]) <= 0.002, (acc, r["test_accuracy"])
'
  fi
fi

# ---- the images trained and the progress output ----
# 1000 images in batches of 64: 15 steps (40 images dropped) per epoch, 2 epochs = 1920 images.
if [ -r "$DATA/train-images-idx3-ubyte.gz" ]; then
  expect 0 "mlp, 2 epochs" -- "$RLX" train --model mlp --epochs 2 --limit-train 1000 --limit-test 100 --json --out "$TMP/run2"
  py "train_images counts the images trained" "$PY" '
import json, sys
r = json.loads(open(sys.argv[1] + "/out").read().splitlines()[-1])
assert r["train_images"] == 2 * 15 * 64 and r["train_set_images"] == 1000 and r["backend"] == "cpu", r
'
  # stderr is a file here: plain lines, no carriage returns or escapes
  has "$TMP/err" "epoch 2/2  step 30/30  loss " "plain progress line"
  has "$TMP/err" " img/s  took " "plain progress line has the rate and the time"
  if grep -q $'\r\|\x1b' "$TMP/err"; then bad "control characters in the progress written to a file"; else ok; fi
  # on a terminal (a pty from script(1)): a bar redrawn in place, with the rate and the ETA
  if ! command -v script >/dev/null 2>&1; then
    bad "script(1) not found (util-linux's bsdutils): it gives the progress bar test a terminal"
  else
    script -qec "'$RLX' train --model mlp --epochs 2 --limit-train 1000 --limit-test 100 --out '$TMP/run3'" /dev/null \
      </dev/null >"$TMP/tty.out" 2>&1
    has "$TMP/tty.out" $'\repoch 1/2 [' "the bar is redrawn in place"
    has "$TMP/tty.out" "] 100% 30/30  loss " "the bar ends full"
    has "$TMP/tty.out" " img/s  ETA " "the bar shows the rate and the time left"
    has "$TMP/tty.out" " img/s  took " "the last bar shows the time taken"
  fi
fi

echo "train: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
