/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* CPU reference kernels: backward ops of the normalisations and DiT blocks (spec ir-special §8;
 * forwards in ir-core §10.4 and §10.12).
 *
 * Statistics are recomputed from x exactly as the forward kernels compute them (double, two-pass
 * mean, biased variance); every result is rounded once to the output dtype. With
 * r = 1/sqrt(var + eps) and xh = (x - mean) * r per normalised line of n elements:
 *   LayerNorm  s = dy * gamma;  dx = r * (s - mean(s) - xh * mean(s * xh));  dgamma = sum dy * xh
 *   RmsNorm    (mean = 0, var = mean(x^2));  dx = r * (gamma*dy - r^2 * x * mean(x * gamma * dy));
 *              dgamma = sum dy * x * r;  dbeta = sum dy
 *   GroupNorm  the LayerNorm formula per (n, group) over C/G channels x spatial, s = dy * gamma_c;
 *              dgamma_c = sum over n and spatial of dy * xh, dbeta_c = sum of dy (every batch
 *              element contributes)
 *   BatchNormInference (features = last axis, frozen statistics)
 *              dx = dy * gamma / sqrt(var + eps); dgamma = sum dy * (x - mean) / sqrt(var + eps);
 *              dbeta = sum dy (sums over every axis but the last)
 *   AdaLayerNorm  y = norm(x) * (1 + scale) + shift -> packed dx | dscale | dshift with
 *              dshift = sum_bcast dy, dscale = sum_bcast dy * norm(x), dx = the norm's input
 *              gradient of dy * (1 + scale) with gamma = 1
 *   GatedResidual  out = x + gate * y -> packed dx | dy_y | dgate = dy | dy * gate | sum_bcast dy * y
 * "sum_bcast" reduces over the axes along which the operand was broadcast onto x. Parameter vectors
 * are read flat: any shape holding exactly the right number of elements is accepted. The norm
 * backward ops support axis = -1 (or rank - 1) only. */
#include <math.h>

#include "backends/cpu/ref/ref_util_b.h"

static double get(const rlx_tensor *t, size_t i) { return rlx_elem_get(t->data, ru_dt(t), i); }

/* Operand 0 (x) is a float tensor of rank >= min_rank and the output's dtype; operand dy has x's
 * dtype and dims. */
static rlx_status need_x(const rlx_node *n, const rlx_tensor *in, const rlx_tensor *out, uint32_t min_rank, uint32_t dy,
                         const char *dy_name) {
  RLX_TRY(rb_need_float(n, in, 0, "x"));
  RLX_TRY(ru_need_dtype(n, in, 0, ru_dt(out)));
  const rlx_shape *x = &in[0].shape;
  if (x->rank < min_rank)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 0 (x) has shape %s; it needs rank >= %u", ru_fmt(x), min_rank);
  RLX_TRY(ru_need_dtype(n, in, dy, ru_dt(out)));
  if (!rlx_shape_equal(&in[dy].shape, x))
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand %u (%s) has shape %s; it must equal operand 0 (x) %s", dy, dy_name,
                    ru_fmt(&in[dy].shape), ru_fmt(x));
  return RLX_OK;
}

/* Operand i holds exactly c elements of x's dtype. */
static rlx_status need_vec(const rlx_node *n, const rlx_tensor *in, uint32_t i, const char *what, size_t c) {
  RLX_TRY(ru_need_dtype(n, in, i, ru_dt(&in[0])));
  if (in[i].shape.rank == 0 || rlx_tensor_numel(&in[i]) != c)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand %u (%s) has shape %s; expected %zu elements (one per channel)", i,
                    what, ru_fmt(&in[i].shape), c);
  return RLX_OK;
}

static rlx_status need_last_axis(const rlx_node *n, int64_t axis, uint32_t rank) {
  if (axis != -1 && axis != (int64_t)rank - 1)
    return ru_error(RLX_ERR_UNSUPPORTED, n, "attribute axis is %lld; the norm backward ops support only the last axis",
                    (long long)axis);
  return RLX_OK;
}

/* The output is the [c] vector (declared rank 1). */
static rlx_status need_out_vec(const rlx_node *n, const rlx_tensor *out, size_t c) {
  int64_t d = (int64_t)c;
  return ru_need_out_dims(n, out, 1, &d);
}

/* mean and r = 1/sqrt(var + eps) of len elements at base, base + stride, ... (rms: mean 0 and
 * var = mean(x^2)). */
static void stats(const rlx_tensor *x, size_t base, size_t stride, size_t len, double eps, bool rms, double *mean,
                  double *r) {
  double m = 0.0, v = 0.0;
  if (!rms) {
    for (size_t i = 0; i < len; i++) m += get(x, base + i * stride);
    m /= (double)len;
  }
  for (size_t i = 0; i < len; i++) {
    double d = get(x, base + i * stride) - m;
    v += d * d;
  }
  *mean = m;
  *r = 1.0 / sqrt(v / (double)len + eps);
}

/* dx of one contiguous line of len elements starting at base, given s = the upstream gradient
 * already multiplied by gamma (s[i] for element base + i):
 *   LayerNorm: dx = r * (s - mean(s) - xh * mean(s * xh))
 *   RmsNorm:   dx = r * (s - xh * mean(s * xh))           with xh = x * r */
static void line_dx(const rlx_tensor *x, size_t base, size_t len, const double *s, double eps, bool rms, double *dx) {
  double mean, r, ms = 0.0, msx = 0.0;
  stats(x, base, 1, len, eps, rms, &mean, &r);
  for (size_t i = 0; i < len; i++) {
    double xh = (get(x, base + i) - mean) * r;
    ms += s[i];
    msx += s[i] * xh;
  }
  ms /= (double)len;
  msx /= (double)len;
  if (rms) ms = 0.0;
  for (size_t i = 0; i < len; i++) {
    double xh = (get(x, base + i) - mean) * r;
    dx[i] = r * (s[i] - ms - xh * msx);
  }
}

/* ======================================================================================
 * LayerNorm and RmsNorm (last axis)
 * ====================================================================================== */

/* dx of LayerNorm ([x, gamma, dy]) or RmsNorm ([x, gamma, beta, dy]). */
static rlx_status last_axis_dx(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, rlx_tensor *out, int64_t axis,
                               double eps, bool rms) {
  uint32_t n_ops = rms ? 4 : 3, dy = n_ops - 1;
  RLX_TRY(ru_prologue(n, in, n_in, n_ops, n_ops, out));
  RLX_TRY(need_x(n, in, out, 1, dy, "dy"));
  const rlx_shape *x = &in[0].shape;
  RLX_TRY(need_last_axis(n, axis, x->rank));
  RLX_TRY(ru_need_out_dims(n, out, x->rank, x->dims));
  size_t C = (size_t)x->dims[x->rank - 1];
  RLX_TRY(need_vec(n, in, 1, "gamma", C));
  if (rms) RLX_TRY(need_vec(n, in, 2, "beta", C));
  if (C == 0) return RLX_OK;
  size_t rows = rlx_tensor_numel(&in[0]) / C;
  double *s, *dx;
  RLX_TRY(rb_alloc(n, C, sizeof *s, &s));
  rlx_status st = rb_alloc(n, C, sizeof *dx, &dx);
  if (st) {
    free(s);
    return st;
  }
  for (size_t r = 0; r < rows; r++) {
    for (size_t c = 0; c < C; c++) s[c] = get(&in[dy], r * C + c) * get(&in[1], c);
    line_dx(&in[0], r * C, C, s, eps, rms, dx);
    for (size_t c = 0; c < C; c++) ru_store(out->data, ru_dt(out), r * C + c, dx[c]);
  }
  free(s);
  free(dx);
  return RLX_OK;
}

/* Sum over rows of dy * xh (want_xh) or of dy, per column of the last axis. */
static rlx_status last_axis_param(const rlx_node *n, const rlx_tensor *in, uint32_t dy, rlx_tensor *out, double eps,
                                  bool rms, bool want_xh) {
  const rlx_shape *x = &in[0].shape;
  size_t C = (size_t)x->dims[x->rank - 1];
  RLX_TRY(need_out_vec(n, out, C));
  if (C == 0) return RLX_OK;
  size_t rows = rlx_tensor_numel(&in[0]) / C;
  double *acc = NULL;
  RLX_TRY(rb_calloc(n, C, sizeof *acc, &acc));
  for (size_t r = 0; r < rows; r++) {
    double mean = 0.0, rr = 1.0;
    if (want_xh) stats(&in[0], r * C, 1, C, eps, rms, &mean, &rr);
    for (size_t c = 0; c < C; c++) {
      double g = get(&in[dy], r * C + c);
      acc[c] += want_xh ? g * (get(&in[0], r * C + c) - mean) * rr : g;
    }
  }
  rb_store_all(out, acc);
  free(acc);
  return RLX_OK;
}

RLX_CPU_KERNEL(LayerNormBackwardInput) {
  (void)ctx;
  const rlx_attrs_LayerNormBackwardInput *a = &n->attrs.LayerNormBackwardInput;
  return last_axis_dx(n, in, n_in, out, a->axis, a->eps, false);
}

RLX_CPU_KERNEL(LayerNormBackwardGamma) {
  (void)ctx;
  const rlx_attrs_LayerNormBackwardGamma *a = &n->attrs.LayerNormBackwardGamma;
  RLX_TRY(ru_prologue(n, in, n_in, 2, 2, out));
  RLX_TRY(need_x(n, in, out, 1, 1, "dy"));
  RLX_TRY(need_last_axis(n, a->axis, in[0].shape.rank));
  return last_axis_param(n, in, 1, out, a->eps, false, true);
}

RLX_CPU_KERNEL(RmsNormBackwardInput) {
  (void)ctx;
  const rlx_attrs_RmsNormBackwardInput *a = &n->attrs.RmsNormBackwardInput;
  return last_axis_dx(n, in, n_in, out, a->axis, a->eps, true);
}

/* [x, gamma, beta, dy] -> dgamma (want_xh) or dbeta. */
static rlx_status rms_param(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, rlx_tensor *out, int64_t axis,
                            double eps, bool want_xh) {
  RLX_TRY(ru_prologue(n, in, n_in, 4, 4, out));
  RLX_TRY(need_x(n, in, out, 1, 3, "dy"));
  RLX_TRY(need_last_axis(n, axis, in[0].shape.rank));
  size_t C = (size_t)in[0].shape.dims[in[0].shape.rank - 1];
  RLX_TRY(need_vec(n, in, 1, "gamma", C));
  RLX_TRY(need_vec(n, in, 2, "beta", C));
  return last_axis_param(n, in, 3, out, eps, true, want_xh);
}

RLX_CPU_KERNEL(RmsNormBackwardGamma) {
  (void)ctx;
  const rlx_attrs_RmsNormBackwardGamma *a = &n->attrs.RmsNormBackwardGamma;
  return rms_param(n, in, n_in, out, a->axis, a->eps, true);
}

RLX_CPU_KERNEL(RmsNormBackwardBeta) {
  (void)ctx;
  const rlx_attrs_RmsNormBackwardBeta *a = &n->attrs.RmsNormBackwardBeta;
  return rms_param(n, in, n_in, out, a->axis, a->eps, false);
}

/* ======================================================================================
 * GroupNorm ([N, C, spatial...])
 * ====================================================================================== */

typedef struct gn_geom {
  size_t N, C, S, G, cg; /* batch, channels, spatial size, groups, channels per group */
} gn_geom;

static rlx_status gn_check(const rlx_node *n, const rlx_tensor *in, int64_t groups, gn_geom *g) {
  const rlx_shape *x = &in[0].shape;
  g->N = (size_t)x->dims[0];
  g->C = (size_t)x->dims[1];
  g->S = rb_prod(x, 2, x->rank);
  if (groups < 1 || g->C % (uint64_t)groups != 0)
    return ru_error(RLX_ERR_INVALID_ARG, n, "attribute num_groups is %lld; it must be >= 1 and divide C = %zu",
                    (long long)groups, g->C);
  g->G = (size_t)groups;
  g->cg = g->C / g->G;
  return RLX_OK;
}

RLX_CPU_KERNEL(GroupNormBackwardInput) {
  (void)ctx;
  const rlx_attrs_GroupNormBackwardInput *a = &n->attrs.GroupNormBackwardInput;
  RLX_TRY(ru_prologue(n, in, n_in, 4, 4, out));
  RLX_TRY(need_x(n, in, out, 3, 3, "dy"));
  RLX_TRY(ru_need_out_dims(n, out, in[0].shape.rank, in[0].shape.dims));
  gn_geom g = {0};
  RLX_TRY(gn_check(n, in, a->num_groups, &g));
  RLX_TRY(need_vec(n, in, 1, "gamma", g.C));
  RLX_TRY(need_vec(n, in, 2, "beta", g.C));
  size_t len = g.cg * g.S;
  if (len == 0) return RLX_OK;
  double *s, *dx;
  RLX_TRY(rb_alloc(n, len, sizeof *s, &s));
  rlx_status st = rb_alloc(n, len, sizeof *dx, &dx);
  if (st) {
    free(s);
    return st;
  }
  for (size_t b = 0; b < g.N; b++)
    for (size_t gr = 0; gr < g.G; gr++) {
      size_t base = (b * g.C + gr * g.cg) * g.S;
      for (size_t i = 0; i < len; i++) s[i] = get(&in[3], base + i) * get(&in[1], gr * g.cg + i / g.S);
      line_dx(&in[0], base, len, s, a->eps, false, dx);
      for (size_t i = 0; i < len; i++) ru_store(out->data, ru_dt(out), base + i, dx[i]);
    }
  free(s);
  free(dx);
  return RLX_OK;
}

/* [x, dy] -> [C]: sum over batch and spatial of dy * xh (want_xh) or of dy. */
static rlx_status gn_param(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, rlx_tensor *out, int64_t groups,
                           double eps, bool want_xh) {
  RLX_TRY(ru_prologue(n, in, n_in, 2, 2, out));
  RLX_TRY(need_x(n, in, out, 3, 1, "dy"));
  gn_geom g = {0};
  RLX_TRY(gn_check(n, in, groups, &g));
  RLX_TRY(need_out_vec(n, out, g.C));
  double *acc = NULL;
  RLX_TRY(rb_calloc(n, g.C ? g.C : 1, sizeof *acc, &acc));
  size_t len = g.cg * g.S;
  for (size_t b = 0; b < g.N && len; b++)
    for (size_t gr = 0; gr < g.G; gr++) {
      size_t base = (b * g.C + gr * g.cg) * g.S;
      double mean = 0.0, r = 1.0;
      if (want_xh) stats(&in[0], base, 1, len, eps, false, &mean, &r);
      for (size_t i = 0; i < len; i++) {
        double dy = get(&in[1], base + i);
        acc[gr * g.cg + i / g.S] += want_xh ? dy * (get(&in[0], base + i) - mean) * r : dy;
      }
    }
  rb_store_all(out, acc);
  free(acc);
  return RLX_OK;
}

RLX_CPU_KERNEL(GroupNormBackwardGamma) {
  (void)ctx;
  const rlx_attrs_GroupNormBackwardGamma *a = &n->attrs.GroupNormBackwardGamma;
  return gn_param(n, in, n_in, out, a->num_groups, a->eps, true);
}

RLX_CPU_KERNEL(GroupNormBackwardBeta) {
  (void)ctx;
  const rlx_attrs_GroupNormBackwardBeta *a = &n->attrs.GroupNormBackwardBeta;
  return gn_param(n, in, n_in, out, a->num_groups, a->eps, false);
}

/* ======================================================================================
 * BatchNormInference (features = last axis)
 * ====================================================================================== */

RLX_CPU_KERNEL(BatchNormInferenceBackwardInput) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 5, 5, out));
  RLX_TRY(need_x(n, in, out, 1, 4, "dy"));
  const rlx_shape *x = &in[0].shape;
  RLX_TRY(ru_need_out_dims(n, out, x->rank, x->dims));
  size_t C = (size_t)x->dims[x->rank - 1];
  RLX_TRY(need_vec(n, in, 1, "gamma", C));
  RLX_TRY(need_vec(n, in, 2, "mean", C));
  RLX_TRY(need_vec(n, in, 3, "var", C));
  double eps = n->attrs.BatchNormInferenceBackwardInput.eps;
  size_t count = rlx_tensor_numel(&in[0]);
  for (size_t i = 0; i < count; i++) {
    size_t c = i % C;
    ru_store(out->data, ru_dt(out), i, get(&in[4], i) * get(&in[1], c) / sqrt(get(&in[3], c) + eps));
  }
  return RLX_OK;
}

RLX_CPU_KERNEL(BatchNormInferenceBackwardGamma) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 4, 4, out));
  RLX_TRY(need_x(n, in, out, 1, 3, "dy"));
  const rlx_shape *x = &in[0].shape;
  size_t C = (size_t)x->dims[x->rank - 1];
  RLX_TRY(need_vec(n, in, 1, "mean", C));
  RLX_TRY(need_vec(n, in, 2, "var", C));
  RLX_TRY(need_out_vec(n, out, C));
  double eps = n->attrs.BatchNormInferenceBackwardGamma.eps, *acc = NULL;
  RLX_TRY(rb_calloc(n, C ? C : 1, sizeof *acc, &acc));
  size_t count = rlx_tensor_numel(&in[0]);
  for (size_t i = 0; i < count; i++) {
    size_t c = i % C;
    acc[c] += get(&in[3], i) * (get(&in[0], i) - get(&in[1], c));
  }
  for (size_t c = 0; c < C; c++) acc[c] /= sqrt(get(&in[2], c) + eps);
  rb_store_all(out, acc);
  free(acc);
  return RLX_OK;
}

RLX_CPU_KERNEL(BatchNormInferenceBackwardBeta) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 1, 1, out));
  RLX_TRY(rb_need_float(n, in, 0, "dy"));
  RLX_TRY(ru_need_dtype(n, in, 0, ru_dt(out)));
  const rlx_shape *x = &in[0].shape;
  if (x->rank == 0)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 0 (dy) is a scalar; its last axis holds the features");
  size_t C = (size_t)x->dims[x->rank - 1];
  RLX_TRY(need_out_vec(n, out, C));
  double *acc = NULL;
  RLX_TRY(rb_calloc(n, C ? C : 1, sizeof *acc, &acc));
  size_t count = rlx_tensor_numel(&in[0]);
  for (size_t i = 0; i < count; i++) acc[i % C] += get(&in[0], i);
  rb_store_all(out, acc);
  free(acc);
  return RLX_OK;
}

/* ======================================================================================
 * AdaLayerNorm and GatedResidual (packed outputs)
 * ====================================================================================== */

/* Operand i has x's dtype and broadcasts onto x. */
static rlx_status need_bcast_operand(const rlx_node *n, const rlx_tensor *in, uint32_t i) {
  RLX_TRY(ru_need_dtype(n, in, i, ru_dt(&in[0])));
  return ru_need_bcast(n, in, i, &in[0].shape);
}

/* The output is 1-D with `total` elements. */
static rlx_status need_packed(const rlx_node *n, const rlx_tensor *out, size_t total) {
  int64_t d = (int64_t)total;
  return ru_need_out_dims(n, out, 1, &d);
}

RLX_CPU_KERNEL(AdaLayerNormBackward) {
  (void)ctx;
  const rlx_attrs_AdaLayerNormBackward *a = &n->attrs.AdaLayerNormBackward;
  RLX_TRY(ru_prologue(n, in, n_in, 4, 4, out));
  RLX_TRY(need_x(n, in, out, 1, 3, "dy"));
  int kind = a->norm;
  if (kind != RLX_ADA_NORM_LAYER_NORM && kind != RLX_ADA_NORM_RMS_NORM)
    return ru_error(RLX_ERR_INVALID_ARG, n, "attribute norm: %d is not an AdaNormKind", kind);
  RLX_TRY(need_bcast_operand(n, in, 1));
  RLX_TRY(need_bcast_operand(n, in, 2));
  const rlx_shape *x = &in[0].shape;
  size_t nx = rlx_tensor_numel(&in[0]), ns = rlx_tensor_numel(&in[1]), nh = rlx_tensor_numel(&in[2]);
  RLX_TRY(need_packed(n, out, nx + ns + nh));
  bool rms = kind == RLX_ADA_NORM_RMS_NORM;
  size_t D = (size_t)x->dims[x->rank - 1], rows = D ? nx / D : 0;
  double *acc, *s = NULL, *dx = NULL;
  RLX_TRY(rb_calloc(n, nx + ns + nh, sizeof *acc, &acc));
  rlx_status st = rb_alloc(n, D, sizeof *s, &s);
  if (!st) st = rb_alloc(n, D, sizeof *dx, &dx);
  double *dscale = acc + nx, *dshift = acc + nx + ns;
  for (size_t r = 0; r < rows && !st; r++) {
    double mean, rr;
    stats(&in[0], r * D, 1, D, a->eps, rms, &mean, &rr);
    for (size_t j = 0; j < D; j++) {
      size_t i = r * D + j, si = rlx_broadcast_offset(&in[1].shape, x, i),
             hi = rlx_broadcast_offset(&in[2].shape, x, i);
      double g = get(&in[3], i), xh = (get(&in[0], i) - mean) * rr;
      dshift[hi] += g;
      dscale[si] += g * xh;
      s[j] = g * (1.0 + get(&in[1], si));
    }
    line_dx(&in[0], r * D, D, s, a->eps, rms, dx);
    for (size_t j = 0; j < D; j++) acc[r * D + j] = dx[j];
  }
  if (!st) rb_store_all(out, acc);
  free(acc);
  free(s);
  free(dx);
  return st;
}

RLX_CPU_KERNEL(GatedResidualBackward) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 4, 4, out));
  RLX_TRY(need_x(n, in, out, 1, 3, "dy"));
  RLX_TRY(ru_need_dtype(n, in, 1, ru_dt(out)));
  const rlx_shape *x = &in[0].shape;
  if (!rlx_shape_equal(&in[1].shape, x))
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 1 (y) has shape %s; it must equal operand 0 (x) %s",
                    ru_fmt(&in[1].shape), ru_fmt(x));
  RLX_TRY(need_bcast_operand(n, in, 2));
  size_t nx = rlx_tensor_numel(&in[0]), ng = rlx_tensor_numel(&in[2]);
  RLX_TRY(need_packed(n, out, 2 * nx + ng));
  double *dgate = NULL;
  RLX_TRY(rb_calloc(n, ng ? ng : 1, sizeof *dgate, &dgate));
  rlx_dtype t = ru_dt(out);
  for (size_t i = 0; i < nx; i++) {
    size_t gi = rlx_broadcast_offset(&in[2].shape, x, i);
    double g = get(&in[3], i);
    ru_store(out->data, t, i, g);
    ru_store(out->data, t, nx + i, g * get(&in[2], gi));
    dgate[gi] += g * get(&in[1], i);
  }
  for (size_t i = 0; i < ng; i++) ru_store(out->data, t, 2 * nx + i, dgate[i]);
  free(dgate);
  return RLX_OK;
}
