# SPDX-License-Identifier: MIT OR Apache-2.0
"""Test vectors for test_gguf_dequant, written at test time from the PyPI `gguf` and `ml_dtypes`
packages (the venv of scripts/setup.sh: RLX_GGUF_VENV, default ~/.cache/rlx/gguf-0.19.0).

    $RLX_GGUF_VENV/bin/python tests/reference/gguf_vectors.py OUTDIR

For every GGUF block format the gguf package dequantizes, OUTDIR/<Scheme>.blocks holds raw blocks
(random bytes, blocks made by gguf's own quantizers where it has them, and edge cases: all-zero
blocks, all-0xFF blocks, and every f16 scale field set to +-0, the largest finite f16, the smallest
subnormals, +-Inf and NaN) and OUTDIR/<Scheme>.values the f32 values gguf decodes them to. The
manifest OUTDIR/gguf.txt lists "<Scheme> <block elements> <block bytes> <blocks>" (Scheme as our
QuantScheme enum names it). ml_dtypes: OUTDIR/fmt.txt lists "<ScaledFormat> <codes> <encoded>"
with OUTDIR/<fmt>.decode (f32 value of every code), .enc_in (f32 inputs within the finite range,
including exact ties and subnormals) and .enc_out (the u8 code ml_dtypes rounds each to).
gguf's quantizers: OUTDIR/quant.txt lists "<Scheme> <block elements> <block bytes> <blocks>" with
OUTDIR/<Scheme>.qin (f32 blocks: random, tiny, large, zero, constant, spikes, exact halves) and
.qout (the bytes gguf quantizes them to)."""

import os
import sys

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import quants

import ml_dtypes

RNG = np.random.default_rng(20261201)

# our scheme name -> (ggml type, byte offsets of the f16 scale fields for the edge cases)
FORMATS = {
    "GgufQ4_0": (T.Q4_0, [0]), "GgufQ4_1": (T.Q4_1, [0, 2]), "GgufQ5_0": (T.Q5_0, [0]),
    "GgufQ5_1": (T.Q5_1, [0, 2]), "GgufQ8_0": (T.Q8_0, [0]), "GgufQ2K": (T.Q2_K, [80, 82]),
    "GgufQ3K": (T.Q3_K, [108]), "GgufQ4K": (T.Q4_K, [0, 2]), "GgufQ5K": (T.Q5_K, [0, 2]),
    "GgufQ6K": (T.Q6_K, [208]), "GgufTQ1_0": (T.TQ1_0, [52]), "GgufTQ2_0": (T.TQ2_0, [64]),
    "GgufIQ4NL": (T.IQ4_NL, [0]), "GgufIQ4XS": (T.IQ4_XS, [0]), "GgufIQ2XXS": (T.IQ2_XXS, [0]),
    "GgufIQ2XS": (T.IQ2_XS, [0]), "GgufIQ2S": (T.IQ2_S, [0]), "GgufIQ3XXS": (T.IQ3_XXS, [0]),
    "GgufIQ3S": (T.IQ3_S, [0]), "GgufIQ1S": (T.IQ1_S, [0]), "GgufIQ1M": (T.IQ1_M, []),
    "GgufMXFP4": (T.MXFP4, []),
}
F16_EDGES = [0x0000, 0x8000, 0x7BFF, 0xFBFF, 0x0001, 0x8001, 0x03FF, 0x0400, 0x7C00, 0xFC00, 0x7E00, 0x3C00]
QUANTIZABLE = {T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0, T.TQ1_0, T.TQ2_0, T.MXFP4}


def blocks_for(qt, f16_offsets):
    be, bb = quants.GGML_QUANT_SIZES[qt]
    parts = [RNG.integers(0, 256, size=(64, bb), dtype=np.uint8),
             np.zeros((1, bb), np.uint8), np.full((1, bb), 0xFF, np.uint8)]
    # realistic blocks: random bytes with small, sane f16 scales
    sane = RNG.integers(0, 256, size=(32, bb), dtype=np.uint8)
    for off in f16_offsets:
        sane[:, off:off + 2] = np.float16(RNG.uniform(-0.1, 0.1, 32)).reshape(32, 1).view(np.uint8).reshape(32, 2)
    parts.append(sane)
    for off in f16_offsets:
        for v in F16_EDGES:
            b = RNG.integers(0, 256, size=(1, bb), dtype=np.uint8)
            b[0, off] = v & 0xFF
            b[0, off + 1] = v >> 8
            parts.append(b)
    if qt == T.MXFP4:  # the E8M0 exponent byte at its extremes
        for e in (0, 1, 2, 126, 127, 128, 253, 254, 255):
            b = RNG.integers(0, 256, size=(1, bb), dtype=np.uint8)
            b[0, 0] = e
            parts.append(b)
    if qt == T.IQ1_M:  # the f16 scale is spread over the top nibbles of four u16
        for v in F16_EDGES:
            b = RNG.integers(0, 256, size=(1, bb), dtype=np.uint8)
            sc = b[0, 48:56].copy().view(np.uint16)
            for k in range(4):
                sc[k] = (sc[k] & 0x0FFF) | (((v >> (4 * k)) & 0xF) << 12)
            b[0, 48:56] = sc.view(np.uint8)
            parts.append(b)
    if qt in QUANTIZABLE:  # blocks made by gguf's own quantizer
        data = RNG.normal(0, 1, size=(16, be)).astype(np.float32)
        data[0] = 0
        data[1, :] = 1e-8
        q = quants.quantize(data, qt)
        parts.append(q.reshape(-1, bb))
    return np.concatenate(parts, axis=0)


def write_gguf(out):
    lines = []
    for name, (qt, offs) in FORMATS.items():
        be, bb = quants.GGML_QUANT_SIZES[qt]
        blk = blocks_for(qt, offs)
        with np.errstate(all="ignore"):
            vals = quants.dequantize(blk.reshape(-1), qt).astype(np.float32).reshape(-1)
        blk.tofile(os.path.join(out, name + ".blocks"))
        vals.tofile(os.path.join(out, name + ".values"))
        lines.append("%s %d %d %d" % (name, be, bb, blk.shape[0]))
    # NVFP4: gguf's block is 64 elements (4 E4M3 scales, then 4 x 8 bytes of nibbles); ours is the
    # per-16 block (scale, 8 bytes). Same values, re-packed.
    be, bb = quants.GGML_QUANT_SIZES[T.NVFP4]
    g = RNG.integers(0, 256, size=(48, bb), dtype=np.uint8)
    g[0, 0:4] = [0, 0x7F, 0xFF, 0x80]
    with np.errstate(all="ignore"):
        vals = quants.dequantize(g.reshape(-1), T.NVFP4).astype(np.float32).reshape(-1)
    ours = np.concatenate([g[:, 0:4].reshape(-1, 4, 1), g[:, 4:36].reshape(-1, 4, 8)], axis=2).reshape(-1, 9)
    ours.tofile(os.path.join(out, "GgufNVFP4.blocks"))
    vals.tofile(os.path.join(out, "GgufNVFP4.values"))
    lines.append("GgufNVFP4 16 9 %d" % ours.shape[0])
    with open(os.path.join(out, "gguf.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


QUANTIZERS = {"GgufQ4_0": T.Q4_0, "GgufQ4_1": T.Q4_1, "GgufQ5_0": T.Q5_0, "GgufQ5_1": T.Q5_1, "GgufQ8_0": T.Q8_0,
              "GgufTQ1_0": T.TQ1_0, "GgufTQ2_0": T.TQ2_0, "GgufMXFP4": T.MXFP4}


def near_pow2(be):
    """Blocks whose largest magnitude is a power of two or the float32 just below one."""
    rows = []
    for p in (-3, 0, 2, 5):
        for top in (np.float32(2.0 ** p), np.nextafter(np.float32(2.0 ** p), np.float32(0))):
            r = RNG.uniform(-1, 1, be).astype(np.float32) * top * np.float32(0.9)
            r[RNG.integers(0, be)] = -top if p % 2 else top
            rows.append(r)
    return np.array(rows)


def write_quantizers(out):
    """Rows of f32 blocks and the bytes gguf's quantizers make of them."""
    lines = []
    for name, qt in QUANTIZERS.items():
        be, bb = quants.GGML_QUANT_SIZES[qt]
        parts = [RNG.normal(0, 1, size=(40, be)), RNG.uniform(-3, 3, size=(20, be)),
                 RNG.normal(0, 1e-5, size=(4, be)), RNG.normal(0, 300, size=(4, be)),
                 np.zeros((1, be)), np.full((1, be), 0.75), np.full((1, be), -2.0),
                 np.where(np.arange(be) == 5, -1.0, 0.0).reshape(1, be),      # one negative spike
                 np.round(RNG.normal(0, 4, size=(4, be))) / 2,                  # many exact halves
                 near_pow2(be)]
        x = np.concatenate(parts).astype(np.float32)
        q = quants.quantize(x, qt).reshape(-1)
        x.tofile(os.path.join(out, name + ".qin"))
        q.tofile(os.path.join(out, name + ".qout"))
        lines.append("%s %d %d %d" % (name, be, bb, x.shape[0]))
    with open(os.path.join(out, "quant.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


FMTS = {"F8E4M3": ml_dtypes.float8_e4m3fn, "F8E5M2": ml_dtypes.float8_e5m2,
        "F8E4M3Fnuz": ml_dtypes.float8_e4m3fnuz, "F8E5M2Fnuz": ml_dtypes.float8_e5m2fnuz,
        "F6E2M3": ml_dtypes.float6_e2m3fn, "F6E3M2": ml_dtypes.float6_e3m2fn, "F4E2M1": ml_dtypes.float4_e2m1fn}
BITS = {"F8E4M3": 8, "F8E5M2": 8, "F8E4M3Fnuz": 8, "F8E5M2Fnuz": 8, "F6E2M3": 6, "F6E3M2": 6, "F4E2M1": 4}


def write_fmts(out):
    lines = []
    for name, dt in FMTS.items():
        n = 1 << BITS[name]
        dec = np.arange(n, dtype=np.uint8).view(dt).astype(np.float32)
        fin = np.sort(np.unique(np.abs(dec[np.isfinite(dec)])))
        mx = float(fin[-1])
        mids = (fin[:-1].astype(np.float64) + fin[1:]) / 2  # exact ties
        xs = np.concatenate([RNG.uniform(-mx, mx, 3000), mids, -mids, fin, -fin, [0.0, -0.0],
                             RNG.uniform(-fin[1] * 4, fin[1] * 4, 500)]).astype(np.float32)
        xs = xs[np.abs(xs) <= mx]
        codes = xs.astype(dt).view(np.uint8)
        dec.tofile(os.path.join(out, name + ".decode"))
        xs.tofile(os.path.join(out, name + ".enc_in"))
        codes.tofile(os.path.join(out, name + ".enc_out"))
        lines.append("%s %d %d" % (name, n, xs.size))
    with open(os.path.join(out, "fmt.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    write_gguf(out)
    write_quantizers(out)
    write_fmts(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
