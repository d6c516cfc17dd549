# SPDX-License-Identifier: MIT OR Apache-2.0
"""float64 references: normalisation (spec ir-core §10.4, §10.12 AdaLayerNorm / GatedResidual),
attention and positional encodings (§8.5, §10.6), convolution, pooling and resampling (§10.5,
§10.10). Convolutions use PyTorch's float64 functional ops; padding geometry is applied
explicitly (padding lists: one entry per spatial axis = symmetric, or [begin..., end...])."""

import numpy as np
import torch
import torch.nn.functional as F

from ref_util import prod, softmax


# ---- normalisation ----

def layer_norm_last(x, eps):
    mu = np.mean(x, axis=-1, keepdims=True)
    var = np.mean((x - mu) ** 2, axis=-1, keepdims=True)  # biased
    return (x - mu) / np.sqrt(var + eps)


def rms_norm_last(x, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)


def flat(p):
    return p.reshape(-1)


def ref_layer_norm(case, xs):
    x, g, b = xs
    return layer_norm_last(x, float(case["attrs"]["eps"])) * flat(g) + flat(b)


def ref_rms_norm(case, xs):
    x, g, b = xs
    return rms_norm_last(x, float(case["attrs"]["eps"])) * flat(g) + flat(b)


def ref_layer_norm2d(case, xs):
    x, g, b = xs
    y = np.moveaxis(x, 1, -1)
    y = layer_norm_last(y, float(case["attrs"]["eps"])) * flat(g) + flat(b)
    return np.moveaxis(y, -1, 1)


def ref_group_norm(case, xs):
    x, g, b = xs
    G = int(case["attrs"]["num_groups"])
    n, c = x.shape[0], x.shape[1]
    y = x.reshape(n, G, -1)
    y = layer_norm_last(y, float(case["attrs"]["eps"])).reshape(x.shape)
    bshape = (1, c) + (1,) * (x.ndim - 2)
    return y * flat(g).reshape(bshape) + flat(b).reshape(bshape)


def ref_batch_norm(case, xs):
    x, g, b, mean, var = xs
    eps = float(case["attrs"]["eps"])
    return flat(g) * (x - flat(mean)) / np.sqrt(flat(var) + eps) + flat(b)


def ref_ada_layer_norm(case, xs):
    x, scale, shift = xs
    a = case["attrs"]
    eps = float(a["eps"])
    y = layer_norm_last(x, eps) if a["norm"] == "LayerNorm" else rms_norm_last(x, eps)
    return y * (1.0 + scale) + shift


def ref_gated_residual(case, xs):
    x, y, gate = xs
    return x + gate * y


# ---- attention ----

def to_bhsd(t, kind, width):
    """[B, H, S, width] view of Q/K/V for Q's layout kind: 'bhsd', 'bshd', 'packed3', 'packed2'."""
    if kind == "bhsd":
        return t
    if kind == "bshd":
        return np.transpose(t, (0, 2, 1, 3))
    if kind == "packed2":
        t = t[None]
    b, s, hw = t.shape
    return np.transpose(t.reshape(b, s, hw // width, width), (0, 2, 1, 3))


def from_bhsd(o, kind):
    if kind == "bhsd":
        return o
    if kind == "bshd":
        return np.transpose(o, (0, 2, 1, 3))
    b, h, s, d = o.shape
    o = np.transpose(o, (0, 2, 1, 3)).reshape(b, s, h * d)
    return o[0] if kind == "packed2" else o


def attention(q, k, v, mask, a):
    H, D = int(a["num_heads"]), int(a["head_dim"])
    Dv = int(a["v_head_dim"]) if a["v_head_dim"] is not None else D
    if q.ndim == 4:
        kind = "bhsd" if q.shape[1] == H else "bshd"
    else:
        kind = "packed3" if q.ndim == 3 else "packed2"
    Q, K, V = to_bhsd(q, kind, D), to_bhsd(k, kind, D), to_bhsd(v, kind, Dv)
    B, _, Sq, _ = Q.shape
    Hk, Sk = K.shape[1], K.shape[2]
    rep = H // Hk
    K = np.repeat(K, rep, axis=1)
    V = np.repeat(V, rep, axis=1)
    scale = float(a["score_scale"]) if a["score_scale"] is not None else 1.0 / np.sqrt(D)
    s = np.einsum("bhqd,bhkd->bhqk", Q, K) * scale
    if a["attn_logit_softcap"] is not None:
        c = float(a["attn_logit_softcap"])
        s = c * np.tanh(s / c)
    visible = np.ones((B, H, Sq, Sk), dtype=bool)
    kind_mask = a["mask_kind"]
    if kind_mask == "Custom":
        m = mask.astype(np.float64)
        m = m[:, None, None, :] if m.ndim == 2 else m[:, None, :, :]
        visible &= np.broadcast_to(m >= 0.5, visible.shape)
    elif kind_mask == "Bias":
        s = s + np.broadcast_to(mask, s.shape)
    qpos = Sk - Sq + np.arange(Sq)[:, None]
    kpos = np.arange(Sk)[None, :]
    if kind_mask == "Causal":
        visible &= kpos <= qpos
    elif kind_mask == "SlidingWindow":
        w = int(a["window"])
        visible &= (kpos <= qpos) & (kpos >= qpos - w)
    s = np.where(visible, s, -np.inf)
    m = np.max(s, axis=-1, keepdims=True)
    any_visible = np.isfinite(m)
    e = np.where(visible, np.exp(s - np.where(any_visible, m, 0.0)), 0.0)
    den = np.sum(e, axis=-1, keepdims=True)
    p = np.where(any_visible, e / np.where(den > 0, den, 1.0), 0.0)  # fully masked row -> zeros
    o = np.einsum("bhqk,bhkd->bhqd", p, V)
    return from_bhsd(o, kind)


def ref_attention(case, xs):
    mask = xs[3] if len(xs) > 3 else None
    return attention(xs[0], xs[1], xs[2], mask, case["attrs"])


def rope(x, cos, sin, head_dim, n_rot, style):
    S, hidden = x.shape[-2], x.shape[-1]
    xb = x.reshape(-1, S, hidden).copy()
    nb = xb.shape[0]
    half = n_rot // 2
    if cos.ndim >= 2:
        width = cos.shape[-1]
        ct, st = cos.reshape(-1, width), sin.reshape(-1, width)
    else:
        ct, st = cos.reshape(-1, half), sin.reshape(-1, half)
    rows = ct.shape[0]
    per_token = rows == nb * S and rows != S
    out = xb.copy()
    for b in range(nb):
        for s in range(S):
            r = b * S + s if per_token else s
            c, sn = ct[r, :half], st[r, :half]
            for h in range(hidden // head_dim):
                base = h * head_dim
                if style == "NeoX":
                    i1 = base + np.arange(half)
                    i2 = i1 + half
                else:
                    i1 = base + 2 * np.arange(half)
                    i2 = i1 + 1
                f, g = xb[b, s, i1], xb[b, s, i2]
                out[b, s, i1] = f * c - g * sn
                out[b, s, i2] = g * c + f * sn
    return out.reshape(x.shape)


def ref_rope(case, xs):
    a = case["attrs"]
    return rope(xs[0], xs[1], xs[2], int(a["head_dim"]), int(a["n_rot"]), a["style"])


def ref_axial_rope2d(case, xs):
    a = case["attrs"]
    x = xs[0]
    ex, D, H = int(a["end_x"]), int(a["head_dim"]), int(a["num_heads"])
    theta, rep = float(a["theta"]), int(a["repeat_factor"])
    out = x.copy()
    quarter = D // 4
    for t in range(x.shape[1]):
        p = t // rep
        coords = (p % ex, p // ex)
        for h in range(H):
            for half in range(2):
                for c in range(quarter):
                    ang = coords[half] * theta ** (-4.0 * c / D)
                    i1 = h * D + half * (D // 2) + 2 * c
                    f, g = x[:, t, i1], x[:, t, i1 + 1]
                    out[:, t, i1] = f * np.cos(ang) - g * np.sin(ang)
                    out[:, t, i1 + 1] = g * np.cos(ang) + f * np.sin(ang)
    return out


# ---- convolution and pooling ----

def geometry(a, nsp, weight_kernel=None):
    def lst(name, default):
        v = [int(t) for t in a.get(name, [])]
        return v if v else [default] * nsp
    stride, dil = lst("stride", 1), lst("dilation", 1)
    pad = [int(t) for t in a.get("padding", [])]
    if not pad:
        pad = [0] * (2 * nsp)
    elif len(pad) == nsp:
        pad = pad + pad
    return stride, pad[:nsp], pad[nsp:], dil


def torch_pad_arg(begin, end):
    """F.pad takes (last axis begin, end, previous axis begin, end, ...)."""
    out = []
    for b, e in zip(reversed(begin), reversed(end)):
        out += [b, e]
    return out


def t64(x):
    return torch.from_numpy(np.ascontiguousarray(x, dtype=np.float64))


def conv_nd(x, w, a, nsp):
    stride, pb, pe, dil = geometry(a, nsp)
    xt = F.pad(t64(x), torch_pad_arg(pb, pe))
    fn = F.conv2d if nsp == 2 else F.conv3d
    return fn(xt, t64(w), stride=stride, dilation=dil, groups=int(a["groups"])).numpy()


def ref_conv(case, xs):
    return conv_nd(xs[0], xs[1], case["attrs"], 2)


def ref_conv3d(case, xs):
    return conv_nd(xs[0], xs[1], case["attrs"], 3)


def conv_transpose_nd(x, w, a, nsp):
    stride, pb, pe, dil = geometry(a, nsp)
    op = [int(t) for t in a.get("output_padding", [])] or [0] * nsp
    fn = F.conv_transpose2d if nsp == 2 else F.conv_transpose3d
    full = fn(t64(x), t64(w), stride=stride, dilation=dil, groups=int(a["groups"])).numpy()
    # crop pad_begin / pad_end, then output_padding extra (zero) rows at the trailing side
    full = np.pad(full, [(0, 0), (0, 0)] + [(0, max(0, o)) for o in op])
    idx = [slice(None), slice(None)]
    for i in range(nsp):
        n = x.shape[2 + i]
        k = w.shape[2 + i]
        length = (n - 1) * stride[i] - pb[i] - pe[i] + dil[i] * (k - 1) + op[i] + 1
        idx.append(slice(pb[i], pb[i] + length))
    return full[tuple(idx)]


def ref_conv_transpose2d(case, xs):
    return conv_transpose_nd(xs[0], xs[1], case["attrs"], 2)


def ref_conv_transpose3d(case, xs):
    return conv_transpose_nd(xs[0], xs[1], case["attrs"], 3)


def ref_im2col(case, xs):
    a = case["attrs"]
    x = xs[0]
    k = [int(t) for t in a["kernel_size"]]
    stride, pb, pe, dil = geometry(a, 2)
    xt = F.pad(t64(x), torch_pad_arg(pb, pe))
    cols = F.unfold(xt, kernel_size=k, dilation=dil, stride=stride).numpy()  # [N, C*kh*kw, L]
    n, ck, L = cols.shape
    return np.transpose(cols, (0, 2, 1)).reshape(n * L, ck)


def ref_pool(case, xs):
    a = case["attrs"]
    x = xs[0]
    k = [int(t) for t in a["kernel_size"]]
    stride = [int(t) for t in a["stride"]] or k
    _, pb, pe, _ = geometry({"padding": a["padding"]}, 2)
    if a["kind"] == "Max":
        xt = F.pad(t64(x), torch_pad_arg(pb, pe), value=-np.inf)  # padded cells never win
        return F.max_pool2d(xt, k, stride=stride).numpy()
    if a["kind"] == "Mean":
        xt = F.pad(t64(x), torch_pad_arg(pb, pe), value=0.0)  # padded cells count (divide by kH*kW)
        return F.avg_pool2d(xt, k, stride=stride).numpy()
    raise KeyError("no reference for pool kind " + a["kind"])


def resize2x(x):
    return np.repeat(np.repeat(x, 2, axis=-2), 2, axis=-1)


def ref_resize_nearest2x(case, xs):
    return resize2x(xs[0])


def ref_interpolate3d(case, xs):
    x = xs[0]
    size = [int(t) for t in case["attrs"]["size"]]
    idx = []
    for i, out_n in enumerate(size):
        in_n = x.shape[2 + i]
        src = np.minimum(np.floor(np.arange(out_n) * in_n / out_n).astype(np.int64), in_n - 1)
        idx.append(src)
    return x[:, :, idx[0]][:, :, :, idx[1]][:, :, :, :, idx[2]]


REF = {
    "LayerNorm": ref_layer_norm,
    "LayerNorm2d": ref_layer_norm2d,
    "GroupNorm": ref_group_norm,
    "BatchNormInference": ref_batch_norm,
    "RmsNorm": ref_rms_norm,
    "AdaLayerNorm": ref_ada_layer_norm,
    "GatedResidual": ref_gated_residual,
    "Attention": ref_attention,
    "Rope": ref_rope,
    "AxialRope2d": ref_axial_rope2d,
    "Conv": ref_conv,
    "Conv3d": ref_conv3d,
    "ConvTranspose2d": ref_conv_transpose2d,
    "ConvTranspose3d": ref_conv_transpose3d,
    "Im2Col": ref_im2col,
    "Pool": ref_pool,
    "ResizeNearest2x": ref_resize_nearest2x,
    "Interpolate3d": ref_interpolate3d,
}

__all__ = ["REF", "attention", "rope", "layer_norm_last", "rms_norm_last", "conv_nd", "resize2x", "prod"]
