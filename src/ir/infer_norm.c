/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Shape rules: normalisation and the DiT modulation blocks (spec ir-core §10.4, §10.12). */
#include "infer_util.h"

/* Operands first..first+count-1 are per-channel vectors of width w with x's dtype. */
static rlx_status need_params(const rlx_infer_ctx *c, uint32_t first, uint32_t count, const char *const *names,
                              rlx_dim w, const char *wname) {
  for (uint32_t i = first; i < first + count; i++) {
    RLX_TRY(iu_same_dtype(c, 0, i));
    RLX_TRY(iu_need_vector(c, i, names[i - first], w, wname));
  }
  return RLX_OK;
}

static rlx_status need_eps(float eps) {
  if (!(eps >= 0.0f) || eps > 3.0e38f)
    return rlx_shape_error("attribute eps is %g; it must be a finite value >= 0", (double)eps);
  return RLX_OK;
}

static const char *const gamma_beta[] = {"gamma", "beta"};

/* LayerNorm / RmsNorm: normalise the last axis of x; `axis` may only name that axis. */
static rlx_status last_axis_norm(const rlx_infer_ctx *c, int64_t axis, float eps, rlx_shape *out) {
  const rlx_shape *x = c->in[0];
  if (x->rank == 0) return rlx_shape_error("operand 0 (x) is a scalar; it needs at least one axis to normalise");
  RLX_TRY(rlx_need_dtype_float(c, 0));
  if (axis != -1 && axis != (int64_t)x->rank - 1)
    return rlx_shape_error("attribute axis is %" PRId64 "; only the last axis (-1 or %u) can be normalised", axis,
                           x->rank - 1);
  RLX_TRY(need_eps(eps));
  RLX_TRY(need_params(c, 1, 2, gamma_beta, x->dims[x->rank - 1], "x's last dim"));
  *out = *x;
  return RLX_OK;
}

rlx_status rlx_infer_LayerNorm(const rlx_infer_ctx *c, rlx_shape *out) {
  return last_axis_norm(c, c->a->LayerNorm.axis, c->a->LayerNorm.eps, out);
}

rlx_status rlx_infer_RmsNorm(const rlx_infer_ctx *c, rlx_shape *out) {
  RLX_TRY(last_axis_norm(c, c->a->RmsNorm.axis, c->a->RmsNorm.eps, out));
  /* RLX folds a following Reshape into RmsNorm: a declared [prod(leading), H] is accepted. */
  const rlx_shape *x = c->in[0], *d = c->declared;
  if (d && d->rank == 2 && x->rank > 2 && d->dtype == x->dtype && rlx_dim_equal(d->dims[1], x->dims[x->rank - 1])) {
    int64_t lead = 1;
    bool known = true;
    for (uint32_t i = 0; i + 1 < x->rank && known; i++) {
      if (x->dims[i] < 0 || !ck_mul(lead, x->dims[i], &lead)) known = false;
    }
    if (known && d->dims[0] == lead) *out = *d;
  }
  return RLX_OK;
}

rlx_status rlx_infer_LayerNorm2d(const rlx_infer_ctx *c, rlx_shape *out) {
  RLX_TRY(rlx_need_rank(c, 0, 4, 4));
  RLX_TRY(rlx_need_dtype_float(c, 0));
  RLX_TRY(need_eps(c->a->LayerNorm2d.eps));
  RLX_TRY(need_params(c, 1, 2, gamma_beta, c->in[0]->dims[1], "channels C of NCHW x"));
  *out = *c->in[0];
  return RLX_OK;
}

rlx_status rlx_infer_GroupNorm(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_shape *x = c->in[0];
  if (x->rank < 3)
    return rlx_shape_error("operand 0 (x) has shape %s; GroupNorm needs [N, C, spatial...] (rank >= 3)",
                           rlx_fmt_shape(x));
  RLX_TRY(rlx_need_dtype_float(c, 0));
  int64_t g = c->a->GroupNorm.num_groups;
  if (g < 1) return rlx_shape_error("attribute num_groups is %" PRId64 "; it must be >= 1", g);
  rlx_dim ch = x->dims[1];
  if (ch >= 0 && ch % g != 0)
    return rlx_shape_error("attribute num_groups is %" PRId64 "; it must divide the channel count %" PRId64
                           " of operand 0 %s",
                           g, ch, rlx_fmt_shape(x));
  RLX_TRY(need_eps(c->a->GroupNorm.eps));
  RLX_TRY(need_params(c, 1, 2, gamma_beta, ch, "channels C of x"));
  *out = *x;
  return RLX_OK;
}

rlx_status rlx_infer_BatchNormInference(const rlx_infer_ctx *c, rlx_shape *out) {
  static const char *const names[] = {"gamma", "beta", "mean", "var"};
  const rlx_shape *x = c->in[0];
  if (x->rank == 0) return rlx_shape_error("operand 0 (x) is a scalar; its last axis holds the features");
  RLX_TRY(rlx_need_dtype_float(c, 0));
  RLX_TRY(need_eps(c->a->BatchNormInference.eps));
  RLX_TRY(need_params(c, 1, 4, names, x->dims[x->rank - 1], "features = x's last dim"));
  *out = *x;
  return RLX_OK;
}

/* scale/shift/gate: broadcast onto x with last dim D. */
static rlx_status need_modulation(const rlx_infer_ctx *c, uint32_t i, const char *what) {
  const rlx_shape *x = c->in[0], *s = c->in[i];
  RLX_TRY(iu_same_dtype(c, 0, i));
  if (s->rank == 0 || !rlx_dim_equal(s->dims[s->rank - 1], x->dims[x->rank - 1]) || !iu_broadcasts_to(s, x))
    return rlx_shape_error("operand %u (%s) has shape %s; it must broadcast onto x %s and keep x's last dim %s "
                           "(e.g. [B, 1, D])",
                           i, what, rlx_fmt_shape(s), rlx_fmt_shape(x), iu_fmt_dim(x->dims[x->rank - 1]));
  return RLX_OK;
}

rlx_status rlx_infer_AdaLayerNorm(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_shape *x = c->in[0];
  if (x->rank == 0) return rlx_shape_error("operand 0 (x) is a scalar; AdaLayerNorm normalises x's last axis");
  RLX_TRY(rlx_need_dtype_float(c, 0));
  int32_t kind = c->a->AdaLayerNorm.norm;
  if (kind < 0 || kind >= RLX_ADA_NORM_COUNT)
    return rlx_shape_error("attribute norm: %d is not an AdaNormKind (LayerNorm or RmsNorm)", (int)kind);
  RLX_TRY(need_eps(c->a->AdaLayerNorm.eps));
  RLX_TRY(need_modulation(c, 1, "scale"));
  RLX_TRY(need_modulation(c, 2, "shift"));
  if (!rlx_shape_equal(c->in[1], c->in[2]))
    return rlx_shape_error("operand 2 (shift) has shape %s; it must equal operand 1 (scale) %s",
                           rlx_fmt_shape(c->in[2]), rlx_fmt_shape(c->in[1]));
  *out = *x;
  return RLX_OK;
}

rlx_status rlx_infer_GatedResidual(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_shape *x = c->in[0];
  if (x->rank == 0) return rlx_shape_error("operand 0 (x) is a scalar; GatedResidual gates x's last axis");
  RLX_TRY(iu_same_dtype(c, 0, 1));
  if (!rlx_shape_equal(c->in[1], x))
    return rlx_shape_error("operand 1 (y) has shape %s; it must equal operand 0 (x) %s", rlx_fmt_shape(c->in[1]),
                           rlx_fmt_shape(x));
  RLX_TRY(need_modulation(c, 2, "gate"));
  *out = *x;
  return RLX_OK;
}
