/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Shape rules: reductions, scans, selection (spec ir-core §10.8) and randomness (§10.9). */
#include <math.h>

#include "infer_util.h"

/* Drops (or keeps as 1) the axes in `mask`. */
static void reduce_axes(const rlx_shape *x, uint32_t mask, bool keep, rlx_shape *out) {
  *out = iu_shape((rlx_dtype)x->dtype, 0);
  for (uint32_t i = 0; i < x->rank; i++) {
    if (!(mask & (1u << i)))
      out->dims[out->rank++] = x->dims[i];
    else if (keep)
      out->dims[out->rank++] = 1;
  }
}

rlx_status rlx_infer_Reduce(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_Reduce *at = &c->a->Reduce;
  const rlx_shape *x = c->in[0];
  if (at->op < 0 || at->op >= RLX_REDUCE_COUNT)
    return rlx_shape_error("attribute op: %d is not a ReduceOp", (int)at->op);
  if ((at->op == RLX_REDUCE_MAX || at->op == RLX_REDUCE_MIN) &&
      rlx_dtype_class_of((rlx_dtype)x->dtype) == RLX_CLASS_COMPLEX)
    return rlx_shape_error("operand 0 has dtype %s; attribute op %s needs ordered (real) values", iu_dt(x),
                           rlx_enum_reduce.names[at->op]);
  uint32_t mask;
  RLX_TRY(iu_axes_mask(c, "axes", &at->axes, 0, &mask));
  if (at->axes.n == 0) mask = (1u << x->rank) - 1u; /* empty axes: reduce everything */
  reduce_axes(x, mask, at->keep_dim, out);
  return RLX_OK;
}

rlx_status rlx_infer_Histogram(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_Histogram *at = &c->a->Histogram;
  if (at->bins < 1) return rlx_shape_error("attribute bins is %" PRId64 "; it must be >= 1", at->bins);
  if (!isfinite(at->min) || !isfinite(at->max) || !(at->min < at->max))
    return rlx_shape_error("attributes min (%g) and max (%g) must be finite with min < max", (double)at->min,
                           (double)at->max);
  RLX_TRY(iu_need_real(c, 0));
  *out = iu_shape(RLX_F32, 1);
  out->dims[0] = at->bins;
  return RLX_OK;
}

rlx_status rlx_infer_Softmax(const rlx_infer_ctx *c, rlx_shape *out) {
  uint32_t ax;
  RLX_TRY(iu_axis(c, "axis", c->a->Softmax.axis, 0, &ax));
  RLX_TRY(rlx_need_dtype_float(c, 0));
  *out = *c->in[0];
  return RLX_OK;
}

/* Cumulative scans keep the shape; `ordered` = the combiner compares values (CumMax). */
static rlx_status scan(const rlx_infer_ctx *c, int64_t axis, bool ordered, rlx_shape *out) {
  uint32_t ax;
  RLX_TRY(iu_axis(c, "axis", axis, 0, &ax));
  rlx_dtype t = (rlx_dtype)c->in[0]->dtype;
  if (t == RLX_BOOL || (ordered && rlx_dtype_class_of(t) == RLX_CLASS_COMPLEX))
    return rlx_shape_error("operand 0 has dtype %s; %s needs %s values", rlx_dtype_name(t), rlx_op_name(c->op),
                           ordered ? "real" : "numeric");
  *out = *c->in[0];
  return RLX_OK;
}
rlx_status rlx_infer_Cumsum(const rlx_infer_ctx *c, rlx_shape *out) { return scan(c, c->a->Cumsum.axis, false, out); }
rlx_status rlx_infer_CumProd(const rlx_infer_ctx *c, rlx_shape *out) { return scan(c, c->a->CumProd.axis, false, out); }
rlx_status rlx_infer_CumMax(const rlx_infer_ctx *c, rlx_shape *out) { return scan(c, c->a->CumMax.axis, true, out); }

static rlx_status arg_reduce(const rlx_infer_ctx *c, int64_t axis, bool keep, rlx_shape *out) {
  uint32_t ax;
  RLX_TRY(iu_axis(c, "axis", axis, 0, &ax));
  RLX_TRY(iu_need_real(c, 0));
  const rlx_shape *x = c->in[0];
  if (x->dims[ax] == 0)
    return rlx_shape_error("operand 0 %s is empty along axis %u; %s has no element to pick", rlx_fmt_shape(x), ax,
                           rlx_op_name(c->op));
  reduce_axes(x, 1u << ax, keep, out);
  out->dtype = (uint8_t)iu_index_out_dtype(c);
  return RLX_OK;
}
rlx_status rlx_infer_ArgMax(const rlx_infer_ctx *c, rlx_shape *out) {
  return arg_reduce(c, c->a->ArgMax.axis, c->a->ArgMax.keep_dim, out);
}
rlx_status rlx_infer_ArgMin(const rlx_infer_ctx *c, rlx_shape *out) {
  return arg_reduce(c, c->a->ArgMin.axis, c->a->ArgMin.keep_dim, out);
}

rlx_status rlx_infer_TopK(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_shape *x = c->in[0];
  int64_t k = c->a->TopK.k;
  if (x->rank == 0) return rlx_shape_error("operand 0 is a scalar; TopK selects along the last axis");
  RLX_TRY(iu_need_real(c, 0));
  rlx_dim n = x->dims[x->rank - 1];
  if (k < 1 || (n >= 0 && k > n))
    return rlx_shape_error("attribute k is %" PRId64 "; it must be in [1, %s] (the last axis of operand 0 %s)", k,
                           iu_fmt_dim(n), rlx_fmt_shape(x));
  *out = *x;
  out->dims[x->rank - 1] = k;
  out->dtype = (uint8_t)iu_index_out_dtype(c);
  return RLX_OK;
}

rlx_status rlx_infer_Sample(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_Sample *at = &c->a->Sample;
  const rlx_shape *x = c->in[0];
  if (at->top_k < 0) return rlx_shape_error("attribute top_k is %" PRId64 "; it must be >= 0 (0 = off)", at->top_k);
  if (!(at->top_p > 0.0f && at->top_p <= 1.0f))
    return rlx_shape_error("attribute top_p is %g; it must be in (0, 1] (1 = off)", (double)at->top_p);
  if (!(at->temperature > 0.0f) || !isfinite(at->temperature))
    return rlx_shape_error("attribute temperature is %g; it must be a finite value > 0", (double)at->temperature);
  if (x->rank != 1 && x->rank != 2)
    return rlx_shape_error("operand 0 (logits) has shape %s; expected [B, V] or [V]", rlx_fmt_shape(x));
  RLX_TRY(rlx_need_dtype_float(c, 0));
  if (x->dims[x->rank - 1] == 0)
    return rlx_shape_error("operand 0 (logits) has shape %s; the vocabulary axis is empty", rlx_fmt_shape(x));
  *out = iu_shape(iu_index_out_dtype(c), 1);
  out->dims[0] = x->rank == 2 ? x->dims[0] : 1;
  return RLX_OK;
}

/* RngNormal / RngUniform: no operand -> the declared shape; one operand -> its dims. */
static rlx_status rng(const rlx_infer_ctx *c, rlx_shape *out) {
  if (c->n_in > 1)
    return rlx_errorf(RLX_ERR_VERIFY, "has %u operands; %s takes 0 or 1 (a shape template)", c->n_in,
                      rlx_op_name(c->op));
  if (c->n_in == 0) {
    if (!c->declared)
      return rlx_shape_error("%s without a shape-template operand needs a declared output shape", rlx_op_name(c->op));
    *out = *c->declared;
  } else {
    *out = *c->in[0];
    out->dtype = (uint8_t)(c->declared ? c->declared->dtype : RLX_F32);
  }
  if (!rlx_dtype_is_float((rlx_dtype)out->dtype))
    return rlx_shape_error("the output dtype is %s; random values need a floating-point dtype",
                           rlx_dtype_name((rlx_dtype)out->dtype));
  return RLX_OK;
}

rlx_status rlx_infer_RngNormal(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_RngNormal *at = &c->a->RngNormal;
  if (!isfinite(at->mean)) return rlx_shape_error("attribute mean is %g; it must be finite", (double)at->mean);
  if (!(at->scale >= 0.0f) || !isfinite(at->scale))
    return rlx_shape_error("attribute scale is %g; it must be a finite value >= 0", (double)at->scale);
  return rng(c, out);
}

rlx_status rlx_infer_RngUniform(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_RngUniform *at = &c->a->RngUniform;
  if (!isfinite(at->low) || !isfinite(at->high) || !(at->high > at->low))
    return rlx_shape_error("attributes low (%g) and high (%g) must be finite with high > low", (double)at->low,
                           (double)at->high);
  return rng(c, out);
}
