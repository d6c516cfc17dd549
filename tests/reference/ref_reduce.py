# SPDX-License-Identifier: MIT OR Apache-2.0
"""float64 references: reductions, scans, selection, sorting, histogram and the deterministic
Sample cases (spec ir-core §8.4, §10.3 Sort/ArgSort, §10.8, §10.9). Index outputs are I64 unless
the case declared I32 / F32 (project decision: docs/ir-decisions.md, index-producing ops)."""

import numpy as np

from ref_util import exact, in_dtype, is_int, norm_axis, sat, softmax


def index_dtype(case):
    return case.get("declared_dtype") or "i64"


def ref_reduce(case, xs):
    a = case["attrs"]
    x = xs[0]
    op = a["op"]
    axes = tuple(norm_axis(v, x.ndim) for v in a["axes"]) if a["axes"] else tuple(range(x.ndim))
    keep = bool(a["keep_dim"])
    dt = in_dtype(case)
    integer = is_int(dt)
    if integer and op in ("Sum", "Prod"):
        # exact, then saturated to the dtype
        fn = np.sum if op == "Sum" else np.prod
        return sat(fn(exact(x), axis=axes, keepdims=keep, initial=0 if op == "Sum" else 1), dt)
    if op == "Sum":
        return np.sum(x, axis=axes, keepdims=keep)
    if op == "Mean":
        with np.errstate(invalid="ignore"):
            return np.mean(x, axis=axes, keepdims=keep)
    if op == "Prod":
        return np.prod(x, axis=axes, keepdims=keep)
    if op == "Max":
        init = np.iinfo(np.int64).min if integer else -np.inf
        return np.max(x, axis=axes, keepdims=keep, initial=init)
    if op == "Min":
        init = np.iinfo(np.int64).max if integer else np.inf
        return np.min(x, axis=axes, keepdims=keep, initial=init)
    raise KeyError("no reference for reduce op " + op)


def ref_softmax(case, xs):
    return softmax(xs[0], axis=norm_axis(case["attrs"]["axis"], xs[0].ndim))


def scan(x, axis, exclusive, fn, identity):
    y = fn(x, axis=axis)
    if not exclusive:
        return y
    shifted = np.roll(y, 1, axis=axis)
    idx = [slice(None)] * x.ndim
    idx[axis] = 0
    shifted[tuple(idx)] = identity
    return shifted


def ref_cumsum(case, xs):
    a = case["attrs"]
    dt = in_dtype(case)
    x = exact(xs[0]) if is_int(dt) else xs[0]
    y = scan(x, norm_axis(a["axis"], x.ndim), a["exclusive"], np.cumsum, 0)
    return sat(y, dt) if is_int(dt) else y


def ref_cumprod(case, xs):
    a = case["attrs"]
    dt = in_dtype(case)
    x = exact(xs[0]) if is_int(dt) else xs[0]
    y = scan(x, norm_axis(a["axis"], x.ndim), a["exclusive"], np.cumprod, 1)
    return sat(y, dt) if is_int(dt) else y


def ref_cummax(case, xs):
    a = case["attrs"]
    x = xs[0]
    ident = np.iinfo(np.int64).min if is_int(in_dtype(case)) else -np.inf
    return scan(x, norm_axis(a["axis"], x.ndim), a["exclusive"], lambda v, axis: np.maximum.accumulate(v, axis=axis),
                ident)


def ref_arg(case, xs, fn):
    a = case["attrs"]
    x = xs[0]
    axis = norm_axis(a["axis"], x.ndim)
    r = fn(x, axis=axis)  # first occurrence on ties
    if a["keep_dim"]:
        r = np.expand_dims(r, axis)
    return r.astype(np.int64), index_dtype(case)


def ref_argmax(case, xs):
    return ref_arg(case, xs, np.argmax)


def ref_argmin(case, xs):
    return ref_arg(case, xs, np.argmin)


def descending_order(x, axis):
    """Stable descending order: larger values first, ties keep the smaller index first."""
    return np.argsort(-x, axis=axis, kind="stable")


def ref_topk(case, xs):
    k = int(case["attrs"]["k"])
    order = descending_order(xs[0], -1)
    return order[..., :k].astype(np.int64), index_dtype(case)


def ref_sort(case, xs):
    a = case["attrs"]
    x = xs[0]
    axis = norm_axis(a["axis"], x.ndim)
    s = np.sort(x, axis=axis)
    return np.flip(s, axis=axis) if a["descending"] else s


def ref_argsort(case, xs):
    a = case["attrs"]
    x = xs[0]
    axis = norm_axis(a["axis"], x.ndim)
    order = descending_order(x, axis) if a["descending"] else np.argsort(x, axis=axis, kind="stable")
    return order.astype(np.int64), index_dtype(case)


def ref_histogram(case, xs):
    a = case["attrs"]
    x = xs[0].reshape(-1).astype(np.float64)
    x = x[np.isfinite(x)]
    counts, _ = np.histogram(x, bins=int(a["bins"]), range=(float(a["min"]), float(a["max"])))
    return counts.astype(np.float64), "f32"


def ref_sample(case, xs):
    """Only cases whose draw does not depend on the random number are in the table: top_k = 1,
    a tiny top_p or temperature (the most probable token), or a single token."""
    a = case["attrs"]
    x = xs[0]
    rows = x.reshape(-1, x.shape[-1])
    v = rows.shape[1]
    deterministic = int(a["top_k"]) == 1 or float(a["top_p"]) <= 0.05 or float(a["temperature"]) <= 1e-5 or v == 1
    assert deterministic, "Sample case is not deterministic; the reference cannot check it"
    tok = np.argmax(rows, axis=1).astype(np.int64)
    return tok, index_dtype(case)


REF = {
    "Reduce": ref_reduce,
    "Softmax": ref_softmax,
    "Cumsum": ref_cumsum,
    "CumProd": ref_cumprod,
    "CumMax": ref_cummax,
    "ArgMax": ref_argmax,
    "ArgMin": ref_argmin,
    "TopK": ref_topk,
    "Sort": ref_sort,
    "ArgSort": ref_argsort,
    "Histogram": ref_histogram,
    "Sample": ref_sample,
}
