# SPDX-License-Identifier: MIT OR Apache-2.0
"""float64 references: Activation, Cast, StopGradient, Binary, Compare, Where, Fma, Clamp
(spec ir-core §8.1-§8.3, §10.1). Floats are computed in float64; integers exactly."""

import numpy as np

from ref_util import COMPLEX, FLOATS, INT_RANGE, erf, exact, in_dtype, is_int, sat, saturate_int, sigmoid, softplus, wrap_int


# ---- Activation ----

def act_float(kind, x):
    with np.errstate(all="ignore"):
        if kind == "Gelu":
            return 0.5 * x * (1.0 + erf(x / np.sqrt(2.0)))
        if kind == "GeluApprox":
            return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))
        if kind == "Silu":
            return x * sigmoid(x)
        if kind == "Relu":
            return np.where(np.isnan(x), x, np.maximum(x, 0.0))
        if kind == "Sigmoid":
            return sigmoid(x)
        if kind == "Tanh":
            return np.tanh(x)
        if kind == "Exp":
            return np.exp(x)
        if kind == "Log":
            return np.log(x)
        if kind == "Sqrt":
            return np.sqrt(x)
        if kind == "Rsqrt":
            return 1.0 / np.sqrt(x)
        if kind == "Neg":
            return -x
        if kind == "Abs":
            return np.abs(x)
        if kind == "Sin":
            return np.sin(x)
        if kind == "Cos":
            return np.cos(x)
        if kind == "Tan":
            return np.tan(x)
        if kind == "Atan":
            return np.arctan(x)
        if kind == "Recip":
            return 1.0 / x
        if kind == "Round":
            return np.round(x)  # half to even (project decision, spec ir-core §12.11)
        if kind == "Floor":
            return np.floor(x)
        if kind == "Ceil":
            return np.ceil(x)
        if kind == "Sign":
            return np.sign(x)
        if kind == "Softplus":
            return softplus(x)
        if kind == "Elu":
            return np.where(x > 0, x, np.expm1(np.minimum(x, 0.0)))
        if kind == "Erf":
            return erf(x)
        if kind == "HardSwish":
            return x * np.clip(x + 3.0, 0.0, 6.0) / 6.0
        if kind == "HardSigmoid":
            return np.clip(x / 6.0 + 0.5, 0.0, 1.0)
        if kind == "Mish":
            return x * np.tanh(softplus(x))
        if kind == "Softsign":
            return x / (1.0 + np.abs(x))
        if kind == "LogSigmoid":
            return np.minimum(x, 0.0) - np.log1p(np.exp(-np.abs(x)))
    raise KeyError("no reference for activation " + kind)


def act_int(kind, x, dt):
    """Integer activations are exact and saturate to the dtype (-(-128) in i8 is 127)."""
    if kind == "Relu":
        return np.maximum(x, 0)
    if kind == "Neg":
        return sat(-exact(x), dt)
    if kind == "Abs":
        return sat(abs(exact(x)), dt)
    if kind == "Sign":
        return np.sign(x)
    if kind in ("Round", "Floor", "Ceil"):
        return x
    # other kinds on integers: computed in float64, stored with Cast semantics
    return saturate_int(act_float(kind, x.astype(np.float64)), dt)


def activation(kind, x, dt):
    if is_int(dt):
        return act_int(kind, x, dt)
    return act_float(kind, x)


def ref_activation(case, xs):
    return activation(case["attrs"]["kind"], xs[0], in_dtype(case))


# ---- Cast ----

def cast(x, src, dst):
    if dst == "bool":
        return x != 0  # NaN != 0 is true; complex: either part non-zero
    if src in COMPLEX and dst not in COMPLEX:
        x = np.real(x)
    if dst in COMPLEX:
        return x.astype(np.complex128)
    if dst in FLOATS:
        return np.asarray(x, dtype=np.float64)
    # integer destination
    if src in FLOATS or src in COMPLEX:
        return saturate_int(x, dst)
    return wrap_int(np.asarray(x, dtype=np.int64), dst)


def ref_cast(case, xs):
    dst = case["attrs"]["to"]
    return cast(xs[0], in_dtype(case), dst), dst


def ref_identity(case, xs):
    return xs[0]


# ---- Binary ----

def int_div(a, b):
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q)


def binary(op, a, b, dt):
    if dt == "bool":
        a = a.astype(np.int64)
        b = b.astype(np.int64)
        table = {"BitAnd": np.bitwise_and, "BitOr": np.bitwise_or, "BitXor": np.bitwise_xor, "Max": np.maximum,
                 "Min": np.minimum, "Mul": np.multiply}
        return table[op](a, b) != 0
    if is_int(dt):
        # exact arithmetic, saturated to the dtype (the project's integer rule; NumPy would wrap)
        if op == "Add":
            return sat(exact(a) + exact(b), dt)
        if op == "Sub":
            return sat(exact(a) - exact(b), dt)
        if op == "Mul":
            return sat(exact(a) * exact(b), dt)
        if op == "Div":
            return int_div(a, b)
        if op == "Mod":
            return np.fmod(a, b)  # C remainder: sign of the dividend
        if op == "Max":
            return np.maximum(a, b)
        if op == "Min":
            return np.minimum(a, b)
        if op == "Pow":
            return sat(np.power(exact(a), exact(b)), dt)
        if op == "BitAnd":
            return np.bitwise_and(a, b)
        if op == "BitOr":
            return np.bitwise_or(a, b)
        if op == "BitXor":
            return np.bitwise_xor(a, b)
        if op == "Shl":
            return wrap_int(np.left_shift(a, b), dt)  # bits shifted out of the dtype are dropped
        if op == "Shr":
            return np.right_shift(a, b)  # arithmetic for signed values
        if op == "Atan2":
            return saturate_int(np.arctan2(a.astype(np.float64), b.astype(np.float64)), dt)
    with np.errstate(all="ignore"):
        if op == "Add":
            return a + b
        if op == "Sub":
            return a - b
        if op == "Mul":
            return a * b
        if op == "Div":
            return a / b
        if op == "Max":
            return np.maximum(a, b)  # NaN propagates
        if op == "Min":
            return np.minimum(a, b)
        if op == "Pow":
            return np.power(a, b)
        if op == "Mod":
            return np.fmod(a, b)
        if op == "Atan2":
            return np.arctan2(a, b)
    raise KeyError("no reference for binary op %s on %s" % (op, dt))


def ref_binary(case, xs):
    return binary(case["attrs"]["op"], xs[0], xs[1], in_dtype(case))


# ---- Compare / Where ----

def compare(op, a, b):
    with np.errstate(invalid="ignore"):
        return {"Eq": np.equal, "Ne": np.not_equal, "Lt": np.less, "Le": np.less_equal, "Gt": np.greater,
                "Ge": np.greater_equal}[op](a, b)


def ref_compare(case, xs):
    return compare(case["attrs"]["op"], xs[0], xs[1]), "bool"


def where(c, t, f):
    return np.where(c != 0, t, f)


def ref_where(case, xs):
    return where(xs[0], xs[1], xs[2]), in_dtype(case, 1)


# ---- Fma / Clamp ----

def ref_fma(case, xs):
    a, b, c = xs
    dt = in_dtype(case)
    if is_int(dt):
        return sat(exact(a) * exact(b) + exact(c), dt)
    return a * b + c


def ref_clamp(case, xs):
    lo, hi = float(case["attrs"]["min"]), float(case["attrs"]["max"])
    x = xs[0]
    dt = in_dtype(case)
    if is_int(dt):
        lo_i, hi_i = INT_RANGE[dt]
        return np.clip(x, max(int(np.ceil(lo)), lo_i), min(int(np.floor(hi)), hi_i))
    # NaN passes through
    return np.where(np.isnan(x), x, np.minimum(np.maximum(x, lo), hi))


REF = {
    "Activation": ref_activation,
    "Cast": ref_cast,
    "StopGradient": ref_identity,
    "Binary": ref_binary,
    "Compare": ref_compare,
    "Where": ref_where,
    "Fma": ref_fma,
    "Clamp": ref_clamp,
}
