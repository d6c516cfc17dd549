# SPDX-License-Identifier: MIT OR Apache-2.0
"""float64 references: fused / composite ops (spec ir-core §10.12), fusion regions (§10.2, chain
semantics §8.7), FakeQuantize PerBatch (ir-special §1.4), control flow (If / While / Scan, §10.14)
and CustomFn. Control-flow bodies are identified by the case's "body" name; each is implemented
here exactly as tests/cases/cases_control.c describes it."""

import numpy as np

from ref_elementwise import activation, binary, cast, compare, where
from ref_nn import attention, conv_nd, layer_norm_last, resize2x, rms_norm_last, rope
from ref_util import in_dtype, norm_axis, sigmoid


def act_or_none(kind, x):
    return x if kind is None else activation(kind, x, "f64")


# ---- fused ----

def ref_swiglu(case, xs):
    a = case["attrs"]
    x = xs[0]
    n = x.shape[-1] // 2
    lo, hi = x[..., :n], x[..., n:]
    gate, up = (lo, hi) if a["gate_first"] else (hi, lo)
    out = gate * sigmoid(gate) * up
    return out, a["cast_to"] or in_dtype(case)


def ref_matmul_bias_act(case, xs):
    x, w, b = xs
    return act_or_none(case["attrs"]["activation"], x @ w + b)


def ref_matmul_residual(case, xs):
    a, b, r = xs
    return a @ b + r


def ref_lora(case, xs):
    x, W, A, B = xs
    return x @ W + float(case["attrs"]["scale"]) * ((x @ A) @ B)


def ref_conv_bias_act(case, xs):
    a = case["attrs"]
    y = conv_nd(xs[0], xs[1], a, 2) + xs[2].reshape(1, -1, 1, 1)
    if a["has_residual"]:
        y = y + xs[3]
    return act_or_none(a["activation"], y)


def ref_residual_ln(case, xs):
    a = case["attrs"]
    if a["has_bias"]:
        x, r, bias, g, b = xs
        h = x + r + bias
    else:
        x, r, g, b = xs
        h = x + r
    return layer_norm_last(h, float(a["eps"])) * g.reshape(-1) + b.reshape(-1)


def ref_residual_rms(case, xs):
    a = case["attrs"]
    if a["has_bias"]:
        x, r, bias, g, b = xs
        h = x + r + bias
    else:
        x, r, g, b = xs
        h = x + r
    return rms_norm_last(h, float(a["eps"])) * g.reshape(-1) + b.reshape(-1)


def attention_block(hidden, qkv_w, out_w, mask, qkv_b, out_b, cos, sin, H, D):
    """QKV projection, thirds Q|K|V, [B,S,H,D] -> [B,H,S,D], optional NeoX rope on Q and K
    (n_rot = D), attention with the [B,S] keep-mask, output projection."""
    B, S, HD = hidden.shape
    qkv = hidden @ qkv_w
    if qkv_b is not None:
        qkv = qkv + qkv_b
    q, k, v = (np.transpose(qkv[..., i * HD:(i + 1) * HD].reshape(B, S, H, D), (0, 2, 1, 3)) for i in range(3))
    if cos is not None:
        q = rope(q, cos, sin, D, D, "NeoX")
        k = rope(k, cos, sin, D, D, "NeoX")
    attrs = {"num_heads": H, "head_dim": D, "v_head_dim": None, "mask_kind": "Custom", "window": 0,
             "score_scale": None, "attn_logit_softcap": None}
    o = attention(q, k, v, mask, attrs)
    o = np.transpose(o, (0, 2, 1, 3)).reshape(B, S, HD) @ out_w
    if out_b is not None:
        o = o + out_b
    return o


def ref_attention_block(case, xs):
    a = case["attrs"]
    hidden, qkv_w, out_w, mask = xs[:4]
    rest = xs[4:]
    qkv_b = out_b = cos = sin = None
    if a["has_bias"]:
        qkv_b, out_b = rest[0], rest[1]
        rest = rest[2:]
    if a["has_rope"]:
        cos, sin = rest[0], rest[1]
    return attention_block(hidden, qkv_w, out_w, mask, qkv_b, out_b, cos, sin, int(a["num_heads"]),
                           int(a["head_dim"]))


def ref_transformer_layer(case, xs):
    """BERT post-norm layer: LN1(h + attn(h)), then LN2(h1 + fc2(act(fc1(h1))))."""
    a = case["attrs"]
    H, D = int(a["num_heads"]), int(a["head_dim"])
    if a["has_bias"]:
        (hidden, qkv_w, qkv_b, out_w, out_b, ln1_g, ln1_b, fc1_w, fc1_b, fc2_w, fc2_b, ln2_g, ln2_b, mask) = xs
    else:
        hidden, qkv_w, out_w, ln1_g, fc1_w, fc2_w, ln2_g, mask = xs
        qkv_b = out_b = fc1_b = fc2_b = None
        ln1_b = np.zeros_like(ln1_g)
        ln2_b = np.zeros_like(ln2_g)
    attn = attention_block(hidden, qkv_w, out_w, mask, qkv_b, out_b, None, None, H, D)
    h1 = layer_norm_last(hidden + attn, float(a["eps1"])) * ln1_g + ln1_b
    f = h1 @ fc1_w
    if fc1_b is not None:
        f = f + fc1_b
    f = activation(a["activation"], f, "f64") @ fc2_w
    if fc2_b is not None:
        f = f + fc2_b
    return layer_norm_last(h1 + f, float(a["eps2"])) * ln2_g + ln2_b


# ---- fusion regions ----

def tile_to(x, out_shape):
    """Trailing tiling: an operand of k elements is read at element gid % k of the output."""
    k = x.size
    if k == 1:
        return np.broadcast_to(x.reshape(()), out_shape)
    for r in range(1, len(out_shape) + 1):
        suffix = tuple(out_shape[len(out_shape) - r:])
        if int(np.prod(suffix)) == k:
            return np.broadcast_to(x.reshape(suffix), out_shape)
    raise AssertionError("operand does not tile the output")


def run_chain(chain, ops, dts):
    vals, vdts = [], []
    for st in chain:
        def get(ref):
            if "step" in ref:
                return vals[ref["step"]], vdts[ref["step"]]
            return ops[ref["input"]], dts[ref["input"]]
        kind = st["kind"]
        a, adt = get(st["a"])
        if kind == "Activation":
            v, vdt = activation(st["sub"], a, adt), adt
        elif kind == "Cast":
            v, vdt = cast(a, adt, st["sub"]), st["sub"]
        elif kind == "Binary":
            v, vdt = binary(st["sub"], a, get(st["b"])[0], adt), adt
        elif kind == "Compare":
            v, vdt = compare(st["sub"], a, get(st["b"])[0]), "bool"
        else:
            t, tdt = get(st["b"])
            v, vdt = where(a, t, get(st["c"])[0]), tdt
        vals.append(v)
        vdts.append(vdt)
    return vals[-1], vdts[-1]


def ref_elementwise_region(case, xs):
    a = case["attrs"]
    ops = list(xs)
    dts = [i["dtype"] for i in case["inputs"]]
    if a["prologue"] == "ResizeNearest2x":
        p = int(a["prologue_input"])
        ops[p] = resize2x(ops[p])
    out_shape = tuple(case["output"]["shape"])
    ops = [tile_to(x, out_shape) for x in ops]
    y, ydt = run_chain(a["chain"], ops, dts)
    return np.broadcast_to(y, out_shape), ydt


def ref_transform_region(case, xs):
    x = xs[0]
    for _ in case["attrs"]["steps"]:
        x = resize2x(x)
    return x


def ref_batch_region(case, xs):
    a = case["attrs"]
    parts, ydt = [], None
    for i, x in enumerate(xs):
        if a["prologue"] == "ResizeNearest2x":
            x = resize2x(x)
        y, ydt = run_chain(a["chain"], [x], [in_dtype(case, i)])
        parts.append(np.broadcast_to(y, x.shape))
    return np.concatenate(parts, axis=0), ydt


def ref_fake_quantize(case, xs):
    a = case["attrs"]
    x = xs[0]
    qmax = {8: 127.0, 4: 7.0, 2: 1.0}[int(a["bits"])]
    ch = norm_axis(a["axis"], x.ndim)
    others = tuple(i for i in range(x.ndim) if i != ch)
    amax = np.max(np.abs(x), axis=others, keepdims=True) if others else np.abs(x)
    s = np.maximum(amax / qmax, 1e-12)
    return np.clip(np.round(x / s), -qmax, qmax) * s  # round half to even (the IR's Round)


# ---- control flow and CustomFn ----

def truthy(p):
    return bool(np.asarray(p).reshape(-1)[0] != 0)


def ref_if(case, xs):
    body = case["body"]
    if body == "if_square_else_neg":
        x = xs[1]
        return (x * x if truthy(xs[0]) else -x), in_dtype(case, 1)
    if body == "if_add_else_sub":
        return (xs[1] + xs[2] if truthy(xs[0]) else xs[1] - xs[2]), in_dtype(case, 1)
    raise KeyError("no reference for If body " + body)


def ref_while(case, xs):
    if case["body"] != "while_add_counter":
        raise KeyError("no reference for While body " + case["body"])
    x, i = xs[0].copy(), float(np.asarray(xs[1]).reshape(-1)[0])
    cap = case["attrs"]["max_iterations"]
    it = 0
    while i < 4 and (cap is None or it < int(cap)):
        x = x + i
        i += 1
        it += 1
    return x


def ref_scan(case, xs):
    a = case["attrs"]
    body = case["body"]
    c = xs[0].copy()
    traj = []
    if body == "scan_add":
        rows = xs[1]
        step = lambda c, r: c + r  # noqa: E731
    elif body == "scan_mul_bcast_add":
        b, rows = xs[1], xs[2]
        step = lambda c, r: c * b + r  # noqa: E731
    else:
        raise KeyError("no reference for Scan body " + body)
    for t in range(int(a["length"])):
        c = step(c, rows[t])
        traj.append(c)
    if a["save_trajectory"]:
        return np.stack(traj) if traj else np.zeros((0,) + c.shape)
    return c


def ref_customfn(case, xs):
    if case["body"] != "customfn_a_mul_sigmoid_b":
        raise KeyError("no reference for CustomFn body " + case["body"])
    return xs[0] * sigmoid(xs[1])


def ref_leaf(case, xs):
    if case["op"] == "Constant":
        if case["body"] == "constant_ramp":
            return np.arange(6, dtype=np.float64).reshape(2, 3) * 0.5 - 1.0, "f32"
        if case["body"] == "constant_i64_minus42":
            return np.array(-42, dtype=np.int64), "i64"
        raise KeyError("no reference for Constant " + case["body"])
    return xs[0]  # Input / Param: the bound value itself


REF = {
    "Input": ref_leaf,
    "Param": ref_leaf,
    "Constant": ref_leaf,
    "FusedSwiGLU": ref_swiglu,
    "FusedMatMulBiasAct": ref_matmul_bias_act,
    "FusedMatMulResidual": ref_matmul_residual,
    "LoraMatMul": ref_lora,
    "FusedConvBiasAct": ref_conv_bias_act,
    "FusedResidualLN": ref_residual_ln,
    "FusedResidualRmsNorm": ref_residual_rms,
    "FusedAttentionBlock": ref_attention_block,
    "FusedTransformerLayer": ref_transformer_layer,
    "ElementwiseRegion": ref_elementwise_region,
    "TransformRegion": ref_transform_region,
    "BatchElementwiseRegion": ref_batch_region,
    "FakeQuantize": ref_fake_quantize,
    "If": ref_if,
    "While": ref_while,
    "Scan": ref_scan,
    "CustomFn": ref_customfn,
}
