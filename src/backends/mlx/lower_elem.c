/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Native MLX lowering of the elementwise family and the fused elementwise regions (composed
 * inline: a region's chain becomes the same MLX expression its ops would). Floating-point cases
 * lower natively; integer cases whose CPU semantics MLX does not share (saturating add / sub /
 * mul, truncating division, errors on division by zero, integer activations) decline, and the
 * node is host-evaluated on the CPU kernel. ElementwiseRegion lowers every chain the IR allows
 * natively, its scalar_input_mask, input_modulus and ResizeNearest2x prologue included (operands
 * are reshaped so MLX's broadcasting tiles them as the region does); only a prologue together
 * with input_modulus takes the shared decomposition. TransformRegion and BatchElementwiseRegion
 * lower natively too (nearest 2x resizes; the batch chain runs once on the concatenation). */
#include "backends/mlx/mlx_internal.h"

static rlxm_arr *sc(mlx_lower_ctx *c, double v, rlxm_arr *like) { return rlxm_scalar(c->s, v, rlxm_dtype(like)); }

static rlxm_arr *softplus(mlx_lower_ctx *c, rlxm_arr *x) {
  /* max(x, 0) + log1p(exp(-|x|)) */
  rlxm_scope *s = c->s;
  return rlxm_binary(
      s, RLXM_ADD, rlxm_binary(s, RLXM_MAX, x, sc(c, 0, x)),
      rlxm_unary(s, RLXM_LOG1P, rlxm_unary(s, RLXM_EXP, rlxm_unary(s, RLXM_NEG, rlxm_unary(s, RLXM_ABS, x)))));
}

static rlxm_arr *clampv(mlx_lower_ctx *c, rlxm_arr *x, double lo, double hi) {
  return rlxm_binary(c->s, RLXM_MIN, rlxm_binary(c->s, RLXM_MAX, x, sc(c, lo, x)), sc(c, hi, x));
}

/* Activation `act` of x (a floating-point array), or NULL with a declined status. */
static rlx_status act_of(mlx_lower_ctx *c, int act, rlxm_arr *x, rlxm_arr **out) {
  rlxm_scope *s = c->s;
  int t = rlxm_dtype(x);
  if (t < 0 || !mlx_is_float((rlx_dtype)t))
    return mlx_decline(c, "activation %d on %s runs on the CPU kernel", act,
                       t >= 0 ? rlx_dtype_name((rlx_dtype)t) : "?");
  rlxm_arr *r = NULL;
  /* on f64 only the activations MLX computes exactly there (no f32 transcendental kernels) */
  if (t == RLX_F64 && act != RLX_ACT_RELU && act != RLX_ACT_NEG && act != RLX_ACT_ABS && act != RLX_ACT_SQRT &&
      act != RLX_ACT_RECIP && act != RLX_ACT_FLOOR && act != RLX_ACT_CEIL && act != RLX_ACT_ROUND &&
      act != RLX_ACT_SIGN)
    return mlx_decline(c, "MLX computes this f64 activation in f32 precision");
  switch ((rlx_act)act) {
  case RLX_ACT_GELU:
    r = rlxm_binary(
        s, RLXM_MUL, rlxm_binary(s, RLXM_MUL, x, sc(c, 0.5, x)),
        rlxm_binary(s, RLXM_ADD, sc(c, 1, x),
                    rlxm_unary(s, RLXM_ERF, rlxm_binary(s, RLXM_MUL, x, sc(c, 0.70710678118654752440, x)))));
    break;
  case RLX_ACT_GELU_APPROX: {
    rlxm_arr *x3 = rlxm_binary(s, RLXM_MUL, rlxm_binary(s, RLXM_MUL, x, x), x);
    rlxm_arr *in = rlxm_binary(s, RLXM_MUL, sc(c, 0.79788456080286535588, x),
                               rlxm_binary(s, RLXM_ADD, x, rlxm_binary(s, RLXM_MUL, sc(c, 0.044715, x), x3)));
    r = rlxm_binary(s, RLXM_MUL, rlxm_binary(s, RLXM_MUL, x, sc(c, 0.5, x)),
                    rlxm_binary(s, RLXM_ADD, sc(c, 1, x), rlxm_unary(s, RLXM_TANH, in)));
    break;
  }
  case RLX_ACT_SILU: r = rlxm_binary(s, RLXM_MUL, x, rlxm_unary(s, RLXM_SIGMOID, x)); break;
  case RLX_ACT_RELU: r = rlxm_where(s, rlxm_binary(s, RLXM_LT, x, sc(c, 0, x)), sc(c, 0, x), x); break;
  case RLX_ACT_SIGMOID: r = rlxm_unary(s, RLXM_SIGMOID, x); break;
  case RLX_ACT_TANH: r = rlxm_unary(s, RLXM_TANH, x); break;
  case RLX_ACT_EXP: r = rlxm_unary(s, RLXM_EXP, x); break;
  case RLX_ACT_LOG: r = rlxm_unary(s, RLXM_LOG, x); break;
  case RLX_ACT_SQRT: r = rlxm_unary(s, RLXM_SQRT, x); break;
  case RLX_ACT_RSQRT: r = rlxm_unary(s, RLXM_RSQRT, x); break;
  case RLX_ACT_NEG: r = rlxm_unary(s, RLXM_NEG, x); break;
  case RLX_ACT_ABS: r = rlxm_unary(s, RLXM_ABS, x); break;
  case RLX_ACT_SIN: r = rlxm_unary(s, RLXM_SIN, x); break;
  case RLX_ACT_COS: r = rlxm_unary(s, RLXM_COS, x); break;
  case RLX_ACT_TAN: r = rlxm_unary(s, RLXM_TAN, x); break;
  case RLX_ACT_ATAN: r = rlxm_unary(s, RLXM_ATAN, x); break;
  case RLX_ACT_RECIP: r = rlxm_binary(s, RLXM_DIV, sc(c, 1, x), x); break;
  case RLX_ACT_ROUND: r = rlxm_unary(s, RLXM_ROUND, x); break; /* MLX rounds half to even, as the CPU */
  case RLX_ACT_FLOOR: r = rlxm_unary(s, RLXM_FLOOR, x); break;
  case RLX_ACT_CEIL: r = rlxm_unary(s, RLXM_CEIL, x); break;
  case RLX_ACT_SIGN: r = rlxm_where(s, rlxm_unary(s, RLXM_ISNAN, x), x, rlxm_unary(s, RLXM_SIGN, x)); break;
  case RLX_ACT_SOFTPLUS: r = softplus(c, x); break;
  case RLX_ACT_ELU: r = rlxm_where(s, rlxm_binary(s, RLXM_GT, x, sc(c, 0, x)), x, rlxm_unary(s, RLXM_EXPM1, x)); break;
  case RLX_ACT_ERF: r = rlxm_unary(s, RLXM_ERF, x); break;
  case RLX_ACT_HARD_SWISH:
    r = rlxm_binary(s, RLXM_DIV, rlxm_binary(s, RLXM_MUL, x, clampv(c, rlxm_binary(s, RLXM_ADD, x, sc(c, 3, x)), 0, 6)),
                    sc(c, 6, x));
    break;
  case RLX_ACT_HARD_SIGMOID:
    r = clampv(c, rlxm_binary(s, RLXM_ADD, rlxm_binary(s, RLXM_DIV, x, sc(c, 6, x)), sc(c, 0.5, x)), 0, 1);
    break;
  case RLX_ACT_MISH: r = rlxm_binary(s, RLXM_MUL, x, rlxm_unary(s, RLXM_TANH, softplus(c, x))); break;
  case RLX_ACT_SOFTSIGN:
    r = rlxm_binary(s, RLXM_DIV, x, rlxm_binary(s, RLXM_ADD, sc(c, 1, x), rlxm_unary(s, RLXM_ABS, x)));
    break;
  case RLX_ACT_LOG_SIGMOID:
    r = rlxm_binary(
        s, RLXM_SUB, rlxm_binary(s, RLXM_MIN, x, sc(c, 0, x)),
        rlxm_unary(s, RLXM_LOG1P, rlxm_unary(s, RLXM_EXP, rlxm_unary(s, RLXM_NEG, rlxm_unary(s, RLXM_ABS, x)))));
    break;
  default: return mlx_decline(c, "activation %d has no MLX lowering", act);
  }
  return mlx_check(c, r, out);
}

/* fmod(a, b): the remainder with the dividend's sign (MLX's remainder takes the divisor's). */
static rlxm_arr *fmod_of(mlx_lower_ctx *c, rlxm_arr *a, rlxm_arr *b) {
  rlxm_scope *s = c->s;
  rlxm_arr *r = rlxm_binary(s, RLXM_REM, a, b);
  rlxm_arr *fix = rlxm_binary(
      s, RLXM_AND, rlxm_binary(s, RLXM_NE, r, sc(c, 0, r)),
      rlxm_binary(s, RLXM_NE, rlxm_binary(s, RLXM_LT, r, sc(c, 0, r)), rlxm_binary(s, RLXM_LT, a, sc(c, 0, a))));
  return rlxm_where(s, fix, rlxm_binary(s, RLXM_SUB, r, b), r);
}

static rlx_status binary_of(mlx_lower_ctx *c, int op, rlxm_arr *a, rlxm_arr *b, rlxm_arr **out) {
  rlxm_scope *s = c->s;
  int t = rlxm_dtype(a);
  if (t < 0 || rlxm_dtype(b) != t) return mlx_decline(c, "operands of different dtypes");
  bool fl = mlx_is_float((rlx_dtype)t);
  rlxm_arr *r = NULL;
  if (t == RLX_C64) {
    static const rlxm_binary_op cop[] = {
        [RLX_BINOP_ADD] = RLXM_ADD, [RLX_BINOP_SUB] = RLXM_SUB, [RLX_BINOP_MUL] = RLXM_MUL, [RLX_BINOP_DIV] = RLXM_DIV};
    if (op > RLX_BINOP_DIV) return mlx_decline(c, "complex %d runs on the CPU kernel (it reports the error)", op);
    return mlx_check(c, rlxm_binary(s, cop[op], a, b), out);
  }
  if (!fl) {
    /* integer / bool: only ops whose MLX semantics equal the CPU's (no saturation, no errors) */
    switch ((rlx_binop)op) {
    case RLX_BINOP_BIT_AND: r = rlxm_binary(s, RLXM_BIT_AND, a, b); break;
    case RLX_BINOP_BIT_OR: r = rlxm_binary(s, RLXM_BIT_OR, a, b); break;
    case RLX_BINOP_BIT_XOR: r = rlxm_binary(s, RLXM_BIT_XOR, a, b); break;
    case RLX_BINOP_MAX: r = rlxm_binary(s, RLXM_MAX, a, b); break;
    case RLX_BINOP_MIN: r = rlxm_binary(s, RLXM_MIN, a, b); break;
    default: return mlx_decline(c, "integer %d (saturating / checked on the CPU) runs on the CPU kernel", op);
    }
    return mlx_check(c, r, out);
  }
  switch ((rlx_binop)op) {
  case RLX_BINOP_ADD: r = rlxm_binary(s, RLXM_ADD, a, b); break;
  case RLX_BINOP_SUB: r = rlxm_binary(s, RLXM_SUB, a, b); break;
  case RLX_BINOP_MUL: r = rlxm_binary(s, RLXM_MUL, a, b); break;
  case RLX_BINOP_DIV: r = rlxm_binary(s, RLXM_DIV, a, b); break;
  case RLX_BINOP_MAX: r = rlxm_binary(s, RLXM_MAX, a, b); break;
  case RLX_BINOP_MIN: r = rlxm_binary(s, RLXM_MIN, a, b); break;
  case RLX_BINOP_POW:
  case RLX_BINOP_ATAN2:
    if (t == RLX_F64) return mlx_decline(c, "MLX computes f64 pow / atan2 in f32 precision");
    r = rlxm_binary(s, op == RLX_BINOP_POW ? RLXM_POW : RLXM_ATAN2, a, b);
    break;
  case RLX_BINOP_MOD: r = fmod_of(c, a, b); break;
  default: return mlx_decline(c, "bitwise op on floats: the CPU kernel reports the error");
  }
  return mlx_check(c, r, out);
}

static const rlxm_binary_op cmp_map[] = {[RLX_CMP_EQ] = RLXM_EQ, [RLX_CMP_NE] = RLXM_NE, [RLX_CMP_LT] = RLXM_LT,
                                         [RLX_CMP_LE] = RLXM_LE, [RLX_CMP_GT] = RLXM_GT, [RLX_CMP_GE] = RLXM_GE};

static rlx_status compare_of(mlx_lower_ctx *c, int op, rlxm_arr *a, rlxm_arr *b, rlxm_arr **out) {
  if ((unsigned)op >= RLX_CMP_COUNT) return mlx_decline(c, "unknown comparison %d", op);
  if (rlxm_dtype(a) == RLX_C64 && op != RLX_CMP_EQ && op != RLX_CMP_NE)
    return mlx_decline(c, "ordered complex comparison");
  return mlx_check(c, rlxm_binary(c->s, cmp_map[op], a, b), out);
}

static rlx_status cast_of(mlx_lower_ctx *c, int to, rlxm_arr *x, rlxm_arr **out) {
  int from = rlxm_dtype(x);
  if (from < 0 || !rlxm_dtype_ok(to)) return mlx_decline(c, "cast involving a dtype MLX does not hold");
  /* float -> integer saturates (and maps NaN) on the CPU; complex casts have their own rules */
  if ((mlx_is_float((rlx_dtype)from) && !mlx_is_float((rlx_dtype)to) && to != RLX_BOOL) || from == RLX_C64 ||
      to == RLX_C64)
    return mlx_decline(c, "cast %s -> %s follows the CPU kernel's rules", rlx_dtype_name((rlx_dtype)from),
                       rlx_dtype_name((rlx_dtype)to));
  if (!mlx_is_float((rlx_dtype)from) && !mlx_is_float((rlx_dtype)to) && to != RLX_BOOL &&
      rlx_dtype_size((rlx_dtype)to) < rlx_dtype_size((rlx_dtype)from))
    return mlx_decline(c, "narrowing integer cast follows the CPU kernel's rules");
  return mlx_check(c, rlxm_astype(c->s, x, to), out);
}

static rlx_status where_of(mlx_lower_ctx *c, rlxm_arr *cond, rlxm_arr *a, rlxm_arr *b, rlxm_arr **out) {
  if (rlxm_dtype(cond) != RLX_BOOL) cond = rlxm_binary(c->s, RLXM_NE, cond, sc(c, 0, cond));
  return mlx_check(c, rlxm_where(c->s, cond, a, b), out);
}

rlx_status mlx_activation_of(mlx_lower_ctx *c, int act, rlxm_arr *x, rlxm_arr **out) { return act_of(c, act, x, out); }
rlx_status mlx_binary_of(mlx_lower_ctx *c, int op, rlxm_arr *a, rlxm_arr *b, rlxm_arr **out) {
  return binary_of(c, op, a, b, out);
}

static rlx_status lower_Activation(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  return act_of(c, n->attrs.Activation.kind, in[0], out);
}
static rlx_status lower_Cast(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  if (rlxm_dtype(in[0]) == n->attrs.Cast.to) return mlx_check(c, in[0], out);
  return cast_of(c, n->attrs.Cast.to, in[0], out);
}
static rlx_status lower_StopGradient(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  (void)n;
  return mlx_check(c, rlxm_unary(c->s, RLXM_STOP_GRAD, in[0]), out);
}
static rlx_status lower_Binary(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  return binary_of(c, n->attrs.Binary.op, in[0], in[1], out);
}
static rlx_status lower_Compare(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  return compare_of(c, n->attrs.Compare.op, in[0], in[1], out);
}
static rlx_status lower_Where(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  (void)n;
  return where_of(c, in[0], in[1], in[2], out);
}
static rlx_status lower_Fma(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  if (!mlx_is_float((rlx_dtype)n->shape.dtype)) return mlx_decline(c, "integer Fma runs on the CPU kernel");
  return mlx_check(c, rlxm_binary(c->s, RLXM_ADD, rlxm_binary(c->s, RLXM_MUL, in[0], in[1]), in[2]), out);
}

/* One chain of steps over the region operands (ElementwiseRegion / BatchElementwiseRegion). */
static rlx_status chain_of(mlx_lower_ctx *c, const rlx_chain *ch, rlxm_arr *const *in, uint32_t n_in, rlxm_arr **out) {
  rlxm_arr *st[256];
  if (ch->n == 0 || ch->n > 256) return mlx_decline(c, "region chain of %u steps", ch->n);
#define OPND(o) ((o).is_step ? ((o).index < k ? st[(o).index] : NULL) : ((o).index < n_in ? in[(o).index] : NULL))
  for (uint32_t k = 0; k < ch->n; k++) {
    const rlx_chain_step *p = &ch->steps[k];
    rlxm_arr *a = OPND(p->a), *b = NULL, *cc = NULL;
    if (!a) return mlx_node_error(c, "region step %u reads a missing operand", k);
    if (p->kind == RLX_CHAIN_STEP_BINARY || p->kind == RLX_CHAIN_STEP_COMPARE || p->kind == RLX_CHAIN_STEP_WHERE) {
      b = OPND(p->b);
      if (!b) return mlx_node_error(c, "region step %u reads a missing operand", k);
    }
    if (p->kind == RLX_CHAIN_STEP_WHERE) {
      cc = OPND(p->c);
      if (!cc) return mlx_node_error(c, "region step %u reads a missing operand", k);
    }
    switch (p->kind) {
    case RLX_CHAIN_STEP_ACTIVATION: RLX_TRY(act_of(c, p->sub, a, &st[k])); break;
    case RLX_CHAIN_STEP_CAST:
      if (rlxm_dtype(a) == p->sub)
        st[k] = a;
      else
        RLX_TRY(cast_of(c, p->sub, a, &st[k]));
      break;
    case RLX_CHAIN_STEP_BINARY: RLX_TRY(binary_of(c, p->sub, a, b, &st[k])); break;
    case RLX_CHAIN_STEP_COMPARE: RLX_TRY(compare_of(c, p->sub, a, b, &st[k])); break;
    case RLX_CHAIN_STEP_WHERE: RLX_TRY(where_of(c, a, b, cc, &st[k])); break;
    default: return mlx_decline(c, "unknown region step kind %d", p->kind);
    }
  }
#undef OPND
  *out = st[ch->n - 1];
  return RLX_OK;
}

/* x with its last two axes doubled by nearest-neighbour repetition (the ResizeNearest2x prologue). */
static rlxm_arr *resize2x(mlx_lower_ctx *c, rlxm_arr *x) {
  uint32_t r = rlxm_rank(x);
  if (r < 2 || r > RLX_MAX_RANK - 2) return NULL;
  int64_t d[RLX_MAX_RANK], e[RLX_MAX_RANK], f[RLX_MAX_RANK];
  for (uint32_t i = 0; i < r; i++) d[i] = rlxm_dim(x, i);
  /* [..., H, W] -> [..., H, 1, W, 1] -> broadcast [..., H, 2, W, 2] -> [..., 2H, 2W] */
  for (uint32_t i = 0; i + 2 < r; i++) e[i] = f[i] = d[i];
  e[r - 2] = d[r - 2], e[r - 1] = 1, e[r] = d[r - 1], e[r + 1] = 1;
  rlxm_arr *y = rlxm_reshape(c->s, x, r + 2, e);
  e[r - 1] = 2, e[r + 1] = 2;
  y = rlxm_broadcast(c->s, y, r + 2, e);
  f[r - 2] = 2 * d[r - 2], f[r - 1] = 2 * d[r - 1];
  return rlxm_reshape(c->s, y, r, f);
}

/* Operand k of a region, shaped so that MLX's broadcasting gives the region's semantics:
 * a scalar_input_mask bit makes it a scalar; input_modulus k >= 1 (the operand's flat index is the
 * output's modulo k) views its k elements as the output's trailing axes of that product; 0 (as
 * large as the output) views it as the output's shape. */
static rlx_status region_operand(mlx_lower_ctx *c, const rlx_node *n, int64_t mask, const rlx_ilist *modulus,
                                 uint32_t k, rlxm_arr *x, rlxm_arr **out) {
  size_t numel = 1;
  for (uint32_t i = 0; i < rlxm_rank(x); i++) numel *= (size_t)rlxm_dim(x, i);
  if (k < 63 && (mask >> k) & 1) {
    if (numel != 1) return mlx_decline(c, "scalar_input_mask operand %u has %zu elements", k, numel);
    return mlx_check(c, rlxm_reshape(c->s, x, 0, NULL), out);
  }
  if (modulus->n && k < modulus->n) {
    int64_t m = modulus->v[k];
    uint32_t r = n->shape.rank;
    int64_t dims[RLX_MAX_RANK];
    if (m == 0) {
      for (uint32_t i = 0; i < r; i++) dims[i] = n->shape.dims[i];
      return mlx_check(c, rlxm_reshape(c->s, x, r, dims), out);
    }
    if ((size_t)m != numel)
      return mlx_decline(c, "input_modulus %lld of operand %u with %zu elements", (long long)m, k, numel);
    /* the shortest run of trailing output axes whose product is m */
    int64_t prod = 1;
    uint32_t j = r;
    while (j > 0 && prod < m) prod *= n->shape.dims[--j];
    if (prod != m) return mlx_decline(c, "input_modulus %lld does not tile the output's trailing axes", (long long)m);
    for (uint32_t i = j; i < r; i++) dims[i - j] = n->shape.dims[i];
    return mlx_check(c, rlxm_reshape(c->s, x, r - j, dims), out);
  }
  *out = x;
  return RLX_OK;
}

static rlx_status lower_ElementwiseRegion(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  const rlx_attrs_ElementwiseRegion *a = &n->attrs.ElementwiseRegion;
  if (a->prologue != RLX_PROLOGUE_NONE && (a->prologue != RLX_PROLOGUE_RESIZE_NEAREST2X || a->input_modulus.n))
    return mlx_decline(c, "region prologue with input_modulus runs through the shared decomposition");
  if (n->n_inputs > 16) return mlx_decline(c, "region with %u operands", n->n_inputs);
  rlxm_arr *ops[16];
  for (uint32_t k = 0; k < n->n_inputs; k++) {
    rlxm_arr *x = in[k];
    if (a->prologue == RLX_PROLOGUE_RESIZE_NEAREST2X && (int64_t)k == a->prologue_input) {
      x = resize2x(c, x);
      if (!x) return mlx_decline(c, "prologue operand of rank < 2");
    }
    RLX_TRY(region_operand(c, n, a->scalar_input_mask, &a->input_modulus, k, x, &ops[k]));
  }
  rlxm_arr *r;
  RLX_TRY(chain_of(c, &a->chain, ops, n->n_inputs, &r));
  /* the region's value has the node's (broadcast) shape */
  int64_t dims[RLX_MAX_RANK];
  for (uint32_t i = 0; i < n->shape.rank; i++) dims[i] = n->shape.dims[i];
  return mlx_check(c, rlxm_broadcast(c->s, r, n->shape.rank, dims), out);
}

/* TransformRegion: operand 0 upsampled (nearest 2x on the last two axes) once per step. */
static rlx_status lower_TransformRegion(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  rlxm_arr *x = in[0];
  for (uint32_t i = 0; i < n->attrs.TransformRegion.steps.n; i++) {
    x = resize2x(c, x);
    if (!x) return mlx_decline(c, "TransformRegion of rank < 2");
  }
  return mlx_check(c, x, out);
}

/* BatchElementwiseRegion: the chain (reading operand 0) on every operand after the optional 2x
 * prologue, concatenated on axis 0; elementwise, so the chain runs once on the concatenation. */
static rlx_status lower_BatchElementwiseRegion(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in,
                                               rlxm_arr **out) {
  const rlx_attrs_BatchElementwiseRegion *a = &n->attrs.BatchElementwiseRegion;
  if (n->n_inputs == 0 || n->n_inputs > 16)
    return mlx_decline(c, "BatchElementwiseRegion with %u operands", n->n_inputs);
  if (a->prologue != RLX_PROLOGUE_NONE && a->prologue != RLX_PROLOGUE_RESIZE_NEAREST2X)
    return mlx_decline(c, "unknown prologue %d", (int)a->prologue);
  rlxm_arr *parts[16];
  for (uint32_t i = 0; i < n->n_inputs; i++) {
    parts[i] = a->prologue == RLX_PROLOGUE_RESIZE_NEAREST2X ? resize2x(c, in[i]) : in[i];
    if (!parts[i]) return mlx_decline(c, "prologue operand of rank < 2");
  }
  rlxm_arr *x = n->n_inputs == 1 ? parts[0] : rlxm_concat(c->s, parts, n->n_inputs, 0);
  RLX_TRY(mlx_check(c, x, &x));
  return chain_of(c, &a->chain, &x, 1, out);
}

const mlx_lower_fn mlx_lower_elementwise[RLX_OP_COUNT] = {
    [RLX_OP_Activation] = lower_Activation,
    [RLX_OP_Cast] = lower_Cast,
    [RLX_OP_StopGradient] = lower_StopGradient,
    [RLX_OP_Binary] = lower_Binary,
    [RLX_OP_Compare] = lower_Compare,
    [RLX_OP_Where] = lower_Where,
    [RLX_OP_Fma] = lower_Fma,
    [RLX_OP_ElementwiseRegion] = lower_ElementwiseRegion,
    [RLX_OP_TransformRegion] = lower_TransformRegion,
    [RLX_OP_BatchElementwiseRegion] = lower_BatchElementwiseRegion,
};
