/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* ONNX elementwise ops: unary math (RLX Activation kinds or short compositions), binary
 * arithmetic / comparison / logic with NumPy broadcasting (and the legacy `broadcast` + `axis`
 * attributes of opsets < 7), variadic Sum/Mean/Max/Min, Where, Clip, Cast/CastLike, Identity,
 * Dropout (inference). */
#include <math.h>
#include <string.h>

#include "io/onnx/onnx_internal.h"

static rlx_status need_float(oi_node *c, rlx_id x, const char *what) {
  rlx_dtype t = (rlx_dtype)oi_shape(c, x)->dtype;
  if (rlx_dtype_is_float(t)) return RLX_OK;
  return oi_unsupported(c, "%s needs a floating-point input, got %s", what, rlx_dtype_name(t));
}

/* ---- unary ---- */

static rlx_act act_of(const char *op) {
  static const struct {
    const char *onnx;
    rlx_act act;
  } map[] = {{"Abs", RLX_ACT_ABS},           {"Neg", RLX_ACT_NEG},           {"Exp", RLX_ACT_EXP},
             {"Log", RLX_ACT_LOG},           {"Sqrt", RLX_ACT_SQRT},         {"Reciprocal", RLX_ACT_RECIP},
             {"Sin", RLX_ACT_SIN},           {"Cos", RLX_ACT_COS},           {"Tan", RLX_ACT_TAN},
             {"Atan", RLX_ACT_ATAN},         {"Tanh", RLX_ACT_TANH},         {"Sigmoid", RLX_ACT_SIGMOID},
             {"Relu", RLX_ACT_RELU},         {"Floor", RLX_ACT_FLOOR},       {"Ceil", RLX_ACT_CEIL},
             {"Round", RLX_ACT_ROUND},       {"Sign", RLX_ACT_SIGN},         {"Erf", RLX_ACT_ERF},
             {"Softplus", RLX_ACT_SOFTPLUS}, {"Softsign", RLX_ACT_SOFTSIGN}, {"HardSwish", RLX_ACT_HARD_SWISH},
             {"Mish", RLX_ACT_MISH}};
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    if (strcmp(map[i].onnx, op) == 0) return map[i].act;
  return RLX_ACT_COUNT;
}

static rlx_status map_unary(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "X"));
  rlx_act a = act_of(c->np->op_type);
  if (a == RLX_ACT_COUNT) return rlx_errorf(RLX_ERR_INTERNAL, "no activation for %s", c->np->op_type);
  bool int_ok = a == RLX_ACT_ABS || a == RLX_ACT_NEG || a == RLX_ACT_RELU || a == RLX_ACT_SIGN;
  if (!int_ok) RLX_TRY(need_float(c, c->in[0], c->np->op_type));
  return oi_unary(c, a, c->in[0], &c->out[0]);
}

/* Gelu (opset 20): erf form, or the tanh approximation with approximate = "tanh". */
static rlx_status map_gelu(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "X"));
  RLX_TRY(need_float(c, c->in[0], "Gelu"));
  const char *ap;
  RLX_TRY(oi_attr_s(c, "approximate", "none", &ap));
  rlx_act a;
  if (strcmp(ap, "none") == 0)
    a = RLX_ACT_GELU;
  else if (strcmp(ap, "tanh") == 0)
    a = RLX_ACT_GELU_APPROX;
  else
    return oi_bad(c, "attribute approximate must be \"none\" or \"tanh\", not \"%s\"", ap);
  return oi_unary(c, a, c->in[0], &c->out[0]);
}

/* x * sigmoid(alpha * x) (RLX Silu when alpha = 1). */
static rlx_status swish(oi_node *c, rlx_id x, float alpha, rlx_id *out) {
  if (alpha == 1.0f) return oi_unary(c, RLX_ACT_SILU, x, out);
  rlx_id t;
  RLX_TRY(oi_bin_s(c, RLX_BINOP_MUL, x, alpha, &t));
  RLX_TRY(oi_unary(c, RLX_ACT_SIGMOID, t, &t));
  return oi_bin(c, RLX_BINOP_MUL, x, t, out);
}

/* Swish (opset 24) and SwiGLU (28): Swish_alpha(A) * B, A and B of one shape. */
static rlx_status map_swish(oi_node *c) {
  bool glu = strcmp(c->np->op_type, "SwiGLU") == 0;
  RLX_TRY(oi_need(c, 0, glu ? "A" : "X"));
  RLX_TRY(need_float(c, c->in[0], c->np->op_type));
  float alpha;
  RLX_TRY(oi_attr_f(c, "alpha", 1.0f, &alpha));
  if (!glu) return swish(c, c->in[0], alpha, &c->out[0]);
  RLX_TRY(oi_need(c, 1, "B"));
  const rlx_shape *as = oi_in_shape(c, 0), *bs = oi_in_shape(c, 1);
  if (!rlx_shape_equal(as, bs))
    return oi_bad(c, "inputs A %s and B %s must have the same shape (SwiGLU does not broadcast)", rlx_fmt_shape(as),
                  rlx_fmt_shape(bs));
  rlx_id g;
  RLX_TRY(swish(c, c->in[0], alpha, &g));
  return oi_bin(c, RLX_BINOP_MUL, g, c->in[1], &c->out[0]);
}

/* s * x + b with scalars of x's dtype (skipping the trivial parts). */
static rlx_status affine(oi_node *c, rlx_id x, double s, double b, rlx_id *out) {
  rlx_id y = x;
  if (s != 1.0) RLX_TRY(oi_bin_s(c, RLX_BINOP_MUL, y, s, &y));
  if (b != 0.0) RLX_TRY(oi_bin_s(c, RLX_BINOP_ADD, y, b, &y));
  *out = y;
  return RLX_OK;
}

/* Hyperbolic and inverse trigonometric functions from exp / log / sqrt / atan. */
static rlx_status map_trig(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "X"));
  rlx_id x = c->in[0], t, u, v;
  const char *op = c->np->op_type;
  RLX_TRY(need_float(c, x, op));
  if (strcmp(op, "Sinh") == 0 || strcmp(op, "Cosh") == 0) {
    RLX_TRY(oi_unary(c, RLX_ACT_EXP, x, &t));
    RLX_TRY(oi_unary(c, RLX_ACT_NEG, x, &u));
    RLX_TRY(oi_unary(c, RLX_ACT_EXP, u, &u));
    RLX_TRY(oi_bin(c, strcmp(op, "Sinh") == 0 ? RLX_BINOP_SUB : RLX_BINOP_ADD, t, u, &v));
    return oi_bin_s(c, RLX_BINOP_MUL, v, 0.5, &c->out[0]);
  }
  if (strcmp(op, "Asinh") == 0 || strcmp(op, "Acosh") == 0) { /* log(x + sqrt(x^2 -+ 1)) */
    RLX_TRY(oi_bin(c, RLX_BINOP_MUL, x, x, &t));
    RLX_TRY(oi_bin_s(c, op[1] == 's' ? RLX_BINOP_ADD : RLX_BINOP_SUB, t, 1.0, &t));
    RLX_TRY(oi_unary(c, RLX_ACT_SQRT, t, &t));
    RLX_TRY(oi_bin(c, RLX_BINOP_ADD, x, t, &t));
    return oi_unary(c, RLX_ACT_LOG, t, &c->out[0]);
  }
  if (strcmp(op, "Atanh") == 0) { /* 0.5 * log((1 + x) / (1 - x)) */
    RLX_TRY(oi_bin_s(c, RLX_BINOP_ADD, x, 1.0, &t));
    RLX_TRY(oi_unary(c, RLX_ACT_NEG, x, &u));
    RLX_TRY(oi_bin_s(c, RLX_BINOP_ADD, u, 1.0, &u));
    RLX_TRY(oi_bin(c, RLX_BINOP_DIV, t, u, &t));
    RLX_TRY(oi_unary(c, RLX_ACT_LOG, t, &t));
    return oi_bin_s(c, RLX_BINOP_MUL, t, 0.5, &c->out[0]);
  }
  /* Asin = atan2(x, sqrt(1 - x^2)); Acos = atan2(sqrt(1 - x^2), x) */
  RLX_TRY(oi_bin(c, RLX_BINOP_MUL, x, x, &t));
  RLX_TRY(oi_unary(c, RLX_ACT_NEG, t, &t));
  RLX_TRY(oi_bin_s(c, RLX_BINOP_ADD, t, 1.0, &t));
  RLX_TRY(oi_unary(c, RLX_ACT_SQRT, t, &t));
  if (strcmp(op, "Asin") == 0) return oi_bin(c, RLX_BINOP_ATAN2, x, t, &c->out[0]);
  return oi_bin(c, RLX_BINOP_ATAN2, t, x, &c->out[0]);
}

/* Where(x > 0, x, alpha * (exp(x) - 1)) [* gamma] */
static rlx_status elu_like(oi_node *c, rlx_id x, double alpha, double gamma, rlx_id *out) {
  rlx_id zero, pos, e, y;
  RLX_TRY(oi_scalar(c, (rlx_dtype)oi_shape(c, x)->dtype, 0, &zero));
  RLX_TRY(oi_cmp(c, RLX_CMP_GT, x, zero, &pos));
  RLX_TRY(oi_unary(c, RLX_ACT_EXP, x, &e));
  RLX_TRY(affine(c, e, alpha, -alpha, &e));
  RLX_TRY(oi_where(c, pos, x, e, &y));
  return affine(c, y, gamma, 0, out);
}

static rlx_status map_elu(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "X"));
  RLX_TRY(need_float(c, c->in[0], c->np->op_type));
  float alpha;
  if (strcmp(c->np->op_type, "Selu") == 0) {
    float gamma;
    RLX_TRY(oi_attr_f(c, "alpha", 1.67326319217681884765625f, &alpha));
    RLX_TRY(oi_attr_f(c, "gamma", 1.05070102214813232421875f, &gamma));
    return elu_like(c, c->in[0], alpha, gamma, &c->out[0]);
  }
  RLX_TRY(oi_attr_f(c, "alpha", 1.0f, &alpha));
  if (alpha == 1.0f) return oi_unary(c, RLX_ACT_ELU, c->in[0], &c->out[0]);
  return elu_like(c, c->in[0], alpha, 1.0, &c->out[0]);
}

static rlx_status map_celu(oi_node *c) { /* max(0,x) + min(0, alpha*(exp(x/alpha)-1)) */
  RLX_TRY(oi_need(c, 0, "X"));
  RLX_TRY(need_float(c, c->in[0], "Celu"));
  float alpha;
  RLX_TRY(oi_attr_f(c, "alpha", 1.0f, &alpha));
  if (alpha == 0) return oi_bad(c, "attribute alpha must not be 0");
  rlx_id x = c->in[0], zero, p, e, n;
  RLX_TRY(oi_scalar(c, (rlx_dtype)oi_shape(c, x)->dtype, 0, &zero));
  RLX_TRY(oi_bin(c, RLX_BINOP_MAX, x, zero, &p));
  RLX_TRY(affine(c, x, 1.0 / alpha, 0, &e));
  RLX_TRY(oi_unary(c, RLX_ACT_EXP, e, &e));
  RLX_TRY(affine(c, e, alpha, -(double)alpha, &e));
  RLX_TRY(oi_bin(c, RLX_BINOP_MIN, e, zero, &n));
  return oi_bin(c, RLX_BINOP_ADD, p, n, &c->out[0]);
}

static rlx_status map_leaky_relu(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "X"));
  float alpha;
  RLX_TRY(oi_attr_f(c, "alpha", 0.01f, &alpha));
  rlx_id x = c->in[0], zero, neg, ax;
  RLX_TRY(oi_scalar(c, (rlx_dtype)oi_shape(c, x)->dtype, 0, &zero));
  RLX_TRY(oi_cmp(c, RLX_CMP_LT, x, zero, &neg));
  RLX_TRY(oi_bin_s(c, RLX_BINOP_MUL, x, alpha, &ax));
  return oi_where(c, neg, ax, x, &c->out[0]);
}

static rlx_status map_prelu(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "X"));
  RLX_TRY(oi_need(c, 1, "slope"));
  rlx_id x = c->in[0], slope = c->in[1], zero, neg, ax;
  const rlx_shape *xs = oi_shape(c, x), *ss = oi_shape(c, slope);
  /* opsets < 7: a [C] slope applies per channel (axis 1) */
  if (c->opset < 7 && ss->rank == 1 && xs->rank >= 2 && ss->dims[0] != 1 && ss->dims[0] == xs->dims[1])
    RLX_TRY(oi_bcast_axis(c, slope, xs->rank, 1, &slope));
  RLX_TRY(oi_scalar(c, (rlx_dtype)xs->dtype, 0, &zero));
  RLX_TRY(oi_cmp(c, RLX_CMP_LT, x, zero, &neg));
  RLX_TRY(oi_bin(c, RLX_BINOP_MUL, x, slope, &ax));
  return oi_where(c, neg, ax, x, &c->out[0]);
}

static rlx_status map_thresholded_relu(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "X"));
  float alpha;
  RLX_TRY(oi_attr_f(c, "alpha", 1.0f, &alpha));
  rlx_id x = c->in[0], a, zero, gt;
  rlx_dtype t = (rlx_dtype)oi_shape(c, x)->dtype;
  RLX_TRY(oi_scalar(c, t, alpha, &a));
  RLX_TRY(oi_scalar(c, t, 0, &zero));
  RLX_TRY(oi_cmp(c, RLX_CMP_GT, x, a, &gt));
  return oi_where(c, gt, x, zero, &c->out[0]);
}

static rlx_status map_hard_sigmoid(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "X"));
  RLX_TRY(need_float(c, c->in[0], "HardSigmoid"));
  float alpha, beta;
  RLX_TRY(oi_attr_f(c, "alpha", 0.2f, &alpha));
  RLX_TRY(oi_attr_f(c, "beta", 0.5f, &beta));
  rlx_id y;
  RLX_TRY(affine(c, c->in[0], alpha, beta, &y));
  rlx_attrs_Clamp a = {.min = 0.0f, .max = 1.0f};
  return oi_emit(c, RLX_OP_Clamp, &y, 1, &a, &c->out[0]);
}

static rlx_status map_shrink(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "input"));
  float bias, lambd;
  RLX_TRY(oi_attr_f(c, "bias", 0.0f, &bias));
  RLX_TRY(oi_attr_f(c, "lambd", 0.5f, &lambd));
  rlx_id x = c->in[0], lo, hi, lt, gt, xp, xm, zero, y;
  rlx_dtype t = (rlx_dtype)oi_shape(c, x)->dtype;
  RLX_TRY(oi_scalar(c, t, -lambd, &lo));
  RLX_TRY(oi_scalar(c, t, lambd, &hi));
  RLX_TRY(oi_scalar(c, t, 0, &zero));
  RLX_TRY(oi_cmp(c, RLX_CMP_LT, x, lo, &lt));
  RLX_TRY(oi_cmp(c, RLX_CMP_GT, x, hi, &gt));
  RLX_TRY(oi_bin_s(c, RLX_BINOP_ADD, x, bias, &xp));
  RLX_TRY(oi_bin_s(c, RLX_BINOP_SUB, x, bias, &xm));
  RLX_TRY(oi_where(c, gt, xm, zero, &y));
  return oi_where(c, lt, xp, y, &c->out[0]);
}

static rlx_status map_not(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "X"));
  rlx_id f;
  if (oi_in_shape(c, 0)->dtype != RLX_BOOL) return oi_bad(c, "input 0 must be bool");
  RLX_TRY(oi_scalar(c, RLX_BOOL, 0, &f));
  return oi_cmp(c, RLX_CMP_EQ, c->in[0], f, &c->out[0]);
}

static rlx_status map_isnan(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "X"));
  RLX_TRY(need_float(c, c->in[0], "IsNaN"));
  return oi_cmp(c, RLX_CMP_NE, c->in[0], c->in[0], &c->out[0]);
}

static rlx_status map_isinf(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "X"));
  RLX_TRY(need_float(c, c->in[0], "IsInf"));
  int64_t neg, pos;
  RLX_TRY(oi_attr_i(c, "detect_negative", 1, &neg));
  RLX_TRY(oi_attr_i(c, "detect_positive", 1, &pos));
  rlx_dtype t = (rlx_dtype)oi_in_shape(c, 0)->dtype;
  rlx_id r = RLX_NO_ID, k, e;
  if (pos) {
    RLX_TRY(oi_scalar(c, t, INFINITY, &k));
    RLX_TRY(oi_cmp(c, RLX_CMP_EQ, c->in[0], k, &r));
  }
  if (neg) {
    RLX_TRY(oi_scalar(c, t, -INFINITY, &k));
    RLX_TRY(oi_cmp(c, RLX_CMP_EQ, c->in[0], k, &e));
    if (r == RLX_NO_ID)
      r = e;
    else
      RLX_TRY(oi_bin(c, RLX_BINOP_BIT_OR, r, e, &r));
  }
  if (r == RLX_NO_ID) { /* detects nothing: all false */
    rlx_id z;
    RLX_TRY(oi_scalar(c, t, 0, &z));
    RLX_TRY(oi_cmp(c, RLX_CMP_NE, c->in[0], c->in[0], &r));
    RLX_TRY(oi_cmp(c, RLX_CMP_NE, z, z, &e));
    RLX_TRY(oi_bin(c, RLX_BINOP_BIT_AND, r, e, &r));
  }
  c->out[0] = r;
  return RLX_OK;
}

/* ---- binary ---- */

/* The second operand under the legacy (opset < 7) broadcast rules: with broadcast=1 and an
 * `axis`, B's dims line up with A's starting at axis. */
static rlx_status legacy_rhs(oi_node *c, rlx_id a, rlx_id b, rlx_id *out) {
  *out = b;
  if (c->opset >= 7) return RLX_OK;
  int64_t bc, axis;
  RLX_TRY(oi_attr_i(c, "broadcast", 0, &bc));
  const Onnx__AttributeProto *ax = oi_attr(c, "axis");
  if (!bc || !ax) return RLX_OK;
  RLX_TRY(oi_attr_i(c, "axis", 0, &axis));
  const rlx_shape *as = oi_shape(c, a), *bs = oi_shape(c, b);
  uint32_t u;
  RLX_TRY(oi_axis(c, axis, as->rank, "attribute axis", &u));
  if (u + bs->rank > as->rank)
    return oi_bad(c, "attribute axis %lld: B %s does not fit into A %s", (long long)axis, rlx_fmt_shape(bs),
                  rlx_fmt_shape(as));
  int64_t dims[RLX_MAX_RANK];
  uint32_t r = as->rank - u;
  for (uint32_t i = 0; i < r; i++) dims[i] = i < bs->rank ? bs->dims[i] : 1;
  return oi_reshape(c, b, r, dims, out);
}

typedef struct binop_entry {
  const char *onnx;
  int kind; /* 0 binary, 1 compare, 2 logic (bool only) */
  int op;
} binop_entry;

static const binop_entry binops[] = {
    {"Add", 0, RLX_BINOP_ADD},          {"Sub", 0, RLX_BINOP_SUB},
    {"Mul", 0, RLX_BINOP_MUL},          {"Div", 0, RLX_BINOP_DIV},
    {"And", 2, RLX_BINOP_BIT_AND},      {"Or", 2, RLX_BINOP_BIT_OR},
    {"Xor", 2, RLX_BINOP_BIT_XOR},      {"BitwiseAnd", 0, RLX_BINOP_BIT_AND},
    {"BitwiseOr", 0, RLX_BINOP_BIT_OR}, {"BitwiseXor", 0, RLX_BINOP_BIT_XOR},
    {"Equal", 1, RLX_CMP_EQ},           {"Less", 1, RLX_CMP_LT},
    {"Greater", 1, RLX_CMP_GT},         {"LessOrEqual", 1, RLX_CMP_LE},
    {"GreaterOrEqual", 1, RLX_CMP_GE},
};

static rlx_status map_binary(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "A"));
  RLX_TRY(oi_need(c, 1, "B"));
  const binop_entry *e = NULL;
  for (size_t i = 0; i < sizeof binops / sizeof binops[0]; i++)
    if (strcmp(binops[i].onnx, c->np->op_type) == 0) e = &binops[i];
  if (!e) return rlx_errorf(RLX_ERR_INTERNAL, "no binary mapping for %s", c->np->op_type);
  rlx_id a = c->in[0], b;
  RLX_TRY(legacy_rhs(c, a, c->in[1], &b));
  rlx_dtype ta = (rlx_dtype)oi_shape(c, a)->dtype, tb = (rlx_dtype)oi_shape(c, b)->dtype;
  if (ta != tb)
    return oi_bad(c, "inputs A (%s) and B (%s) must have the same dtype", rlx_dtype_name(ta), rlx_dtype_name(tb));
  if (e->kind == 2 && ta != RLX_BOOL)
    return oi_bad(c, "%s needs bool inputs, got %s", c->np->op_type, rlx_dtype_name(ta));
  if (e->kind == 1) return oi_cmp(c, (rlx_cmp)e->op, a, b, &c->out[0]);
  return oi_bin(c, (rlx_binop)e->op, a, b, &c->out[0]);
}

static rlx_status map_pow(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "X"));
  RLX_TRY(oi_need(c, 1, "Y"));
  rlx_id a = c->in[0], b;
  RLX_TRY(legacy_rhs(c, a, c->in[1], &b));
  RLX_TRY(oi_cast(c, b, (rlx_dtype)oi_shape(c, a)->dtype, &b)); /* Pow allows a different exponent type */
  return oi_bin(c, RLX_BINOP_POW, a, b, &c->out[0]);
}

static rlx_status map_mod(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "A"));
  RLX_TRY(oi_need(c, 1, "B"));
  int64_t fmod_attr;
  RLX_TRY(oi_attr_i(c, "fmod", 0, &fmod_attr));
  rlx_id a = c->in[0], b = c->in[1], r;
  rlx_dtype t = (rlx_dtype)oi_shape(c, a)->dtype;
  if (t != oi_shape(c, b)->dtype) return oi_bad(c, "inputs A and B must have the same dtype");
  bool fl = rlx_dtype_is_float(t);
  /* opset 28 defines fmod = 0 for floats too: A - floor(A / B) * B */
  if (fl && !fmod_attr && c->opset < 28)
    return oi_bad(c, "attribute fmod must be 1 for floating-point inputs before opset 28");
  RLX_TRY(oi_bin(c, RLX_BINOP_MOD, a, b, &r)); /* C fmod: sign of the dividend */
  if (fmod_attr || !(rlx_dtype_is_signed_int(t) || fl)) {
    c->out[0] = r;
    return RLX_OK;
  }
  /* floor-style: a non-zero remainder whose sign differs from the divisor's gets b added (for
   * b = +-inf that gives b, as opset 28 asks) */
  rlx_id zero, rnz, rneg, bneg, differ, fix, adj;
  RLX_TRY(oi_scalar(c, t, 0, &zero));
  RLX_TRY(oi_cmp(c, RLX_CMP_NE, r, zero, &rnz));
  RLX_TRY(oi_cmp(c, RLX_CMP_LT, r, zero, &rneg));
  RLX_TRY(oi_cmp(c, RLX_CMP_LT, b, zero, &bneg));
  RLX_TRY(oi_cmp(c, RLX_CMP_NE, rneg, bneg, &differ));
  RLX_TRY(oi_bin(c, RLX_BINOP_BIT_AND, rnz, differ, &fix));
  RLX_TRY(oi_bin(c, RLX_BINOP_ADD, r, b, &adj));
  if (!fl) return oi_where(c, fix, adj, r, &c->out[0]);
  RLX_TRY(oi_where(c, fix, adj, r, &r));
  /* a zero remainder takes the divisor's sign (NaN remainders stay NaN: NaN != 0) */
  rlx_id nz, signed_zero, rz;
  RLX_TRY(oi_scalar(c, t, -0.0, &nz));
  RLX_TRY(oi_where(c, bneg, nz, zero, &signed_zero));
  RLX_TRY(oi_cmp(c, RLX_CMP_EQ, r, zero, &rz));
  return oi_where(c, rz, signed_zero, r, &c->out[0]);
}

static rlx_status map_bitshift(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "X"));
  RLX_TRY(oi_need(c, 1, "Y"));
  const char *dir;
  RLX_TRY(oi_attr_s(c, "direction", "", &dir));
  rlx_binop op;
  if (strcmp(dir, "LEFT") == 0)
    op = RLX_BINOP_SHL;
  else if (strcmp(dir, "RIGHT") == 0)
    op = RLX_BINOP_SHR;
  else
    return oi_bad(c, "attribute direction must be \"LEFT\" or \"RIGHT\", not \"%s\"", dir);
  return oi_bin(c, op, c->in[0], c->in[1], &c->out[0]);
}

static rlx_status map_bitwise_not(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "X"));
  rlx_dtype t = (rlx_dtype)oi_in_shape(c, 0)->dtype;
  if (!rlx_dtype_is_int(t)) return oi_bad(c, "input X must be an integer tensor");
  rlx_id ones;
  RLX_TRY(oi_scalar(c, t, rlx_dtype_is_signed_int(t) ? -1.0 : (t == RLX_U8 ? 255.0 : 4294967295.0), &ones));
  return oi_bin(c, RLX_BINOP_BIT_XOR, c->in[0], ones, &c->out[0]);
}

/* Sum / Mean / Max / Min over 1..n inputs with multidirectional broadcasting. */
static rlx_status map_variadic(oi_node *c) {
  const char *op = c->np->op_type;
  rlx_binop b = op[1] == 'u'   ? RLX_BINOP_ADD
                : op[1] == 'e' ? RLX_BINOP_ADD
                : op[1] == 'a' ? RLX_BINOP_MAX
                               : RLX_BINOP_MIN;
  rlx_id acc = RLX_NO_ID;
  uint32_t n = 0;
  for (uint32_t k = 0; k < c->n_in; k++) {
    if (!oi_has(c, k)) continue;
    if (acc == RLX_NO_ID)
      acc = c->in[k];
    else {
      rlx_id x = c->in[k];
      /* Binary's result has operand 0's dtype; both operands must agree anyway */
      RLX_TRY(oi_bin(c, b, acc, x, &acc));
    }
    n++;
  }
  if (acc == RLX_NO_ID) return oi_bad(c, "needs at least one input");
  if (op[0] == 'M' && op[1] == 'e' && n > 1) return oi_bin_s(c, RLX_BINOP_DIV, acc, (double)n, &c->out[0]);
  c->out[0] = acc;
  return RLX_OK;
}

static rlx_status map_where(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "condition"));
  RLX_TRY(oi_need(c, 1, "X"));
  RLX_TRY(oi_need(c, 2, "Y"));
  return oi_where(c, c->in[0], c->in[1], c->in[2], &c->out[0]);
}

static rlx_status map_clip(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "input"));
  rlx_id x = c->in[0];
  rlx_dtype t = (rlx_dtype)oi_shape(c, x)->dtype;
  if (c->opset < 11) {
    float lo, hi;
    RLX_TRY(oi_attr_f(c, "min", -INFINITY, &lo));
    RLX_TRY(oi_attr_f(c, "max", INFINITY, &hi));
    if (!(lo <= hi)) {
      rlx_id a, b;
      RLX_TRY(oi_scalar(c, t, lo, &a));
      RLX_TRY(oi_scalar(c, t, hi, &b));
      RLX_TRY(oi_bin(c, RLX_BINOP_MAX, x, a, &x));
      return oi_bin(c, RLX_BINOP_MIN, x, b, &c->out[0]);
    }
    rlx_attrs_Clamp a = {.min = lo, .max = hi};
    return oi_emit(c, RLX_OP_Clamp, &x, 1, &a, &c->out[0]);
  }
  /* opset >= 11: optional scalar inputs min, max */
  for (uint32_t k = 1; k <= 2; k++) {
    if (!oi_has(c, k)) continue;
    if (oi_in_shape(c, k)->dtype != t)
      return oi_bad(c, "input %u must have the input's dtype %s", k, rlx_dtype_name(t));
    RLX_TRY(oi_bin(c, k == 1 ? RLX_BINOP_MAX : RLX_BINOP_MIN, x, c->in[k], &x));
  }
  c->out[0] = x;
  return RLX_OK;
}

static rlx_status map_cast(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "input"));
  rlx_dtype to;
  if (strcmp(c->np->op_type, "CastLike") == 0) {
    RLX_TRY(oi_need(c, 1, "target_type"));
    to = (rlx_dtype)oi_in_shape(c, 1)->dtype;
  } else {
    const Onnx__AttributeProto *a = oi_attr(c, "to");
    if (!a) return oi_bad(c, "attribute to is missing");
    int64_t v;
    if (oi_attr_type(a) == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING) /* opset 1 spelled it as a name */
      return oi_unsupported(c, "attribute to as a string (opset 1 form)");
    RLX_TRY(oi_attr_i(c, "to", 0, &v));
    if (v < INT32_MIN || v > INT32_MAX || !oi_dtype_from_onnx((int32_t)v, &to))
      return oi_unsupported(c, "cast to %s (RLX has no such dtype)", oi_onnx_dtype_name((int32_t)v));
  }
  return oi_cast(c, c->in[0], to, &c->out[0]);
}

/* BitCast (opset 26): the same bytes read as dtype `to` (same element size). Between integer
 * dtypes (and bool) that is RLX's wrapping integer Cast; other pairs only for values known at
 * import time (RLX has no run-time bit reinterpretation). */
static rlx_status map_bitcast(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "input"));
  int64_t v;
  if (!oi_attr(c, "to")) return oi_bad(c, "attribute to is missing");
  RLX_TRY(oi_attr_i(c, "to", 0, &v));
  rlx_dtype to;
  if (v < INT32_MIN || v > INT32_MAX || !oi_dtype_from_onnx((int32_t)v, &to))
    return oi_unsupported(c, "bit cast to %s (RLX has no such dtype)", oi_onnx_dtype_name((int32_t)v));
  rlx_dtype from = (rlx_dtype)oi_in_shape(c, 0)->dtype;
  if (rlx_dtype_size(from) != rlx_dtype_size(to))
    return oi_bad(c, "bit cast from %s to %s changes the element size", rlx_dtype_name(from), rlx_dtype_name(to));
  bool intlike_from = rlx_dtype_is_int(from) || from == RLX_BOOL, intlike_to = rlx_dtype_is_int(to) || to == RLX_BOOL;
  if (from == to || (intlike_from && intlike_to && to != RLX_BOOL)) return oi_cast(c, c->in[0], to, &c->out[0]);
  const void *data;
  rlx_shape sh;
  if (!oi_in_value(c, 0, &data, &sh))
    return oi_unsupported(c, "bit cast from %s to %s of a value known only at run time", rlx_dtype_name(from),
                          rlx_dtype_name(to));
  size_t nb;
  RLX_TRY(rlx_shape_nbytes(&sh, &nb));
  sh.dtype = (uint8_t)to;
  return oi_const(c, sh, data, nb, &c->out[0]);
}

static rlx_status map_identity(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "input"));
  if (c->in[0] == RLX_NO_ID) return oi_pass_value(c); /* a sequence or an optional */
  c->out[0] = c->in[0];
  return RLX_OK;
}

static rlx_status map_dropout(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "data"));
  if (c->opset < 7) {
    int64_t is_test;
    RLX_TRY(oi_attr_i(c, "is_test", 0, &is_test));
    if (!is_test) return oi_unsupported(c, "training mode (is_test = 0) is random");
  }
  if (c->opset >= 12 && oi_has(c, 2)) {
    int64_t *tm;
    size_t n;
    RLX_TRY(oi_in_ints(c, 2, "training_mode", &tm, &n));
    if (n != 1) return oi_bad(c, "input 2 (training_mode) must be a scalar");
    double ratio = 0.5, *rv;
    size_t rn;
    if (oi_has(c, 1)) {
      RLX_TRY(oi_in_f64s(c, 1, "ratio", &rv, &rn));
      if (rn != 1) return oi_bad(c, "input 1 (ratio) must be a scalar");
      ratio = rv[0];
    }
    if (tm[0] && ratio != 0) return oi_unsupported(c, "training_mode = true with a non-zero ratio is random");
  }
  c->out[0] = c->in[0];
  if (c->n_out > 1 && c->out_used[1]) {
    rlx_shape s = *oi_in_shape(c, 0);
    RLX_TRY(oi_need_static(c, &s, "input data"));
    s.dtype = c->opset >= 10 ? RLX_BOOL : s.dtype; /* opsets < 10: mask has the data's type */
    RLX_TRY(oi_fill(c, s, 1.0, &c->out[1]));
  }
  return RLX_OK;
}

const oi_op_entry oi_ops_elementwise[] = {
    {"Abs", 1, OI_MAX_OPSET, map_unary},
    {"Neg", 1, OI_MAX_OPSET, map_unary},
    {"Exp", 1, OI_MAX_OPSET, map_unary},
    {"Log", 1, OI_MAX_OPSET, map_unary},
    {"Sqrt", 1, OI_MAX_OPSET, map_unary},
    {"Reciprocal", 1, OI_MAX_OPSET, map_unary},
    {"Sin", 7, OI_MAX_OPSET, map_unary},
    {"Cos", 7, OI_MAX_OPSET, map_unary},
    {"Tan", 7, OI_MAX_OPSET, map_unary},
    {"Atan", 7, OI_MAX_OPSET, map_unary},
    {"Tanh", 1, OI_MAX_OPSET, map_unary},
    {"Sigmoid", 1, OI_MAX_OPSET, map_unary},
    {"Relu", 1, OI_MAX_OPSET, map_unary},
    {"Floor", 1, OI_MAX_OPSET, map_unary},
    {"Ceil", 1, OI_MAX_OPSET, map_unary},
    {"Round", 11, OI_MAX_OPSET, map_unary},
    {"Sign", 9, OI_MAX_OPSET, map_unary},
    {"Erf", 9, OI_MAX_OPSET, map_unary},
    {"Softplus", 1, OI_MAX_OPSET, map_unary},
    {"Softsign", 1, OI_MAX_OPSET, map_unary},
    {"HardSwish", 14, OI_MAX_OPSET, map_unary},
    {"Mish", 18, OI_MAX_OPSET, map_unary},
    {"Gelu", 20, OI_MAX_OPSET, map_gelu},
    {"Swish", 24, OI_MAX_OPSET, map_swish},
    {"SwiGLU", 28, OI_MAX_OPSET, map_swish},
    {"Sinh", 9, OI_MAX_OPSET, map_trig},
    {"Cosh", 9, OI_MAX_OPSET, map_trig},
    {"Asinh", 9, OI_MAX_OPSET, map_trig},
    {"Acosh", 9, OI_MAX_OPSET, map_trig},
    {"Atanh", 9, OI_MAX_OPSET, map_trig},
    {"Asin", 7, OI_MAX_OPSET, map_trig},
    {"Acos", 7, OI_MAX_OPSET, map_trig},
    {"Elu", 1, OI_MAX_OPSET, map_elu},
    {"Selu", 1, OI_MAX_OPSET, map_elu},
    {"Celu", 12, OI_MAX_OPSET, map_celu},
    {"LeakyRelu", 1, OI_MAX_OPSET, map_leaky_relu},
    {"PRelu", 1, OI_MAX_OPSET, map_prelu},
    {"ThresholdedRelu", 10, OI_MAX_OPSET, map_thresholded_relu},
    {"HardSigmoid", 1, OI_MAX_OPSET, map_hard_sigmoid},
    {"Shrink", 9, OI_MAX_OPSET, map_shrink},
    {"Not", 1, OI_MAX_OPSET, map_not},
    {"IsNaN", 9, OI_MAX_OPSET, map_isnan},
    {"IsInf", 10, OI_MAX_OPSET, map_isinf},
    {"Add", 1, OI_MAX_OPSET, map_binary},
    {"Sub", 1, OI_MAX_OPSET, map_binary},
    {"Mul", 1, OI_MAX_OPSET, map_binary},
    {"Div", 1, OI_MAX_OPSET, map_binary},
    {"And", 1, OI_MAX_OPSET, map_binary},
    {"Or", 1, OI_MAX_OPSET, map_binary},
    {"Xor", 1, OI_MAX_OPSET, map_binary},
    {"BitwiseAnd", 18, OI_MAX_OPSET, map_binary},
    {"BitwiseOr", 18, OI_MAX_OPSET, map_binary},
    {"BitwiseXor", 18, OI_MAX_OPSET, map_binary},
    {"BitwiseNot", 18, OI_MAX_OPSET, map_bitwise_not},
    {"Equal", 1, OI_MAX_OPSET, map_binary},
    {"Less", 1, OI_MAX_OPSET, map_binary},
    {"Greater", 1, OI_MAX_OPSET, map_binary},
    {"LessOrEqual", 12, OI_MAX_OPSET, map_binary},
    {"GreaterOrEqual", 12, OI_MAX_OPSET, map_binary},
    {"Pow", 1, OI_MAX_OPSET, map_pow},
    {"Mod", 10, OI_MAX_OPSET, map_mod},
    {"BitShift", 11, OI_MAX_OPSET, map_bitshift},
    {"Sum", 1, OI_MAX_OPSET, map_variadic},
    {"Mean", 1, OI_MAX_OPSET, map_variadic},
    {"Max", 1, OI_MAX_OPSET, map_variadic},
    {"Min", 1, OI_MAX_OPSET, map_variadic},
    {"Where", 9, OI_MAX_OPSET, map_where},
    {"Clip", 1, OI_MAX_OPSET, map_clip},
    {"BitCast", 26, OI_MAX_OPSET, map_bitcast},
    {"Cast", 6, OI_MAX_OPSET, map_cast},
    {"CastLike", 15, OI_MAX_OPSET, map_cast},
    {"Identity", 1, OI_MAX_OPSET, map_identity},
    {"Dropout", 1, OI_MAX_OPSET, map_dropout},
};
const uint32_t oi_ops_elementwise_len = sizeof oi_ops_elementwise / sizeof oi_ops_elementwise[0];
