/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Decompositions of ReluBackward and ActivationBackward into elementwise primitives (Activation,
 * Binary, Compare, Where), so that a backend without the kernels runs them and a second reverse
 * pass can differentiate through them. They compute what the CPU kernels compute
 * (ref/backward_act.c): dx = dy * f'(x), except that Relu, Sqrt and Rsqrt select an exact 0
 * (Where) in their guarded region. Intermediate values are rounded to x's dtype at every step. */
#include "passes/decompose/decompose.h"

/* Small builders over x's dtype. */
static rlx_status mul(rlx_graph *g, rlx_id a, rlx_id b, rlx_id *out) { return rlx_binary(g, RLX_BINOP_MUL, a, b, out); }
static rlx_status add(rlx_graph *g, rlx_id a, rlx_id b, rlx_id *out) { return rlx_binary(g, RLX_BINOP_ADD, a, b, out); }
static rlx_status muls(rlx_graph *g, rlx_id a, double v, rlx_id *out) {
  return rlx_binary_scalar(g, RLX_BINOP_MUL, a, v, out);
}
static rlx_status adds(rlx_graph *g, rlx_id a, double v, rlx_id *out) {
  return rlx_binary_scalar(g, RLX_BINOP_ADD, a, v, out);
}
/* v - a */
static rlx_status rsubs(rlx_graph *g, double v, rlx_id a, rlx_id *out) {
  rlx_id c;
  RLX_TRY(rlx_scalar(g, (rlx_dtype)dc_shape(g, a).dtype, v, &c));
  return rlx_binary(g, RLX_BINOP_SUB, c, a, out);
}
/* x <cmp> v (a Bool tensor). */
static rlx_status cmps(rlx_graph *g, rlx_cmp op, rlx_id x, double v, rlx_id *out) {
  rlx_id c;
  RLX_TRY(rlx_scalar(g, (rlx_dtype)dc_shape(g, x).dtype, v, &c));
  return rlx_compare(g, op, x, c, out);
}
/* cond ? a : b where a and/or b may be scalars of dtype t (NULL id = use the value). */
static rlx_status select_s(rlx_graph *g, rlx_dtype t, rlx_id cond, const rlx_id *a, double av, const rlx_id *b,
                           double bv, rlx_id *out) {
  rlx_id x, y;
  if (a)
    x = *a;
  else
    RLX_TRY(rlx_scalar(g, t, av, &x));
  if (b)
    y = *b;
  else
    RLX_TRY(rlx_scalar(g, t, bv, &y));
  return rlx_where(g, cond, x, y, out);
}

RLX_DECOMPOSE_DECL(ReluBackward) {
  (void)src;
  (void)n;
  rlx_id pos;
  RLX_TRY(cmps(dst, RLX_CMP_GT, in[0], 0.0, &pos));
  return select_s(dst, (rlx_dtype)dc_shape(dst, in[1]).dtype, pos, &in[1], 0, NULL, 0.0, out);
}

/* f'(x) for the multiplying kinds (see ref/backward_act.c). */
static rlx_status derivative(rlx_graph *g, rlx_act k, rlx_id x, rlx_id *d) {
  rlx_dtype t = (rlx_dtype)dc_shape(g, x).dtype;
  rlx_id a, b, c, e;
  switch (k) {
  case RLX_ACT_GELU: /* 0.5 * (1 + erf(x / sqrt 2)) + x * exp(-x^2 / 2) / sqrt(2 pi) */
    RLX_TRY(muls(g, x, 0.70710678118654752440, &a));
    RLX_TRY(rlx_activation(g, RLX_ACT_ERF, a, &a));
    RLX_TRY(adds(g, a, 1.0, &a));
    RLX_TRY(muls(g, a, 0.5, &a));
    RLX_TRY(mul(g, x, x, &b));
    RLX_TRY(muls(g, b, -0.5, &b));
    RLX_TRY(rlx_activation(g, RLX_ACT_EXP, b, &b));
    RLX_TRY(muls(g, b, 0.39894228040143267794, &b));
    RLX_TRY(mul(g, x, b, &b));
    return add(g, a, b, d);
  case RLX_ACT_GELU_APPROX: { /* t = tanh(c (x + a x^3)); 0.5 (1 + t) + 0.5 x (1 - t^2) c (1 + 3 a x^2) */
    const double cc = 0.79788456080286535588, aa = 0.044715;
    rlx_id x2, tt;
    RLX_TRY(mul(g, x, x, &x2));
    RLX_TRY(muls(g, x2, aa, &a));
    RLX_TRY(adds(g, a, 1.0, &a));
    RLX_TRY(mul(g, x, a, &a));
    RLX_TRY(muls(g, a, cc, &a));
    RLX_TRY(rlx_activation(g, RLX_ACT_TANH, a, &tt));
    RLX_TRY(adds(g, tt, 1.0, &b));
    RLX_TRY(muls(g, b, 0.5, &b));
    RLX_TRY(mul(g, tt, tt, &c));
    RLX_TRY(rsubs(g, 1.0, c, &c));
    RLX_TRY(muls(g, x2, 3.0 * aa, &e));
    RLX_TRY(adds(g, e, 1.0, &e));
    RLX_TRY(mul(g, c, e, &c));
    RLX_TRY(mul(g, x, c, &c));
    RLX_TRY(muls(g, c, 0.5 * cc, &c));
    return add(g, b, c, d);
  }
  case RLX_ACT_SILU: /* s (1 + x (1 - s)) */
    RLX_TRY(rlx_activation(g, RLX_ACT_SIGMOID, x, &a));
    RLX_TRY(rsubs(g, 1.0, a, &b));
    RLX_TRY(mul(g, x, b, &b));
    RLX_TRY(adds(g, b, 1.0, &b));
    return mul(g, a, b, d);
  case RLX_ACT_SIGMOID:
    RLX_TRY(rlx_activation(g, RLX_ACT_SIGMOID, x, &a));
    RLX_TRY(rsubs(g, 1.0, a, &b));
    return mul(g, a, b, d);
  case RLX_ACT_TANH:
    RLX_TRY(rlx_activation(g, RLX_ACT_TANH, x, &a));
    RLX_TRY(mul(g, a, a, &a));
    return rsubs(g, 1.0, a, d);
  case RLX_ACT_EXP: return rlx_activation(g, RLX_ACT_EXP, x, d);
  case RLX_ACT_LOG: return rlx_activation(g, RLX_ACT_RECIP, x, d);
  case RLX_ACT_ABS: return rlx_activation(g, RLX_ACT_SIGN, x, d);
  case RLX_ACT_SIN: return rlx_activation(g, RLX_ACT_COS, x, d);
  case RLX_ACT_COS: RLX_TRY(rlx_activation(g, RLX_ACT_SIN, x, &a)); return rlx_activation(g, RLX_ACT_NEG, a, d);
  case RLX_ACT_TAN:
    RLX_TRY(rlx_activation(g, RLX_ACT_TAN, x, &a));
    RLX_TRY(mul(g, a, a, &a));
    return adds(g, a, 1.0, d);
  case RLX_ACT_ATAN:
    RLX_TRY(mul(g, x, x, &a));
    RLX_TRY(adds(g, a, 1.0, &a));
    return rlx_activation(g, RLX_ACT_RECIP, a, d);
  case RLX_ACT_RECIP:
    RLX_TRY(mul(g, x, x, &a));
    RLX_TRY(rlx_activation(g, RLX_ACT_RECIP, a, &a));
    return rlx_activation(g, RLX_ACT_NEG, a, d);
  case RLX_ACT_ROUND: return rlx_scalar(g, t, 1.0, d);
  case RLX_ACT_FLOOR:
  case RLX_ACT_CEIL:
  case RLX_ACT_SIGN: return rlx_scalar(g, t, 0.0, d);
  case RLX_ACT_SOFTPLUS: return rlx_activation(g, RLX_ACT_SIGMOID, x, d);
  case RLX_ACT_ELU:
    RLX_TRY(cmps(g, RLX_CMP_GT, x, 0.0, &c));
    RLX_TRY(rlx_activation(g, RLX_ACT_EXP, x, &a));
    return select_s(g, t, c, NULL, 1.0, &a, 0, d);
  case RLX_ACT_ERF: /* 2 / sqrt(pi) * exp(-x^2) */
    RLX_TRY(mul(g, x, x, &a));
    RLX_TRY(muls(g, a, -1.0, &a));
    RLX_TRY(rlx_activation(g, RLX_ACT_EXP, a, &a));
    return muls(g, a, 1.12837916709551257390, d);
  case RLX_ACT_HARD_SWISH: /* x < -3: 0; x <= 3: (2x + 3) / 6; else 1 */
    RLX_TRY(muls(g, x, 1.0 / 3.0, &a));
    RLX_TRY(adds(g, a, 0.5, &a));
    RLX_TRY(cmps(g, RLX_CMP_LE, x, 3.0, &c));
    RLX_TRY(select_s(g, t, c, &a, 0, NULL, 1.0, &a));
    RLX_TRY(cmps(g, RLX_CMP_LT, x, -3.0, &c));
    return select_s(g, t, c, NULL, 0.0, &a, 0, d);
  case RLX_ACT_HARD_SIGMOID: /* 1/6 inside (-3, 3), else 0 */
    RLX_TRY(cmps(g, RLX_CMP_LT, x, 3.0, &c));
    RLX_TRY(select_s(g, t, c, NULL, 1.0 / 6.0, NULL, 0.0, &a));
    RLX_TRY(cmps(g, RLX_CMP_GT, x, -3.0, &c));
    return select_s(g, t, c, &a, 0, NULL, 0.0, d);
  case RLX_ACT_MISH: /* t + x (1 - t^2) sigmoid(x), t = tanh(softplus(x)) */
    RLX_TRY(rlx_activation(g, RLX_ACT_SOFTPLUS, x, &a));
    RLX_TRY(rlx_activation(g, RLX_ACT_TANH, a, &a));
    RLX_TRY(mul(g, a, a, &b));
    RLX_TRY(rsubs(g, 1.0, b, &b));
    RLX_TRY(rlx_activation(g, RLX_ACT_SIGMOID, x, &c));
    RLX_TRY(mul(g, b, c, &b));
    RLX_TRY(mul(g, x, b, &b));
    return add(g, a, b, d);
  case RLX_ACT_SOFTSIGN: /* 1 / (1 + |x|)^2 */
    RLX_TRY(rlx_activation(g, RLX_ACT_ABS, x, &a));
    RLX_TRY(adds(g, a, 1.0, &a));
    RLX_TRY(mul(g, a, a, &a));
    return rlx_activation(g, RLX_ACT_RECIP, a, d);
  case RLX_ACT_LOG_SIGMOID: /* sigmoid(-x) */
    RLX_TRY(rlx_activation(g, RLX_ACT_NEG, x, &a));
    return rlx_activation(g, RLX_ACT_SIGMOID, a, d);
  default: return rlx_errorf(RLX_ERR_INTERNAL, "ActivationBackward: kind %d has no multiplying derivative", (int)k);
  }
}

RLX_DECOMPOSE_DECL(ActivationBackward) {
  (void)src;
  int k = n->attrs.ActivationBackward.kind;
  if (k < 0 || k >= RLX_ACT_COUNT)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "ActivationBackward: attribute kind %d is not an Activation", k);
  rlx_id x = in[0], dy = in[1], s, c, v;
  rlx_dtype t = (rlx_dtype)dc_shape(dst, x).dtype;
  switch (k) {
  case RLX_ACT_RELU: return rlx_decompose_ReluBackward(dst, src, n, in, out);
  case RLX_ACT_ROUND: *out = dy; return RLX_OK; /* straight-through */
  case RLX_ACT_NEG: return rlx_activation(dst, RLX_ACT_NEG, dy, out);
  case RLX_ACT_SQRT:  /* sqrt(x) <= 0 ? 0 : dy * 0.5 / sqrt(x) */
  case RLX_ACT_RSQRT: /* sqrt(x) <= 0 ? 0 : dy * -0.5 / (x sqrt(x)) */
    RLX_TRY(rlx_activation(dst, RLX_ACT_SQRT, x, &s));
    RLX_TRY(cmps(dst, RLX_CMP_LE, s, 0.0, &c));
    if (k == RLX_ACT_RSQRT) RLX_TRY(mul(dst, x, s, &s));
    RLX_TRY(rlx_binary(dst, RLX_BINOP_DIV, dy, s, &v));
    RLX_TRY(muls(dst, v, k == RLX_ACT_SQRT ? 0.5 : -0.5, &v));
    return select_s(dst, t, c, NULL, 0.0, &v, 0, out);
  default: {
    rlx_id d;
    RLX_TRY(derivative(dst, (rlx_act)k, x, &d));
    return mul(dst, dy, d, out);
  }
  }
}
