# SPDX-License-Identifier: MIT OR Apache-2.0
"""Float64 references of the quantization family (shared/spec/ir-special.md §1, and our recorded
decisions in src/backends/cpu/ref/quant.c's header): Quantize / Dequantize, the FakeQuantize family,
QMatMul / QConv2d, DequantMatMul in its schemes, the grouped / MoE dequantizing matmuls, the Scaled*
low-precision family and the codebook (synth) / spline ops.

GGUF blocks are decoded here with NumPy from the ggml layouts, in float32 in ggml's order; the C
decoders are additionally checked bit for bit against the PyPI gguf package by test_gguf_dequant.
Scaled element formats are decoded from (exp, mant, bias) and encoded by an exhaustive nearest
search (ties to the even code), saturating, NaN -> code 0."""

import math

import numpy as np

from ref_util import norm_axis

F32 = np.float32

# ---------------------------------------------------------------------------------------------
# Quantize / Dequantize / FakeQuantize
# ---------------------------------------------------------------------------------------------


def _chan_index(shape, axis, per_channel):
    """Channel of every element (flattened), 0 when per tensor."""
    n = int(np.prod(shape)) if len(shape) else 1
    if not per_channel:
        return np.zeros(n, dtype=np.int64)
    ax = norm_axis(axis, len(shape))
    idx = np.indices(shape).reshape(len(shape), -1)[ax]
    return idx.astype(np.int64)


def _round_away(v):
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


def ref_quantize(case, xs):
    a = case["attrs"]
    x = xs[0].reshape(-1)
    scales = np.array(a["scales"], dtype=np.float64)
    zps = np.array(a["zero_points"] or [0], dtype=np.float64)
    c = _chan_index(xs[0].shape, a["axis"], len(scales) > 1)
    s = scales[c if len(scales) > 1 else 0]
    z = zps[c if len(zps) > 1 else 0]
    with np.errstate(all="ignore"):
        q = np.where(np.isnan(x), z, _round_away(x * (1.0 / s)) + z)
    return np.clip(q, -128, 127).astype(np.int64).reshape(xs[0].shape), "i8"


def ref_dequantize(case, xs):
    a = case["attrs"]
    q = xs[0].reshape(-1).astype(np.float64)
    scales = np.array(a["scales"], dtype=np.float64)
    zps = np.array(a["zero_points"] or [0], dtype=np.float64)
    c = _chan_index(xs[0].shape, a["axis"], len(scales) > 1)
    s = scales[c if len(scales) > 1 else 0]
    z = zps[c if len(zps) > 1 else 0]
    return ((q - z) * s).reshape(xs[0].shape), "f32"


QMAX = {8: 127.0, 4: 7.0, 2: 1.0}


def _per_channel(x, axis, v):
    """v (1 or dim(axis) values) broadcast against x along axis."""
    v = np.asarray(v, dtype=np.float64).reshape(-1)
    if v.size == 1:
        return v.reshape(())
    ax = norm_axis(axis, x.ndim)
    shape = [1] * x.ndim
    shape[ax] = x.shape[ax]
    return v.reshape(shape)


def _amax(x, axis):
    ax = norm_axis(axis, x.ndim)
    others = tuple(i for i in range(x.ndim) if i != ax)
    a = np.abs(x)
    a = np.where(np.isnan(a), 0.0, a)
    return np.max(a, axis=others, keepdims=True) if others else a


def ref_fake_quantize(case, xs):
    a = case["attrs"]
    x = xs[0]
    qmax = QMAX[int(a["bits"])]
    mode = a["scale_mode"]
    cur = np.maximum(_amax(x, a["axis"]) / qmax, 1e-12)
    if mode == "PerBatch":
        s = cur
    elif mode == "Fixed":
        s = np.maximum(_per_channel(x, a["axis"], xs[1]), 1e-12)
    else:
        st = _per_channel(x, a["axis"], xs[1])
        d = float(np.float32(a["decay"]))
        s = np.where(st <= 0, cur, d * st + (1 - d) * cur)
    return np.clip(np.round(x / s), -qmax, qmax) * s  # half to even


def ref_fq_backward(case, xs):
    a = case["attrs"]
    x, dy = xs
    qmax = QMAX[int(a["bits"])]
    s = np.maximum(_amax(x, a["axis"]) / qmax, 1e-12)
    ste = a["ste"]
    if ste == "Identity":
        return dy
    if ste == "ClippedIdentity":
        return np.where(np.abs(x) <= qmax * s, dy, 0.0)
    if ste == "Tanh":
        return dy * (1 - np.tanh(x / s) ** 2)
    return dy * np.maximum(0.0, 1 - np.abs(x) / (qmax * s))


def ref_lsq(case, xs):
    a = case["attrs"]
    x = xs[0]
    qmax = QMAX[int(a["bits"])]
    s = np.maximum(_per_channel(x, a["axis"], xs[1]), 1e-12)
    return np.clip(np.round(x / s), -qmax, qmax) * s


def ref_lsq_bx(case, xs):
    a = case["attrs"]
    x, sc, dy = xs
    qmax = QMAX[int(a["bits"])]
    z = x / np.maximum(_per_channel(x, a["axis"], sc), 1e-12)
    return np.where(np.abs(z) <= qmax, dy, 0.0)


def ref_lsq_bs(case, xs):
    a = case["attrs"]
    x, sc, dy = xs
    qmax = QMAX[int(a["bits"])]
    z = x / np.maximum(_per_channel(x, a["axis"], sc), 1e-12)
    psi = np.where(z > qmax, qmax, np.where(z < -qmax, -qmax, np.round(z) - z))
    g = psi * dy
    if sc.size == 1:
        return np.array(g.sum()).reshape(sc.shape), case["inputs"][1]["dtype"]
    ax = norm_axis(a["axis"], x.ndim)
    others = tuple(i for i in range(x.ndim) if i != ax)
    return g.sum(axis=others).reshape(sc.shape), case["inputs"][1]["dtype"]


# ---------------------------------------------------------------------------------------------
# QMatMul / QConv2d
# ---------------------------------------------------------------------------------------------


def _requant(acc, mult, out_zp):
    v = _round_away(acc.astype(np.float64) * float(np.float32(mult))) + out_zp
    return np.clip(v, -128, 127).astype(np.int64)


def ref_qmatmul(case, xs):
    a = case["attrs"]
    x, w, b = (v.astype(np.int64) for v in xs)
    acc = (x - a["x_zp"]) @ (w - a["w_zp"]) + b[None, :]
    return _requant(acc, a["mult"], a["out_zp"]), "i8"


def ref_qconv2d(case, xs):
    a = case["attrs"]
    x, w, b = (v.astype(np.int64) for v in xs)
    N, C, H, W = x.shape
    Co, Cg, kh, kw = w.shape
    g = int(a["groups"])
    st = a["stride"] or [1, 1]
    dl = a["dilation"] or [1, 1]
    pad = a["padding"] or [0, 0]
    pb = [pad[0], pad[1]]
    pe = [pad[0], pad[1]] if len(pad) == 2 else [pad[2], pad[3]]
    xz = np.pad(x - a["x_zp"], ((0, 0), (0, 0), (pb[0], pe[0]), (pb[1], pe[1])))
    Ho = (H + pb[0] + pe[0] - dl[0] * (kh - 1) - 1) // st[0] + 1
    Wo = (W + pb[1] + pe[1] - dl[1] * (kw - 1) - 1) // st[1] + 1
    out = np.zeros((N, Co, Ho, Wo), dtype=np.int64)
    wz = w - a["w_zp"]
    cog = Co // g
    for co in range(Co):
        gi = co // cog
        for r in range(kh):
            for s in range(kw):
                patch = xz[:, gi * Cg:(gi + 1) * Cg, r * dl[0]:r * dl[0] + st[0] * (Ho - 1) + 1:st[0],
                           s * dl[1]:s * dl[1] + st[1] * (Wo - 1) + 1:st[1]]
                out[:, co] += np.einsum("nchw,c->nhw", patch, wz[co, :, r, s])
        out[:, co] += b[co]
    return _requant(out, a["mult"], a["out_zp"]), "i8"


# ---------------------------------------------------------------------------------------------
# Element formats
# ---------------------------------------------------------------------------------------------

FMT = {"F8E4M3": (4, 3, 7), "F8E5M2": (5, 2, 15), "F8E4M3Fnuz": (4, 3, 8), "F8E5M2Fnuz": (5, 2, 16),
       "F6E2M3": (2, 3, 1), "F6E3M2": (3, 2, 3), "F4E2M1": (2, 1, 1)}


def fmt_table(name, e=0, m=0, bias=0):
    """Value of every code 0 .. 2^(1+e+m)-1 (float64; NaN / inf where the format has them)."""
    if name != "Custom":
        e, m, bias = FMT[name]
    nb = e + m
    vals = []
    for c in range(1 << (nb + 1)):
        sign = (c >> nb) & 1
        ex = (c >> m) & ((1 << e) - 1)
        mant = c & ((1 << m) - 1)
        if ex == 0:
            v = mant / 2.0 ** m * 2.0 ** (1 - bias)
        else:
            v = (1 + mant / 2.0 ** m) * 2.0 ** (ex - bias)
        if name == "F8E4M3" and ex == 15 and mant == 7:
            v = math.nan
        if name == "F8E5M2" and ex == 31:
            v = math.inf if mant == 0 else math.nan
        if name in ("F8E4M3Fnuz", "F8E5M2Fnuz") and c == 0x80:
            v = math.nan
        vals.append(-v if sign else v)
    return np.array(vals, dtype=np.float64)


def fmt_decode(table, codes):
    nb = int(round(math.log2(len(table))))
    return table[np.asarray(codes, dtype=np.int64) & ((1 << nb) - 1)]


def fmt_encode(table, v):
    v = np.asarray(v, dtype=np.float64).reshape(-1)
    n = len(table)
    half = n // 2
    mags = table[:half]
    finite = np.isfinite(mags)
    mmax = np.max(mags[finite])
    fnuz = bool(np.isnan(table[half]))
    out = np.zeros(v.size, dtype=np.int64)
    for i, x in enumerate(v):
        if np.isnan(x):
            out[i] = 0
            continue
        a = min(abs(x), mmax)
        err = np.where(finite, np.abs(mags - a), np.inf)
        best = np.flatnonzero(err == err.min())
        even = [c for c in best if c % 2 == 0]
        c = int(even[0] if even else best[0])
        if math.copysign(1.0, x) < 0 and not (fnuz and c == 0):
            c |= half
        out[i] = c
    return out


def _fmt_of(a, key="format"):
    return fmt_table(a[key], a.get("custom_exp", 0), a.get("custom_mant", 0), a.get("custom_bias", 0))


def e8m0(b):
    b = np.asarray(b, dtype=np.float64)
    return np.where(b == 255, np.nan, 2.0 ** (b - 127))


E4M3 = fmt_table("F8E4M3")


def e4m3_scale(b):
    v = fmt_decode(E4M3, b)
    return np.where(np.isnan(v), 0.0, v)


def _scales(a, s, rows, K):
    """Per-element scale of a [rows, K] operand."""
    if a["layout"] == "PerTensor":
        return np.full((rows, K), float(np.asarray(s).reshape(-1)[0]))
    blk = int(a["block"])
    nblk = -(-K // blk)
    b = np.asarray(s).reshape(rows, nblk)
    v = e8m0(b) if a["layout"] == "BlockMxE8M0" else e4m3_scale(b)
    return np.repeat(v, blk, axis=1)[:, :K]


def ref_sq_scale(case, xs):
    a = case["attrs"]
    x = xs[0]
    t = _fmt_of(a)
    fmax = np.max(t[np.isfinite(t)])
    K = x.shape[-1]
    rows = x.size // K
    if a["layout"] == "PerTensor":
        am = np.max(np.abs(x))
        return np.array([1.0 if am == 0 else am / fmax]), "f32"
    blk = int(a["block"])
    nblk = -(-K // blk)
    xr = np.abs(x.reshape(rows, K))
    out = np.zeros((rows, nblk), dtype=np.int64)
    for r in range(rows):
        for b in range(nblk):
            am = np.max(xr[r, b * blk:(b + 1) * blk])
            s = 1.0 if am == 0 else am / fmax
            if a["layout"] == "BlockMxE8M0":
                out[r, b] = min(max(math.ceil(math.log2(s)) + 127, 0), 254)
            else:
                out[r, b] = fmt_encode(E4M3, [s])[0]
    return out.reshape(x.shape[:-1] + (nblk,)), "u8"


def ref_sq_quantize(case, xs):
    a = case["attrs"]
    x, s = xs
    K = x.shape[-1]
    rows = x.size // K
    t = _fmt_of(a)
    with np.errstate(all="ignore"):
        v = x.reshape(rows, K) / _scales(a, s, rows, K)
    return fmt_encode(t, v).reshape(x.shape), "u8"


def ref_sq_dequantize(case, xs):
    a = case["attrs"]
    c, s = xs
    K = c.shape[-1]
    rows = c.size // K
    t = _fmt_of(a)
    return (fmt_decode(t, c.reshape(rows, K)) * _scales(a, s, rows, K)).reshape(c.shape), "f32"


def ref_scaled_matmul(case, xs):
    a = case["attrs"]
    L = fmt_decode(fmt_table(a["lhs_format"]), xs[0]) * _scales(a, xs[2], *xs[0].shape)
    R = fmt_decode(fmt_table(a["rhs_format"]), xs[1]) * _scales(a, xs[3], *xs[1].shape)
    out = L @ R.T
    if a["has_bias"]:
        out = out + xs[4][None, :]
    return out, "f32"


def ref_scaled_grouped_matmul(case, xs):
    a = case["attrs"]
    ic, wc = xs[0], xs[1]
    E, N, K = wc.shape
    X = fmt_decode(fmt_table(a["lhs_format"]), ic) * _scales(a, xs[2], *ic.shape)
    W = (fmt_decode(fmt_table(a["rhs_format"]), wc.reshape(E * N, K)) * _scales(a, xs[3], E * N, K)).reshape(E, N, K)
    idx = xs[4].astype(np.int64)
    out = np.stack([W[idx[i]] @ X[i] for i in range(ic.shape[0])]) if ic.shape[0] else np.zeros((0, N))
    if a["has_bias"]:
        out = out + xs[5][idx]
    return out, "f32"


# ---------------------------------------------------------------------------------------------
# GGUF blocks (float32 arithmetic in ggml's order)
# ---------------------------------------------------------------------------------------------


def _f16(b, off):
    return b[:, off:off + 2].copy().view(np.float16).astype(F32)[:, 0]


def _f32(b, off):
    return b[:, off:off + 4].copy().view(np.float32)[:, 0]


def _nib_split(qs):
    """(nb, 16) bytes -> (nb, 32): 16 low nibbles, then 16 high nibbles."""
    return np.concatenate([qs & 15, qs >> 4], axis=1).astype(np.int64)


def g_q4_0(b):
    d = _f16(b, 0)[:, None]
    return d * (_nib_split(b[:, 2:18]) - 8).astype(F32)


def g_q4_1(b):
    d, m = _f16(b, 0)[:, None], _f16(b, 2)[:, None]
    return d * _nib_split(b[:, 4:20]).astype(F32) + m


def _qh_bits(b, off):
    qh = b[:, off:off + 4].copy().view(np.uint32)[:, 0].astype(np.int64)
    return (qh[:, None] >> np.arange(32)) & 1


def g_q5_0(b):
    d = _f16(b, 0)[:, None]
    q = _nib_split(b[:, 6:22]) | (_qh_bits(b, 2) << 4)
    return d * (q - 16).astype(F32)


def g_q5_1(b):
    d, m = _f16(b, 0)[:, None], _f16(b, 2)[:, None]
    q = _nib_split(b[:, 8:24]) | (_qh_bits(b, 4) << 4)
    return d * q.astype(F32) + m


def g_q8_0(b):
    return b[:, 2:34].view(np.int8).astype(F32) * _f16(b, 0)[:, None]


def _crumbs(qs):
    """(nb, 64) bytes of 2-bit codes -> (nb, 256): element h*128 + s*32 + l = bits 2s of byte h*32+l."""
    nb = qs.shape[0]
    q = qs.reshape(nb, 2, 1, 32).astype(np.int64) >> (2 * np.arange(4)).reshape(1, 1, 4, 1)
    return (q & 3).reshape(nb, 256)


def g_q2_k(b):
    nb = b.shape[0]
    sc = b[:, 0:16].astype(np.int64)
    d, dmin = _f16(b, 80)[:, None], _f16(b, 82)[:, None]
    dl = np.repeat(d * (sc & 15).astype(F32), 16, axis=1)
    ml = np.repeat(dmin * (sc >> 4).astype(F32), 16, axis=1)
    return (dl * _crumbs(b[:, 16:80]).astype(F32) - ml).reshape(nb, 256)


def g_q3_k(b):
    nb = b.shape[0]
    hm = b[:, 0:32].astype(np.int64)
    sc = b[:, 96:108].astype(np.int64)
    d = _f16(b, 108)[:, None]
    lo = np.concatenate([sc[:, 0:8] & 15, sc[:, 0:8] >> 4], axis=1)
    hi = np.stack([(sc[:, 8 + i % 4] >> (2 * (i // 4))) & 3 for i in range(16)], axis=1)
    s = ((lo | (hi << 4)) - 32).astype(F32)
    dl = np.repeat(d * s, 16, axis=1)
    hb = ((hm[:, None, :] >> np.arange(8)[None, :, None]) & 1).reshape(nb, 256)
    q = _crumbs(b[:, 32:96]) - np.where(hb == 1, 0, 4)
    return dl * q.astype(F32)


def _k_scales(s):
    s = s.astype(np.int64)
    sc = np.concatenate([s[:, 0:4] & 63, (s[:, 8:12] & 15) | ((s[:, 0:4] >> 6) << 4)], axis=1)
    mn = np.concatenate([s[:, 4:8] & 63, (s[:, 8:12] >> 4) | ((s[:, 4:8] >> 6) << 4)], axis=1)
    return sc.astype(F32), mn.astype(F32)


def _k_nibbles(qs):
    """(nb, 128) -> (nb, 256): sub-block c*2 + s is nibble s of bytes c*32 .. c*32 + 31."""
    nb = qs.shape[0]
    q = qs.reshape(nb, 4, 1, 32).astype(np.int64) >> (4 * np.arange(2)).reshape(1, 1, 2, 1)
    return (q & 15).reshape(nb, 256)


def g_q4_k(b):
    d, dmin = _f16(b, 0)[:, None], _f16(b, 2)[:, None]
    sc, mn = _k_scales(b[:, 4:16])
    return np.repeat(d * sc, 32, axis=1) * _k_nibbles(b[:, 16:144]).astype(F32) - np.repeat(dmin * mn, 32, axis=1)


def g_q5_k(b):
    nb = b.shape[0]
    d, dmin = _f16(b, 0)[:, None], _f16(b, 2)[:, None]
    sc, mn = _k_scales(b[:, 4:16])
    qh = b[:, 16:48].astype(np.int64)
    hb = ((qh[:, None, :] >> np.arange(8)[None, :, None]) & 1).reshape(nb, 256)
    q = _k_nibbles(b[:, 48:176]) | (hb << 4)
    return np.repeat(d * sc, 32, axis=1) * q.astype(F32) - np.repeat(dmin * mn, 32, axis=1)


def g_q6_k(b):
    nb = b.shape[0]
    ql = b[:, 0:128].astype(np.int64)
    qh = b[:, 128:192].astype(np.int64)
    sc = b[:, 192:208].view(np.int8).astype(F32)
    d = _f16(b, 208)[:, None]
    e = np.arange(256)
    h, r = e // 128, e % 128
    lo = (ql[:, h * 64 + r % 64] >> (4 * (r // 64))) & 15
    hi = (qh[:, h * 32 + r % 32] >> (2 * (r // 32))) & 3
    q = ((lo | (hi << 4)) - 32).astype(F32)
    return np.repeat(d * sc, 16, axis=1) * q


def g_q8_k(b):
    return _f32(b, 0)[:, None] * b[:, 4:260].view(np.int8).astype(F32)


def g_tq1_0(b):
    d = _f16(b, 52)[:, None]
    out = np.zeros((b.shape[0], 256), dtype=np.int64)

    def digit(byte, p):
        return ((byte.astype(np.int64) * 3 ** p) % 256 * 3) >> 8

    for p in range(5):
        out[:, p * 32:(p + 1) * 32] = digit(b[:, 0:32], p)
        out[:, 160 + p * 16:160 + (p + 1) * 16] = digit(b[:, 32:48], p)
    for p in range(4):
        out[:, 240 + p * 4:240 + (p + 1) * 4] = digit(b[:, 48:52], p)
    return d * (out - 1).astype(F32)


def g_tq2_0(b):
    return _f16(b, 64)[:, None] * (_crumbs(b[:, 0:64]) - 1).astype(F32)


E2M1X2 = np.array([0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12], dtype=F32)


def g_mxfp4(b):
    e = b[:, 0].astype(np.uint32)
    bits = np.where(e < 2, np.uint32(0x00200000) << e, (e - 1) << np.uint32(23)).astype(np.uint32)
    d = bits.view(np.float32)[:, None]
    return d * E2M1X2[_nib_split(b[:, 1:17])]


def g_nvfp4(b):
    x = b[:, 0].astype(np.int64)
    ex, m = (x >> 3) & 15, (x & 7).astype(F32)
    raw = np.where(ex == 0, m * F32(2.0 ** -9), (F32(1) + m / F32(8)) * np.exp2(ex - 7).astype(F32)).astype(F32)
    d = np.where((x == 0) | (x == 0x7F), F32(0), raw * F32(0.5)).astype(F32)[:, None]
    q = np.concatenate([b[:, 1:9] & 15, b[:, 1:9] >> 4], axis=1).astype(np.int64)
    return d * E2M1X2[q]


IQ4NL = np.array([-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113], dtype=F32)


def g_iq4_nl(b):
    return _f16(b, 0)[:, None] * IQ4NL[_nib_split(b[:, 2:18])]


def g_iq4_xs(b):
    nb = b.shape[0]
    d = _f16(b, 0)[:, None]
    sh = b[:, 2:4].copy().view(np.uint16)[:, 0].astype(np.int64)
    sl = b[:, 4:8].astype(np.int64)
    ib = np.arange(8)
    lo = (sl[:, ib // 2] >> (4 * (ib % 2))) & 15
    hi = (sh[:, None] >> (2 * ib)) & 3
    dl = d * ((lo | (hi << 4)) - 32).astype(F32)
    qs = b[:, 8:136].reshape(nb, 8, 16)
    q = np.concatenate([qs & 15, qs >> 4], axis=2).astype(np.int64)
    return (np.repeat(dl, 32, axis=1).reshape(nb, 8, 32) * IQ4NL[q]).reshape(nb, 256)


def _bits_le(b):
    """(nb, n) bytes -> (nb, 8 n) bits, element j = bit j % 8 of byte j / 8."""
    return ((b[:, :, None].astype(np.int64) >> np.arange(8)) & 1).reshape(b.shape[0], -1)


# Non-upstream formats (bit order as assumed by the C decoder; no external implementation exists).
def g_q1_0(b):
    d = _f16(b, 0)[:, None]
    return np.where(_bits_le(b[:, 2:18]) == 1, d, -d)


def g_q2_0(b):
    q = ((b[:, 2:34, None].astype(np.int64) >> (2 * np.arange(4))) & 3).reshape(b.shape[0], 128)
    return (q - 1).astype(F32) * _f16(b, 0)[:, None]


def g_fv5(b):
    lo, hi = _f32(b, 0)[:, None], _f32(b, 4)[:, None]
    bp, bn, br = _bits_le(b[:, 8:40]), _bits_le(b[:, 40:72]), _bits_le(b[:, 72:104])
    return (bp - bn).astype(F32) * np.where(br == 1, hi, lo)


def g_fv5b(b):
    return _f32(b, 0)[:, None] * b[:, 4:260].view(np.int8).astype(F32)


GGUF = {  # scheme name -> (block elements, block bytes, decoder)
    "GgufQ4_0": (32, 18, g_q4_0), "GgufQ4_1": (32, 20, g_q4_1), "GgufQ5_0": (32, 22, g_q5_0),
    "GgufQ5_1": (32, 24, g_q5_1), "GgufQ8_0": (32, 34, g_q8_0), "GgufQ2K": (256, 84, g_q2_k),
    "GgufQ3K": (256, 110, g_q3_k), "GgufQ4K": (256, 144, g_q4_k), "GgufQ5K": (256, 176, g_q5_k),
    "GgufQ6K": (256, 210, g_q6_k), "GgufQ8K": (256, 292, g_q8_k), "GgufTQ1_0": (256, 54, g_tq1_0),
    "GgufTQ2_0": (256, 66, g_tq2_0), "GgufMXFP4": (32, 17, g_mxfp4), "GgufNVFP4": (16, 9, g_nvfp4),
    "GgufIQ4NL": (32, 18, g_iq4_nl), "GgufIQ4XS": (256, 136, g_iq4_xs), "GgufQ1_0": (128, 18, g_q1_0),
    "GgufQ2_0": (128, 34, g_q2_0), "GgufFV5": (256, 104, g_fv5), "GgufFV5B": (256, 260, g_fv5b),
}


def gguf_rows(scheme, data, rows, K):
    be, bb, fn = GGUF[scheme]
    raw = np.asarray(data, dtype=np.int64).astype(np.uint8).reshape(-1)[:rows * (K // be) * bb]
    with np.errstate(all="ignore"):
        return fn(raw.reshape(-1, bb)).astype(np.float64).reshape(rows, K)


# ---------------------------------------------------------------------------------------------
# Dequantizing matmuls
# ---------------------------------------------------------------------------------------------


def _bitstream(data, count, bits):
    by = np.asarray(data, dtype=np.int64).reshape(-1)
    bitv = ((by[:, None] >> np.arange(8)) & 1).reshape(-1)
    idx = np.arange(count)[:, None] * bits + np.arange(bits)[None, :]
    return (bitv[idx] << np.arange(bits)).sum(axis=1)


def _mlx_weight(scheme, bits, gs, data, scales, biases, N, K):
    q = _bitstream(data, N * K, bits).reshape(N, K)
    s = np.repeat(np.asarray(scales).reshape(N, K // gs), gs, axis=1)
    if scheme == "MlxAffine":
        return q * s + np.repeat(np.asarray(biases).reshape(N, K // gs), gs, axis=1)
    sv = e8m0(s)
    if scheme == "MlxMxfp4":
        return fmt_decode(fmt_table("F4E2M1"), q) * sv
    return fmt_decode(E4M3, q) * sv


def dequant_weight(a, xs, K, N):
    """W as [K, N] (float64)."""
    sc = a["scheme"]
    if sc in GGUF:
        return gguf_rows(sc, xs[1], N, K).T
    if sc.startswith("Mlx"):
        bits = {"MlxAffine": int(a["bits"]), "MlxMxfp4": 4, "MlxMxfp8": 8}[sc]
        return _mlx_weight(sc, bits, int(a["group_size"]), xs[1], xs[2], xs[3] if len(xs) > 3 else None, N, K).T
    wq = np.asarray(xs[1]).reshape(-1)
    e = np.arange(K * N)
    p, j = e // N, e % N
    if sc == "MxFp4x2Block":
        gs = int(a["group_size"])
        plane = (K * N + 1) // 2
        splane = -(-K // gs) * N
        s = np.asarray(xs[2]).reshape(-1)
        t = fmt_table("F4E2M1")

        def nib(base):
            byte = wq[base + e // 2]
            return np.where(e % 2 == 1, byte >> 4, byte & 15)
        si = (p // gs) * N + j
        return (s[si] * fmt_decode(t, nib(0)) + s[splane + si] * fmt_decode(t, nib(plane))).reshape(K, N)
    if sc in ("Fp8E4m3", "Fp8E5m2"):
        t = fmt_table("F8E4M3" if sc == "Fp8E4m3" else "F8E5M2")
        return (fmt_decode(t, wq[:K * N]) * np.asarray(xs[2]).reshape(-1)[j]).reshape(K, N)
    nv = sc == "Nvfp4Block"
    bs = 16 if nv else int(a["block_size"])
    si = (p // bs) * N + j
    if sc == "Int4Block" or nv:
        byte = wq[e // 2]
        q = np.where(e % 2 == 1, byte >> 4, byte & 15)
        if nv:
            g = float(np.asarray(xs[3]).reshape(-1)[0])
            return (fmt_decode(fmt_table("F4E2M1"), q) * e4m3_scale(np.asarray(xs[2]).reshape(-1)[si]) * g).reshape(K, N)
        return (q * np.asarray(xs[2]).reshape(-1)[si]).reshape(K, N)
    q = wq[:K * N].astype(np.int64)
    q = np.where(q > 127, q - 256, q)  # the bytes as int8
    zp = np.asarray(xs[3]).reshape(-1)[si] if sc == "Int8BlockAsym" else 0.0
    return ((q - zp) * np.asarray(xs[2]).reshape(-1)[si]).reshape(K, N)


def ref_dequant_matmul(case, xs):
    x = xs[0]
    K = x.shape[1]
    N = case["output"]["shape"][1]
    W = dequant_weight(case["attrs"], xs, K, N)
    with np.errstate(all="ignore"):
        return x @ W, "f32"


def ref_moe_weights(case, xs):
    E, K, N = case["output"]["shape"]
    W = gguf_rows(case["attrs"]["scheme"], xs[0], E * N, K).reshape(E, N, K)
    return W.transpose(0, 2, 1), "f32"


def ref_dgmm(case, xs):
    x, idx = xs[0], xs[2].astype(np.int64)
    M, K = x.shape
    N = case["output"]["shape"][1]
    be, bb, _ = GGUF[case["attrs"]["scheme"]]
    E = np.asarray(xs[1]).size // (N * (K // be) * bb)
    W = gguf_rows(case["attrs"]["scheme"], xs[1], E * N, K).reshape(E, N, K)
    with np.errstate(all="ignore"):
        return np.stack([W[idx[i]] @ x[i] for i in range(M)]), "f32"


def ref_dgmm_mlx(case, xs):
    a = case["attrs"]
    x, data, scales, biases, idx = xs
    E, N, G = scales.shape
    K = x.shape[1]
    gs = int(a["group_size"])
    bits = {"MlxAffine": int(a["bits"]), "MlxMxfp4": 4, "MlxMxfp8": 8}[a["scheme"]]
    eb = N * K * bits // 8
    data = np.asarray(data).reshape(-1)
    W = np.stack([_mlx_weight(a["scheme"], bits, gs, data[e * eb:(e + 1) * eb], scales[e], biases[e], N, K)
                  for e in range(E)])
    idx = idx.astype(np.int64)
    return np.stack([W[idx[i]] @ x[i] for i in range(x.shape[0])]), "f32"


# ---------------------------------------------------------------------------------------------
# Codebook (synth) and spline
# ---------------------------------------------------------------------------------------------


def _synth_w(codes, cb, D):
    codes = codes.astype(np.int64)
    R, N = codes.shape
    W = cb[codes]  # [R, N, D]
    return W.transpose(0, 2, 1).reshape(R * D, N)


def ref_synth_matmul(case, xs):
    x, codes, cb = xs
    return x @ _synth_w(codes, cb, int(case["attrs"]["entry_dim"])), "f32"


def ref_synth_reconstruct(case, xs):
    codes, cb = xs
    return _synth_w(codes, cb, int(case["attrs"]["entry_dim"])), case["inputs"][1]["dtype"]


def ref_synth_backward(case, xs):
    a = case["attrs"]
    x, codes, cb, dy = xs
    D = int(a["entry_dim"])
    if a["wrt"] == "Dx":
        return dy @ _synth_w(codes, cb, D).T, case["inputs"][0]["dtype"]
    g = x.T @ dy  # [K, N]
    out = np.zeros(cb.shape)
    codes = codes.astype(np.int64)
    for k in range(g.shape[0]):
        for n in range(g.shape[1]):
            out[codes[k // D, n], k % D] += g[k, n]
    return out, case["inputs"][2]["dtype"]


def _spline_parts(a, x, coeffs):
    nk = int(a["num_knots"])
    lo, hi = float(np.float32(a["grid_min"])), float(np.float32(a["grid_max"]))
    h = (hi - lo) / (nk - 1)
    C = coeffs if coeffs.ndim == 2 else np.broadcast_to(coeffs, (x.shape[-1] if x.ndim else 1, nk))
    xb = x.reshape(-1, x.shape[-1] if x.ndim else 1)
    with np.errstate(invalid="ignore"):
        u = (xb - lo) / h
        j = np.clip(np.floor(np.nan_to_num(u)), 0, nk - 2).astype(np.int64)
    f = u - j
    return nk, lo, hi, h, C, xb, j, f


def ref_spline(case, xs):
    x, coeffs = xs
    nk, lo, hi, h, C, xb, j, f = _spline_parts(case["attrs"], x, coeffs)
    ch = np.arange(xb.shape[1])[None, :]
    y = (1 - f) * C[ch, j] + f * C[ch, j + 1]
    y = np.where(xb < lo, C[ch, 0], np.where(xb > hi, C[ch, nk - 1], y))
    y = np.where(np.isnan(xb), np.nan, y)
    return y.reshape(x.shape)


def ref_spline_bx(case, xs):
    x, coeffs, dy = xs
    nk, lo, hi, h, C, xb, j, f = _spline_parts(case["attrs"], x, coeffs)
    ch = np.arange(xb.shape[1])[None, :]
    g = dy.reshape(xb.shape) * (C[ch, j + 1] - C[ch, j]) / h
    g = np.where((xb < lo) | (xb > hi), 0.0, g)
    return np.where(np.isnan(xb), np.nan, g).reshape(x.shape)


def ref_spline_bc(case, xs):
    x, coeffs, dy = xs
    nk, lo, hi, h, C, xb, j, f = _spline_parts(case["attrs"], x, coeffs)
    d = dy.reshape(xb.shape)
    out = np.zeros((xb.shape[1], nk))
    for r in range(xb.shape[0]):
        for c in range(xb.shape[1]):
            v = xb[r, c]
            if v < lo:
                out[c, 0] += d[r, c]
            elif v > hi:
                out[c, nk - 1] += d[r, c]
            else:
                out[c, j[r, c]] += (1 - f[r, c]) * d[r, c]
                out[c, j[r, c] + 1] += f[r, c] * d[r, c]
    if coeffs.ndim == 1:
        out = out.sum(axis=0)
    return out, case["inputs"][1]["dtype"]


REF = {
    "Quantize": ref_quantize, "Dequantize": ref_dequantize, "FakeQuantize": ref_fake_quantize,
    "FakeQuantizeBackward": ref_fq_backward, "FakeQuantizeLSQ": ref_lsq, "FakeQuantizeLSQBackwardX": ref_lsq_bx,
    "FakeQuantizeLSQBackwardScale": ref_lsq_bs, "QMatMul": ref_qmatmul, "QConv2d": ref_qconv2d,
    "DequantMatMul": ref_dequant_matmul, "DequantMoEWeights": ref_moe_weights, "DequantGroupedMatMul": ref_dgmm,
    "DequantGroupedMatMulMlx": ref_dgmm_mlx, "ScaledQuantScale": ref_sq_scale, "ScaledQuantize": ref_sq_quantize,
    "ScaledDequantize": ref_sq_dequantize, "ScaledMatMul": ref_scaled_matmul,
    "ScaledGroupedMatMul": ref_scaled_grouped_matmul, "SynthMatMul": ref_synth_matmul,
    "SynthReconstruct": ref_synth_reconstruct, "SynthMatMulBackward": ref_synth_backward,
    "SplineActivation": ref_spline, "SplineActivationBackwardX": ref_spline_bx,
    "SplineActivationBackwardCoeff": ref_spline_bc,
}

# Sums of many terms: absolute tolerance scaled by the largest output (see conformance_ref.py).
ACCUMULATING = {
    "DequantMatMul", "DequantGroupedMatMul", "DequantGroupedMatMulMlx", "ScaledMatMul", "ScaledGroupedMatMul",
    "SynthMatMul", "SynthMatMulBackward", "FakeQuantizeLSQBackwardScale", "SplineActivationBackwardCoeff",
}
OP_TOL = {"DequantMatMul": 4, "DequantGroupedMatMul": 4, "DequantGroupedMatMulMlx": 4}
