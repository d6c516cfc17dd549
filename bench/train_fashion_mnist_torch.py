# SPDX-License-Identifier: MIT OR Apache-2.0
"""PyTorch (eager) twin of `rlx train`: the same model, initialization scheme, optimizer,
batching and data, timed the same way.

  cnn: conv3x3(16, padding 1)+bias -> relu -> maxpool2 -> conv3x3(32, padding 1)+bias -> relu
       -> maxpool2 -> flatten -> fc128+bias -> relu -> fc10+bias
  mlp: flatten -> fc256+bias -> relu -> fc10+bias

Loss: mean softmax cross-entropy; Adam(lr 1e-3, betas 0.9/0.999, eps 1e-8); batch 64; each epoch
a fresh seeded permutation; the last partial batch is dropped. The timed loop is the training
loop only (batch gather from the preloaded tensors, forward, backward, optimizer step): loading
and decompressing the files happens before, evaluation after. Test accuracy counts every test
image (batches of 1000).

Prints one JSON line: {"test_accuracy": ..., "train_images_per_second": ..., "epochs": ...}.
Run with /opt/rlx-bench-venv/bin/python (PyPI torch 2.x, numpy)."""

import argparse
import gzip
import json
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def read_idx(path, magic, rank):
    if not os.path.exists(path) and path.endswith(".gz") and os.path.exists(path[:-3]):
        path = path[:-3]
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    got = struct.unpack(">I", data[:4])[0]
    if got != magic:
        sys.exit(f"{path}: wrong magic 0x{got:08x}, expected 0x{magic:08x}")
    dims = struct.unpack(">" + "I" * rank, data[4:4 + 4 * rank])
    body = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * rank)
    if body.size != int(np.prod(dims)):
        sys.exit(f"{path}: {body.size} data bytes for dims {dims}")
    return body.reshape(dims)


def load(folder, split, limit):
    images = read_idx(os.path.join(folder, f"{split}-images-idx3-ubyte.gz"), 0x803, 3)
    labels = read_idx(os.path.join(folder, f"{split}-labels-idx1-ubyte.gz"), 0x801, 1)
    if limit:
        images, labels = images[:limit], labels[:limit]
    x = torch.from_numpy(images.astype(np.float32) / 255.0).unsqueeze(1).contiguous()
    y = torch.from_numpy(labels.astype(np.int64))
    return x, y


class CNN(nn.Module):
    def __init__(self, rows, cols, classes):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc1 = nn.Linear(32 * (rows // 4) * (cols // 4), 128)
        self.fc2 = nn.Linear(128, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        return self.fc2(F.relu(self.fc1(x)))


class MLP(nn.Module):
    def __init__(self, rows, cols, classes):
        super().__init__()
        self.fc1 = nn.Linear(rows * cols, 256)
        self.fc2 = nn.Linear(256, classes)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(torch.flatten(x, 1))))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", choices=["cnn", "mlp"], default="cnn")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--threads", type=int, default=0, help="0 = all cores")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--limit-train", type=int, default=0)
    ap.add_argument("--limit-test", type=int, default=0)
    a = ap.parse_args()

    threads = a.threads or os.cpu_count() or 1
    torch.set_num_threads(threads)
    torch.manual_seed(a.seed)
    xtr, ytr = load(a.data, "train", a.limit_train)
    xte, yte = load(a.data, "t10k", a.limit_test)
    rows, cols = xtr.shape[2], xtr.shape[3]
    model = (CNN if a.model == "cnn" else MLP)(rows, cols, 10)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr, betas=(0.9, 0.999), eps=1e-8)
    steps = xtr.shape[0] // a.batch
    gen = torch.Generator().manual_seed(a.seed)

    model.train()
    t0 = time.perf_counter()
    last = []
    for _ in range(a.epochs):
        perm = torch.randperm(xtr.shape[0], generator=gen)
        for s in range(steps):
            idx = perm[s * a.batch:(s + 1) * a.batch]
            xb, yb = xtr[idx], ytr[idx]
            loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            last.append(loss.item())
    train_s = time.perf_counter() - t0
    ips = steps * a.epochs * a.batch / train_s

    model.eval()
    correct = 0
    with torch.no_grad():
        for s in range(0, xte.shape[0], 1000):
            correct += (model(xte[s:s + 1000]).argmax(1) == yte[s:s + 1000]).sum().item()
    acc = correct / xte.shape[0]
    tail = last[-50:]
    print(f"torch {torch.__version__}: {steps * a.epochs * a.batch} images in {train_s:.2f} s = {ips:.1f} images/s, "
          f"test accuracy {acc:.4f} ({correct} of {xte.shape[0]})", file=sys.stderr)
    print(json.dumps({"test_accuracy": round(acc, 4), "train_images_per_second": round(ips, 1), "epochs": a.epochs,
                      "model": a.model, "batch": a.batch, "threads": threads, "train_images": int(xtr.shape[0]),
                      "test_images": int(xte.shape[0]), "train_seconds": round(train_s, 3),
                      "final_loss": round(sum(tail) / max(len(tail), 1), 4), "torch": torch.__version__}))


if __name__ == "__main__":
    main()
