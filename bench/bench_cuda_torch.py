# SPDX-License-Identifier: MIT OR Apache-2.0
"""The PyTorch side of bench/bench_cuda.c on the same GPU: GEMM n^3 in f32 (TF32 off), TF32, and
bf16 operands; a + b and relu on 2^28 f32 elements; a device copy. Median of 5 repeats of
`iters` calls, timed with CUDA events after warm-up. Prints "name value unit" lines."""
import statistics
import sys

import torch


def timed(fn, iters):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(5):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(iters):
            fn()
        e.record()
        torch.cuda.synchronize()
        ts.append(s.elapsed_time(e) / 1e3 / iters)
    return statistics.median(ts)


def main():
    dev = torch.device("cuda")
    if len(sys.argv) > 1 and sys.argv[1] == "block_f32":  # only the f32 block (interleaved runs)
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        t = block_step(dev, torch.float32, True)
        print(f"torch_block_f32_compiled_fwd_bwd {t * 1e3:.3f} ms", flush=True)
        return
    for n in (1024, 2048, 4096, 8192):
        a = torch.rand(n, n, device=dev) - 0.5
        b = torch.rand(n, n, device=dev) - 0.5
        iters = 5 if n >= 8192 else 20
        for name, tf32, cast in (("fp32", False, None), ("tf32", True, None), ("bf16", False, torch.bfloat16)):
            torch.backends.cuda.matmul.allow_tf32 = tf32
            x, y = (a, b) if cast is None else (a.to(cast), b.to(cast))
            t = timed(lambda: x @ y, iters)
            print(f"torch_gemm_{name}_{n} {2 * n**3 / t / 1e12:.1f} TFLOP/s ({t * 1e3:.3f} ms)")
    if len(sys.argv) > 1 and sys.argv[1] == "gemm":  # only the products
        return
    n = 1 << 28
    a = torch.rand(n, device=dev)
    b = torch.rand(n, device=dev)
    t = timed(lambda: a + b, 20)
    print(f"torch_add_f32_{n} {3 * 4 * n / t / 1e9:.0f} GB/s ({t * 1e3:.3f} ms)")
    t = timed(lambda: torch.relu(a), 20)
    print(f"torch_relu_f32_{n} {2 * 4 * n / t / 1e9:.0f} GB/s ({t * 1e3:.3f} ms)")
    t = timed(lambda: a.clone(), 20)
    print(f"torch_copy_f32_{n} {2 * 4 * n / t / 1e9:.0f} GB/s ({t * 1e3:.3f} ms)")
    c = torch.rand(n, device=dev)
    chain = lambda: torch.relu(a * b + c) * a  # noqa: E731 (bench_cuda_block.c's region)
    t = timed(chain, 20)
    print(f"torch_region_eager_f32_{n} {16 * n / t / 1e9:.0f} GB/s ({t * 1e3:.3f} ms)")
    cc = torch.compile(chain)
    t = timed(cc, 20)
    print(f"torch_region_compiled_f32_{n} {16 * n / t / 1e9:.0f} GB/s ({t * 1e3:.3f} ms)", flush=True)
    del a, b, c
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    for dt, name in ((torch.float32, "f32"), (torch.bfloat16, "bf16")):
        for mode in ("eager", "compiled"):
            t = block_step(dev, dt, mode == "compiled")
            print(f"torch_block_{name}_{mode}_fwd_bwd {t * 1e3:.3f} ms", flush=True)


def block_step(dev, dt, compiled, B=8, T=1024, d=768, H=12):
    """bench_cuda_block.c's GPT-2-small block: pre-LN, causal attention, GELU (tanh) MLP; loss =
    sum(out); backward to every parameter and x. Seconds per forward + backward."""
    import torch.nn.functional as F

    g = torch.Generator(device=dev).manual_seed(0)

    def p(*shape, scale=0.04, fill=None):
        t = torch.full(shape, fill, device=dev, dtype=dt) if fill is not None else \
            (torch.rand(*shape, device=dev, generator=g) - 0.5).mul(scale).to(dt)
        return t.requires_grad_()

    ps = [p(d, fill=1.0), p(d, fill=0.0), p(d, 3 * d), p(3 * d, scale=0.02), p(d, d), p(d, scale=0.02),
          p(d, fill=1.0), p(d, fill=0.0), p(d, 4 * d), p(4 * d, scale=0.02), p(4 * d, d), p(d, scale=0.02)]
    x = (torch.rand(B * T, d, device=dev, generator=g) - 0.5).to(dt).requires_grad_()

    def fwd(x, l1g, l1b, wqkv, bqkv, wo, bo, l2g, l2b, wfc, bfc, wpr, bpr):
        h = F.layer_norm(x, (d,), l1g, l1b, 1e-5)
        q, k, v = (h @ wqkv + bqkv).split(d, dim=1)
        q, k, v = (t.view(B, T, H, d // H).transpose(1, 2) for t in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B * T, d)
        x1 = x + (a @ wo + bo)
        h2 = F.layer_norm(x1, (d,), l2g, l2b, 1e-5)
        return x1 + F.gelu(h2 @ wfc + bfc, approximate="tanh") @ wpr + bpr

    def step():
        out = fwd(x, *ps)
        out.sum().backward()

    if compiled:
        step = torch.compile(step)
    return timed(step, 5)


if __name__ == "__main__":
    main()
