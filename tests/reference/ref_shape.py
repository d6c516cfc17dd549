# SPDX-License-Identifier: MIT OR Apache-2.0
"""float64 references: shape and data movement (spec ir-core §10.7) and the scatter / gather
family (§10.11, ONNX semantics; negative indices wrap once where the project says so)."""

import numpy as np

from ref_util import norm_axis


def ref_reshape(case, xs):
    shape = [int(v) for v in case["attrs"]["new_shape"]]
    return xs[0].reshape(shape)


def ref_transpose(case, xs):
    return np.transpose(xs[0], [int(v) for v in case["attrs"]["perm"]])


def ref_narrow(case, xs):
    a = case["attrs"]
    x = xs[0]
    axis = norm_axis(a["axis"], x.ndim)
    idx = [slice(None)] * x.ndim
    idx[axis] = slice(int(a["start"]), int(a["start"]) + int(a["len"]))
    return x[tuple(idx)]


def ref_concat(case, xs):
    return np.concatenate(xs, axis=norm_axis(case["attrs"]["axis"], xs[0].ndim))


def ref_expand(case, xs):
    x = xs[0]
    target = [int(v) for v in case["attrs"]["target_shape"]]
    lead = len(target) - x.ndim
    target = [x.shape[i - lead] if t == -1 else t for i, t in enumerate(target)]
    return np.broadcast_to(x, target).copy()


def ref_gather(case, xs):
    table, idx = xs
    axis = norm_axis(case["attrs"]["axis"], table.ndim)
    return np.take(table, idx.astype(np.int64), axis=axis)


def ref_reverse(case, xs):
    x = xs[0]
    axes = [norm_axis(a, x.ndim) for a in case["attrs"]["axes"]]
    return np.flip(x, axis=tuple(axes)) if axes else x


def ref_pad(case, xs):
    a = case["attrs"]
    x = xs[0]
    p = [int(v) for v in a["pads"]]
    widths = [(p[2 * i], p[2 * i + 1]) for i in range(x.ndim)]
    mode = a["mode"]
    if mode == "Constant":
        return np.pad(x, widths, mode="constant", constant_values=float(a["value"]))
    if mode == "Reflect":
        return np.pad(x, widths, mode="reflect")
    if mode == "Replicate":
        return np.pad(x, widths, mode="edge")
    if mode == "Circular":
        return np.pad(x, widths, mode="wrap")
    raise KeyError("no reference for pad mode " + mode)


def ref_slice(case, xs):
    a = case["attrs"]
    x = xs[0]
    axis = norm_axis(a["axis"], x.ndim)
    idx = [int(a["start"]) + j * int(a["step"]) for j in range(int(a["len"]))]
    return np.take(x, np.array(idx, dtype=np.int64), axis=axis)


def ref_tile(case, xs):
    return np.tile(xs[0], [int(v) for v in case["attrs"]["reps"]])


def ref_trilu(case, xs):
    a = case["attrs"]
    k = int(a["diagonal"])
    return np.triu(xs[0], k) if a["upper"] else np.tril(xs[0], k)


def ref_roll(case, xs):
    a = case["attrs"]
    x = xs[0]
    for shift, dim in zip(a["shifts"], a["dims"]):
        x = np.roll(x, int(shift), axis=norm_axis(dim, x.ndim))
    return x


def ref_kv_append(case, xs):
    a = case["attrs"]
    cache, row = xs
    axis = norm_axis(a["axis"], cache.ndim)
    pos = int(a["pos"])
    idx = [slice(None)] * cache.ndim
    idx[axis] = slice(0, pos)
    return np.concatenate([cache[tuple(idx)], row], axis=axis)


# ---- scatter / gather ----

def wrap_index(i, extent):
    i = int(i)
    if i < 0:
        i += extent
    assert 0 <= i < extent, "index out of range"
    return i


def ref_scatter_add(case, xs):
    upd, idx = xs
    out_shape = case["output"]["shape"]
    axis = norm_axis(case["attrs"]["axis"], upd.ndim)
    out = np.zeros(out_shape, dtype=upd.dtype)
    for i, target in enumerate(idx.astype(np.int64).reshape(-1)):
        src = [slice(None)] * upd.ndim
        dst = [slice(None)] * upd.ndim
        src[axis] = i
        dst[axis] = int(target)  # no negative wrap for ScatterAdd
        out[tuple(dst)] += upd[tuple(src)]
    return out


def reduce_into(old, new, red):
    if red == "None":
        return new
    if red == "Add":
        return old + new
    if red == "Mul":
        return old * new
    if red == "Max":
        return np.maximum(old, new)
    if red == "Min":
        return np.minimum(old, new)
    raise KeyError("no reference for reduction " + red)


def ref_scatter_nd(case, xs):
    data, idx, upd = xs
    red = case["attrs"]["reduction"]
    out = data.copy()
    k = idx.shape[-1]
    tuples = idx.astype(np.int64).reshape(-1, k)
    slices = upd.reshape((tuples.shape[0],) + data.shape[k:])
    for t, u in zip(tuples, slices):
        pos = tuple(wrap_index(t[j], data.shape[j]) for j in range(k))
        out[pos] = reduce_into(out[pos], u, red)
    return out


def ref_scatter_elements(case, xs):
    data, idx, upd = xs
    a = case["attrs"]
    axis = norm_axis(a["axis"], data.ndim)
    out = data.copy()
    for pos in np.ndindex(*idx.shape):
        tgt = list(pos)
        tgt[axis] = wrap_index(idx[pos], data.shape[axis])
        out[tuple(tgt)] = reduce_into(out[tuple(tgt)], upd[pos], a["reduction"])
    return out


def ref_gather_nd(case, xs):
    data, idx = xs
    b = int(case["attrs"]["batch_dims"])
    idx = idx.astype(np.int64)
    k = idx.shape[-1]
    out_shape = idx.shape[:-1] + data.shape[b + k:]
    out = np.zeros(out_shape, dtype=data.dtype)
    for pos in np.ndindex(*idx.shape[:-1]):
        batch = pos[:b]
        t = idx[pos]
        sub = tuple(wrap_index(t[j], data.shape[b + j]) for j in range(k))
        out[pos] = data[batch + sub]
    return out


def ref_gather_elements(case, xs):
    data, idx = xs
    axis = norm_axis(case["attrs"]["axis"], data.ndim)
    idx = idx.astype(np.int64)
    idx = np.where(idx < 0, idx + data.shape[axis], idx)
    assert np.all((idx >= 0) & (idx < data.shape[axis])), "index out of range"
    return np.take_along_axis(data, idx, axis=axis)


REF = {
    "Reshape": ref_reshape,
    "Transpose": ref_transpose,
    "Narrow": ref_narrow,
    "Concat": ref_concat,
    "Expand": ref_expand,
    "Gather": ref_gather,
    "Reverse": ref_reverse,
    "Pad": ref_pad,
    "Slice": ref_slice,
    "Tile": ref_tile,
    "Trilu": ref_trilu,
    "Roll": ref_roll,
    "KvAppend": ref_kv_append,
    "ScatterAdd": ref_scatter_add,
    "ScatterNd": ref_scatter_nd,
    "ScatterElements": ref_scatter_elements,
    "GatherNd": ref_gather_nd,
    "GatherElements": ref_gather_elements,
}
