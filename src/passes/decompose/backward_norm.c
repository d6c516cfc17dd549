/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Decompositions of the normalisation backward ops and the DiT block backwards (the formulas are
 * in ref/backward_norm.c). Statistics are recomputed from x like the forward decompositions do:
 * mean, centred biased variance, r = rsqrt(var + eps), xh = (x - mean) * r. Parameter vectors are
 * reshaped to [C] (or [C, 1, ...] for GroupNorm's channel axis). GroupNorm's gamma / beta
 * gradients reduce over the batch AND the spatial axes (every image contributes). */
#include "passes/decompose/decompose.h"

static rlx_status mul(rlx_graph *g, rlx_id a, rlx_id b, rlx_id *out) { return rlx_binary(g, RLX_BINOP_MUL, a, b, out); }
static rlx_status sub(rlx_graph *g, rlx_id a, rlx_id b, rlx_id *out) { return rlx_binary(g, RLX_BINOP_SUB, a, b, out); }

static rlx_status mean_keep(rlx_graph *g, rlx_id x, uint32_t axis, rlx_id *out) {
  int64_t ax[1] = {axis};
  return rlx_reduce_axes(g, RLX_REDUCE_MEAN, x, 1, ax, true, out);
}

/* r and xh of x along `axis` (rms: no centring, var = mean(x^2)). */
static rlx_status normalize(rlx_graph *g, rlx_id x, uint32_t axis, double eps, bool rms, rlx_id *r, rlx_id *xh) {
  rlx_id d = x, sq, var;
  if (!rms) {
    rlx_id mean;
    RLX_TRY(mean_keep(g, x, axis, &mean));
    RLX_TRY(sub(g, x, mean, &d));
  }
  RLX_TRY(mul(g, d, d, &sq));
  RLX_TRY(mean_keep(g, sq, axis, &var));
  RLX_TRY(rlx_binary_scalar(g, RLX_BINOP_ADD, var, eps, &var));
  RLX_TRY(rlx_activation(g, RLX_ACT_RSQRT, var, r));
  return mul(g, d, *r, xh);
}

/* dx = r * (s - mean(s) - xh * mean(s * xh)) along axis (rms: without the mean(s) term). */
static rlx_status norm_dx(rlx_graph *g, rlx_id s, rlx_id r, rlx_id xh, uint32_t axis, bool rms, rlx_id *out) {
  rlx_id sx, m, t;
  RLX_TRY(mul(g, s, xh, &sx));
  RLX_TRY(mean_keep(g, sx, axis, &m));
  RLX_TRY(mul(g, xh, m, &t));
  RLX_TRY(sub(g, s, t, &t));
  if (!rms) {
    rlx_id ms;
    RLX_TRY(mean_keep(g, s, axis, &ms));
    RLX_TRY(sub(g, t, ms, &t));
  }
  return mul(g, r, t, out);
}

/* Sum over axes [0, rank - 1) (every axis but the last); a rank-1 x is returned as is. */
static rlx_status sum_leading(rlx_graph *g, rlx_id x, rlx_id *out) {
  rlx_shape s = dc_shape(g, x);
  if (s.rank <= 1) {
    *out = x;
    return RLX_OK;
  }
  int64_t ax[RLX_MAX_RANK];
  for (uint32_t i = 0; i + 1 < s.rank; i++) ax[i] = i;
  return rlx_reduce_axes(g, RLX_REDUCE_SUM, x, s.rank - 1u, ax, false, out);
}

/* Sums v (x's shape) down to `target` (which broadcasts onto x, NumPy right alignment). */
static rlx_status sum_to(rlx_graph *g, rlx_id v, const rlx_shape *target, rlx_id *out) {
  rlx_shape s = dc_shape(g, v);
  uint32_t lead = s.rank - target->rank, nk = 0;
  int64_t ax[RLX_MAX_RANK];
  for (uint32_t i = 0; i < target->rank; i++)
    if (target->dims[i] == 1 && s.dims[lead + i] != 1) ax[nk++] = lead + i;
  if (nk) RLX_TRY(rlx_reduce_axes(g, RLX_REDUCE_SUM, v, nk, ax, true, &v));
  if (lead) {
    for (uint32_t i = 0; i < lead; i++) ax[i] = i;
    RLX_TRY(rlx_reduce_axes(g, RLX_REDUCE_SUM, v, lead, ax, false, &v));
  }
  return rlx_reshape_dims(g, v, target->rank, target->dims, out);
}

/* Flattens x to 1-D. */
static rlx_status flat(rlx_graph *g, const rlx_node *n, rlx_id x, rlx_id *out) {
  rlx_shape s = dc_shape(g, x);
  size_t count;
  if (rlx_shape_numel(&s, &count) != RLX_OK) return dc_unsupported(n, "packing needs static operand shapes");
  rlx_dim d = (rlx_dim)count;
  return rlx_reshape_dims(g, x, 1, &d, out);
}

static uint32_t last_axis(rlx_graph *g, rlx_id x) { return dc_shape(g, x).rank - 1u; }

static rlx_status need_last_axis(int64_t axis, uint32_t rank) {
  if (axis != -1 && axis != (int64_t)rank - 1)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "norm backward: attribute axis %lld is not the last axis", (long long)axis);
  return RLX_OK;
}

/* ---- LayerNorm / RmsNorm ---- */

/* [x, gamma, dy]: the input gradient with s = dy * gamma. */
static rlx_status last_axis_dx(rlx_graph *g, rlx_id x, rlx_id gamma, rlx_id dy, double eps, bool rms, rlx_id *out) {
  uint32_t ax = last_axis(g, x);
  rlx_id r, xh, gv, s;
  RLX_TRY(normalize(g, x, ax, eps, rms, &r, &xh));
  RLX_TRY(dc_channel_vector(g, gamma, 0, &gv));
  RLX_TRY(mul(g, dy, gv, &s));
  return norm_dx(g, s, r, xh, ax, rms, out);
}

/* Sum over the rows of dy * xh. */
static rlx_status last_axis_dgamma(rlx_graph *g, rlx_id x, rlx_id dy, double eps, bool rms, rlx_id *out) {
  rlx_id r, xh, p;
  RLX_TRY(normalize(g, x, last_axis(g, x), eps, rms, &r, &xh));
  RLX_TRY(mul(g, dy, xh, &p));
  return sum_leading(g, p, out);
}

RLX_DECOMPOSE_DECL(LayerNormBackwardInput) {
  (void)src;
  const rlx_attrs_LayerNormBackwardInput *a = &n->attrs.LayerNormBackwardInput;
  RLX_TRY(need_last_axis(a->axis, dc_shape(dst, in[0]).rank));
  return last_axis_dx(dst, in[0], in[1], in[2], a->eps, false, out);
}

RLX_DECOMPOSE_DECL(LayerNormBackwardGamma) {
  (void)src;
  const rlx_attrs_LayerNormBackwardGamma *a = &n->attrs.LayerNormBackwardGamma;
  RLX_TRY(need_last_axis(a->axis, dc_shape(dst, in[0]).rank));
  return last_axis_dgamma(dst, in[0], in[1], a->eps, false, out);
}

RLX_DECOMPOSE_DECL(RmsNormBackwardInput) {
  (void)src;
  const rlx_attrs_RmsNormBackwardInput *a = &n->attrs.RmsNormBackwardInput;
  RLX_TRY(need_last_axis(a->axis, dc_shape(dst, in[0]).rank));
  return last_axis_dx(dst, in[0], in[1], in[3], a->eps, true, out);
}

RLX_DECOMPOSE_DECL(RmsNormBackwardGamma) {
  (void)src;
  const rlx_attrs_RmsNormBackwardGamma *a = &n->attrs.RmsNormBackwardGamma;
  RLX_TRY(need_last_axis(a->axis, dc_shape(dst, in[0]).rank));
  return last_axis_dgamma(dst, in[0], in[3], a->eps, true, out);
}

RLX_DECOMPOSE_DECL(RmsNormBackwardBeta) {
  (void)src;
  RLX_TRY(need_last_axis(n->attrs.RmsNormBackwardBeta.axis, dc_shape(dst, in[0]).rank));
  return sum_leading(dst, in[3], out);
}

/* ---- GroupNorm ([N, C, spatial...]) ---- */

/* x and v as [N, G, C/G * spatial]. */
static rlx_status grouped(rlx_graph *g, const rlx_node *n, rlx_id x, int64_t G, rlx_id *out) {
  rlx_shape xs = dc_shape(g, x);
  int64_t per = 1;
  for (uint32_t i = 1; i < xs.rank; i++) {
    if (xs.dims[i] < 0) return dc_unsupported(n, "channel and spatial extents must be static");
    if (__builtin_mul_overflow(per, xs.dims[i], &per)) return rlx_errorf(RLX_ERR_OVERFLOW, "GroupNorm: size overflows");
  }
  if (G < 1 || xs.dims[1] % G) return rlx_errorf(RLX_ERR_INVALID_ARG, "GroupNorm backward: num_groups must divide C");
  rlx_dim d[3] = {xs.dims[0], G, per / G};
  return rlx_reshape_dims(g, x, 3, d, out);
}

/* xh of GroupNorm in x's shape. */
static rlx_status gn_xh(rlx_graph *g, const rlx_node *n, rlx_id x, int64_t G, double eps, rlx_id *r3, rlx_id *xh3,
                        rlx_id *xh) {
  rlx_shape xs = dc_shape(g, x);
  rlx_id xr;
  RLX_TRY(grouped(g, n, x, G, &xr));
  RLX_TRY(normalize(g, xr, 2, eps, false, r3, xh3));
  return rlx_reshape_dims(g, *xh3, xs.rank, xs.dims, xh);
}

/* Sum of v ([N, C, spatial...]) over the batch and spatial axes -> [C]. */
static rlx_status sum_channels(rlx_graph *g, rlx_id v, rlx_id *out) {
  rlx_shape s = dc_shape(g, v);
  int64_t ax[RLX_MAX_RANK];
  uint32_t k = 0;
  for (uint32_t i = 2; i < s.rank; i++) ax[k++] = i;
  if (k) RLX_TRY(rlx_reduce_axes(g, RLX_REDUCE_SUM, v, k, ax, false, &v));
  static const int64_t ax0[1] = {0};
  return rlx_reduce_axes(g, RLX_REDUCE_SUM, v, 1, ax0, false, out);
}

RLX_DECOMPOSE_DECL(GroupNormBackwardInput) {
  (void)src;
  const rlx_attrs_GroupNormBackwardInput *a = &n->attrs.GroupNormBackwardInput;
  rlx_shape xs = dc_shape(dst, in[0]);
  rlx_id r3, xh3, xh, gv, s, s3, dx;
  RLX_TRY(gn_xh(dst, n, in[0], a->num_groups, a->eps, &r3, &xh3, &xh));
  RLX_TRY(dc_channel_vector(dst, in[1], xs.rank - 2u, &gv));
  RLX_TRY(mul(dst, in[3], gv, &s));
  RLX_TRY(grouped(dst, n, s, a->num_groups, &s3));
  RLX_TRY(norm_dx(dst, s3, r3, xh3, 2, false, &dx));
  return rlx_reshape_dims(dst, dx, xs.rank, xs.dims, out);
}

RLX_DECOMPOSE_DECL(GroupNormBackwardGamma) {
  (void)src;
  const rlx_attrs_GroupNormBackwardGamma *a = &n->attrs.GroupNormBackwardGamma;
  rlx_id r3, xh3, xh, p;
  RLX_TRY(gn_xh(dst, n, in[0], a->num_groups, a->eps, &r3, &xh3, &xh));
  RLX_TRY(mul(dst, in[1], xh, &p));
  return sum_channels(dst, p, out);
}

RLX_DECOMPOSE_DECL(GroupNormBackwardBeta) {
  (void)src;
  (void)n;
  return sum_channels(dst, in[1], out);
}

/* ---- BatchNormInference (features = last axis) ---- */

/* rsqrt(var + eps) as [C]. */
static rlx_status bn_inv(rlx_graph *g, rlx_id var, double eps, rlx_id *out) {
  RLX_TRY(dc_channel_vector(g, var, 0, &var));
  RLX_TRY(rlx_binary_scalar(g, RLX_BINOP_ADD, var, eps, &var));
  return rlx_activation(g, RLX_ACT_RSQRT, var, out);
}

RLX_DECOMPOSE_DECL(BatchNormInferenceBackwardInput) {
  (void)src;
  rlx_id inv, gv, sc;
  RLX_TRY(bn_inv(dst, in[3], n->attrs.BatchNormInferenceBackwardInput.eps, &inv));
  RLX_TRY(dc_channel_vector(dst, in[1], 0, &gv));
  RLX_TRY(mul(dst, gv, inv, &sc));
  return mul(dst, in[4], sc, out);
}

RLX_DECOMPOSE_DECL(BatchNormInferenceBackwardGamma) {
  (void)src;
  rlx_id inv, mv, d, p;
  RLX_TRY(bn_inv(dst, in[2], n->attrs.BatchNormInferenceBackwardGamma.eps, &inv));
  RLX_TRY(dc_channel_vector(dst, in[1], 0, &mv));
  RLX_TRY(sub(dst, in[0], mv, &d));
  RLX_TRY(mul(dst, in[3], d, &p));
  RLX_TRY(sum_leading(dst, p, &p));
  return mul(dst, p, inv, out);
}

RLX_DECOMPOSE_DECL(BatchNormInferenceBackwardBeta) {
  (void)src;
  (void)n;
  return sum_leading(dst, in[0], out);
}

/* ---- AdaLayerNorm and GatedResidual (packed outputs) ---- */

RLX_DECOMPOSE_DECL(AdaLayerNormBackward) {
  (void)src;
  const rlx_attrs_AdaLayerNormBackward *a = &n->attrs.AdaLayerNormBackward;
  bool rms = a->norm == RLX_ADA_NORM_RMS_NORM;
  rlx_id x = in[0], scale = in[1], shift = in[2], dy = in[3];
  rlx_shape ss = dc_shape(dst, scale), hs = dc_shape(dst, shift);
  uint32_t ax = last_axis(dst, x);
  rlx_id r, xh, dshift, dscale, s1, gsc, dx, parts[3];
  RLX_TRY(normalize(dst, x, ax, a->eps, rms, &r, &xh));
  RLX_TRY(sum_to(dst, dy, &hs, &dshift));
  RLX_TRY(mul(dst, dy, xh, &dscale));
  RLX_TRY(sum_to(dst, dscale, &ss, &dscale));
  RLX_TRY(rlx_binary_scalar(dst, RLX_BINOP_ADD, scale, 1.0, &s1));
  RLX_TRY(mul(dst, dy, s1, &gsc));
  RLX_TRY(norm_dx(dst, gsc, r, xh, ax, rms, &dx));
  RLX_TRY(flat(dst, n, dx, &parts[0]));
  RLX_TRY(flat(dst, n, dscale, &parts[1]));
  RLX_TRY(flat(dst, n, dshift, &parts[2]));
  return rlx_concat(dst, parts, 3, 0, out);
}

RLX_DECOMPOSE_DECL(GatedResidualBackward) {
  (void)src;
  rlx_id y = in[1], gate = in[2], dy = in[3], dyy, dgate, parts[3];
  rlx_shape gs = dc_shape(dst, gate);
  RLX_TRY(mul(dst, dy, gate, &dyy));
  RLX_TRY(mul(dst, dy, y, &dgate));
  RLX_TRY(sum_to(dst, dgate, &gs, &dgate));
  RLX_TRY(flat(dst, n, dy, &parts[0]));
  RLX_TRY(flat(dst, n, dyy, &parts[1]));
  RLX_TRY(flat(dst, n, dgate, &parts[2]));
  return rlx_concat(dst, parts, 3, 0, out);
}
