# SPDX-License-Identifier: MIT OR Apache-2.0
"""Helpers shared by the float64 reference implementations (tests/reference/ref_*.py).

Every reference function has the signature f(case, xs) -> out or (out, dtype_name):
  case  the parsed case.json (case["attrs"] holds every attribute by name, enums as names,
        case["inputs"][i]["dtype"] the operand dtypes);
  xs    the operands as NumPy arrays: floats as float64, complex as complex128, integers as
        int64, bool as bool;
  out   the expected output computed in float64 (or exactly, for integer/bool results); the
        expected output dtype is operand 0's unless the function returns (out, dtype_name).
Nothing here calls RLX code: each op is written from the spec (shared/spec/ir-core.md,
ir-special.md) and the project's recorded decisions (docs/ir-decisions.md)."""

import math

import numpy as np
import torch

FLOATS = ("f16", "bf16", "f32", "f64")
INTS = ("i8", "i16", "i32", "i64", "u8", "u32")
COMPLEX = ("c64", "c128")

INT_RANGE = {
    "i8": (-(2**7), 2**7 - 1),
    "i16": (-(2**15), 2**15 - 1),
    "i32": (-(2**31), 2**31 - 1),
    "i64": (-(2**63), 2**63 - 1),
    "u8": (0, 2**8 - 1),
    "u32": (0, 2**32 - 1),
    "bool": (0, 1),
}

NP_INT = {"i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "u8": np.uint8, "u32": np.uint32}

# unit roundoff (machine epsilon) per float dtype
EPS = {"f64": 2.220446049250313e-16, "f32": 1.1920929e-07, "f16": 9.765625e-04, "bf16": 7.8125e-03,
       "c64": 1.1920929e-07, "c128": 2.220446049250313e-16}


def is_float(dt):
    return dt in FLOATS


def is_int(dt):
    return dt in INTS


def in_dtype(case, i=0):
    return case["inputs"][i]["dtype"]


def out_meta(case):
    return case["output"]


def as_compute(arr, dt):
    """The stored array as a compute array (float64 / complex128 / int64 / bool)."""
    if dt in FLOATS:
        return np.asarray(arr, dtype=np.float64)
    if dt in COMPLEX:
        return np.asarray(arr, dtype=np.complex128)
    if dt == "bool":
        return np.asarray(arr, dtype=bool)
    return np.asarray(arr).astype(np.int64)


def round_to(x, dt):
    """Rounds float64 values to dtype dt (nearest even) and back to float64 / complex128."""
    x = np.asarray(x)
    with np.errstate(over="ignore", invalid="ignore"):
        if dt == "f64":
            return x.astype(np.float64)
        if dt == "f32":
            return x.astype(np.float32).astype(np.float64)
        if dt == "f16":
            return x.astype(np.float16).astype(np.float64)
        if dt == "bf16":
            t = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float64))
            return t.to(torch.bfloat16).to(torch.float64).numpy()
        if dt == "c64":
            return x.astype(np.complex64).astype(np.complex128)
        if dt == "c128":
            return x.astype(np.complex128)
    return x


def saturate_int(x, dt):
    """Float values -> integer dtype dt: truncate toward zero, NaN -> 0, saturate to the range."""
    lo, hi = INT_RANGE[dt]
    x = np.asarray(x, dtype=np.float64)
    t = np.trunc(np.nan_to_num(x, nan=0.0, posinf=np.inf, neginf=-np.inf))
    out = np.empty(x.shape, dtype=object)
    flat_t = t.reshape(-1)
    flat_o = out.reshape(-1)
    for k in range(flat_t.size):
        v = flat_t[k]
        if v >= hi:
            flat_o[k] = hi
        elif v <= lo:
            flat_o[k] = lo
        else:
            flat_o[k] = int(v)
    if dt == "u32" or dt == "i64":
        return np.array(out.tolist(), dtype=object).reshape(x.shape)
    return out.astype(np.int64)


def exact(x):
    """Integer array as Python ints (object array): arithmetic on it never overflows."""
    return np.asarray(x).astype(object)


def sat(x, dt):
    """Exact integer values saturated to the range of dtype dt (the project's integer rule)."""
    lo, hi = INT_RANGE[dt]
    flat = [min(max(int(v), lo), hi) for v in np.asarray(x, dtype=object).reshape(-1).tolist()]
    return np.array(flat, dtype=object).reshape(np.shape(x))


def wrap_int(x, dt):
    """Two's-complement wrap of integer values into dtype dt (as int64 / python ints)."""
    bits = {"i8": 8, "i16": 16, "i32": 32, "i64": 64, "u8": 8, "u32": 32}[dt]
    signed = dt.startswith("i")
    out = []
    for v in np.asarray(x).reshape(-1).tolist():
        v = int(v) & ((1 << bits) - 1)
        if signed and v >= 1 << (bits - 1):
            v -= 1 << bits
        out.append(v)
    return np.array(out, dtype=object).reshape(np.shape(x))


def erf(x):
    return torch.erf(torch.from_numpy(np.asarray(x, dtype=np.float64))).numpy()


def sigmoid(x):
    with np.errstate(over="ignore"):
        return np.where(x >= 0, 1.0 / (1.0 + np.exp(-np.abs(x))), np.exp(-np.abs(x)) / (1.0 + np.exp(-np.abs(x))))


def softplus(x):
    return np.logaddexp(0.0, x)


def norm_axis(axis, rank):
    axis = int(axis)
    if axis < 0:
        axis += rank
    assert 0 <= axis < rank, "axis out of range"
    return axis


def softmax(s, axis=-1):
    m = np.max(s, axis=axis, keepdims=True)
    e = np.exp(s - m)
    return e / np.sum(e, axis=axis, keepdims=True)


def layout_dims(shape):
    return [int(d) for d in shape]


def prod(xs):
    return int(math.prod(int(v) for v in xs))
