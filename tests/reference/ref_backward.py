# SPDX-License-Identifier: MIT OR Apache-2.0
"""float64 references: the backward ops (spec ir-special §8), computed with PyTorch autograd of the
forward op written here in torch (never from the backward formulas the kernels implement), plus
the two spec-defined exceptions: Round's straight-through estimator and the zero derivative of
Floor/Ceil/Sign."""

import numpy as np
import torch
import torch.nn.functional as F

from ref_nn import geometry, torch_pad_arg
from ref_util import norm_axis


def t(x, grad=False):
    return torch.tensor(np.ascontiguousarray(x, dtype=np.float64), requires_grad=grad)


def vjp(fn, primals, dy):
    """Gradients of sum(fn(*primals) * dy) w.r.t. every primal (numpy in, numpy out)."""
    ts = [t(p, True) for p in primals]
    y = fn(*ts)
    (y * t(dy)).sum().backward()
    return [p.grad.numpy() if p.grad is not None else np.zeros(p.shape) for p in ts]


# ---- activations ----

TORCH_ACT = {
    "Gelu": lambda x: F.gelu(x), "GeluApprox": lambda x: F.gelu(x, approximate="tanh"), "Silu": F.silu,
    "Relu": torch.relu, "Sigmoid": torch.sigmoid, "Tanh": torch.tanh, "Exp": torch.exp, "Log": torch.log,
    "Sqrt": torch.sqrt, "Rsqrt": torch.rsqrt, "Neg": torch.neg, "Abs": torch.abs, "Sin": torch.sin, "Cos": torch.cos,
    "Tan": torch.tan, "Atan": torch.atan, "Recip": torch.reciprocal,
    "Softplus": lambda x: torch.log1p(torch.exp(-torch.abs(x))) + torch.clamp(x, min=0), "Elu": F.elu,
    "Erf": torch.erf, "HardSwish": F.hardswish, "HardSigmoid": F.hardsigmoid, "Mish": F.mish,
    "Softsign": F.softsign, "LogSigmoid": F.logsigmoid,
}


def ref_relu_backward(case, xs):
    x, dy = xs
    return vjp(torch.relu, [x], dy)[0]


def ref_activation_backward(case, xs):
    x, dy = xs
    kind = case["attrs"]["kind"]
    if kind == "Round":
        return dy.copy()  # straight-through estimator
    if kind in ("Floor", "Ceil", "Sign"):
        return dy * 0.0
    return vjp(TORCH_ACT[kind], [x], dy)[0]


# ---- losses ----

def ref_sce(case, xs):
    logits, targets = xs
    lse = torch.logsumexp(t(logits), dim=1)
    return (lse - (t(targets) * t(logits)).sum(dim=1)).numpy()


def ref_sce_with_logits(case, xs):
    logits, labels = xs
    return F.cross_entropy(t(logits), torch.tensor(labels.astype(np.int64)), reduction="none").numpy()


def ref_sce_backward(case, xs):
    logits, labels, dloss = xs
    lab = torch.tensor(labels.astype(np.int64))
    return vjp(lambda z: F.cross_entropy(z, lab, reduction="none"), [logits], dloss)[0]


# ---- attention ----

def torch_attention(q, k, v, mask, a, layout):
    """Forward attention in torch over Q's layout (rank-4 BHSD/BSHD or packed), heads via GQA."""
    H, D = int(a["num_heads"]), int(a["head_dim"])

    def bhsd(x):
        if layout == "bhsd":
            return x
        if layout == "bshd":
            return x.permute(0, 2, 1, 3)
        if layout == "packed2":
            x = x.unsqueeze(0)
        b, s, hw = x.shape
        return x.reshape(b, s, hw // D, D).permute(0, 2, 1, 3)
    Q, K, V = bhsd(q), bhsd(k), bhsd(v)
    rep = H // K.shape[1]
    K = K.repeat_interleave(rep, dim=1)
    V = V.repeat_interleave(rep, dim=1)
    scale = float(a["score_scale"]) if a.get("score_scale") is not None else 1.0 / np.sqrt(D)
    s = torch.einsum("bhqd,bhkd->bhqk", Q, K) * scale
    if a.get("attn_logit_softcap") is not None:
        c = float(a["attn_logit_softcap"])
        s = c * torch.tanh(s / c)
    B, _, Sq, Sk = s.shape
    vis = torch.ones(B, H, Sq, Sk, dtype=torch.bool)
    if a["mask_kind"] == "Custom":
        m = torch.tensor(np.asarray(mask, dtype=np.float64) >= 0.5)
        vis = vis & (m[:, None, None, :] if m.dim() == 2 else m[:, None, :, :])
    elif a["mask_kind"] == "Bias":
        s = s + t(mask).expand_as(s)
    qpos = Sk - Sq + torch.arange(Sq)[:, None]
    kpos = torch.arange(Sk)[None, :]
    if a["mask_kind"] == "Causal":
        vis = vis & (kpos <= qpos)
    elif a["mask_kind"] == "SlidingWindow":
        vis = vis & (kpos <= qpos) & (kpos >= qpos - int(a["window"]))
    s = torch.where(vis, s, torch.full_like(s, -1e300))
    p = torch.softmax(s, dim=-1) * vis.any(dim=-1, keepdim=True)  # fully masked row -> 0
    o = torch.einsum("bhqk,bhkd->bhqd", p, V)
    if layout == "bhsd":
        return o
    if layout == "bshd":
        return o.permute(0, 2, 1, 3)
    o = o.permute(0, 2, 1, 3).reshape(o.shape[0], Sq, H * D)
    return o[0] if layout == "packed2" else o


def attention_grads(case, xs):
    a = case["attrs"]
    q, k, v, dy = xs[:4]
    mask = xs[4] if len(xs) > 4 else None
    H = int(a["num_heads"])
    layout = ("bhsd" if q.shape[1] == H else "bshd") if q.ndim == 4 else ("packed3" if q.ndim == 3 else "packed2")
    return vjp(lambda qq, kk, vv: torch_attention(qq, kk, vv, mask, a, layout), [q, k, v], dy)


def ref_attention_backward(case, xs):
    dq, dk, dv = attention_grads(case, xs)
    return {"Query": dq, "Key": dk, "Value": dv}[case["attrs"]["wrt"]]


def ref_attention_backward_all(case, xs):
    return np.concatenate([g.reshape(-1) for g in attention_grads(case, xs)])


# ---- norms ----

def t_layer_norm(x, eps):
    mu = x.mean(dim=-1, keepdim=True)
    var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + eps)


def t_rms_norm(x, eps):
    return x / torch.sqrt((x * x).mean(dim=-1, keepdim=True) + eps)


def ref_ln_backward_input(case, xs):
    x, g, dy = xs
    eps = float(case["attrs"]["eps"])
    return vjp(lambda xx: t_layer_norm(xx, eps) * t(g.reshape(-1)), [x], dy)[0]


def ref_ln_backward_gamma(case, xs):
    x, dy = xs
    eps = float(case["attrs"]["eps"])
    d = x.shape[-1]
    return vjp(lambda gg: t_layer_norm(t(x), eps) * gg, [np.ones(d)], dy)[0]


def rms_grads(case, xs):
    x, g, b, dy = xs
    eps = float(case["attrs"]["eps"])
    return vjp(lambda xx, gg, bb: t_rms_norm(xx, eps) * gg.reshape(-1) + bb.reshape(-1), [x, g, b], dy)


def ref_rms_backward_input(case, xs):
    return rms_grads(case, xs)[0]


def ref_rms_backward_gamma(case, xs):
    return rms_grads(case, xs)[1]


def ref_rms_backward_beta(case, xs):
    return rms_grads(case, xs)[2]


def t_group_norm(x, G, eps, g, b):
    n, c = x.shape[0], x.shape[1]
    y = t_layer_norm(x.reshape(n, G, -1), eps).reshape(x.shape)
    shape = (1, c) + (1,) * (x.dim() - 2)
    return y * g.reshape(shape) + b.reshape(shape)


def group_grads(case, x, dy):
    a = case["attrs"]
    c = x.shape[1]
    return vjp(lambda gg, bb: t_group_norm(t(x), int(a["num_groups"]), float(a["eps"]), gg, bb),
               [np.ones(c), np.zeros(c)], dy)


def ref_gn_backward_input(case, xs):
    x, g, b, dy = xs
    a = case["attrs"]
    return vjp(lambda xx: t_group_norm(xx, int(a["num_groups"]), float(a["eps"]), t(g), t(b)), [x], dy)[0]


def ref_gn_backward_gamma(case, xs):
    return group_grads(case, xs[0], xs[1])[0]


def ref_gn_backward_beta(case, xs):
    return group_grads(case, xs[0], xs[1])[1]


def ref_bn_backward_input(case, xs):
    x, g, mean, var, dy = xs
    eps = float(case["attrs"]["eps"])
    return vjp(lambda xx: t(g) * (xx - t(mean)) / torch.sqrt(t(var) + eps), [x], dy)[0]


def ref_bn_backward_gamma(case, xs):
    x, mean, var, dy = xs
    eps = float(case["attrs"]["eps"])
    return vjp(lambda gg: gg * (t(x) - t(mean)) / torch.sqrt(t(var) + eps), [np.ones(x.shape[-1])], dy)[0]


def ref_bn_backward_beta(case, xs):
    dy = xs[0]
    return vjp(lambda bb: torch.zeros(dy.shape, dtype=torch.float64) + bb, [np.zeros(dy.shape[-1])], dy)[0]


def ref_ada_backward(case, xs):
    x, scale, shift, dy = xs
    a = case["attrs"]
    eps = float(a["eps"])
    norm = t_layer_norm if a["norm"] == "LayerNorm" else t_rms_norm
    g = vjp(lambda xx, sc, sh: norm(xx, eps) * (1 + sc) + sh, [x, scale, shift], dy)
    return np.concatenate([v.reshape(-1) for v in g])


def ref_gated_residual_backward(case, xs):
    x, y, gate, dy = xs
    g = vjp(lambda xx, yy, gg: xx + gg * yy, [x, y, gate], dy)
    return np.concatenate([v.reshape(-1) for v in g])


# ---- rope / cumsum / gather ----

def ref_rope_backward(case, xs):
    from ref_nn import rope
    a = case["attrs"]
    dy, cos, sin = xs
    # Rope is linear in x: its VJP is the transposed rotation, found here by probing the forward
    # with unit vectors (rope(e_i) gives column i of the rotation).
    hd, nr, style = int(a["head_dim"]), int(a["n_rot"]), a["style"]
    flat = dy.reshape(-1)
    out = np.zeros_like(flat)
    for i in range(flat.size):
        e = np.zeros_like(flat)
        e[i] = 1.0
        out[i] = np.dot(rope(e.reshape(dy.shape), cos, sin, hd, nr, style).reshape(-1), flat)
    return out.reshape(dy.shape)


def ref_cumsum_backward(case, xs):
    a = case["attrs"]
    dy = xs[0]
    axis = norm_axis(a["axis"], dy.ndim)

    def fwd(x):
        y = torch.cumsum(x, dim=axis)
        if a["exclusive"]:
            y = y - x
        return y
    return vjp(fwd, [np.zeros(dy.shape)], dy)[0]


def ref_gather_backward(case, xs):
    dy, idx = xs
    a = case["attrs"]
    shape = case["output"]["shape"]
    axis = norm_axis(a["axis"], len(shape))
    ii = torch.tensor(idx.astype(np.int64).reshape(-1))
    ishape = list(idx.shape)

    def fwd(table):
        g = torch.index_select(table, axis, ii)
        return g.reshape(list(shape[:axis]) + ishape + list(shape[axis + 1:]))
    return vjp(fwd, [np.zeros(shape)], dy)[0]


# ---- convolution and pooling ----

def t_conv(x, w, a, nsp):
    stride, pb, pe, dil = geometry(a, nsp)
    xp = F.pad(x, torch_pad_arg(pb, pe))
    fn = F.conv2d if nsp == 2 else F.conv3d
    return fn(xp, w, stride=stride, dilation=dil, groups=int(a["groups"]))


def ref_conv_backward_input(case, xs, nsp):
    dy, w = xs
    return vjp(lambda xx: t_conv(xx, t(w), case["attrs"], nsp), [np.zeros(case["output"]["shape"])], dy)[0]


def ref_conv_backward_weight(case, xs, nsp):
    x, dy = xs
    return vjp(lambda ww: t_conv(t(x), ww, case["attrs"], nsp), [np.zeros(case["output"]["shape"])], dy)[0]


def ref_max_pool_backward(case, xs, nsp):
    x, dy = xs
    a = case["attrs"]
    k = [int(v) for v in a["kernel_size"]]
    stride = [int(v) for v in a["stride"]] or k
    _, pb, pe, _ = geometry({"padding": a["padding"]}, nsp)
    fn = F.max_pool2d if nsp == 2 else F.max_pool3d
    return vjp(lambda xx: fn(F.pad(xx, torch_pad_arg(pb, pe), value=-np.inf), k, stride=stride), [x], dy)[0]


# ---- Scan backward ----

def scan_mul_grads(case, xs):
    """Gradients of the forward scan c_t = c_{t-1} * x_t (body "scan_backward_mul") w.r.t. init
    and xs, for the upstream gradient of the final carry or of every trajectory row."""
    assert case["body"] == "scan_backward_mul", "no reference for body " + case["body"]
    init, rows, up = xs
    a = case["attrs"]

    def fwd(c, xr):
        traj = []
        for i in range(int(a["length"])):
            c = c * xr[i]
            traj.append(c)
        return torch.stack(traj) if a["save_trajectory"] else c
    return vjp(fwd, [init, rows], up)


def ref_scan_backward(case, xs):
    return scan_mul_grads(case, xs)[0]


def ref_scan_backward_xs(case, xs):
    return scan_mul_grads(case, xs)[1]


REF = {
    "ScanBackward": ref_scan_backward,
    "ScanBackwardXs": ref_scan_backward_xs,
    "ReluBackward": ref_relu_backward,
    "ActivationBackward": ref_activation_backward,
    "SoftmaxCrossEntropy": ref_sce,
    "SoftmaxCrossEntropyWithLogits": ref_sce_with_logits,
    "SoftmaxCrossEntropyBackward": ref_sce_backward,
    "AttentionBackward": ref_attention_backward,
    "AttentionBackwardAll": ref_attention_backward_all,
    "LayerNormBackwardInput": ref_ln_backward_input,
    "LayerNormBackwardGamma": ref_ln_backward_gamma,
    "RmsNormBackwardInput": ref_rms_backward_input,
    "RmsNormBackwardGamma": ref_rms_backward_gamma,
    "RmsNormBackwardBeta": ref_rms_backward_beta,
    "GroupNormBackwardInput": ref_gn_backward_input,
    "GroupNormBackwardGamma": ref_gn_backward_gamma,
    "GroupNormBackwardBeta": ref_gn_backward_beta,
    "BatchNormInferenceBackwardInput": ref_bn_backward_input,
    "BatchNormInferenceBackwardGamma": ref_bn_backward_gamma,
    "BatchNormInferenceBackwardBeta": ref_bn_backward_beta,
    "AdaLayerNormBackward": ref_ada_backward,
    "GatedResidualBackward": ref_gated_residual_backward,
    "RopeBackward": ref_rope_backward,
    "CumsumBackward": ref_cumsum_backward,
    "GatherBackward": ref_gather_backward,
    "Conv2dBackwardInput": lambda c, xs: ref_conv_backward_input(c, xs, 2),
    "Conv2dBackwardWeight": lambda c, xs: ref_conv_backward_weight(c, xs, 2),
    "Conv3dBackwardInput": lambda c, xs: ref_conv_backward_input(c, xs, 3),
    "Conv3dBackwardWeight": lambda c, xs: ref_conv_backward_weight(c, xs, 3),
    "MaxPool2dBackward": lambda c, xs: ref_max_pool_backward(c, xs, 2),
    "MaxPool3dBackward": lambda c, xs: ref_max_pool_backward(c, xs, 3),
}
