/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Decompositions of normalisation ops: GroupNorm, BatchNormInference, AdaLayerNorm and
 * GatedResidual. Variances are biased (divide by the count) and computed from centred values. */
#include "passes/decompose/decompose.h"

/* (x - mean) * rsqrt(mean((x - mean)^2) + eps) over `axis` of x (kept as size 1). */
static rlx_status normalize_axis(rlx_graph *g, rlx_id x, uint32_t axis, double eps, rlx_id *out) {
  int64_t ax[1] = {axis};
  rlx_id mean, d, sq, var, inv;
  RLX_TRY(rlx_reduce_axes(g, RLX_REDUCE_MEAN, x, 1, ax, true, &mean));
  RLX_TRY(rlx_binary(g, RLX_BINOP_SUB, x, mean, &d));
  RLX_TRY(rlx_binary(g, RLX_BINOP_MUL, d, d, &sq));
  RLX_TRY(rlx_reduce_axes(g, RLX_REDUCE_MEAN, sq, 1, ax, true, &var));
  RLX_TRY(rlx_binary_scalar(g, RLX_BINOP_ADD, var, eps, &var));
  RLX_TRY(rlx_activation(g, RLX_ACT_RSQRT, var, &inv));
  return rlx_binary(g, RLX_BINOP_MUL, d, inv, out);
}

/* GroupNorm on [N, C, spatial...]: reshape to [N, G, C/G * spatial], normalise the last axis,
 * reshape back, then y * gamma + beta with gamma/beta as [C, 1, ...] (one per channel). */
RLX_DECOMPOSE_DECL(GroupNorm) {
  (void)src;
  const rlx_attrs_GroupNorm *a = &n->attrs.GroupNorm;
  rlx_shape xs = dc_shape(dst, in[0]);
  if (xs.rank < 3) return rlx_errorf(RLX_ERR_INVALID_ARG, "GroupNorm needs [N, C, spatial...]");
  int64_t G = a->num_groups, per = 1;
  for (uint32_t i = 1; i < xs.rank; i++) {
    if (xs.dims[i] < 0) return dc_unsupported(n, "channel and spatial extents must be static");
    if (__builtin_mul_overflow(per, xs.dims[i], &per)) return rlx_errorf(RLX_ERR_OVERFLOW, "GroupNorm: size overflows");
  }
  if (G < 1 || xs.dims[1] % G) return rlx_errorf(RLX_ERR_INVALID_ARG, "GroupNorm: num_groups must divide C");
  rlx_shape x_shape = xs;
  rlx_dim gd[3] = {xs.dims[0], G, per / G};
  rlx_id xr, y, gamma, beta;
  RLX_TRY(rlx_reshape_dims(dst, in[0], 3, gd, &xr));
  RLX_TRY(normalize_axis(dst, xr, 2, a->eps, &y));
  RLX_TRY(rlx_reshape_dims(dst, y, x_shape.rank, x_shape.dims, &y));
  RLX_TRY(dc_channel_vector(dst, in[1], x_shape.rank - 2u, &gamma));
  RLX_TRY(dc_channel_vector(dst, in[2], x_shape.rank - 2u, &beta));
  RLX_TRY(rlx_binary(dst, RLX_BINOP_MUL, y, gamma, &y));
  return rlx_binary(dst, RLX_BINOP_ADD, y, beta, out);
}

/* BatchNormInference (features = last axis): (x - mean) * (gamma * rsqrt(var + eps)) + beta with
 * the four parameters as [C] vectors broadcasting over the last axis. */
RLX_DECOMPOSE_DECL(BatchNormInference) {
  (void)src;
  rlx_id v[4];
  for (uint32_t i = 0; i < 4; i++) RLX_TRY(dc_channel_vector(dst, in[1 + i], 0, &v[i]));
  rlx_id gamma = v[0], beta = v[1], mean = v[2], var = v[3], inv, scale, d, y;
  RLX_TRY(rlx_binary_scalar(dst, RLX_BINOP_ADD, var, n->attrs.BatchNormInference.eps, &inv));
  RLX_TRY(rlx_activation(dst, RLX_ACT_RSQRT, inv, &inv));
  RLX_TRY(rlx_binary(dst, RLX_BINOP_MUL, gamma, inv, &scale));
  RLX_TRY(rlx_binary(dst, RLX_BINOP_SUB, in[0], mean, &d));
  RLX_TRY(rlx_binary(dst, RLX_BINOP_MUL, d, scale, &y));
  return rlx_binary(dst, RLX_BINOP_ADD, y, beta, out);
}

/* AdaLayerNorm: norm(x) * (1 + scale) + shift, norm being LayerNorm or RmsNorm over the last axis
 * without affine (gamma = 1, beta = 0 constants of width D). */
RLX_DECOMPOSE_DECL(AdaLayerNorm) {
  (void)src;
  const rlx_attrs_AdaLayerNorm *a = &n->attrs.AdaLayerNorm;
  rlx_shape xs = dc_shape(dst, in[0]);
  rlx_dim D = xs.dims[xs.rank - 1];
  if (D < 0) return dc_unsupported(n, "the normalised (last) axis is symbolic");
  rlx_dtype t = (rlx_dtype)xs.dtype;
  rlx_id ones, zeros, normed, s1, y;
  RLX_TRY(rlx_fill(dst, t, 1, &D, 1.0, &ones));
  RLX_TRY(rlx_fill(dst, t, 1, &D, 0.0, &zeros));
  rlx_id nin[3] = {in[0], ones, zeros};
  if (a->norm == RLX_ADA_NORM_RMS_NORM) {
    rlx_attrs_RmsNorm r = {.axis = -1, .eps = a->eps};
    RLX_TRY(rlx_build_RmsNorm(dst, nin, 3, &r, NULL, &normed));
  } else {
    rlx_attrs_LayerNorm l = {.axis = -1, .eps = a->eps};
    RLX_TRY(rlx_build_LayerNorm(dst, nin, 3, &l, NULL, &normed));
  }
  RLX_TRY(rlx_binary_scalar(dst, RLX_BINOP_ADD, in[1], 1.0, &s1));
  RLX_TRY(rlx_binary(dst, RLX_BINOP_MUL, normed, s1, &y));
  return rlx_binary(dst, RLX_BINOP_ADD, y, in[2], out);
}

/* GatedResidual: x + gate * y. */
RLX_DECOMPOSE_DECL(GatedResidual) {
  (void)src;
  (void)n;
  rlx_id gy;
  RLX_TRY(rlx_binary(dst, RLX_BINOP_MUL, in[2], in[1], &gy));
  return rlx_binary(dst, RLX_BINOP_ADD, in[0], gy, out);
}
