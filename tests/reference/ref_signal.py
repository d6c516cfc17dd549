# SPDX-License-Identifier: MIT OR Apache-2.0
"""float64 references: signal ops (spec ir-special §4), computed with numpy.fft.

Fft{inverse, norm} transforms the last axis: f32/f64 lines are real-block [re_0..re_{N-1},
im_0..im_{N-1}], c64/c128 lines are N complex values. RLX's norms scale by 1 (Backward, both
directions), 1/N on the inverse only (Forward) and 1/sqrt(N) both ways (Ortho); numpy's
unnormalised transforms are scaled here to match (numpy.fft.ifft divides by N, so it is multiplied
back)."""

import numpy as np
import torch

from ref_util import COMPLEX


def fft_scale(norm, n, inverse):
    if norm == "Ortho":
        return 1.0 / np.sqrt(n)
    if norm == "Forward" and inverse:
        return 1.0 / n
    return 1.0


def ref_fft(case, xs):
    a = case["attrs"]
    inverse = bool(a["inverse"])
    x = xs[0]
    cplx = case["inputs"][0]["dtype"] in COMPLEX
    n = x.shape[-1] if cplx else x.shape[-1] // 2
    z = x.astype(np.complex128) if cplx else x[..., :n] + 1j * x[..., n:]
    # unnormalised transform in the op's direction
    y = np.fft.ifft(z, axis=-1) * n if inverse else np.fft.fft(z, axis=-1)
    y = y * fft_scale(a["norm"], n, inverse)
    if cplx:
        return y
    return np.concatenate([y.real, y.imag], axis=-1)


REF = {
    "Fft": ref_fft,
}


# ---- the other signal ops (ir-special §4, ir-core §10.10) ----

def ref_complex_norm_sq(case, xs):
    z = xs[0]
    return np.real(z) ** 2 + np.imag(z) ** 2, ("f64" if case["inputs"][0]["dtype"] == "c128" else "f32")


def ref_complex_norm_sq_backward(case, xs):
    z, g = xs
    return g * z  # Wirtinger: the cotangent is dL/dz-bar = g z


def ref_conjugate(case, xs):
    return np.conj(xs[0])


def _split(spec):
    n = spec.shape[-1] // 2
    return spec[..., :n], spec[..., n:], n


def _logmel_parts(spec, filt):
    re, im, nfft = _split(spec)
    bins = nfft // 2 + 1
    power = re[..., :bins] ** 2 + im[..., :bins] ** 2
    energy = power @ filt.T  # [..., M]
    lm = np.log10(np.maximum(energy, 1e-10))
    floor = lm.max(axis=-1, keepdims=True) - 8.0
    return energy, lm, floor, bins


def ref_logmel(case, xs):
    energy, lm, floor, _ = _logmel_parts(xs[0], xs[1])
    return (np.maximum(lm, floor) + 4.0) / 4.0


def ref_logmel_backward(case, xs):
    """The gradient of LogMel with the frame maximum held constant, by torch autograd of the
    forward; entries clamped to the floor (or with E <= 1e-10) pass no gradient, as the spec says."""
    spec, filt, dy = xs
    energy, lm, floor, bins = _logmel_parts(spec, filt)
    live = ~((np.abs(np.maximum(lm, floor) - floor) <= 1e-6) | (energy <= 1e-10))
    s = torch.tensor(spec, requires_grad=True)
    nfft = spec.shape[-1] // 2
    p = s[..., :bins] ** 2 + s[..., nfft:nfft + bins] ** 2
    e = p @ torch.tensor(filt).T
    out = (torch.log10(torch.clamp(e, min=1e-10)) + 4.0) / 4.0
    (g,) = torch.autograd.grad((out * torch.tensor(dy * live)).sum(), [s])
    return g.numpy()


def ref_welch_peaks(case, xs):
    a = case["attrs"]
    k, nseg = a["k"], a["n_segments"]
    re, im, nfft = _split(xs[0])
    bins = nfft // 2 + 1
    w = np.full(bins, 2.0)
    w[0] = 1.0
    w[nfft // 2] = 1.0
    power = (re[:, :bins] ** 2 + im[:, :bins] ** 2) * w
    psd = power.reshape(-1, nseg, bins).mean(axis=1)
    out = np.zeros((psd.shape[0], 2 * k))
    for b in range(psd.shape[0]):
        order = sorted(range(bins), key=lambda f: (-psd[b, f], f))[:k]
        for j, f in enumerate(order):
            out[b, 2 * j] = f
            out[b, 2 * j + 1] = psd[b, f]
    return out


def ref_fft_butterfly_stage(case, xs):
    a = case["attrs"]
    stage, nfft = a["stage"], a["n_fft"]
    state, gate, rev, twr, twi = xs
    z = state.reshape(state.shape[0], nfft, 2)
    c = z[..., 0] + 1j * z[..., 1]
    out = c.copy()
    stride = 2 ** stage
    for g in range(nfft // (2 * stride)):
        for kk in range(stride):
            ia = g * 2 * stride + kk
            ib = ia + stride
            bf = g * stride + kk
            if gate[bf] == 0:
                continue
            t = c[:, ib] * (twr[bf] + 1j * twi[bf])
            top, bot = c[:, ia] + t, c[:, ia] - t
            if rev[bf] >= 0.5:
                top, bot = bot, top
            out[:, ia], out[:, ib] = top, bot
    return np.stack([out.real, out.imag], axis=-1).reshape(state.shape)


def _q_root(k, ln, sign):
    k %= ln
    if (4 * k) % ln == 0:
        q = 4 * k // ln
        return [1.0, 0.0, -1.0, 0.0][q], sign * [0.0, 1.0, 0.0, -1.0][q]
    ang = 2 * np.pi * k / ln
    return np.cos(ang), sign * np.sin(ang)


def _q_fix(v, bits, saturate):
    lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    v = int(np.rint(v))
    if saturate:
        return float(min(max(v, lo), hi))
    return float((v - lo) % (2 ** bits) + lo)


def ref_fftq(case, xs):
    """A scalar radix-2 DIT transcription of the FftQ decision in docs/ir-decisions.md: per-stage
    halving (EveryOther: stages 1, 3, ...; PerStage: every stage), integer tensors rounded half to
    even and wrapped (or saturated) after every stage, the norm's factor at the end."""
    a = case["attrs"]
    dt = case["inputs"][0]["dtype"]
    x = xs[0]
    cplx = dt in COMPLEX
    integer = dt in ("i16", "i32")
    bits = 16 if dt == "i16" else 32
    sat = a["scale"] == "Saturating"
    sign = 1 if a["inverse"] else -1
    n = x.shape[-1] if cplx else x.shape[-1] // 2
    fin = 1.0 / np.sqrt(n) if a["norm"] == "Ortho" else (1.0 / n if a["norm"] == "Forward" and a["inverse"] else 1.0)
    lines = x.reshape(-1, x.shape[-1])
    out = np.zeros(lines.shape, dtype=np.complex128 if cplx else np.float64)
    logn = n.bit_length() - 1
    for li, line in enumerate(lines):
        if cplx:
            re, im = [float(v) for v in line.real], [float(v) for v in line.imag]
        else:
            re, im = [float(v) for v in line[:n]], [float(v) for v in line[n:]]
        rev = [int(format(i, "0%db" % logn)[::-1], 2) if logn else 0 for i in range(n)]
        re, im = [re[r] for r in rev], [im[r] for r in rev]
        ln, stage = 2, 0
        while ln <= n:
            halve = a["scale"] == "PerStage" or (a["scale"] == "EveryOther" and stage % 2 == 1)
            for s0 in range(0, n, ln):
                for kk in range(ln // 2):
                    ia, ib = s0 + kk, s0 + kk + ln // 2
                    wr, wi = _q_root(kk, ln, sign)
                    tr = re[ib] * wr - im[ib] * wi
                    ti = re[ib] * wi + im[ib] * wr
                    v = [re[ia] + tr, im[ia] + ti, re[ia] - tr, im[ia] - ti]
                    if halve:
                        v = [u * 0.5 for u in v]
                    if integer:
                        v = [_q_fix(u, bits, sat) for u in v]
                    re[ia], im[ia], re[ib], im[ib] = v
            ln *= 2
            stage += 1
        r = [u * fin for u in re]
        i2 = [u * fin for u in im]
        if integer and fin != 1.0:
            r = [_q_fix(u, bits, sat) for u in r]
            i2 = [_q_fix(u, bits, sat) for u in i2]
        if cplx:
            out[li] = np.array(r) + 1j * np.array(i2)
        else:
            out[li] = np.concatenate([r, i2])
    return out.reshape(x.shape)


def ref_partitioned_conv(case, xs):
    x, ir = xs
    lead = x.shape[:-1]
    lines = x.reshape(-1, x.shape[-1])
    out = np.stack([np.convolve(line, ir) for line in lines]) if lines.shape[0] else np.zeros((0, x.shape[-1] + ir.size - 1))
    return out.reshape(lead + (x.shape[-1] + ir.size - 1,))


REF.update({
    "ComplexNormSq": ref_complex_norm_sq,
    "ComplexNormSqBackward": ref_complex_norm_sq_backward,
    "Conjugate": ref_conjugate,
    "LogMel": ref_logmel,
    "LogMelBackward": ref_logmel_backward,
    "WelchPeaks": ref_welch_peaks,
    "FftButterflyStage": ref_fft_butterfly_stage,
    "FftQ": ref_fftq,
    "PartitionedConv": ref_partitioned_conv,
})
