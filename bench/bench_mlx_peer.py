# SPDX-License-Identifier: MIT OR Apache-2.0
"""The MLX-backend benchmark's peer: the computations of bench/bench_mlx.c written directly against
MLX's Python API (mlx 0.32.4 + mlx-cpu, in a venv: bench/run_mlx_bench.sh makes it). Each timed
call does what rlx_executable_run does: host inputs -> MLX arrays, the lazy graph, one eval, the
result back to host memory. Prints the same line format as bench_mlx.

    python bench_mlx_peer.py gemm N [reps]
    python bench_mlx_peer.py block B S D H [reps]
    python bench_mlx_peer.py cnnstep [reps]   (rlx train's CNN: one Adam step on a batch of 64)
"""
import math
import sys
import time

import mlx.core as mx
import numpy as np


def timed(fn, reps):
    for _ in range(2):
        fn()
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        t.append(time.perf_counter() - t0)
    t.sort()
    return t[len(t) // 2], t[0]


def report(what, med, best, flops):
    print(f"{what} mlx-python median_ms {med * 1e3:.3f} best_ms {best * 1e3:.3f} gflops {flops / med / 1e9 if flops else 0:.2f}")


def gemm(n, reps):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)

    def run():
        c = mx.matmul(mx.array(a), mx.array(b))
        return np.array(c)

    med, best = timed(run, reps)
    report(f"gemm_{n}", med, best, 2.0 * n * n * n)


def block(B, S, D, H, reps):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((B, S, D), dtype=np.float32)
    p = {k: mx.array(rng.standard_normal(s, dtype=np.float32) / math.sqrt(s[0]))
         for k, s in [("wq", (D, D)), ("wk", (D, D)), ("wv", (D, D)), ("wo", (D, D)), ("w1", (D, 4 * D)), ("w2", (4 * D, D))]}
    ln = {k: mx.ones((D,)) for k in ("ln1.g", "ln2.g")}
    ln.update({k: mx.zeros((D,)) for k in ("ln1.b", "ln2.b")})
    mx.eval(list(p.values()) + list(ln.values()))
    hd = D // H

    def heads(t):
        return t.reshape(B, S, H, hd).transpose(0, 2, 1, 3)

    def run():
        xa = mx.array(x)
        h = mx.fast.layer_norm(xa, ln["ln1.g"], ln["ln1.b"], 1e-5)
        q, k, v = heads(h @ p["wq"]), heads(h @ p["wk"]), heads(h @ p["wv"])
        a = mx.fast.scaled_dot_product_attention(q, k, v, scale=1.0 / math.sqrt(hd), mask="causal")
        a = a.transpose(0, 2, 1, 3).reshape(B, S, D) @ p["wo"]
        h = xa + a
        y = mx.fast.layer_norm(h, ln["ln2.g"], ln["ln2.b"], 1e-5) @ p["w1"]
        y = 0.5 * y * (1 + mx.erf(y / math.sqrt(2.0)))
        y = h + y @ p["w2"]
        return np.array(y)

    med, best = timed(run, reps)
    flops = 2.0 * B * S * 12 * D * D + 4.0 * B * S * S * D
    report(f"block_B{B}_S{S}_D{D}_H{H}", med, best, flops)


def cnnstep(reps):
    """One training step of rlx train's CNN (conv3x3 16 + relu + maxpool2, conv3x3 32 + relu +
    maxpool2, fc128 + relu, fc10; softmax cross-entropy, Adam lr 1e-3) on a batch of 64 Fashion-MNIST
    sized images: batch in, forward + backward + update, the loss back to host memory. MLX's conv
    is NHWC, so the batch is stored that way (rlx's graph transposes NCHW inside)."""
    import mlx.nn as nn
    import mlx.optimizers as optim

    class Cnn(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
            self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
            self.fc1 = nn.Linear(32 * 7 * 7, 128)
            self.fc2 = nn.Linear(128, 10)
            self.pool = nn.MaxPool2d(2, 2)

        def __call__(self, x):
            x = self.pool(nn.relu(self.conv1(x)))
            x = self.pool(nn.relu(self.conv2(x)))
            return self.fc2(nn.relu(self.fc1(x.reshape(x.shape[0], -1))))

    rng = np.random.default_rng(0)
    xs = rng.random((64, 28, 28, 1), dtype=np.float32)
    ys = rng.integers(0, 10, 64).astype(np.int32)
    model = Cnn()
    opt = optim.Adam(learning_rate=1e-3)
    mx.eval(model.parameters())

    def loss_fn(m, x, y):
        return nn.losses.cross_entropy(m(x), y, reduction="mean")

    step = nn.value_and_grad(model, loss_fn)

    def run():
        loss, grads = step(model, mx.array(xs), mx.array(ys))
        opt.update(model, grads)
        mx.eval(loss, model.parameters(), opt.state)
        return float(loss.item())

    med, best = timed(run, reps)
    report("cnnstep_B64", med, best, 0)


if __name__ == "__main__":
    mx.set_default_device(mx.cpu)
    if sys.argv[1] == "gemm":
        gemm(int(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 20)
    elif sys.argv[1] == "block":
        block(*(int(v) for v in sys.argv[2:6]), int(sys.argv[6]) if len(sys.argv) > 6 else 20)
    elif sys.argv[1] == "cnnstep":
        cnnstep(int(sys.argv[2]) if len(sys.argv) > 2 else 20)
    else:
        sys.exit("usage: bench_mlx_peer.py gemm N [reps] | block B S D H [reps] | cnnstep [reps]")
