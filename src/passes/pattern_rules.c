/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The pattern fusion rules (pattern.h): each a slot table, a check and an emitter. The forms are
 * those the ONNX exporters write (PyTorch's opset-14 LayerNorm and GELU, HardSigmoid as ONNX
 * defines it, the scaled-dot-product attention of hand-written BERT layers). */
#include <math.h>
#include <string.h>

#include "passes/pattern.h"
#include "rlx/build.h"

static bool is_float(rlx_dtype t) { return t == RLX_F32 || t == RLX_F64 || t == RLX_F16 || t == RLX_BF16; }

/* Reduce over exactly the last axis of its operand, keeping it. */
static bool reduces_last_axis(const rlx_graph *g, const rlx_node *red) {
  const rlx_node *x = rlx_graph_node(g, red->inputs[0]);
  const rlx_ilist *ax = &red->attrs.Reduce.axes;
  if (!red->attrs.Reduce.keep_dim || ax->n != 1 || x->shape.rank == 0) return false;
  int64_t a = ax->v[0] < 0 ? ax->v[0] + x->shape.rank : ax->v[0];
  return a == (int64_t)x->shape.rank - 1;
}

/* An affine parameter of LayerNorm: static, x's dtype, [.., D] with every other dim 1. */
static bool row_param(const rlx_node *p, const rlx_shape *x) {
  if (!p || p->shape.dtype != x->dtype || !rlx_shape_is_static(&p->shape) || p->shape.rank == 0 ||
      p->shape.rank > x->rank)
    return false;
  for (uint32_t i = 0; i + 1 < p->shape.rank; i++)
    if (p->shape.dims[i] != 1) return false;
  return p->shape.dims[p->shape.rank - 1] == x->dims[x->rank - 1];
}

/* ---- LayerNorm ----
 * (x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps) [* gamma] [+ beta], the square as Pow(d, 2)
 * or d * d, the division also as a multiplication by Rsqrt. */
enum {
  LN_AFFINE,
  LN_SCALED,
  LN_NORM,
  LN_DIV,
  LN_MULR,
  LN_SUB,
  LN_MEAN,
  LN_SQRT,
  LN_RSQRT,
  LN_ADDEPS,
  LN_VAR,
  LN_SQ,
  LN_POW,
  LN_MULSQ,
  LN_TWO,
  LN_EPS,
  LN_X,
  LN_GAMMA,
  LN_BETA,
  LN_N
};
static const pat_slot ln_slots[LN_N] = {
    [LN_AFFINE] = PAT_BIN(ADD, LN_SCALED, LN_BETA),
    [LN_SCALED] = PAT_BIN(MUL, LN_NORM, LN_GAMMA),
    [LN_NORM] = PAT_ALT2(LN_DIV, LN_MULR),
    [LN_DIV] = PAT_BIN(DIV, LN_SUB, LN_SQRT),
    [LN_MULR] = PAT_BIN(MUL, LN_SUB, LN_RSQRT),
    [LN_SUB] = PAT_BIN(SUB, LN_X, LN_MEAN),
    [LN_MEAN] = PAT_RED(MEAN, LN_X),
    [LN_SQRT] = PAT_ACT(SQRT, LN_ADDEPS),
    [LN_RSQRT] = PAT_ACT(RSQRT, LN_ADDEPS),
    [LN_ADDEPS] = PAT_BIN(ADD, LN_VAR, LN_EPS),
    [LN_VAR] = PAT_RED(MEAN, LN_SQ),
    [LN_SQ] = PAT_ALT2(LN_POW, LN_MULSQ),
    [LN_POW] = PAT_BIN(POW, LN_SUB, LN_TWO),
    [LN_MULSQ] = PAT_BIN(MUL, LN_SUB, LN_SUB),
    [LN_TWO] = PAT_CONST(2.0),
    [LN_EPS] = PAT_ANYCONST,
    [LN_X] = PAT_VAR,
    [LN_GAMMA] = PAT_VAR,
    [LN_BETA] = PAT_VAR,
};

static bool ln_check(const pat_match *m) {
  const rlx_node *x = pat_node(m, LN_X);
  if (!is_float(x->shape.dtype) || x->shape.rank == 0 || !rlx_shape_is_static(&x->shape)) return false;
  if (!reduces_last_axis(m->g, pat_node(m, LN_MEAN)) || !reduces_last_axis(m->g, pat_node(m, LN_VAR))) return false;
  if (!(m->cval[LN_EPS] > 0) || pat_node(m, LN_EPS)->shape.dtype != x->shape.dtype) return false;
  /* eps must broadcast onto the [.., 1] variance without widening it. */
  if (!rlx_shape_equal(&pat_node(m, LN_ADDEPS)->shape, &pat_node(m, LN_VAR)->shape)) return false;
  if (pat_node(m, LN_GAMMA) && !row_param(pat_node(m, LN_GAMMA), &x->shape)) return false;
  if (pat_node(m, LN_BETA) && !row_param(pat_node(m, LN_BETA), &x->shape)) return false;
  /* The result keeps x's shape (an affine operand did not broadcast it wider). */
  const rlx_node *out = pat_node(m, LN_AFFINE)   ? pat_node(m, LN_AFFINE)
                        : pat_node(m, LN_SCALED) ? pat_node(m, LN_SCALED)
                                                 : pat_node(m, LN_NORM);
  return rlx_shape_equal(&out->shape, &x->shape);
}

/* gamma / beta as [D]: the captured value reshaped, or a constant fill. */
static rlx_status ln_param(const pat_match *m, rlx_graph *dst, const rlx_id *map, uint8_t slot, double fill,
                           rlx_id *out) {
  const rlx_shape *xs = &pat_node(m, LN_X)->shape;
  rlx_dim d = xs->dims[xs->rank - 1];
  if (m->bound[slot] == RLX_NO_ID) return rlx_fill(dst, (rlx_dtype)xs->dtype, 1, &d, fill, out);
  return rlx_reshape_dims(dst, map[m->bound[slot]], 1, &d, out);
}

static rlx_status ln_emit(const pat_match *m, rlx_graph *dst, const rlx_id *map, const char *name, rlx_id *out) {
  rlx_id in[3] = {map[m->bound[LN_X]]};
  RLX_TRY(ln_param(m, dst, map, LN_GAMMA, 1.0, &in[1]));
  RLX_TRY(ln_param(m, dst, map, LN_BETA, 0.0, &in[2]));
  rlx_attrs_LayerNorm a = {.axis = -1, .eps = (float)m->cval[LN_EPS]};
  return rlx_build_LayerNorm(dst, in, 3, &a, name, out);
}

/* ---- GELU ----
 * x * 0.5 * (1 + erf(x / sqrt(2))) in the three association orders exporters write (the
 * constant halves multiplied last, first, or into the bracket), erf's argument as x / sqrt(2)
 * or x * (1 / sqrt(2)); the tanh form 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) the same
 * ways, the cube as Pow(x, 3), x * (x * x) or (x * x) * x. */
enum {
  GE_ROOT,
  GE_A,
  GE_A_IN,
  GE_B,
  GE_B_IN,
  GE_C,
  GE_C_IN,
  GE_ONEPLUS,
  GE_FN,
  GE_ARG,
  GE_DIV,
  GE_MULR,
  GE_X,
  GE_HALF,
  GE_ONE,
  GE_SQRT2,
  GE_RSQRT2,
  /* tanh form */
  GE_INNER,
  GE_POLY,
  GE_CUBEC,
  GE_CUBE,
  GE_POW3,
  GE_XXX_A,
  GE_XXX_B,
  GE_SQ,
  GE_THREE,
  GE_K0,
  GE_K1,
  GE_N
};
#define GELU_OUTER                                                                                             \
  [GE_ROOT] = PAT_ALT3(GE_A, GE_B, GE_C), [GE_A] = PAT_BIN(MUL, GE_A_IN, GE_HALF),                             \
  [GE_A_IN] = PAT_BIN(MUL, GE_X, GE_ONEPLUS), [GE_B] = PAT_BIN(MUL, GE_B_IN, GE_ONEPLUS),                      \
  [GE_B_IN] = PAT_BIN(MUL, GE_X, GE_HALF), [GE_C] = PAT_BIN(MUL, GE_X, GE_C_IN),                               \
  [GE_C_IN] = PAT_BIN(MUL, GE_ONEPLUS, GE_HALF), [GE_ONEPLUS] = PAT_BIN(ADD, GE_FN, GE_ONE), [GE_X] = PAT_VAR, \
  [GE_HALF] = PAT_CONST(0.5), [GE_ONE] = PAT_CONST(1.0)
static const pat_slot gelu_erf_slots[GE_N] = {
    GELU_OUTER,
    [GE_FN] = PAT_ACT(ERF, GE_ARG),
    [GE_ARG] = PAT_ALT2(GE_DIV, GE_MULR),
    [GE_DIV] = PAT_BIN(DIV, GE_X, GE_SQRT2),
    [GE_MULR] = PAT_BIN(MUL, GE_X, GE_RSQRT2),
    [GE_SQRT2] = PAT_CONST(1.4142135623730951),
    [GE_RSQRT2] = PAT_CONST(0.7071067811865476),
};
static const pat_slot gelu_tanh_slots[GE_N] = {
    GELU_OUTER,
    [GE_FN] = PAT_ACT(TANH, GE_ARG),
    [GE_ARG] = PAT_BIN(MUL, GE_INNER, GE_K0),
    [GE_INNER] = PAT_BIN(ADD, GE_X, GE_POLY),
    [GE_POLY] = PAT_BIN(MUL, GE_CUBE, GE_K1),
    [GE_CUBE] = PAT_ALT3(GE_POW3, GE_XXX_A, GE_XXX_B),
    [GE_POW3] = PAT_BIN(POW, GE_X, GE_THREE),
    [GE_XXX_A] = PAT_BIN(MUL, GE_X, GE_SQ),
    [GE_XXX_B] = PAT_BIN(MUL, GE_SQ, GE_X),
    [GE_SQ] = PAT_BIN(MUL, GE_X, GE_X),
    [GE_THREE] = PAT_CONST(3.0),
    [GE_K0] = PAT_CONST(0.7978845608028654),
    [GE_K1] = PAT_CONST(0.044715),
};

/* The result has x's shape and dtype (no constant broadcast it wider). */
static bool same_as_x(const pat_match *m, uint8_t root, uint8_t x) {
  const rlx_node *r = pat_node(m, root), *v = pat_node(m, x);
  return is_float(v->shape.dtype) && rlx_shape_equal(&r->shape, &v->shape);
}
static bool gelu_check(const pat_match *m) { return same_as_x(m, GE_ROOT, GE_X); }

static rlx_status emit_act(rlx_graph *dst, rlx_act act, rlx_id x, const char *name, rlx_id *out) {
  rlx_attrs_Activation a = {.kind = act};
  return rlx_build_Activation(dst, &x, 1, &a, name, out);
}
static rlx_status gelu_erf_emit(const pat_match *m, rlx_graph *dst, const rlx_id *map, const char *name, rlx_id *out) {
  return emit_act(dst, RLX_ACT_GELU, map[m->bound[GE_X]], name, out);
}
static rlx_status gelu_tanh_emit(const pat_match *m, rlx_graph *dst, const rlx_id *map, const char *name, rlx_id *out) {
  return emit_act(dst, RLX_ACT_GELU_APPROX, map[m->bound[GE_X]], name, out);
}

/* ---- SiLU: x * sigmoid(x) ---- */
enum { SI_ROOT, SI_SIG, SI_X, SI_N };
static const pat_slot silu_slots[SI_N] = {
    [SI_ROOT] = PAT_BIN(MUL, SI_X, SI_SIG),
    [SI_SIG] = PAT_ACT(SIGMOID, SI_X),
    [SI_X] = PAT_VAR,
};
static bool silu_check(const pat_match *m) { return same_as_x(m, SI_ROOT, SI_X); }
static rlx_status silu_emit(const pat_match *m, rlx_graph *dst, const rlx_id *map, const char *name, rlx_id *out) {
  return emit_act(dst, RLX_ACT_SILU, map[m->bound[SI_X]], name, out);
}

/* ---- HardSwish ----
 * x * HardSigmoid(x) with ONNX HardSigmoid's alpha = 1/6, beta = 0.5 (imported as
 * clamp(x * alpha + beta, 0, 1)), or x * clamp(x + 3, 0, 6) / 6 (the division also as * 1/6,
 * on the clamp or on the product). */
enum {
  HS_ROOT,
  HS_A,
  HS_HSIG,
  HS_AFF,
  HS_SCALE,
  HS_B,
  HS_B_DIV,
  HS_B_MUL,
  HS_B_PROD,
  HS_C,
  HS_C_DIV,
  HS_C_MUL,
  HS_C_DIVD,
  HS_RELU6,
  HS_SHIFT,
  HS_X,
  HS_SIXTH,
  HS_HALF,
  HS_THREE,
  HS_SIX,
  HS_N
};
static const pat_slot hswish_slots[HS_N] = {
    [HS_ROOT] = PAT_ALT3(HS_A, HS_B, HS_C),
    [HS_A] = PAT_BIN(MUL, HS_X, HS_HSIG),
    [HS_HSIG] = PAT_OP1(Clamp, HS_AFF),
    [HS_AFF] = PAT_BIN(ADD, HS_SCALE, HS_HALF),
    [HS_SCALE] = PAT_BIN(MUL, HS_X, HS_SIXTH),
    [HS_B] = PAT_ALT2(HS_B_DIV, HS_B_MUL),
    [HS_B_DIV] = PAT_BIN(DIV, HS_B_PROD, HS_SIX),
    [HS_B_MUL] = PAT_BIN(MUL, HS_B_PROD, HS_SIXTH),
    [HS_B_PROD] = PAT_BIN(MUL, HS_X, HS_RELU6),
    [HS_C] = PAT_BIN(MUL, HS_X, HS_C_DIV),
    [HS_C_DIV] = PAT_ALT2(HS_C_MUL, HS_C_DIVD),
    [HS_C_MUL] = PAT_BIN(MUL, HS_RELU6, HS_SIXTH),
    [HS_C_DIVD] = PAT_BIN(DIV, HS_RELU6, HS_SIX),
    [HS_RELU6] = PAT_OP1(Clamp, HS_SHIFT),
    [HS_SHIFT] = PAT_BIN(ADD, HS_X, HS_THREE),
    [HS_X] = PAT_VAR,
    [HS_SIXTH] = PAT_CONST(1.0 / 6.0),
    [HS_HALF] = PAT_CONST(0.5),
    [HS_THREE] = PAT_CONST(3.0),
    [HS_SIX] = PAT_CONST(6.0),
};
static bool clamp_is(const rlx_node *c, double lo, double hi) {
  return !c || (c->attrs.Clamp.min == (float)lo && c->attrs.Clamp.max == (float)hi);
}
static bool hswish_check(const pat_match *m) {
  return clamp_is(pat_node(m, HS_HSIG), 0, 1) && clamp_is(pat_node(m, HS_RELU6), 0, 6) && same_as_x(m, HS_ROOT, HS_X);
}
static rlx_status hswish_emit(const pat_match *m, rlx_graph *dst, const rlx_id *map, const char *name, rlx_id *out) {
  return emit_act(dst, RLX_ACT_HARD_SWISH, map[m->bound[HS_X]], name, out);
}

/* ---- Attention ----
 * softmax((Q Kt) / c [+ mask]) V, the scale also as * c or absent, Q [B, H, Sq, D],
 * Kt [B, H, D, Sk], V [B, H, Sk, D], softmax over the last axis. K is Kt transposed back (when Kt
 * is itself a Transpose, the two permutations are composed into one). */
enum { AT_ROOT, AT_P, AT_S, AT_MASKED, AT_SCALED, AT_DIV, AT_MULS, AT_QK, AT_Q, AT_KT, AT_V, AT_MASK, AT_C, AT_N };
static const pat_slot attn_slots[AT_N] = {
    [AT_ROOT] = PAT_OP2(MatMul, AT_P, AT_V),
    [AT_P] = PAT_OP1(Softmax, AT_S),
    [AT_S] = PAT_ALT2(AT_MASKED, AT_SCALED),
    [AT_MASKED] = PAT_BIN(ADD, AT_SCALED, AT_MASK),
    [AT_SCALED] = PAT_ALT3(AT_DIV, AT_MULS, AT_QK),
    [AT_DIV] = PAT_BIN(DIV, AT_QK, AT_C),
    [AT_MULS] = PAT_BIN(MUL, AT_QK, AT_C),
    [AT_QK] = PAT_OP2(MatMul, AT_Q, AT_KT),
    [AT_Q] = PAT_VAR,
    [AT_KT] = PAT_VAR,
    [AT_V] = PAT_VAR,
    [AT_MASK] = PAT_VAR,
    [AT_C] = PAT_ANYCONST,
};

static bool attn_check(const pat_match *m) {
  const rlx_shape *q = &pat_node(m, AT_Q)->shape, *kt = &pat_node(m, AT_KT)->shape, *v = &pat_node(m, AT_V)->shape;
  if (q->rank != 4 || kt->rank != 4 || v->rank != 4 || q->dtype != RLX_F32 || kt->dtype != q->dtype ||
      v->dtype != q->dtype)
    return false;
  if (!rlx_shape_is_static(q) || !rlx_shape_is_static(kt) || !rlx_shape_is_static(v)) return false;
  for (int i = 0; i < 2; i++)
    if (kt->dims[i] != q->dims[i] || v->dims[i] != q->dims[i]) return false;
  if (kt->dims[2] != q->dims[3] || v->dims[2] != kt->dims[3] || v->dims[3] != q->dims[3]) return false;
  if (q->dims[1] < 1 || q->dims[3] < 1) return false;
  const rlx_node *sm = pat_node(m, AT_P);
  int64_t ax = sm->attrs.Softmax.axis;
  if (ax != -1 && ax != 3) return false;
  if (pat_node(m, AT_C) && !(m->cval[AT_C] != 0 && isfinite(m->cval[AT_C]))) return false;
  const rlx_node *mask = pat_node(m, AT_MASK);
  if (mask) {
    /* The masked scores keep the [B, H, Sq, Sk] shape of Q Kt; the mask broadcasts onto it. */
    if (!rlx_shape_equal(&pat_node(m, AT_MASKED)->shape, &pat_node(m, AT_QK)->shape)) return false;
    if (mask->shape.dtype != RLX_F32 || !rlx_shape_is_static(&mask->shape)) return false;
  }
  return true;
}

static rlx_status attn_emit(const pat_match *m, rlx_graph *dst, const rlx_id *map, const char *name, rlx_id *out) {
  const rlx_node *q = pat_node(m, AT_Q), *kt = pat_node(m, AT_KT);
  rlx_id k;
  int64_t perm[4] = {0, 1, 3, 2};
  rlx_id kt_src = map[m->bound[AT_KT]];
  if (kt->op == RLX_OP_Transpose && kt->attrs.Transpose.perm.n == 4) {
    const int64_t *p = kt->attrs.Transpose.perm.v;
    int64_t composed[4] = {p[0], p[1], p[3], p[2]};
    memcpy(perm, composed, sizeof perm);
    kt_src = map[kt->inputs[0]];
  }
  RLX_TRY(rlx_permute(dst, kt_src, 4, perm, &k));
  double scale = 1.0;
  if (pat_node(m, AT_DIV)) scale = 1.0 / m->cval[AT_C];
  if (pat_node(m, AT_MULS)) scale = m->cval[AT_C];
  rlx_attrs_Attention a = {.num_heads = q->shape.dims[1],
                           .head_dim = q->shape.dims[3],
                           .v_head_dim = {.has = false},
                           .mask_kind = RLX_MASK_NONE,
                           .window = 0,
                           .score_scale = {.has = true, .v = (float)scale},
                           .attn_logit_softcap = {.has = false}};
  rlx_id in[4] = {map[m->bound[AT_Q]], k, map[m->bound[AT_V]]};
  uint32_t n_in = 3;
  if (pat_node(m, AT_MASK)) {
    const rlx_shape *s = &pat_node(m, AT_QK)->shape;
    RLX_TRY(rlx_expand_dims(dst, map[m->bound[AT_MASK]], 4, s->dims, &in[3]));
    a.mask_kind = RLX_MASK_BIAS;
    n_in = 4;
  }
  return rlx_build_Attention(dst, in, n_in, &a, name, out);
}

/* ---- Pad + Pad (+ Pad) -> Concat ----
 * The gradient of Narrows that tile an axis (q, k, v cut from one QKV projection) arrives from
 * autodiff as zero Pads of each piece back to the whole width, summed. When the pieces tile the
 * axis exactly (no gap, no overlap), the sum is their Concat: one copy instead of a Pad per piece
 * and a sum over the whole width per Add. */
enum { PC_SUM3, PC_SUM2, PC_P1, PC_P2, PC_P3, PC_X1, PC_X2, PC_X3, PC_N };
static const pat_slot pad_sum_slots[PC_N] = {
    [PC_SUM3] = PAT_BIN(ADD, PC_SUM2, PC_P3),
    [PC_SUM2] = PAT_BIN(ADD, PC_P1, PC_P2),
    [PC_P1] = PAT_OP1(Pad, PC_X1),
    [PC_P2] = PAT_OP1(Pad, PC_X2),
    [PC_P3] = PAT_OP1(Pad, PC_X3),
    [PC_X1] = PAT_VAR,
    [PC_X2] = PAT_VAR,
    [PC_X3] = PAT_VAR,
};

/* The axis a zero Pad widens and where its operand starts on it (-1: not such a Pad: another
 * mode or value, a negative pad, more than one padded axis, or a shape other than the sum's). */
static int64_t zero_pad_axis(const rlx_node *pad, const rlx_shape *x, const rlx_shape *sum, int64_t *lo) {
  const rlx_attrs_Pad *a = &pad->attrs.Pad;
  if (a->mode != RLX_PAD_MODE_CONSTANT || a->value != 0.0f || a->pads.n != 2u * x->rank ||
      !rlx_shape_equal(&pad->shape, sum) || !rlx_shape_is_static(x) || x->dtype != sum->dtype)
    return -1;
  int64_t axis = -1;
  for (uint32_t k = 0; k < x->rank; k++) {
    int64_t b = a->pads.v[2 * k], e = a->pads.v[2 * k + 1];
    if (b < 0 || e < 0) return -1;
    if (b == 0 && e == 0) continue;
    if (axis >= 0) return -1;
    axis = k;
    *lo = b;
  }
  return axis;
}

static void swap_u8(uint8_t *a, uint8_t *b) {
  uint8_t t = *a;
  *a = *b;
  *b = t;
}

/* The pieces (operand slots of the Pads, in axis order) when they tile the axis exactly. */
static bool pad_pieces(const pat_match *m, uint8_t root, uint8_t n, uint8_t order[3], int64_t *axis_out) {
  static const uint8_t pads[3] = {PC_P1, PC_P2, PC_P3}, xs[3] = {PC_X1, PC_X2, PC_X3};
  if (n < 2 || n > 3) return false;
  const rlx_shape *sum = &pat_node(m, root)->shape;
  int64_t lo[3], len[3], axis = -1;
  for (uint8_t i = 0; i < n; i++) {
    const rlx_shape *x = &pat_node(m, xs[i])->shape;
    int64_t a = zero_pad_axis(pat_node(m, pads[i]), x, sum, &lo[i]);
    if (a < 0 || (axis >= 0 && a != axis)) return false;
    axis = a;
    len[i] = x->dims[a];
    order[i] = i;
  }
  if (lo[order[1]] < lo[order[0]]) swap_u8(&order[0], &order[1]); /* sort the pieces by start */
  if (n == 3 && lo[order[2]] < lo[order[1]]) swap_u8(&order[1], &order[2]);
  if (lo[order[1]] < lo[order[0]]) swap_u8(&order[0], &order[1]);
  int64_t at = 0;
  for (uint8_t i = 0; i < n; i++) {
    if (lo[order[i]] != at) return false;
    at += len[order[i]];
  }
  if (at != sum->dims[axis]) return false;
  for (uint8_t i = 0; i < n; i++) order[i] = xs[order[i]];
  *axis_out = axis;
  return true;
}

static bool pad_sum3_check(const pat_match *m) {
  uint8_t o[3];
  int64_t ax;
  return pad_pieces(m, PC_SUM3, 3, o, &ax);
}
static bool pad_sum2_check(const pat_match *m) {
  uint8_t o[3];
  int64_t ax;
  return pad_pieces(m, PC_SUM2, 2, o, &ax);
}
static rlx_status pad_sum_emit(const pat_match *m, uint8_t root, uint8_t n, rlx_graph *dst, const rlx_id *map,
                               const char *name, rlx_id *out) {
  uint8_t o[3];
  int64_t axis = 0;
  if (!pad_pieces(m, root, n, o, &axis)) return rlx_errorf(RLX_ERR_INTERNAL, "pad_sum: the checked match changed");
  rlx_id in[3];
  for (uint8_t i = 0; i < n; i++) in[i] = map[m->bound[o[i]]];
  rlx_attrs_Concat a = {.axis = axis};
  return rlx_build_Concat(dst, in, n, &a, name, out);
}
static rlx_status pad_sum3_emit(const pat_match *m, rlx_graph *dst, const rlx_id *map, const char *name, rlx_id *out) {
  return pad_sum_emit(m, PC_SUM3, 3, dst, map, name, out);
}
static rlx_status pad_sum2_emit(const pat_match *m, rlx_graph *dst, const rlx_id *map, const char *name, rlx_id *out) {
  return pad_sum_emit(m, PC_SUM2, 2, dst, map, name, out);
}

#define RULE(nm, kind, tbl, r, ck, em)                                                                          \
  {                                                                                                             \
    .name = (nm), .fused = RLX_OP_##kind, .slots = (tbl), .n_slots = (uint8_t)(sizeof(tbl) / sizeof((tbl)[0])), \
    .root = (r), .check = (ck), .emit = (em)                                                                    \
  }

/* Larger patterns first where one contains another (the affine LayerNorm before the bare one). */
const pat_rule rlx_pattern_rules[] = {
    RULE("layer_norm_affine", LayerNorm, ln_slots, LN_AFFINE, ln_check, ln_emit),
    RULE("layer_norm_scale", LayerNorm, ln_slots, LN_SCALED, ln_check, ln_emit),
    RULE("layer_norm", LayerNorm, ln_slots, LN_NORM, ln_check, ln_emit),
    RULE("gelu_erf", Activation, gelu_erf_slots, GE_ROOT, gelu_check, gelu_erf_emit),
    RULE("gelu_tanh", Activation, gelu_tanh_slots, GE_ROOT, gelu_check, gelu_tanh_emit),
    RULE("silu", Activation, silu_slots, SI_ROOT, silu_check, silu_emit),
    RULE("hard_swish", Activation, hswish_slots, HS_ROOT, hswish_check, hswish_emit),
    RULE("attention", Attention, attn_slots, AT_ROOT, attn_check, attn_emit),
    RULE("pad_sum3_concat", Concat, pad_sum_slots, PC_SUM3, pad_sum3_check, pad_sum3_emit),
    RULE("pad_sum2_concat", Concat, pad_sum_slots, PC_SUM2, pad_sum2_check, pad_sum2_emit),
};
const uint32_t rlx_pattern_rule_count = sizeof rlx_pattern_rules / sizeof rlx_pattern_rules[0];
