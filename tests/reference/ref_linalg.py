# SPDX-License-Identifier: MIT OR Apache-2.0
"""float64 references: linear algebra (spec ir-core §10.3, ir-special §1.4 GroupedMatMul, §6 Eigh).
Decompositions whose factors are unique only up to signs are made canonical the way the project
documents it (src/backends/cpu/ref/linalg.c header; docs/ir-decisions.md):
  Svd: each column of U has its largest-magnitude entry positive (the matching row of Vt flips);
  Qr:  R has a non-negative diagonal (the matching column of Q flips);
  Eigh: each eigenvector column has its largest-magnitude entry positive."""

import string

import numpy as np

from ref_util import exact, sat


def ref_matmul(case, xs):
    a, b = xs
    dt = case["inputs"][0]["dtype"]
    if a.dtype == bool:
        return np.matmul(a.astype(np.int64), b.astype(np.int64)) != 0
    if np.issubdtype(a.dtype, np.integer):
        return sat(np.matmul(exact(a), exact(b)), dt)  # exact, saturated to the dtype
    return np.matmul(a, b)


def ref_dot_general(case, xs):
    a = case["attrs"]
    lhs, rhs = xs
    lc, rc = [int(v) for v in a["lhs_contracting"]], [int(v) for v in a["rhs_contracting"]]
    lb, rb = [int(v) for v in a["lhs_batch"]], [int(v) for v in a["rhs_batch"]]
    letters = iter(string.ascii_letters)
    ls = [None] * lhs.ndim
    rs = [None] * rhs.ndim
    batch = []
    for i, j in zip(lb, rb):
        c = next(letters)
        ls[i] = rs[j] = c
        batch.append(c)
    for i, j in zip(lc, rc):
        c = next(letters)
        ls[i] = rs[j] = c
    lfree, rfree = [], []
    for i in range(lhs.ndim):
        if ls[i] is None:
            ls[i] = next(letters)
            lfree.append(ls[i])
    for j in range(rhs.ndim):
        if rs[j] is None:
            rs[j] = next(letters)
            rfree.append(rs[j])
    spec = "%s,%s->%s" % ("".join(ls), "".join(rs), "".join(batch + lfree + rfree))
    return np.einsum(spec, lhs, rhs)


def ref_dense_solve(case, xs):
    A, b = xs
    return np.linalg.solve(A, b)


def ref_batched_dense_solve(case, xs):
    A, b = xs
    return np.stack([np.linalg.solve(A[i], b[i]) for i in range(A.shape[0])]) if A.shape[0] else b.copy()


def ref_cholesky(case, xs):
    return np.linalg.cholesky(xs[0])


def ref_triangular_solve(case, xs):
    a = case["attrs"]
    A, B = xs
    T = np.tril(A) if a["lower"] else np.triu(A)  # only the named triangle is read
    if a["transpose"]:
        T = T.T
    return np.linalg.solve(T, B)


def ref_det(case, xs):
    return np.array(np.linalg.det(xs[0]))


def ref_logdet(case, xs):
    return np.array(np.linalg.slogdet(xs[0])[1])


def flip_by_largest(cols):
    """Signs (+1/-1) making the largest-magnitude entry of each column positive."""
    idx = np.argmax(np.abs(cols), axis=0)
    s = np.sign(cols[idx, np.arange(cols.shape[1])])
    s[s == 0] = 1
    return s


def ref_svd(case, xs):
    u, s, vt = np.linalg.svd(xs[0], full_matrices=False)
    sg = flip_by_largest(u)
    u = u * sg
    vt = vt * sg[:, None]
    return {"U": u, "S": s, "Vt": vt}[case["attrs"]["part"]]


def ref_qr(case, xs):
    q, r = np.linalg.qr(xs[0], mode="reduced")
    sg = np.sign(np.diag(r)).copy()
    sg[sg == 0] = 1
    q = q * sg
    r = r * sg[:, None]
    return q if case["attrs"]["part"] == "Q" else r


def eigh_packed(A):
    lam, u = np.linalg.eigh(A)  # ascending eigenvalues
    u = u * flip_by_largest(u)
    return np.concatenate([lam, u.reshape(-1)])


def ref_eigh(case, xs):
    return eigh_packed(xs[0])


def ref_eigh_batch(case, xs):
    return np.stack([eigh_packed(m) for m in xs[0]])


def ref_grouped_matmul(case, xs):
    x, w, idx = xs
    e = idx.astype(np.int64).reshape(-1)
    return np.stack([x[m] @ w[e[m]] for m in range(x.shape[0])])


REF = {
    "MatMul": ref_matmul,
    "DotGeneral": ref_dot_general,
    "DenseSolve": ref_dense_solve,
    "BatchedDenseSolve": ref_batched_dense_solve,
    "Cholesky": ref_cholesky,
    "TriangularSolve": ref_triangular_solve,
    "Det": ref_det,
    "LogDet": ref_logdet,
    "Svd": ref_svd,
    "Qr": ref_qr,
    "Eigh": ref_eigh,
    "EighBatch": ref_eigh_batch,
    "GroupedMatMul": ref_grouped_matmul,
}
