# SPDX-License-Identifier: MIT OR Apache-2.0
"""The PyTorch side of bench/bench_cuda.c on the same GPU: GEMM n^3 in f32 (TF32 off), TF32, and
bf16 operands; a + b and relu on 2^28 f32 elements; a device copy. Median of 5 repeats of
`iters` calls, timed with CUDA events after warm-up. Prints "name value unit" lines."""
import statistics

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
    for n in (4096, 8192):
        a = torch.rand(n, n, device=dev) - 0.5
        b = torch.rand(n, n, device=dev) - 0.5
        iters = 5 if n >= 8192 else 20
        for name, tf32, cast in (("fp32", False, None), ("tf32", True, None), ("bf16", False, torch.bfloat16)):
            torch.backends.cuda.matmul.allow_tf32 = tf32
            x, y = (a, b) if cast is None else (a.to(cast), b.to(cast))
            t = timed(lambda: x @ y, iters)
            print(f"torch_gemm_{name}_{n} {2 * n**3 / t / 1e12:.1f} TFLOP/s ({t * 1e3:.3f} ms)")
    n = 1 << 28
    a = torch.rand(n, device=dev)
    b = torch.rand(n, device=dev)
    t = timed(lambda: a + b, 20)
    print(f"torch_add_f32_{n} {3 * 4 * n / t / 1e9:.0f} GB/s ({t * 1e3:.3f} ms)")
    t = timed(lambda: torch.relu(a), 20)
    print(f"torch_relu_f32_{n} {2 * 4 * n / t / 1e9:.0f} GB/s ({t * 1e3:.3f} ms)")
    t = timed(lambda: a.clone(), 20)
    print(f"torch_copy_f32_{n} {2 * 4 * n / t / 1e9:.0f} GB/s ({t * 1e3:.3f} ms)")


if __name__ == "__main__":
    main()
