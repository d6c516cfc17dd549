# SPDX-License-Identifier: MIT OR Apache-2.0
"""float64 references: signal ops (spec ir-special §4), computed with numpy.fft.

Fft{inverse, norm} transforms the last axis: f32/f64 lines are real-block [re_0..re_{N-1},
im_0..im_{N-1}], c64/c128 lines are N complex values. RLX's norms scale by 1 (Backward, both
directions), 1/N on the inverse only (Forward) and 1/sqrt(N) both ways (Ortho); numpy's
unnormalised transforms are scaled here to match (numpy.fft.ifft divides by N, so it is multiplied
back)."""

import numpy as np

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
