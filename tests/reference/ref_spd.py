# SPDX-License-Identifier: MIT OR Apache-2.0
"""float64 references: the SPD manifold family and the eigen backwards (spec ir-special §6).

Forward ops use SciPy's matrix functions (scipy.linalg.logm / expm / sqrtm /
fractional_matrix_power), which do not go through an eigendecomposition; ReEig / LogEig (a
rectified / floored spectrum, packed with the eigenvectors) use NumPy's eigh. Every backward op
is checked against PyTorch autograd (float64) of its forward, written here with
torch.linalg.eigh / torch.linalg.matrix_exp; nothing reuses the Daleckii-Krein formulas of the C
kernels. A matrix the math takes to be symmetric is symmetrised first, like the kernels do, so
gradients are symmetric. Eigenvectors follow the documented canonical sign (the largest-magnitude
entry of each eigenvector is positive). ReEig/LogEig pack Y | lambda | U with rows =
eigenvectors; Eigh packs lambda | U with columns = eigenvectors."""

import numpy as np
import scipy.linalg as sl
import torch

from ref_linalg import flip_by_largest


def sym(a):
    return 0.5 * (a + np.swapaxes(a, -1, -2))


def logm(a):
    return np.real(sl.logm(sym(a)))


def sqrtm(a):
    return np.real(sl.sqrtm(sym(a)))


def invsqrtm(a):
    return np.real(sl.fractional_matrix_power(sym(a), -0.5))


def expm(a):
    return sl.expm(sym(a))


MATFN = {"Logm": logm, "Expm": expm, "Sqrtm": sqrtm, "Invsqrtm": invsqrtm}


def ref_bimap(case, xs):
    w, x = xs
    return w @ x @ w.T


def eig_packed(case, x, fn):
    lam, u = np.linalg.eigh(sym(x))
    u = u * flip_by_largest(u)
    y = (u * fn(lam)) @ u.T
    return np.concatenate([y.reshape(-1), lam, u.T.reshape(-1)])


def ref_reeig(case, xs):
    eps = float(case["attrs"]["eps"])
    return eig_packed(case, xs[0], lambda l: np.maximum(l, eps))


def ref_logeig(case, xs):
    eps = float(case["attrs"]["eps"])
    return eig_packed(case, xs[0], lambda l: np.log(np.maximum(l, eps)))


def ref_batchnorm(case, xs):
    x, m, g = xs
    mis, gs = invsqrtm(m), sqrtm(g)
    return np.stack([gs @ (mis @ xi @ mis) @ gs for xi in x])


def karcher(x, w, iters, tol):
    m = sym(np.tensordot(w, x, axes=1))
    for _ in range(iters):
        ms, mis = sqrtm(m), invsqrtm(m)
        s = sum(wi * logm(mis @ xi @ mis) for wi, xi in zip(w, x))
        m = sym(ms @ expm(s) @ ms)
        if np.linalg.norm(s) < tol:
            break
    return m


def ref_karcher(case, xs):
    a = case["attrs"]
    x = xs[0]
    return karcher(x, np.full(x.shape[0], 1.0 / x.shape[0]), int(a["iters"]), float(a["tol"]))


def ref_karcher_weighted(case, xs):
    a = case["attrs"]
    x, w = xs
    w = np.asarray(w, dtype=np.float64)
    w = w / w.sum() if w.sum() != 0 else np.full(x.shape[0], 1.0 / x.shape[0])
    return karcher(x, w, int(a["iters"]), float(a["tol"]))


def ref_logmap(case, xs):
    p, x = xs
    a, w = sqrtm(p), invsqrtm(p)
    return a @ logm(w @ x @ w) @ a


def ref_expmap(case, xs):
    p, v = xs
    a, w = sqrtm(p), invsqrtm(p)
    return a @ expm(w @ v @ w) @ a


def ref_transport(case, xs):
    p, q, v = xs
    a, w = sqrtm(p), invsqrtm(p)
    e = a @ sqrtm(w @ q @ w) @ w
    return sym(e @ v @ e.T)


def ref_matfn(case, xs):
    f = MATFN[case["attrs"]["kind"]]
    return np.array([f(m) for m in xs[0]]).reshape(xs[0].shape)


# ---- backward ops: PyTorch autograd of the forward ----

def t_sym(a):
    return 0.5 * (a + a.transpose(-1, -2))


def t_fn(a, f):
    lam, u = torch.linalg.eigh(t_sym(a))
    return (u * f(lam).unsqueeze(-2)) @ u.transpose(-1, -2)


T_FN = {
    "Logm": lambda a: t_fn(a, lambda l: torch.log(torch.clamp(l, min=1e-12))),
    "Expm": lambda a: torch.linalg.matrix_exp(t_sym(a)),
    "Sqrtm": lambda a: t_fn(a, lambda l: torch.sqrt(torch.clamp(l, min=0))),
    "Invsqrtm": lambda a: t_fn(a, lambda l: torch.rsqrt(torch.clamp(l, min=1e-12))),
}


def vjp(fn, primals, cot):
    ts = [torch.tensor(np.asarray(p, dtype=np.float64), requires_grad=True) for p in primals]
    y = fn(*ts)
    (y * torch.tensor(np.asarray(cot, dtype=np.float64))).sum().backward()
    return [t.grad.numpy() for t in ts]


def ref_eig_bw(case, xs):
    x, dy = xs
    body = case["body"]
    if body == "reeig_bw_eps0.5":
        f = lambda a: t_fn(a, lambda l: torch.clamp(l, min=0.5))  # noqa: E731
    elif body == "logeig_bw_eps1e-4":
        f = lambda a: t_fn(a, lambda l: torch.log(torch.clamp(l, min=1e-4)))  # noqa: E731
    else:
        raise KeyError("no reference for body " + body)
    return vjp(f, [x], dy.reshape(x.shape))[0]


def t_eigh_packed(a):
    lam, u = torch.linalg.eigh(t_sym(a))
    idx = torch.argmax(torch.abs(u), dim=-2, keepdim=True)
    s = torch.sign(torch.gather(u, -2, idx)).detach()
    s[s == 0] = 1
    u = u * s
    return torch.cat([lam, u.reshape(*u.shape[:-2], -1)], dim=-1)


def ref_eigh_bw(case, xs):
    if case["body"] != "eigh_bw":
        raise KeyError("no reference for body " + case["body"])
    a, bar = xs
    return vjp(t_eigh_packed, [a], bar)[0]


def t_sqrt_floor(a, eps):
    return t_fn(a, lambda l: torch.sqrt(torch.clamp(l, min=eps)))


def t_isqrt_floor(a, eps):
    return t_fn(a, lambda l: torch.rsqrt(torch.clamp(l, min=eps)))


def t_batchnorm(x, m, g, eps):
    mis, gs = t_isqrt_floor(m, eps), t_sqrt_floor(g, eps)
    return gs @ (mis @ x @ mis) @ gs


def ref_bn_bw_x(case, xs):
    m, g, dy = xs
    eps = float(case["attrs"]["eps"])
    x0 = np.zeros(dy.shape)
    return sym(vjp(lambda x: t_batchnorm(x, torch.tensor(m), torch.tensor(g), eps), [x0], dy)[0])


def ref_bn_bw_g(case, xs):
    x, m, g, dy = xs
    eps = float(case["attrs"]["eps"])
    return vjp(lambda gg: t_batchnorm(torch.tensor(x), torch.tensor(m), gg, eps), [g], dy)[0]


def t_map(p, x, f):
    a, w = T_FN["Sqrtm"](p), T_FN["Invsqrtm"](p)
    return a @ f(w @ t_sym(x) @ w) @ a


def ref_logmap_bw(case, xs):
    p, x, dy = xs
    return np.stack(vjp(lambda pp, xx: t_map(pp, xx, T_FN["Logm"]), [p, x], dy))


def ref_expmap_bw(case, xs):
    p, v, dy = xs
    return np.stack(vjp(lambda pp, vv: t_map(pp, vv, T_FN["Expm"]), [p, v], dy))


def t_transport(p, q, v):
    a, w = T_FN["Sqrtm"](p), T_FN["Invsqrtm"](p)
    e = a @ T_FN["Sqrtm"](w @ t_sym(q) @ w) @ w
    return t_sym(e @ t_sym(v) @ e.transpose(-1, -2))


def ref_transport_bw(case, xs):
    p, q, v, dy = xs
    return np.stack(vjp(t_transport, [p, q, v], dy))


def ref_matfn_bw(case, xs):
    x, dy = xs
    return vjp(T_FN[case["attrs"]["kind"]], [x], dy)[0]


REF = {
    "BiMap": ref_bimap,
    "ReEig": ref_reeig,
    "LogEig": ref_logeig,
    "SpdBatchNorm": ref_batchnorm,
    "SpdKarcherMean": ref_karcher,
    "SpdKarcherMeanWeighted": ref_karcher_weighted,
    "SpdLogMap": ref_logmap,
    "SpdExpMap": ref_expmap,
    "SpdParallelTransport": ref_transport,
    "SpdMatrixFnBatch": ref_matfn,
    "ReEigBackward": ref_eig_bw,
    "LogEigBackward": ref_eig_bw,
    "EighBackward": ref_eigh_bw,
    "EighBatchBackward": ref_eigh_bw,
    "SpdBatchNormBackwardX": ref_bn_bw_x,
    "SpdBatchNormBackwardG": ref_bn_bw_g,
    "SpdLogMapBackward": ref_logmap_bw,
    "SpdExpMapBackward": ref_expmap_bw,
    "SpdParallelTransportBackward": ref_transport_bw,
    "SpdMatrixFnBatchBackward": ref_matfn_bw,
}

# Every op here runs an eigensolver (error grows with the spectrum's condition) and sums terms;
# BiMap is two matrix products.
OP_TOL = {k: 256 for k in REF}
OP_TOL["BiMap"] = 16
ACCUMULATING = set(REF)
