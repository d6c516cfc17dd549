/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Native MLX lowering of data movement (Reshape, Transpose, Narrow, Concat, Expand, Gather,
 * Reverse), reductions (Reduce, Softmax, ArgMax/ArgMin, TopK) and the cumulative ops. Integer
 * cases whose CPU semantics differ (saturating sums, integer means) decline to the CPU kernel. */
#include "backends/mlx/mlx_internal.h"

static void dims_of(const rlx_shape *s, int64_t *d) {
  for (uint32_t i = 0; i < s->rank; i++) d[i] = s->dims[i];
}

static rlx_status lower_Reshape(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  int64_t d[RLX_MAX_RANK];
  dims_of(&n->shape, d);
  return mlx_check(c, rlxm_reshape(c->s, in[0], n->shape.rank, d), out);
}

static rlx_status lower_Transpose(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  const rlx_ilist *p = &n->attrs.Transpose.perm;
  uint32_t r = rlxm_rank(in[0]);
  int64_t perm[RLX_MAX_RANK];
  for (uint32_t i = 0; i < r; i++) perm[i] = p->n == r ? (p->v[i] < 0 ? p->v[i] + r : p->v[i]) : (int64_t)(r - 1 - i);
  return mlx_check(c, rlxm_transpose(c->s, in[0], r, perm), out);
}

static rlx_status lower_Narrow(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  const rlx_attrs_Narrow *a = &n->attrs.Narrow;
  uint32_t ax;
  if (!rlx_norm_axis(a->axis, rlxm_rank(in[0]), &ax)) return mlx_decline(c, "axis out of range");
  int64_t start = a->start < 0 ? a->start + rlxm_dim(in[0], ax) : a->start;
  return mlx_check(c, rlxm_narrow(c->s, in[0], ax, start, a->len, 1), out);
}

static rlx_status lower_Concat(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  uint32_t ax;
  if (!rlx_norm_axis(n->attrs.Concat.axis, n->shape.rank, &ax)) return mlx_decline(c, "axis out of range");
  return mlx_check(c, rlxm_concat(c->s, in, n->n_inputs, ax), out);
}

static rlx_status lower_Expand(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  int64_t d[RLX_MAX_RANK];
  dims_of(&n->shape, d);
  return mlx_check(c, rlxm_broadcast(c->s, in[0], n->shape.rank, d), out);
}

static rlx_status lower_Gather(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  uint32_t ax;
  if (!rlx_norm_axis(n->attrs.Gather.axis, rlxm_rank(in[0]), &ax)) return mlx_decline(c, "axis out of range");
  int it = rlxm_dtype(in[1]);
  if (it == RLX_BOOL || it == RLX_C64 || it < 0) return mlx_decline(c, "index dtype: the CPU kernel reports it");
  rlxm_arr *idx = it == RLX_I32 || it == RLX_I64 ? in[1] : rlxm_astype(c->s, in[1], RLX_I64);
  return mlx_check(c, rlxm_take(c->s, in[0], idx, ax), out);
}

static rlx_status lower_Reverse(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  const rlx_ilist *a = &n->attrs.Reverse.axes;
  int64_t ax[RLX_MAX_RANK];
  if (a->n > RLX_MAX_RANK) return mlx_decline(c, "too many axes");
  for (uint32_t i = 0; i < a->n; i++) {
    uint32_t k;
    if (!rlx_norm_axis(a->v[i], rlxm_rank(in[0]), &k)) return mlx_decline(c, "axis out of range");
    ax[i] = k;
  }
  if (a->n == 0) return mlx_check(c, in[0], out);
  return mlx_check(c, rlxm_flip(c->s, in[0], a->n, ax), out);
}

static rlx_status lower_Reduce(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  const rlx_attrs_Reduce *a = &n->attrs.Reduce;
  rlx_dtype t = (rlx_dtype)n->shape.dtype;
  uint32_t rank = rlxm_rank(in[0]);
  int64_t ax[RLX_MAX_RANK];
  uint32_t na = 0;
  if (a->axes.n == 0) {
    for (uint32_t i = 0; i < rank; i++) ax[na++] = i;
  } else {
    for (uint32_t i = 0; i < a->axes.n && na < RLX_MAX_RANK; i++) {
      uint32_t k;
      if (!rlx_norm_axis(a->axes.v[i], rank, &k)) return mlx_decline(c, "axis out of range");
      ax[na++] = k;
    }
  }
  if (!mlx_is_float(t) && a->op != RLX_REDUCE_MAX && a->op != RLX_REDUCE_MIN)
    return mlx_decline(c, "integer %s follows the CPU kernel's rules", rlx_enum_reduce.names[a->op]);
  if (t == RLX_C64) return mlx_decline(c, "complex reduction");
  for (uint32_t i = 0; i < na; i++)
    if (rlxm_dim(in[0], (uint32_t)ax[i]) == 0 && (a->op == RLX_REDUCE_MAX || a->op == RLX_REDUCE_MIN))
      return mlx_decline(c, "max / min over an empty axis (the CPU gives the identity)");
  static const rlxm_reduce_op map[] = {[RLX_REDUCE_SUM] = RLXM_R_SUM,
                                       [RLX_REDUCE_MEAN] = RLXM_R_MEAN,
                                       [RLX_REDUCE_MAX] = RLXM_R_MAX,
                                       [RLX_REDUCE_MIN] = RLXM_R_MIN,
                                       [RLX_REDUCE_PROD] = RLXM_R_PROD};
  if ((unsigned)a->op >= RLX_REDUCE_COUNT) return mlx_decline(c, "unknown reduction");
  rlxm_arr *r = rlxm_reduce(c->s, map[a->op], in[0], na, ax, a->keep_dim);
  /* the declared shape decides ([] vs [1] for full reductions) */
  int64_t d[RLX_MAX_RANK];
  dims_of(&n->shape, d);
  return mlx_check(c, rlxm_reshape(c->s, r, n->shape.rank, d), out);
}

static rlx_status lower_Softmax(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  uint32_t ax;
  if (!mlx_is_float((rlx_dtype)n->shape.dtype)) return mlx_decline(c, "non-float Softmax");
  if (!rlx_norm_axis(n->attrs.Softmax.axis, rlxm_rank(in[0]), &ax)) return mlx_decline(c, "axis out of range");
  return mlx_check(c, rlxm_softmax(c->s, in[0], ax), out);
}

static rlx_status cumulative(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *x, rlxm_reduce_op op, int64_t axis,
                             bool exclusive, rlxm_arr **out) {
  uint32_t ax;
  if (!mlx_is_float((rlx_dtype)n->shape.dtype))
    return mlx_decline(c, "integer cumulative op follows the CPU kernel's rules");
  if (!rlx_norm_axis(axis, rlxm_rank(x), &ax)) return mlx_decline(c, "axis out of range");
  if (exclusive && op == RLXM_R_MAX) return mlx_decline(c, "exclusive CumMax runs on the CPU kernel");
  return mlx_check(c, rlxm_cumulative(c->s, op, x, ax, false, !exclusive), out);
}
static rlx_status lower_Cumsum(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  return cumulative(c, n, in[0], RLXM_R_SUM, n->attrs.Cumsum.axis, n->attrs.Cumsum.exclusive, out);
}
static rlx_status lower_CumProd(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  return cumulative(c, n, in[0], RLXM_R_PROD, n->attrs.CumProd.axis, n->attrs.CumProd.exclusive, out);
}
static rlx_status lower_CumMax(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  return cumulative(c, n, in[0], RLXM_R_MAX, n->attrs.CumMax.axis, n->attrs.CumMax.exclusive, out);
}
/* CumsumBackward: the gradient of a cumulative sum is the reversed cumulative sum. */
static rlx_status lower_CumsumBackward(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  uint32_t ax;
  if (!mlx_is_float((rlx_dtype)n->shape.dtype)) return mlx_decline(c, "integer CumsumBackward");
  if (!rlx_norm_axis(n->attrs.CumsumBackward.axis, rlxm_rank(in[0]), &ax)) return mlx_decline(c, "axis out of range");
  return mlx_check(c, rlxm_cumulative(c->s, RLXM_R_SUM, in[0], ax, true, !n->attrs.CumsumBackward.exclusive), out);
}

static rlx_status argreduce(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *x, bool is_max, int64_t axis, bool keep,
                            rlxm_arr **out) {
  uint32_t ax;
  int t = rlxm_dtype(x);
  if (t < 0 || !mlx_is_float((rlx_dtype)t)) return mlx_decline(c, "non-float arg-reduction");
  if (!rlx_norm_axis(axis, rlxm_rank(x), &ax)) return mlx_decline(c, "axis out of range");
  return mlx_check(c, rlxm_astype(c->s, rlxm_argreduce(c->s, is_max, x, ax, keep), n->shape.dtype), out);
}
static rlx_status lower_ArgMax(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  return argreduce(c, n, in[0], true, n->attrs.ArgMax.axis, n->attrs.ArgMax.keep_dim, out);
}
static rlx_status lower_ArgMin(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  return argreduce(c, n, in[0], false, n->attrs.ArgMin.axis, n->attrs.ArgMin.keep_dim, out);
}

/* TopK: indices of the k largest along the last axis, largest first, ties by the lower index (a
 * stable ascending argsort of -x; NaN keys become -inf so NaN comes first, as the CPU counts NaN
 * as the largest value). */
static rlx_status lower_TopK(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  int t = rlxm_dtype(in[0]);
  uint32_t r = rlxm_rank(in[0]);
  if (t != RLX_F32 && t != RLX_F64) return mlx_decline(c, "TopK of %s", t >= 0 ? rlx_dtype_name((rlx_dtype)t) : "?");
  if (r == 0) return mlx_decline(c, "scalar operand");
  /* NaN -> +inf then negate: NaN sorts first like the CPU's "NaN is largest" */
  rlxm_scope *s = c->s;
  rlxm_arr *x = in[0];
  rlxm_arr *isn = rlxm_unary(s, RLXM_ISNAN, x);
  rlxm_arr *key = rlxm_where(s, isn, rlxm_scalar(s, -1.0 / 0.0, t), rlxm_unary(s, RLXM_NEG, x));
  rlxm_arr *idx = rlxm_sort(s, key, (int64_t)r - 1, true);
  return mlx_check(c, rlxm_astype(s, rlxm_narrow(s, idx, r - 1, 0, n->attrs.TopK.k, 1), n->shape.dtype), out);
}

const mlx_lower_fn mlx_lower_shape[RLX_OP_COUNT] = {
    [RLX_OP_Reshape] = lower_Reshape,
    [RLX_OP_Transpose] = lower_Transpose,
    [RLX_OP_Narrow] = lower_Narrow,
    [RLX_OP_Concat] = lower_Concat,
    [RLX_OP_Expand] = lower_Expand,
    [RLX_OP_Gather] = lower_Gather,
    [RLX_OP_Reverse] = lower_Reverse,
    [RLX_OP_Reduce] = lower_Reduce,
    [RLX_OP_Softmax] = lower_Softmax,
    [RLX_OP_Cumsum] = lower_Cumsum,
    [RLX_OP_CumProd] = lower_CumProd,
    [RLX_OP_CumMax] = lower_CumMax,
    [RLX_OP_CumsumBackward] = lower_CumsumBackward,
    [RLX_OP_ArgMax] = lower_ArgMax,
    [RLX_OP_ArgMin] = lower_ArgMin,
    [RLX_OP_TopK] = lower_TopK,
};
