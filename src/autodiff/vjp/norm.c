/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* VJP rules: normalisation. LayerNorm, RmsNorm, GroupNorm and BatchNormInference emit their
 * dedicated backward ops (GroupNorm's with the real reduction over N as well, not RLX's N = 1
 * shortcut); BatchNormInference's frozen mean/var get their (rarely wanted) gradients from
 * primitives; LayerNorm2d is differentiated in primitives; AdaLayerNorm and GatedResidual keep
 * their fused backward ops, whose packed outputs are cut apart with Narrow + Reshape. */
#include "autodiff/ad_internal.h"

/* A per-channel gradient [C] reshaped to the parameter operand's shape. */
static rlx_status to_param(rlx_ad_ctx *c, rlx_id g, rlx_id param, rlx_id *out) {
  rlx_shape ps = ad_shape(c, param);
  return ad_reshape(c, g, &ps, out);
}

/* dy reshaped to x's dims (RmsNorm may declare a flattened output). */
static rlx_status dy_like_x(rlx_ad_ctx *c, rlx_id dy, rlx_id x, rlx_id *out) {
  rlx_shape xs = ad_shape(c, x);
  return ad_reshape(c, dy, &xs, out);
}

/* Sum over every axis but the last, giving [D]. */
static rlx_status sum_but_last(rlx_ad_ctx *c, rlx_id g, rlx_id *out) {
  rlx_shape s = ad_shape(c, g);
  if (s.rank <= 1) {
    *out = g;
    return RLX_OK;
  }
  int64_t axes[RLX_MAX_RANK];
  for (uint32_t i = 0; i + 1 < s.rank; i++) axes[i] = i;
  return ad_reduce(c, RLX_REDUCE_SUM, g, s.rank - 1, axes, false, out);
}

RLX_VJP_DECL(LayerNorm) {
  (void)y;
  const rlx_attrs_LayerNorm *a = &n->attrs.LayerNorm;
  rlx_id g;
  RLX_TRY(dy_like_x(c, dy, x[0], &g));
  if (c->want[0]) {
    rlx_attrs_LayerNormBackwardInput at = {.axis = -1, .eps = a->eps};
    rlx_id in[3] = {x[0], x[1], g};
    RLX_TRY(ad_emit(c, RLX_OP_LayerNormBackwardInput, in, 3, &at, NULL, &dx[0]));
  }
  if (c->want[1]) {
    rlx_attrs_LayerNormBackwardGamma at = {.axis = -1, .eps = a->eps};
    rlx_id in[2] = {x[0], g}, t;
    RLX_TRY(ad_emit(c, RLX_OP_LayerNormBackwardGamma, in, 2, &at, NULL, &t));
    RLX_TRY(to_param(c, t, x[1], &dx[1]));
  }
  if (c->want[2]) {
    rlx_id t;
    RLX_TRY(sum_but_last(c, g, &t));
    RLX_TRY(to_param(c, t, x[2], &dx[2]));
  }
  return RLX_OK;
}

RLX_VJP_DECL(RmsNorm) {
  (void)y;
  float eps = n->attrs.RmsNorm.eps;
  rlx_id g;
  RLX_TRY(dy_like_x(c, dy, x[0], &g));
  rlx_id in[4] = {x[0], x[1], x[2], g};
  rlx_attrs_RmsNormBackwardInput at = {.axis = -1, .eps = eps};
  static const rlx_op ops[3] = {RLX_OP_RmsNormBackwardInput, RLX_OP_RmsNormBackwardGamma, RLX_OP_RmsNormBackwardBeta};
  for (uint32_t i = 0; i < 3; i++) {
    if (!c->want[i]) continue;
    rlx_id t;
    RLX_TRY(ad_emit(c, ops[i], in, 4, &at, NULL, &t));
    RLX_TRY(to_param(c, t, x[i], &dx[i]));
  }
  return RLX_OK;
}

RLX_VJP_DECL(GroupNorm) {
  (void)y;
  const rlx_attrs_GroupNorm *a = &n->attrs.GroupNorm;
  rlx_attrs_GroupNormBackwardInput at = {.num_groups = a->num_groups, .eps = a->eps};
  if (c->want[0]) {
    rlx_id in[4] = {x[0], x[1], x[2], dy};
    RLX_TRY(ad_emit(c, RLX_OP_GroupNormBackwardInput, in, 4, &at, NULL, &dx[0]));
  }
  static const rlx_op ops[3] = {RLX_OP_GroupNormBackwardInput, RLX_OP_GroupNormBackwardGamma,
                                RLX_OP_GroupNormBackwardBeta};
  for (uint32_t i = 1; i < 3; i++) {
    if (!c->want[i]) continue;
    rlx_id in[2] = {x[0], dy}, t;
    RLX_TRY(ad_emit(c, ops[i], in, 2, &at, NULL, &t));
    RLX_TRY(to_param(c, t, x[i], &dx[i]));
  }
  return RLX_OK;
}

/* y = gamma (x - mean) / sqrt(var + eps) + beta over the last axis (features). */
RLX_VJP_DECL(BatchNormInference) {
  (void)y;
  float eps = n->attrs.BatchNormInference.eps;
  rlx_id xx = x[0], gamma = x[1], beta = x[2], mean = x[3], var = x[4];
  if (c->want[0]) {
    rlx_attrs_BatchNormInferenceBackwardInput at = {.eps = eps};
    rlx_id in[5] = {xx, gamma, mean, var, dy};
    RLX_TRY(ad_emit(c, RLX_OP_BatchNormInferenceBackwardInput, in, 5, &at, NULL, &dx[0]));
  }
  if (c->want[1]) {
    rlx_attrs_BatchNormInferenceBackwardGamma at = {.eps = eps};
    rlx_id in[4] = {xx, mean, var, dy}, t;
    RLX_TRY(ad_emit(c, RLX_OP_BatchNormInferenceBackwardGamma, in, 4, &at, NULL, &t));
    RLX_TRY(to_param(c, t, gamma, &dx[1]));
  }
  if (c->want[2]) {
    rlx_id t;
    RLX_TRY(ad_emit(c, RLX_OP_BatchNormInferenceBackwardBeta, &dy, 1, NULL, NULL, &t));
    RLX_TRY(to_param(c, t, beta, &dx[2]));
  }
  if (c->want[3] || c->want[4]) {
    /* d mean = -sum(dy) gamma r; d var = -0.5 sum(dy (x - mean)) gamma r^3, r = 1/sqrt(var + eps) */
    rlx_shape xs = ad_shape(c, xx);
    rlx_dim D = xs.dims[xs.rank - 1];
    rlx_id gv, mv, vv, r, gr, t;
    RLX_TRY(ad_reshape_dims(c, gamma, 1, &D, &gv));
    RLX_TRY(ad_reshape_dims(c, mean, 1, &D, &mv));
    RLX_TRY(ad_reshape_dims(c, var, 1, &D, &vv));
    RLX_TRY(ad_bin_s(c, RLX_BINOP_ADD, vv, eps, &r));
    RLX_TRY(ad_act(c, RLX_ACT_RSQRT, r, &r));
    RLX_TRY(ad_mul(c, gv, r, &gr));
    if (c->want[3]) {
      RLX_TRY(sum_but_last(c, dy, &t));
      RLX_TRY(ad_mul(c, t, gr, &t));
      RLX_TRY(ad_neg(c, t, &t));
      RLX_TRY(to_param(c, t, mean, &dx[3]));
    }
    if (c->want[4]) {
      rlx_id d;
      RLX_TRY(ad_sub(c, xx, mv, &d));
      RLX_TRY(ad_mul(c, d, dy, &d));
      RLX_TRY(sum_but_last(c, d, &t));
      RLX_TRY(ad_mul(c, t, gr, &t));
      RLX_TRY(ad_mul(c, t, r, &t));
      RLX_TRY(ad_mul(c, t, r, &t));
      RLX_TRY(ad_bin_s(c, RLX_BINOP_MUL, t, -0.5, &t));
      RLX_TRY(to_param(c, t, var, &dx[4]));
    }
  }
  return RLX_OK;
}

/* BatchNormInferenceBackwardBeta(dy) = sum of dy over all but the last axis: its adjoint
 * broadcasts back. */
RLX_VJP_DECL(BatchNormInferenceBackwardBeta) {
  (void)n;
  rlx_shape xs = ad_shape(c, x[0]), kept = xs;
  (void)y;
  for (uint32_t i = 0; i + 1 < xs.rank; i++) kept.dims[i] = 1;
  return ad_broadcast_back(c, dy, &kept, x[0], &dx[0]);
}

/* LayerNorm2d: at every (n, h, w), normalise across the channel axis 1, then gamma/beta [C]. */
RLX_VJP_DECL(LayerNorm2d) {
  (void)y;
  float eps = n->attrs.LayerNorm2d.eps;
  rlx_shape xs = ad_shape(c, x[0]);
  rlx_dim C = xs.dims[1];
  rlx_dim cd[4] = {1, C, 1, 1};
  int64_t ax1 = 1, nhw[3] = {0, 2, 3};
  rlx_id mu, d, var, r, xh, gm, s, t, u;
  RLX_TRY(ad_reduce(c, RLX_REDUCE_MEAN, x[0], 1, &ax1, true, &mu));
  RLX_TRY(ad_sub(c, x[0], mu, &d));
  RLX_TRY(ad_mul(c, d, d, &var));
  RLX_TRY(ad_reduce(c, RLX_REDUCE_MEAN, var, 1, &ax1, true, &var));
  RLX_TRY(ad_bin_s(c, RLX_BINOP_ADD, var, eps, &r));
  RLX_TRY(ad_act(c, RLX_ACT_RSQRT, r, &r));
  RLX_TRY(ad_mul(c, d, r, &xh));
  if (c->want[0]) {
    /* dx = r (s - mean_c(s) - xh mean_c(s xh)), s = dy gamma */
    RLX_TRY(ad_reshape_dims(c, x[1], 4, cd, &gm));
    RLX_TRY(ad_mul(c, dy, gm, &s));
    RLX_TRY(ad_reduce(c, RLX_REDUCE_MEAN, s, 1, &ax1, true, &t));
    RLX_TRY(ad_mul(c, s, xh, &u));
    RLX_TRY(ad_reduce(c, RLX_REDUCE_MEAN, u, 1, &ax1, true, &u));
    RLX_TRY(ad_mul(c, xh, u, &u));
    RLX_TRY(ad_sub(c, s, t, &s));
    RLX_TRY(ad_sub(c, s, u, &s));
    RLX_TRY(ad_mul(c, s, r, &dx[0]));
  }
  if (c->want[1]) {
    RLX_TRY(ad_mul(c, dy, xh, &t));
    RLX_TRY(ad_reduce(c, RLX_REDUCE_SUM, t, 3, nhw, false, &t));
    RLX_TRY(to_param(c, t, x[1], &dx[1]));
  }
  if (c->want[2]) {
    RLX_TRY(ad_reduce(c, RLX_REDUCE_SUM, dy, 3, nhw, false, &t));
    RLX_TRY(to_param(c, t, x[2], &dx[2]));
  }
  return RLX_OK;
}

/* Cuts the packed gradient buffer into the operands' gradients (first n_parts operands). */
static rlx_status unpack(rlx_ad_ctx *c, rlx_id packed, const rlx_id *x, uint32_t n_parts, rlx_id *dx) {
  int64_t off = 0;
  for (uint32_t i = 0; i < n_parts; i++) {
    rlx_shape s = ad_shape(c, x[i]);
    size_t numel;
    RLX_TRY(rlx_shape_numel(&s, &numel));
    if (c->want[i]) {
      rlx_id t;
      RLX_TRY(ad_narrow(c, packed, 0, off, (int64_t)numel, &t));
      RLX_TRY(ad_reshape(c, t, &s, &dx[i]));
    }
    off += (int64_t)numel;
  }
  return RLX_OK;
}

RLX_VJP_DECL(AdaLayerNorm) {
  (void)y;
  rlx_attrs_AdaLayerNormBackward a = {.norm = n->attrs.AdaLayerNorm.norm, .eps = n->attrs.AdaLayerNorm.eps};
  rlx_id in[4] = {x[0], x[1], x[2], dy}, packed;
  RLX_TRY(ad_emit(c, RLX_OP_AdaLayerNormBackward, in, 4, &a, NULL, &packed));
  return unpack(c, packed, x, 3, dx);
}

RLX_VJP_DECL(GatedResidual) {
  (void)n;
  (void)y;
  rlx_id in[4] = {x[0], x[1], x[2], dy}, packed;
  RLX_TRY(ad_emit(c, RLX_OP_GatedResidualBackward, in, 4, NULL, NULL, &packed));
  return unpack(c, packed, x, 3, dx);
}
