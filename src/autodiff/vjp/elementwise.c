/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* VJP rules: activations, casts, binary arithmetic (with broadcasting), Where, Fma, Clamp, and the
 * first-order elementwise backward op ReluBackward (for second derivatives). */
#include <math.h>

#include "autodiff/ad_internal.h"

#define AD_PI 3.14159265358979323846
#define AD_SQRT1_2 0.70710678118654752440
#define AD_2_SQRTPI 1.12837916709551257390 /* 2 / sqrt(pi) */

/* g summed to operand x's shape and cast to its dtype. */
static rlx_status to_operand(rlx_ad_ctx *c, rlx_id g, rlx_id x, rlx_id *out) {
  rlx_shape xs = ad_shape(c, x);
  rlx_id r;
  RLX_TRY(ad_unbroadcast(c, g, &xs, &r));
  return ad_cast(c, r, (rlx_dtype)xs.dtype, out);
}

/* ---- activations ---- */

/* Kinds RLX differentiates with ActivationBackward (ir-special §8). */
static bool has_activation_backward(rlx_act k) {
  switch (k) {
  case RLX_ACT_GELU:
  case RLX_ACT_GELU_APPROX:
  case RLX_ACT_SILU:
  case RLX_ACT_SIGMOID:
  case RLX_ACT_TANH:
  case RLX_ACT_EXP:
  case RLX_ACT_LOG:
  case RLX_ACT_SQRT:
  case RLX_ACT_RSQRT:
  case RLX_ACT_NEG:
  case RLX_ACT_ABS:
  case RLX_ACT_SIN:
  case RLX_ACT_COS:
  case RLX_ACT_TAN:
  case RLX_ACT_ATAN:
  case RLX_ACT_RECIP:
  case RLX_ACT_ROUND: return true;
  default: return false;
  }
}

/* sigmoid(x) in primitives. */
static rlx_status sigmoid(rlx_ad_ctx *c, rlx_id x, rlx_id *out) { return ad_act(c, RLX_ACT_SIGMOID, x, out); }

/* act'(x) as primitives (y = act(x) is available for the kinds that reuse it). *out = RLX_NO_ID
 * means the derivative is zero almost everywhere. */
static rlx_status act_derivative(rlx_ad_ctx *c, rlx_act k, rlx_id x, rlx_id y, rlx_id *out) {
  rlx_id a, b, t, u;
  *out = RLX_NO_ID;
  switch (k) {
  case RLX_ACT_GELU: /* Phi(x) + x phi(x) */
    RLX_TRY(ad_bin_s(c, RLX_BINOP_MUL, x, AD_SQRT1_2, &a));
    RLX_TRY(ad_act(c, RLX_ACT_ERF, a, &a));
    RLX_TRY(ad_bin_s(c, RLX_BINOP_ADD, a, 1.0, &a));
    RLX_TRY(ad_bin_s(c, RLX_BINOP_MUL, a, 0.5, &a)); /* Phi */
    RLX_TRY(ad_mul(c, x, x, &b));
    RLX_TRY(ad_bin_s(c, RLX_BINOP_MUL, b, -0.5, &b));
    RLX_TRY(ad_act(c, RLX_ACT_EXP, b, &b));
    RLX_TRY(ad_bin_s(c, RLX_BINOP_MUL, b, 0.5 * AD_2_SQRTPI * AD_SQRT1_2, &b)); /* phi = e^{-x^2/2}/sqrt(2 pi) */
    RLX_TRY(ad_mul(c, x, b, &b));
    return ad_add(c, a, b, out);
  case RLX_ACT_GELU_APPROX: { /* 0.5(1+t) + 0.5 x (1-t^2) k (1 + 3 c x^2), t = tanh(k(x + c x^3)) */
    const double kk = sqrt(2.0 / AD_PI), cc = 0.044715;
    RLX_TRY(ad_mul(c, x, x, &a));                    /* x^2 */
    RLX_TRY(ad_bin_s(c, RLX_BINOP_MUL, a, cc, &b));  /* c x^2 */
    RLX_TRY(ad_bin_s(c, RLX_BINOP_ADD, b, 1.0, &b)); /* 1 + c x^2 */
    RLX_TRY(ad_mul(c, x, b, &b));                    /* x + c x^3 */
    RLX_TRY(ad_bin_s(c, RLX_BINOP_MUL, b, kk, &b));
    RLX_TRY(ad_act(c, RLX_ACT_TANH, b, &t));
    RLX_TRY(ad_bin_s(c, RLX_BINOP_ADD, t, 1.0, &u));
    RLX_TRY(ad_bin_s(c, RLX_BINOP_MUL, u, 0.5, &u)); /* 0.5 (1 + t) */
    RLX_TRY(ad_mul(c, t, t, &t));
    RLX_TRY(ad_s_bin(c, RLX_BINOP_SUB, 1.0, t, &t)); /* 1 - t^2 */
    RLX_TRY(ad_bin_s(c, RLX_BINOP_MUL, a, 3.0 * cc * kk, &a));
    RLX_TRY(ad_bin_s(c, RLX_BINOP_ADD, a, kk, &a)); /* k (1 + 3 c x^2) */
    RLX_TRY(ad_mul(c, t, a, &t));
    RLX_TRY(ad_mul(c, t, x, &t));
    RLX_TRY(ad_bin_s(c, RLX_BINOP_MUL, t, 0.5, &t));
    return ad_add(c, u, t, out);
  }
  case RLX_ACT_SILU: /* s (1 + x (1 - s)) */
    RLX_TRY(sigmoid(c, x, &a));
    RLX_TRY(ad_s_bin(c, RLX_BINOP_SUB, 1.0, a, &b));
    RLX_TRY(ad_mul(c, x, b, &b));
    RLX_TRY(ad_bin_s(c, RLX_BINOP_ADD, b, 1.0, &b));
    return ad_mul(c, a, b, out);
  case RLX_ACT_RELU: RLX_TRY(ad_cmp_s(c, RLX_CMP_GT, x, 0.0, &a)); return ad_mask(c, a, ad_dtype(c, x), out);
  case RLX_ACT_SIGMOID: RLX_TRY(ad_s_bin(c, RLX_BINOP_SUB, 1.0, y, &a)); return ad_mul(c, y, a, out);
  case RLX_ACT_TANH: RLX_TRY(ad_mul(c, y, y, &a)); return ad_s_bin(c, RLX_BINOP_SUB, 1.0, a, out);
  case RLX_ACT_EXP: *out = y; return RLX_OK;
  case RLX_ACT_LOG: return ad_act(c, RLX_ACT_RECIP, x, out);
  case RLX_ACT_SQRT: /* 0.5 / sqrt(x), 0 where sqrt(x) <= 0 */
    RLX_TRY(ad_cmp_s(c, RLX_CMP_GT, y, 0.0, &a));
    RLX_TRY(ad_s_bin(c, RLX_BINOP_DIV, 0.5, y, &b));
    RLX_TRY(ad_scalar(c, ad_dtype(c, x), 0.0, &t));
    return ad_where(c, a, b, t, out);
  case RLX_ACT_RSQRT: /* -0.5 x^{-3/2} = -0.5 y^3, 0 where x <= 0 */
    RLX_TRY(ad_cmp_s(c, RLX_CMP_GT, x, 0.0, &a));
    RLX_TRY(ad_mul(c, y, y, &b));
    RLX_TRY(ad_mul(c, b, y, &b));
    RLX_TRY(ad_bin_s(c, RLX_BINOP_MUL, b, -0.5, &b));
    RLX_TRY(ad_scalar(c, ad_dtype(c, x), 0.0, &t));
    return ad_where(c, a, b, t, out);
  case RLX_ACT_NEG: return ad_scalar(c, ad_dtype(c, x), -1.0, out);
  case RLX_ACT_ABS: return ad_act(c, RLX_ACT_SIGN, x, out);
  case RLX_ACT_SIN: return ad_act(c, RLX_ACT_COS, x, out);
  case RLX_ACT_COS: RLX_TRY(ad_act(c, RLX_ACT_SIN, x, &a)); return ad_neg(c, a, out);
  case RLX_ACT_TAN: RLX_TRY(ad_mul(c, y, y, &a)); return ad_bin_s(c, RLX_BINOP_ADD, a, 1.0, out);
  case RLX_ACT_ATAN:
    RLX_TRY(ad_mul(c, x, x, &a));
    RLX_TRY(ad_bin_s(c, RLX_BINOP_ADD, a, 1.0, &a));
    return ad_act(c, RLX_ACT_RECIP, a, out);
  case RLX_ACT_RECIP: RLX_TRY(ad_mul(c, y, y, &a)); return ad_neg(c, a, out);
  case RLX_ACT_ROUND: return ad_scalar(c, ad_dtype(c, x), 1.0, out); /* straight-through */
  case RLX_ACT_FLOOR:
  case RLX_ACT_CEIL:
  case RLX_ACT_SIGN: return RLX_OK; /* piecewise constant */
  case RLX_ACT_SOFTPLUS: return sigmoid(c, x, out);
  case RLX_ACT_ELU: /* 1 for x > 0, else e^x */
    RLX_TRY(ad_cmp_s(c, RLX_CMP_GT, x, 0.0, &a));
    RLX_TRY(ad_act(c, RLX_ACT_EXP, x, &b));
    RLX_TRY(ad_scalar(c, ad_dtype(c, x), 1.0, &t));
    return ad_where(c, a, t, b, out);
  case RLX_ACT_ERF: /* 2/sqrt(pi) e^{-x^2} */
    RLX_TRY(ad_mul(c, x, x, &a));
    RLX_TRY(ad_neg(c, a, &a));
    RLX_TRY(ad_act(c, RLX_ACT_EXP, a, &a));
    return ad_bin_s(c, RLX_BINOP_MUL, a, AD_2_SQRTPI, out);
  case RLX_ACT_HARD_SWISH: /* 0 (x < -3), 1 (x > 3), (2x + 3)/6 between */
    RLX_TRY(ad_bin_s(c, RLX_BINOP_MUL, x, 1.0 / 3.0, &a));
    RLX_TRY(ad_bin_s(c, RLX_BINOP_ADD, a, 0.5, &a));
    RLX_TRY(ad_cmp_s(c, RLX_CMP_GT, x, 3.0, &b));
    RLX_TRY(ad_scalar(c, ad_dtype(c, x), 1.0, &t));
    RLX_TRY(ad_where(c, b, t, a, &a));
    RLX_TRY(ad_cmp_s(c, RLX_CMP_LT, x, -3.0, &b));
    RLX_TRY(ad_scalar(c, ad_dtype(c, x), 0.0, &t));
    return ad_where(c, b, t, a, out);
  case RLX_ACT_HARD_SIGMOID: /* 1/6 on (-3, 3), else 0 */
    RLX_TRY(ad_cmp_s(c, RLX_CMP_GT, x, -3.0, &a));
    RLX_TRY(ad_cmp_s(c, RLX_CMP_LT, x, 3.0, &b));
    RLX_TRY(ad_mask(c, a, ad_dtype(c, x), &a));
    RLX_TRY(ad_mask(c, b, ad_dtype(c, x), &b));
    RLX_TRY(ad_mul(c, a, b, &a));
    return ad_bin_s(c, RLX_BINOP_MUL, a, 1.0 / 6.0, out);
  case RLX_ACT_MISH: /* tanh(sp) + x (1 - tanh(sp)^2) sigmoid(x) */
    RLX_TRY(ad_act(c, RLX_ACT_SOFTPLUS, x, &a));
    RLX_TRY(ad_act(c, RLX_ACT_TANH, a, &t));
    RLX_TRY(ad_mul(c, t, t, &b));
    RLX_TRY(ad_s_bin(c, RLX_BINOP_SUB, 1.0, b, &b));
    RLX_TRY(sigmoid(c, x, &u));
    RLX_TRY(ad_mul(c, b, u, &b));
    RLX_TRY(ad_mul(c, b, x, &b));
    return ad_add(c, t, b, out);
  case RLX_ACT_SOFTSIGN: /* 1 / (1 + |x|)^2 */
    RLX_TRY(ad_act(c, RLX_ACT_ABS, x, &a));
    RLX_TRY(ad_bin_s(c, RLX_BINOP_ADD, a, 1.0, &a));
    RLX_TRY(ad_mul(c, a, a, &a));
    return ad_act(c, RLX_ACT_RECIP, a, out);
  case RLX_ACT_LOG_SIGMOID: /* sigmoid(-x) */ RLX_TRY(ad_neg(c, x, &a)); return sigmoid(c, a, out);
  default: return ad_unsupported(c, "activation kind %d has no derivative", (int)k);
  }
}

RLX_VJP_DECL(Activation) {
  rlx_act k = (rlx_act)n->attrs.Activation.kind;
  if (c->use_backward_ops && k == RLX_ACT_RELU) {
    rlx_id in[2] = {x[0], dy};
    return ad_emit(c, RLX_OP_ReluBackward, in, 2, NULL, NULL, &dx[0]);
  }
  if (c->use_backward_ops && has_activation_backward(k)) {
    rlx_attrs_ActivationBackward a = {.kind = k};
    rlx_id in[2] = {x[0], dy};
    return ad_emit(c, RLX_OP_ActivationBackward, in, 2, &a, NULL, &dx[0]);
  }
  rlx_id d;
  RLX_TRY(act_derivative(c, k, x[0], y, &d));
  if (d == RLX_NO_ID) return RLX_OK;
  RLX_TRY(ad_mul(c, dy, d, &d));
  return to_operand(c, d, x[0], &dx[0]);
}

/* ReluBackward(x, dy) = dy where x > 0: linear in dy (same mask), zero derivative in x. */
RLX_VJP_DECL(ReluBackward) {
  (void)n;
  (void)y;
  if (!c->want[1]) return RLX_OK;
  if (c->use_backward_ops) {
    rlx_id in[2] = {x[0], dy};
    return ad_emit(c, RLX_OP_ReluBackward, in, 2, NULL, NULL, &dx[1]);
  }
  rlx_id m, z;
  RLX_TRY(ad_cmp_s(c, RLX_CMP_GT, x[0], 0.0, &m));
  RLX_TRY(ad_scalar(c, ad_dtype(c, dy), 0.0, &z));
  return ad_where(c, m, dy, z, &dx[1]);
}

RLX_VJP_DECL(Cast) {
  (void)n;
  (void)y;
  if (!rlx_dtype_is_float(ad_dtype(c, x[0])) || !rlx_dtype_is_float(ad_dtype(c, dy))) return RLX_OK;
  return ad_cast(c, dy, ad_dtype(c, x[0]), &dx[0]);
}

RLX_VJP_DECL(StopGradient) {
  (void)c;
  (void)n;
  (void)y;
  (void)x;
  (void)dy;
  (void)dx;
  return RLX_OK;
}

/* ---- binary ---- */

/* 1 where a beats b, 0.5 where they tie, 0 elsewhere (ties split evenly, as PyTorch does). */
static rlx_status win_weight(rlx_ad_ctx *c, rlx_cmp beats, rlx_id a, rlx_id b, rlx_dtype t, rlx_id *out) {
  rlx_id w, e;
  RLX_TRY(ad_cmp(c, beats, a, b, &w));
  RLX_TRY(ad_mask(c, w, t, &w));
  RLX_TRY(ad_cmp(c, RLX_CMP_EQ, a, b, &e));
  RLX_TRY(ad_mask(c, e, t, &e));
  RLX_TRY(ad_bin_s(c, RLX_BINOP_MUL, e, 0.5, &e));
  return ad_add(c, w, e, out);
}

RLX_VJP_DECL(Binary) {
  rlx_binop op = (rlx_binop)n->attrs.Binary.op;
  rlx_id a = x[0], b = x[1], g = dy, ga = RLX_NO_ID, gb = RLX_NO_ID, t, u;
  rlx_dtype dt = ad_dtype(c, dy);
  switch (op) {
  case RLX_BINOP_ADD:
    ga = g;
    gb = g;
    break;
  case RLX_BINOP_SUB:
    ga = g;
    if (c->want[1]) RLX_TRY(ad_neg(c, g, &gb));
    break;
  case RLX_BINOP_MUL:
    if (c->want[0]) RLX_TRY(ad_mul(c, g, b, &ga));
    if (c->want[1]) RLX_TRY(ad_mul(c, g, a, &gb));
    break;
  case RLX_BINOP_DIV: /* d/da = 1/b, d/db = -a/b^2 = -y/b */
    if (c->want[0]) RLX_TRY(ad_div(c, g, b, &ga));
    if (c->want[1]) {
      RLX_TRY(ad_mul(c, g, y, &t));
      RLX_TRY(ad_div(c, t, b, &t));
      RLX_TRY(ad_neg(c, t, &gb));
    }
    break;
  case RLX_BINOP_MAX:
  case RLX_BINOP_MIN: {
    rlx_cmp beats = op == RLX_BINOP_MAX ? RLX_CMP_GT : RLX_CMP_LT;
    if (c->want[0]) {
      RLX_TRY(win_weight(c, beats, a, b, dt, &t));
      RLX_TRY(ad_mul(c, g, t, &ga));
    }
    if (c->want[1]) {
      RLX_TRY(win_weight(c, beats, b, a, dt, &t));
      RLX_TRY(ad_mul(c, g, t, &gb));
    }
    break;
  }
  case RLX_BINOP_POW: /* d/da = b a^(b-1); d/db = y ln a (0 where a <= 0) */
    if (c->want[0]) {
      RLX_TRY(ad_bin_s(c, RLX_BINOP_SUB, b, 1.0, &t));
      RLX_TRY(ad_bin(c, RLX_BINOP_POW, a, t, &t));
      RLX_TRY(ad_mul(c, t, b, &t));
      RLX_TRY(ad_mul(c, g, t, &ga));
    }
    if (c->want[1]) {
      rlx_id pos, safe, one, zero;
      RLX_TRY(ad_cmp_s(c, RLX_CMP_GT, a, 0.0, &pos));
      RLX_TRY(ad_scalar(c, ad_dtype(c, a), 1.0, &one));
      RLX_TRY(ad_where(c, pos, a, one, &safe));
      RLX_TRY(ad_act(c, RLX_ACT_LOG, safe, &t));
      RLX_TRY(ad_mul(c, g, y, &u));
      RLX_TRY(ad_mul(c, u, t, &u));
      RLX_TRY(ad_scalar(c, dt, 0.0, &zero));
      RLX_TRY(ad_where(c, pos, u, zero, &gb));
    }
    break;
  case RLX_BINOP_MOD: /* fmod: d/da = 1; the divisor gets no gradient (as in RLX) */ ga = g; break;
  case RLX_BINOP_ATAN2: { /* atan2(a, b): d/da = b/(a^2+b^2), d/db = -a/(a^2+b^2) */
    rlx_id r2;
    RLX_TRY(ad_mul(c, a, a, &t));
    RLX_TRY(ad_mul(c, b, b, &u));
    RLX_TRY(ad_add(c, t, u, &r2));
    RLX_TRY(ad_div(c, g, r2, &r2));
    if (c->want[0]) RLX_TRY(ad_mul(c, r2, b, &ga));
    if (c->want[1]) {
      RLX_TRY(ad_mul(c, r2, a, &t));
      RLX_TRY(ad_neg(c, t, &gb));
    }
    break;
  }
  default: return RLX_OK; /* bitwise and shift ops: integer-valued, no gradient */
  }
  if (c->want[0] && ga != RLX_NO_ID) RLX_TRY(to_operand(c, ga, a, &dx[0]));
  if (c->want[1] && gb != RLX_NO_ID) RLX_TRY(to_operand(c, gb, b, &dx[1]));
  return RLX_OK;
}

RLX_VJP_DECL(Where) {
  (void)n;
  (void)y;
  rlx_id z, r;
  RLX_TRY(ad_scalar(c, ad_dtype(c, dy), 0.0, &z));
  if (c->want[1]) {
    RLX_TRY(ad_where(c, x[0], dy, z, &r));
    RLX_TRY(to_operand(c, r, x[1], &dx[1]));
  }
  if (c->want[2]) {
    RLX_TRY(ad_where(c, x[0], z, dy, &r));
    RLX_TRY(to_operand(c, r, x[2], &dx[2]));
  }
  return RLX_OK;
}

RLX_VJP_DECL(Fma) {
  (void)n;
  (void)y;
  rlx_id t;
  if (c->want[0]) {
    RLX_TRY(ad_mul(c, dy, x[1], &t));
    RLX_TRY(to_operand(c, t, x[0], &dx[0]));
  }
  if (c->want[1]) {
    RLX_TRY(ad_mul(c, dy, x[0], &t));
    RLX_TRY(to_operand(c, t, x[1], &dx[1]));
  }
  if (c->want[2]) RLX_TRY(to_operand(c, dy, x[2], &dx[2]));
  return RLX_OK;
}

/* The gradient passes where min <= x <= max. */
RLX_VJP_DECL(Clamp) {
  (void)y;
  rlx_id lo, hi, z, r;
  RLX_TRY(ad_cmp_s(c, RLX_CMP_GE, x[0], n->attrs.Clamp.min, &lo));
  RLX_TRY(ad_cmp_s(c, RLX_CMP_LE, x[0], n->attrs.Clamp.max, &hi));
  RLX_TRY(ad_scalar(c, ad_dtype(c, dy), 0.0, &z));
  RLX_TRY(ad_where(c, hi, dy, z, &r));
  RLX_TRY(ad_where(c, lo, r, z, &r));
  return to_operand(c, r, x[0], &dx[0]);
}

/* ---- fake quantization: straight-through estimators ----
 * out = clamp(round(x / s), -qmax, qmax) s has zero derivative almost everywhere; training uses a
 * straight-through estimator chosen by `ste`, with s recomputed like the forward (PerBatch: from
 * max |x| over every axis but `axis`; EMA/Fixed: the state operand):
 *   Identity dy;  ClippedIdentity dy [|x| <= qmax s];  Tanh dy (1 - tanh^2(x / s));
 *   HardTanh dy max(0, 1 - |x| / (qmax s)).
 * Emitted in primitives (RLX's FakeQuantizeBackward always re-derives a PerBatch scale, which is
 * wrong after an EMA/Fixed forward). The scale / state gets no gradient. */
RLX_VJP_DECL(FakeQuantize) {
  const rlx_attrs_FakeQuantize *a = &n->attrs.FakeQuantize;
  if (!c->want[0]) return RLX_OK;
  if (a->ste == RLX_STE_IDENTITY) return to_operand(c, dy, x[0], &dx[0]);
  double qmax = a->bits == 8 ? 127.0 : a->bits == 4 ? 7.0 : a->bits == 2 ? 1.0 : 0.0;
  if (qmax == 0.0)
    return ad_unsupported(c, "attribute bits is %lld; FakeQuantize supports 8, 4 or 2", (long long)a->bits);
  rlx_shape xs = ad_shape(c, x[0]), kept = xs;
  uint32_t ch;
  if (!rlx_norm_axis(a->axis, xs.rank, &ch)) return ad_unsupported(c, "attribute axis is out of range");
  int64_t axes[RLX_MAX_RANK];
  uint32_t na = 0;
  for (uint32_t i = 0; i < xs.rank; i++)
    if (i != ch) {
      axes[na++] = i;
      kept.dims[i] = 1;
    }
  rlx_id s, ax, t, z;
  if (a->scale_mode == RLX_SCALE_MODE_PER_BATCH || n->n_inputs < 2) {
    RLX_TRY(ad_act(c, RLX_ACT_ABS, x[0], &ax));
    s = ax;
    if (na) RLX_TRY(ad_reduce(c, RLX_REDUCE_MAX, ax, na, axes, true, &s));
    RLX_TRY(ad_bin_s(c, RLX_BINOP_DIV, s, qmax, &s));
  } else {
    rlx_shape ss = ad_shape(c, x[1]);
    size_t k = 0;
    if (rlx_shape_numel(&ss, &k) == RLX_OK && k == 1) kept.rank = 0; /* one scale for every channel */
    RLX_TRY(ad_reshape(c, x[1], &kept, &s));
    RLX_TRY(ad_cast(c, s, (rlx_dtype)xs.dtype, &s));
  }
  RLX_TRY(ad_bin_s(c, RLX_BINOP_MAX, s, 1e-12, &s));
  RLX_TRY(ad_zeros_like(c, dy, &z));
  switch (a->ste) {
  case RLX_STE_CLIPPED_IDENTITY: {
    rlx_id r, m;
    RLX_TRY(ad_act(c, RLX_ACT_ABS, x[0], &ax));
    RLX_TRY(ad_bin_s(c, RLX_BINOP_MUL, s, qmax, &r));
    RLX_TRY(ad_cmp(c, RLX_CMP_LE, ax, r, &m));
    RLX_TRY(ad_where(c, m, dy, z, &t));
    break;
  }
  case RLX_STE_TANH:
    RLX_TRY(ad_div(c, x[0], s, &t));
    RLX_TRY(ad_act(c, RLX_ACT_TANH, t, &t));
    RLX_TRY(ad_mul(c, t, t, &t));
    RLX_TRY(ad_s_bin(c, RLX_BINOP_SUB, 1.0, t, &t));
    RLX_TRY(ad_mul(c, dy, t, &t));
    break;
  case RLX_STE_HARD_TANH:
    RLX_TRY(ad_act(c, RLX_ACT_ABS, x[0], &ax));
    RLX_TRY(ad_bin_s(c, RLX_BINOP_MUL, s, qmax, &t));
    RLX_TRY(ad_div(c, ax, t, &t));
    RLX_TRY(ad_s_bin(c, RLX_BINOP_SUB, 1.0, t, &t));
    RLX_TRY(ad_bin_s(c, RLX_BINOP_MAX, t, 0.0, &t));
    RLX_TRY(ad_mul(c, dy, t, &t));
    break;
  default: return ad_unsupported(c, "attribute ste %d is not a SteKind", (int)a->ste);
  }
  return to_operand(c, t, x[0], &dx[0]);
}
