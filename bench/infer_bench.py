# SPDX-License-Identifier: MIT OR Apache-2.0
"""Helper of bench/run_infer_bench.sh: the inference benchmark's models, peers and report.

  infer_bench.py export DIR               (Debian's python3: torch 1.13 + torchvision 0.14)
      writes DIR/<model>_b<N>.onnx and DIR/<model>_b<N>.in.npy for the three models, random
      weights from a fixed seed; the encoder is our own module (6 layers, d=384, 12 heads,
      FFN 1536, GELU, seq 128, post-norm), exported at opset 14 so that LayerNorm and GELU
      arrive as ReduceMean/Sub/Pow/Sqrt/Div and Erf chains.
  infer_bench.py torch DIR MODEL BATCH THREADS WARMUP ITERS   PyTorch eager latency (JSON line)
  infer_bench.py ort MODEL.onnx IN.npy THREADS WARMUP ITERS OUT.npy   (the onnxruntime venv)
  infer_bench.py diff A.npy B.npy                         max |a - b| and max |b| (JSON line)
  infer_bench.py report --runs DIR --doc PATH ...         the table between the markers
"""
import json
import os
import statistics
import sys
import time

MODELS = {"resnet18": (1, 32), "mobilenet_v3_small": (1, 32), "encoder": (1, 8)}
SEQ, D, HEADS, FFN, LAYERS = 128, 384, 12, 1536, 6
BEGIN = "<!-- infer-bench:begin (bench/run_infer_bench.sh writes this block) -->"
END = "<!-- infer-bench:end -->"


def build(model):
    import torch
    import torch.nn as nn

    torch.manual_seed(1234)
    if model == "resnet18":
        import torchvision

        m = torchvision.models.resnet18(weights=None)
    elif model == "mobilenet_v3_small":
        import torchvision

        m = torchvision.models.mobilenet_v3_small(weights=None)
    else:

        class Layer(nn.Module):
            def __init__(self):
                super().__init__()
                self.qkv = nn.Linear(D, 3 * D)
                self.proj = nn.Linear(D, D)
                self.ln1 = nn.LayerNorm(D, eps=1e-12)
                self.ff1 = nn.Linear(D, FFN)
                self.ff2 = nn.Linear(FFN, D)
                self.ln2 = nn.LayerNorm(D, eps=1e-12)
                self.act = nn.GELU()

            def forward(self, x, mask):
                b, s, _ = x.shape
                q, k, v = self.qkv(x).split(D, dim=-1)
                dh = D // HEADS
                q = q.reshape(b, s, HEADS, dh).transpose(1, 2)
                k = k.reshape(b, s, HEADS, dh).transpose(1, 2)
                v = v.reshape(b, s, HEADS, dh).transpose(1, 2)
                a = torch.matmul(q, k.transpose(-1, -2)) / (dh**0.5) + mask
                a = torch.softmax(a, dim=-1)
                o = torch.matmul(a, v).transpose(1, 2).reshape(b, s, D)
                x = self.ln1(x + self.proj(o))
                return self.ln2(x + self.ff2(self.act(self.ff1(x))))

        class Encoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([Layer() for _ in range(LAYERS)])
                # an additive attention mask: the last 16 positions are padding
                mask = torch.zeros(1, 1, 1, SEQ)
                mask[..., SEQ - 16 :] = -10000.0
                self.register_buffer("mask", mask)

            def forward(self, x):
                for layer in self.layers:
                    x = layer(x, self.mask)
                return x

        m = Encoder()
    return m.eval()


def input_for(model, batch):
    import numpy as np

    rng = np.random.default_rng(99 + batch)
    shape = (batch, SEQ, D) if model == "encoder" else (batch, 3, 224, 224)
    return rng.standard_normal(shape).astype(np.float32)


def cmd_export(out):
    import numpy as np
    import torch

    os.makedirs(out, exist_ok=True)
    for model, batches in MODELS.items():
        m = build(model)
        for b in batches:
            path = os.path.join(out, f"{model}_b{b}.onnx")
            x = input_for(model, b)
            np.save(os.path.join(out, f"{model}_b{b}.in.npy"), x)
            if os.path.exists(path):
                continue
            with torch.no_grad():
                torch.onnx.export(m, torch.from_numpy(x), path, opset_version=14,
                                  input_names=["x"], output_names=["y"], do_constant_folding=True)
            print(f"export: {path}", file=sys.stderr)


def timed(fn, warmup, iters):
    for _ in range(warmup):
        fn()
    t = []
    c0 = time.process_time()
    for _ in range(iters):
        a = time.perf_counter()
        fn()
        t.append((time.perf_counter() - a) * 1e3)
    cpu = (time.process_time() - c0) * 1e3 / iters
    return {"median_ms": statistics.median(t), "best_ms": min(t), "cpu_ms": cpu, "iters": iters}


def cmd_torch(d, model, batch, threads, warmup, iters):
    import torch

    torch.set_num_threads(int(threads))
    m = build(model)
    x = torch.from_numpy(__import__("numpy").load(os.path.join(d, f"{model}_b{batch}.in.npy")))
    with torch.inference_mode():
        r = timed(lambda: m(x), int(warmup), int(iters))
    r["version"] = torch.__version__
    print(json.dumps(r))


def rss_now_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1048576.0


def rss_peak_mb():
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def cmd_ort(model, inp, threads, warmup, iters, out):
    import numpy as np
    import onnxruntime as ort

    base = rss_now_mb()  # the interpreter, numpy and onnxruntime loaded; no model, no input
    so = ort.SessionOptions()
    so.intra_op_num_threads = int(threads)
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    s = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    x = np.load(inp)
    feed = {s.get_inputs()[0].name: x}
    r = timed(lambda: s.run(None, feed), int(warmup), int(iters))
    np.save(out, s.run(None, feed)[0])
    r["version"] = ort.__version__
    r["peak_rss_mb"], r["base_rss_mb"] = rss_peak_mb(), base
    print(json.dumps(r))


def cmd_diff(a, b):
    import numpy as np

    x, y = np.load(a).astype(np.float64), np.load(b).astype(np.float64)
    if x.shape != y.shape:
        print(json.dumps({"max_abs_diff": float("inf"), "max_abs": 0.0, "shape_mismatch": True}))
        return
    d, m = float(np.max(np.abs(x - y))), float(np.max(np.abs(y)))
    print(json.dumps({"max_abs_diff": d, "max_abs": m, "rel_diff": d / m if m > 0 else d}))


def cmd_report(argv):
    import argparse

    p = argparse.ArgumentParser()
    for a in ("--runs", "--doc", "--cpu", "--cores", "--load-before", "--load-after", "--commit", "--threads",
              "--label"):
        p.add_argument(a, default="")
    o = p.parse_args(argv)
    rows = []
    with open(os.path.join(o.runs, "results.jsonl")) as f:
        for line in f:
            rows.append(json.loads(line))
    date = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    ort_v = next((r["ort"].get("version") for r in rows if r.get("ort")), "?")
    torch_v = next((r["torch"].get("version") for r in rows if r.get("torch")), "?")
    out = [BEGIN, "",
           f"{date}, commit {o.commit}{' (' + o.label + ')' if o.label else ''}: {o.cpu}, {o.cores} cores, "
           f"load average {o.load_before} before / {o.load_after} after. ONNX Runtime {ort_v} "
           f"(all graph optimizations, intra-op threads = threads, sequential), PyTorch {torch_v} eager "
           "(inference mode), rlx `bench_onnx_infer` (ONNX import, `rlx_compile` for cpu). Median "
           "latency in ms after warm-up; rlx/ORT = ratio of the medians (goal <= 0.8), best = ratio of the "
           "fastest runs (steadier on a busy machine), cpu = ratio of the process CPU time per run (1 thread "
           "only: it does not count time lost to other processes); diff = max |rlx - ORT| "
           "over the output, rel = diff / max |ORT|; baseline (when given) = an older rlx build timed in "
           "the same run.", "",
           "| model | batch | threads | rlx ms | ORT ms | torch ms | rlx/ORT | rlx/ORT best | rlx/ORT cpu | rlx/torch | max abs diff | rel |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    has_base = any(r.get("base", {}).get("median_ms") for r in rows)
    if has_base:
        out[-2] = out[-2].replace("| rlx ms |", "| rlx ms | baseline ms | baseline/ORT |")
        out[-1] += "---|---|"
    def basecols(r, on):
        if not has_base:
            return ""
        b = r.get("base", {}).get("median_ms")
        return f"{b:.2f} | {b / on:.2f} | " if b and on else "— | — | "

    for r in rows:
        rl, on, tc = r["rlx"].get("median_ms"), r["ort"].get("median_ms"), r["torch"].get("median_ms")

        def f(v):
            return f"{v:.2f}" if isinstance(v, (int, float)) else "—"

        ratio = f"{rl / on:.2f}" if rl and on else "—"
        rb, ob = r["rlx"].get("best_ms"), r["ort"].get("best_ms")
        best = f"{rb / ob:.2f}" if rb and ob else "—"
        rc, oc = r["rlx"].get("cpu_ms"), r["ort"].get("cpu_ms")
        cpu = f"{rc / oc:.2f}" if rc and oc and r["threads"] == 1 else "—"
        rt = f"{rl / tc:.2f}" if rl and tc else "—"
        diff = r.get("diff", {}).get("max_abs_diff")
        rel = r.get("diff", {}).get("rel_diff")
        ds = f"{diff:.2e}" if isinstance(diff, float) else (r["rlx"].get("error", "—")[:60])
        rs = f"{rel:.1e}" if isinstance(rel, float) else "—"
        out.append(f"| {r['model']} | {r['batch']} | {r['threads']} | {f(rl)} | {basecols(r, on)}{f(on)} | {f(tc)} | {ratio} | {best} | {cpu} | {rt} "
                   f"| {ds} | {rs} |")
    # peak memory: the whole process's peak resident set, and that peak less the resident set
    # before the model was loaded (the interpreter and libraries for ORT; the bare binary for rlx)
    if any(r["rlx"].get("peak_rss_mb") and r["ort"].get("peak_rss_mb") for r in rows):
        out += ["", "Peak memory (MiB): peak = the process's peak resident set (getrusage), over base = the peak "
                "less the resident set before the model and input were loaded (for ORT after `import "
                "onnxruntime`), arena = rlx's planned arena (activations; the constants are held apart).", "",
                "| model | batch | threads | rlx peak | ORT peak | rlx over base | ORT over base | rlx/ORT over base | rlx arena |",
                "|---|---|---|---|---|---|---|---|---|"]
        for r in rows:
            rp, op_ = r["rlx"].get("peak_rss_mb"), r["ort"].get("peak_rss_mb")
            if not rp or not op_:
                continue
            ro, oo = rp - r["rlx"].get("base_rss_mb", 0.0), op_ - r["ort"].get("base_rss_mb", 0.0)
            ratio = f"{ro / oo:.2f}" if oo > 0 else "—"
            out.append(f"| {r['model']} | {r['batch']} | {r['threads']} | {rp:.0f} | {op_:.0f} | {ro:.0f} | {oo:.0f} | "
                       f"{ratio} | {r['rlx'].get('arena_mb', 0.0):.0f} |")
    out += ["", END]
    block = "\n".join(out)
    print(block)
    if o.doc == "-":
        return
    text = open(o.doc).read() if os.path.exists(o.doc) else "# Benchmarks\n"
    if BEGIN in text and END in text:
        pre = text[: text.index(BEGIN)]
        post = text[text.index(END) + len(END):]
        text = pre + block + post
    else:
        text = text.rstrip("\n") + "\n\n## Inference: rlx vs ONNX Runtime vs PyTorch eager\n\n" + \
            "Regenerated by `bench/run_infer_bench.sh` (models made by `bench/infer_bench.py export`).\n\n" + \
            block + "\n"
    with open(o.doc, "w") as f:
        f.write(text)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    c, a = sys.argv[1], sys.argv[2:]
    if c == "export":
        cmd_export(*a)
    elif c == "torch":
        cmd_torch(*a)
    elif c == "ort":
        cmd_ort(*a)
    elif c == "diff":
        cmd_diff(*a)
    elif c == "report":
        cmd_report(a)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
