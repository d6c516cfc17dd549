# SPDX-License-Identifier: MIT OR Apache-2.0
"""Summarizes the runs of bench/run_train_bench.sh and records them in docs/benchmarks.md.

Reads RUNS/{rlx,torch}.THREADS.REPEAT.json (the last line of each is the JSON line of `rlx train
--json` / train_fashion_mnist_torch.py), takes the best images/s per tool and thread count, prints
a JSON summary, then replaces the block between the train-bench markers of the document and appends
one row per thread count to its history table (both are created when missing)."""

import argparse
import datetime
import json
import os
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", required=True)
    ap.add_argument("--repeats", type=int, required=True)
    ap.add_argument("--threads", required=True, help="space-separated thread counts")
    ap.add_argument("--doc", required=True, help='"-" = print only')
    ap.add_argument("--cpu", required=True)
    ap.add_argument("--cores", required=True)
    ap.add_argument("--load-before", required=True)
    ap.add_argument("--load-after", required=True)
    ap.add_argument("--commit", required=True)
    ap.add_argument("--torch-version", required=True)
    a = ap.parse_args()

    def runs(name, t):
        out = []
        for r in range(1, a.repeats + 1):
            with open(f"{a.runs}/{name}.{t}.{r}.json") as f:
                out.append(json.loads(f.read().splitlines()[-1]))
        return out

    def best(rs):
        return max(rs, key=lambda r: r["train_images_per_second"])

    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    rows, hist, summary = [], [], {}
    for t in a.threads.split():
        rl, tl = runs("rlx", t), runs("torch", t)
        br, bt = best(rl), best(tl)
        ratio = br["train_images_per_second"] / bt["train_images_per_second"]
        summary[t] = {"rlx": br, "torch": bt, "ratio_rlx_over_torch": round(ratio, 3)}
        all_r = ", ".join(f'{r["train_images_per_second"]:.0f}' for r in rl)
        all_t = ", ".join(f'{r["train_images_per_second"]:.0f}' for r in tl)
        rows.append(f"| {t} | **{br['train_images_per_second']:.1f}** ({all_r}) | "
                    f"**{bt['train_images_per_second']:.1f}** ({all_t}) | **{ratio:.2f}** | "
                    f"{br['test_accuracy']:.4f} / {bt['test_accuracy']:.4f} | "
                    f"{br['train_seconds']:.1f} / {bt['train_seconds']:.1f} |")
        hist.append(f"| {date} | `{a.commit}` | {a.cpu} | {a.cores} | {t} | {a.load_before} | "
                    f"{br['train_images_per_second']:.1f} | {bt['train_images_per_second']:.1f} | {ratio:.2f} | "
                    f"{br['test_accuracy']:.4f} | {bt['test_accuracy']:.4f} |")
        print(f"threads {t}: rlx {br['train_images_per_second']:.1f} images/s (accuracy {br['test_accuracy']:.4f}), "
              f"torch {bt['train_images_per_second']:.1f} images/s (accuracy {bt['test_accuracy']:.4f}), "
              f"ratio rlx/torch {ratio:.2f}", file=sys.stderr)
    print(json.dumps(summary))
    if a.doc == "-":
        return

    first = summary[a.threads.split()[0]]["rlx"]
    latest = (
        "<!-- train-bench:begin (written by bench/run_train_bench.sh; edits inside are lost) -->\n"
        f"Latest run: **{date}**, commit `{a.commit}`, on **{a.cpu}, {a.cores} cores** (`nproc`), load average\n"
        f"{a.load_before} before and {a.load_after} after. Both train the CNN (conv16-conv32-fc128-fc10) for\n"
        f"{first['epochs']} epoch(s), batch {first['batch']}, Adam lr 1e-3, with the same thread count;\n"
        f"PyTorch {a.torch_version} eager. Images/s of the training loop, best of {a.repeats} run(s) (all runs in\n"
        "parentheses).\n\n"
        "| threads | rlx train images/s | PyTorch eager images/s | rlx / torch | test accuracy rlx / torch "
        "| training s rlx / torch |\n| --- | --- | --- | --- | --- | --- |\n"
        + "\n".join(rows) + "\n<!-- train-bench:end -->")
    header = ("| date | commit | CPU | cores | threads | load before | rlx images/s | torch images/s | rlx/torch "
              "| rlx accuracy | torch accuracy |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    text = open(a.doc).read() if os.path.exists(a.doc) else ""
    b, e = "<!-- train-bench:begin", "<!-- train-bench:end -->"
    if b in text and e in text:
        text = text[:text.index(b)] + latest + text[text.index(e) + len(e):]
    else:
        text = ((text.rstrip() + "\n\n") if text else "# Benchmarks\n\n") + \
            "## Fashion-MNIST training (rlx train vs PyTorch eager)\n\n" + latest + "\n"
    hb, he = "<!-- train-bench-history:begin -->", "<!-- train-bench-history:end -->"
    if hb in text and he in text:
        i, j = text.index(hb) + len(hb), text.index(he)
        text = text[:i] + "\n" + text[i:j].strip("\n") + "\n" + "\n".join(hist) + "\n" + text[j:]
    else:
        text = text.rstrip() + "\n\nHistory (one row per thread count and run of bench/run_train_bench.sh):\n\n" + \
            hb + "\n" + header + "\n" + "\n".join(hist) + "\n" + he + "\n"
    with open(a.doc, "w") as f:
        f.write(text)
    print(f"updated {a.doc}", file=sys.stderr)


if __name__ == "__main__":
    main()
