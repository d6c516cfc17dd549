# SPDX-License-Identifier: MIT OR Apache-2.0
"""The independent float64 reference of the op conformance suite (docs/testing.md).

    /usr/bin/python3 tests/reference/conformance_ref.py DUMPDIR [--results FILE] [--filter SUBSTR] [-v]

DUMPDIR is what `test_conformance --dump DUMPDIR` wrote: one folder per case holding case.json
(op, every attribute, operand and output dtypes/shapes), in<i>.npy (the inputs) and out.npy (what
RLX's CPU backend computed). For every case this script recomputes the op from its spec with
NumPy / PyTorch in float64 (tests/reference/ref_*.py; nothing here calls RLX), rounds the result
to the output dtype and compares:
  - floats: |got - ref| <= tol * |ref| (+ the smallest normal number), tol = 4 * eps(dtype) * the
    op's and the case's multipliers; for ops that sum many terms (ACCUMULATING) the absolute part is
    tol * max(1, max|ref|) instead; NaN must meet NaN and infinities must match exactly;
  - integers and bool: exactly; the output dtype and shape must match as well.
Random cases (RngNormal, RngUniform and Sample's frequency cases) are checked statistically by the
C test and skipped here. A case whose op has no reference here fails.
Prints PASS/FAIL per case and ends with "N passed, N failed"; exits 1 when anything failed."""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

try:
    import numpy as np
    import torch  # noqa: F401
except ImportError as e:  # pragma: no cover
    print("conformance_ref.py: %s lacks NumPy or PyTorch (%s).\n"
          "Install Debian's python3-numpy and python3-torch: run scripts/setup.sh." % (sys.executable, e))
    sys.exit(2)

import ref_backward  # noqa: E402
import ref_elementwise  # noqa: E402
import ref_fused  # noqa: E402
import ref_linalg  # noqa: E402
import ref_nn  # noqa: E402
import ref_recurrent  # noqa: E402
import ref_reduce  # noqa: E402
import ref_shape  # noqa: E402
import ref_signal  # noqa: E402
import ref_custom  # noqa: E402  (issue 11: Custom registry)
import ref_splat  # noqa: E402  (issue 11: Gaussian splatting)
import ref_spd  # noqa: E402  (issue 11: SPD / eigen)
import ref_quant  # noqa: E402  (quantization family)
from ref_util import COMPLEX, EPS, FLOATS, as_compute, round_to  # noqa: E402

np.seterr(all="ignore")  # NaN / Inf cases evaluate IEEE arithmetic on purpose
REF = {}
FAMILY_MODULES = (ref_elementwise, ref_shape, ref_reduce, ref_linalg, ref_nn, ref_fused, ref_backward, ref_signal,
                  ref_recurrent, ref_quant, ref_spd, ref_custom, ref_splat)
for mod in FAMILY_MODULES:
    REF.update(mod.REF)

# Error budget of an op beyond one rounding, as a multiple of the default tolerance: kernels that
# accumulate in the operand's precision (BLAS / LAPACK in f32), factorisations (error grows with
# the condition number) and multi-stage composites (rounded between stages when decomposed).
OP_TOL = {
    "MatMul": 16, "DotGeneral": 16, "GroupedMatMul": 16, "LoraMatMul": 16, "FusedMatMulBiasAct": 16,
    "FusedMatMulResidual": 16, "DenseSolve": 64, "BatchedDenseSolve": 64, "TriangularSolve": 64,
    "Cholesky": 64, "Det": 64, "LogDet": 64, "Svd": 256, "Qr": 64, "Eigh": 256, "EighBatch": 256,
    "FusedAttentionBlock": 64, "FusedTransformerLayer": 256, "FusedConvBiasAct": 8, "FusedResidualLN": 4,
    "FusedResidualRmsNorm": 4, "AdaLayerNorm": 4, "GroupNorm": 4, "BatchNormInference": 4, "FakeQuantize": 4,
    "ElementwiseRegion": 4, "BatchElementwiseRegion": 4, "Attention": 4, "CumProd": 4, "Softmax": 2, "Fft": 4,
    # sequence models and signal ops (ref_recurrent.py, ref_signal.py): recurrences compound rounding
    "Lstm": 16, "Gru": 16, "Rnn": 16, "SelectiveScan": 16, "Mamba2": 16, "GatedDeltaNet": 16,
    "GatedDeltaNetBackward": 64, "LogMel": 4, "LogMelBackward": 16, "WelchPeaks": 4, "PartitionedConv": 4,
    "FftQ": 4,
}


# Ops whose outputs are sums of many terms (cancellation): their absolute tolerance scales with the
# largest output magnitude. Every other op is held to a per-element relative tolerance.
ACCUMULATING = {
    "MatMul", "DotGeneral", "GroupedMatMul", "LoraMatMul", "FusedMatMulBiasAct", "FusedMatMulResidual",
    "DenseSolve", "BatchedDenseSolve", "TriangularSolve", "Cholesky", "Det", "LogDet", "Svd", "Qr", "Eigh",
    "EighBatch", "Conv", "Conv3d", "ConvTranspose2d", "ConvTranspose3d", "FusedConvBiasAct", "Pool", "Reduce",
    "Softmax", "Cumsum", "CumProd", "LayerNorm", "LayerNorm2d", "GroupNorm", "BatchNormInference", "RmsNorm",
    "AdaLayerNorm", "GatedResidual", "FusedResidualLN", "FusedResidualRmsNorm", "Attention", "Rope",
    "AxialRope2d", "FusedAttentionBlock", "FusedTransformerLayer", "ScatterAdd", "ScatterNd", "ScatterElements",
    "Scan", "While", "ElementwiseRegion", "BatchElementwiseRegion", "FakeQuantize", "Fft",
    "Lstm", "Gru", "Rnn", "SelectiveScan", "Mamba2", "GatedDeltaNet", "GatedDeltaNetBackward", "LogMel",
    "LogMelBackward", "WelchPeaks", "PartitionedConv", "FftQ", "FftButterflyStage",
    # backward ops: gradients are sums over the forward's uses
    "SoftmaxCrossEntropy", "SoftmaxCrossEntropyWithLogits", "SoftmaxCrossEntropyBackward", "AttentionBackward",
    "AttentionBackwardAll", "LayerNormBackwardInput", "LayerNormBackwardGamma", "RmsNormBackwardInput",
    "RmsNormBackwardGamma", "RmsNormBackwardBeta", "GroupNormBackwardInput", "GroupNormBackwardGamma",
    "GroupNormBackwardBeta", "BatchNormInferenceBackwardGamma", "BatchNormInferenceBackwardBeta",
    "AdaLayerNormBackward", "GatedResidualBackward", "RopeBackward", "CumsumBackward", "GatherBackward",
    "Conv2dBackwardInput", "Conv2dBackwardWeight", "Conv3dBackwardInput", "Conv3dBackwardWeight",
    "MaxPool2dBackward", "MaxPool3dBackward", "ScanBackward", "ScanBackwardXs",
}
# A family module may carry its own tolerance entries (OP_TOL, ACCUMULATING) next to its REF.
for mod in FAMILY_MODULES:
    OP_TOL.update(getattr(mod, "OP_TOL", {}))
    ACCUMULATING.update(getattr(mod, "ACCUMULATING", ()))
TINY = {"f64": 2.2250738585072014e-308, "f32": 1.1754944e-38, "f16": 6.1035156e-05, "bf16": 1.1754944e-38,
        "c64": 1.1754944e-38, "c128": 2.2250738585072014e-308}


def load_inputs(case, folder):
    xs = []
    for meta in case["inputs"]:
        arr = np.load(os.path.join(folder, meta["file"]), allow_pickle=False)
        if list(arr.shape) != list(meta["shape"]):
            raise AssertionError("%s has shape %s, case.json says %s" % (meta["file"], arr.shape, meta["shape"]))
        xs.append(as_compute(arr, meta["dtype"]))
    return xs


def compare(case, got, ref, dtype):
    """Returns None when got matches ref, else a reason."""
    if list(got.shape) != list(ref.shape):
        return "shape %s, reference %s" % (list(got.shape), list(ref.shape))
    if dtype not in FLOATS and dtype not in COMPLEX:
        g = [int(v) for v in np.asarray(got).reshape(-1).tolist()]
        r = np.asarray(ref).reshape(-1)
        r = [int(v) if not isinstance(v, (float, np.floating)) else int(round(float(v))) for v in r.tolist()]
        for i, (a, b) in enumerate(zip(g, r)):
            if a != b:
                return "element %d: got %d, reference %d" % (i, a, b)
        return None
    tol = 4 * EPS[dtype] * OP_TOL.get(case["op"], 1) * float(case.get("tol", 1))
    ref = round_to(np.asarray(ref, dtype=np.complex128 if dtype in COMPLEX else np.float64), dtype)
    got = np.asarray(got, dtype=np.complex128 if dtype in COMPLEX else np.float64)
    parts = [(np.real(got), np.real(ref), "")] + ([(np.imag(got), np.imag(ref), " (imag)")] if dtype in COMPLEX else [])
    for g, r, what in parts:
        g = g.reshape(-1)
        r = r.reshape(-1)
        finite = np.isfinite(r)
        if case["op"] in ACCUMULATING:
            scale = max(1.0, float(np.max(np.abs(r[finite])))) if finite.any() else 1.0
        else:
            scale = TINY[dtype] / tol
        for i in range(r.size):
            a, b = g[i], r[i]
            if np.isnan(b):
                ok = np.isnan(a)
            elif np.isinf(b):
                ok = a == b
            else:
                ok = np.isfinite(a) and abs(a - b) <= tol * (scale + abs(b))
            if not ok:
                return "element %d%s: got %.9g, reference %.9g (tolerance %.3g)" % (i, what, a, b, tol * (scale + abs(b)))
    return None


def check_case(folder):
    with open(os.path.join(folder, "case.json")) as f:
        case = json.load(f)
    name = case["name"]
    if case["check"] != "values":
        return name, "SKIP", "random op, checked statistically by test_conformance"
    if case.get("output") is None:
        return name, "FAIL", "RLX failed to run the case: " + case.get("error", "(no message)")
    fn = REF.get(case["op"])
    if fn is None:
        return name, "FAIL", "no float64 reference for op " + case["op"]
    try:
        xs = load_inputs(case, folder)
        res = fn(case, xs)
    except Exception as e:  # a reference that cannot handle the case is a failure, never a skip
        return name, "FAIL", "reference raised %s: %s" % (type(e).__name__, e)
    ref, want_dtype = res if isinstance(res, tuple) else (res, case["inputs"][0]["dtype"])
    out = case["output"]
    if out["dtype"] != want_dtype:
        return name, "FAIL", "output dtype %s, reference %s" % (out["dtype"], want_dtype)
    try:
        got = np.load(os.path.join(folder, out["file"]), allow_pickle=False)
        why = compare(case, got, np.asarray(ref), out["dtype"])
    except Exception as e:
        return name, "FAIL", "comparison raised %s: %s" % (type(e).__name__, e)
    return (name, "PASS", "") if why is None else (name, "FAIL", why)


def main(argv):
    args = argv[1:]
    results_path = filt = None
    verbose = False
    dirs = []
    while args:
        a = args.pop(0)
        if a == "--results" and args:
            results_path = args.pop(0)
        elif a == "--filter" and args:
            filt = args.pop(0)
        elif a == "-v":
            verbose = True
        else:
            dirs.append(a)
    if len(dirs) != 1:
        print(__doc__)
        return 2
    root = dirs[0]
    folders = sorted(d for d in os.listdir(root) if os.path.isfile(os.path.join(root, d, "case.json")))
    if filt:
        folders = [d for d in folders if filt in d]
    passed = failed = skipped = 0
    lines = []
    for d in folders:
        name, verdict, why = check_case(os.path.join(root, d))
        lines.append("%s %s%s" % (verdict, name, (" " + why) if why else ""))
        if verdict == "PASS":
            passed += 1
            if verbose:
                print("PASS %s" % name)
        elif verdict == "FAIL":
            failed += 1
            print("FAIL %s: %s" % (name, why))
        else:
            skipped += 1
            if verbose:
                print("SKIP %s (%s)" % (name, why))
    if results_path:
        with open(results_path, "w") as f:
            f.write("\n".join(lines) + "\n")
    if skipped:
        print("%d random cases skipped (checked statistically by test_conformance)" % skipped)
    print("%d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
