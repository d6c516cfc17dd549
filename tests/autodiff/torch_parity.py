# SPDX-License-Identifier: MIT OR Apache-2.0
"""PyTorch autograd parity for RLX's autodiff.

tests/unit/test_torch_parity.c (run with RLX_TORCH_DUMP_DIR=DIR) writes, for each model, every input
and parameter, RLX's loss and RLX's gradients (grad_<p>.npy with the backward ops, gradp_<p>.npy
with their primitive decompositions) into DIR/<model>/. This script rebuilds the same models in
torch float64, runs autograd, and compares the loss and every parameter gradient.

usage: torch_parity.py DIR      exit 0 = all match, 1 = a mismatch, 2 = usage / missing files
"""
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

RTOL = 1e-9  # |rlx - torch| <= RTOL * (1 + |torch|), element-wise, float64 on both sides


def load(d, name):
    return torch.from_numpy(np.load(os.path.join(d, name + ".npy")))


def params(d, names):
    return {n: load(d, n).clone().requires_grad_(True) for n in names}


def ce(logits, labels):
    return F.cross_entropy(logits, labels.long())  # mean over the batch


def mlp(d):
    p = params(d, ["w1", "b1", "w2", "b2", "w3", "b3"])
    x, y = load(d, "x"), load(d, "labels")
    h = F.gelu(x @ p["w1"] + p["b1"])  # exact (erf) Gelu
    h = torch.tanh(h @ p["w2"] + p["b2"])
    return ce(h @ p["w3"] + p["b3"], y), p


def cnn(d):
    p = params(d, ["conv1_w", "conv1_b", "conv2_w", "conv2_b", "fc1_w", "fc1_b", "fc2_w", "fc2_b"])
    x, y = load(d, "x"), load(d, "labels")
    h = F.max_pool2d(F.relu(F.conv2d(x, p["conv1_w"], p["conv1_b"], padding=1)), 2)
    h = F.max_pool2d(F.relu(F.conv2d(h, p["conv2_w"], p["conv2_b"], padding=1)), 2)
    h = F.relu(h.flatten(1) @ p["fc1_w"] + p["fc1_b"])  # NCHW flatten, row-major like RLX's Reshape
    return ce(h @ p["fc2_w"] + p["fc2_b"], y), p


def transformer(d):
    names = ["ln1_g", "ln1_b", "wq", "wk", "wv", "wo", "bo", "ln2_g", "ln2_b", "fc1_w", "fc1_b", "fc2_w", "fc2_b"]
    p = params(d, names)
    x, target = load(d, "x"), load(d, "target")
    B, S, D = x.shape
    H, hd = 2, D // 2
    h = F.layer_norm(x, (D,), p["ln1_g"], p["ln1_b"], eps=1e-5)

    def heads(t):  # [B, S, H*hd] -> [B, H, S, hd]
        return t.view(B, S, H, hd).transpose(1, 2)

    q, k, v = heads(h @ p["wq"]), heads(h @ p["wk"]), heads(h @ p["wv"])
    scores = q @ k.transpose(-1, -2) / math.sqrt(hd)
    causal = torch.ones(S, S, dtype=torch.bool).tril()
    scores = scores.masked_fill(~causal, float("-inf"))
    att = (scores.softmax(-1) @ v).transpose(1, 2).reshape(B, S, D)
    r1 = x + att @ p["wo"] + p["bo"]
    h2 = F.layer_norm(r1, (D,), p["ln2_g"], p["ln2_b"], eps=1e-5)
    h2 = F.gelu(h2 @ p["fc1_w"] + p["fc1_b"]) @ p["fc2_w"] + p["fc2_b"]
    r2 = r1 + h2
    return ((r2 - target) ** 2).mean(), p


MODELS = {"mlp": mlp, "cnn": cnn, "transformer": transformer}


def close(a, b):
    return np.all(np.abs(a - b) <= RTOL * (1 + np.abs(b)))


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    root = sys.argv[1]
    failures = checks = 0
    for name, build in MODELS.items():
        d = os.path.join(root, name)
        if not os.path.isdir(d):
            print(f"FAIL: {name}: no dump directory {d}")
            failures += 1
            continue
        torch.set_default_dtype(torch.float64)
        loss, p = build(d)
        loss.backward()
        rlx_loss = float(load(d, "loss"))
        checks += 1
        if not close(np.array(rlx_loss), np.array(loss.item())):
            print(f"FAIL: {name}: loss rlx {rlx_loss!r} torch {loss.item()!r}")
            failures += 1
        worst = 0.0
        for pn, t in p.items():
            want = t.grad.numpy()
            for prefix in ("grad_", "gradp_"):
                got = load(d, prefix + pn).numpy()
                checks += 1
                if got.shape != want.shape:
                    print(f"FAIL: {name}: {prefix}{pn} has shape {got.shape}, torch {want.shape}")
                    failures += 1
                    continue
                err = float(np.max(np.abs(got - want) / (1 + np.abs(want)))) if want.size else 0.0
                worst = max(worst, err)
                if not close(got, want):
                    i = np.unravel_index(np.argmax(np.abs(got - want)), want.shape)
                    print(f"FAIL: {name}: {prefix}{pn}{list(i)}: rlx {got[i]!r} torch {want[i]!r} (max rel err {err:.3g})")
                    failures += 1
        print(f"{name}: loss {loss.item():.12g}, {len(p)} parameter gradients, worst relative error {worst:.3g}")
    print(f"torch parity: {checks - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
