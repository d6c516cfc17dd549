/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* CPU reference kernels: normalisation and the DiT modulation blocks (spec ir-core §10.4, §10.12).
 *
 * Every float dtype (f32, f64, f16, bf16) is read into double; statistics and the affine map are
 * computed in double (two-pass mean / biased variance) and each result is rounded once to the
 * output dtype. Parameter vectors (gamma, beta, mean, var) are read flat: any shape holding
 * exactly C elements is accepted ([C], [1, 1, C], ...). */
#include <complex.h>
#ifndef CMPLX /* glibc defines CMPLX for gcc only */
#define CMPLX(x, y) __builtin_complex((double)(x), (double)(y))
#endif
#include <math.h>

#include "backends/cpu/ref/ref_util_b.h"

/* x (operand 0) is a float tensor of the output's dtype and dims. */
static rlx_status need_x(const rlx_node *n, const rlx_tensor *in, const rlx_tensor *out, uint32_t min_rank) {
  RLX_TRY(rb_need_float(n, in, 0, "x"));
  RLX_TRY(ru_need_dtype(n, in, 0, ru_dt(out)));
  if (in[0].shape.rank < min_rank)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 0 (x) has shape %s; it needs rank >= %u", ru_fmt(&in[0].shape),
                    min_rank);
  return ru_need_out_dims(n, out, in[0].shape.rank, in[0].shape.dims);
}

/* Operands first..first+count-1 hold exactly c elements of x's dtype. */
static rlx_status need_params(const rlx_node *n, const rlx_tensor *in, uint32_t first, uint32_t count,
                              const char *const *names, size_t c) {
  for (uint32_t i = first; i < first + count; i++) {
    RLX_TRY(ru_need_dtype(n, in, i, ru_dt(&in[0])));
    if (in[i].shape.rank == 0 || rlx_tensor_numel(&in[i]) != c)
      return ru_error(RLX_ERR_INVALID_ARG, n, "operand %u (%s) has shape %s; expected %zu elements (one per channel)",
                      i, names[i - first], ru_fmt(&in[i].shape), c);
  }
  return RLX_OK;
}

static const char *const gamma_beta[] = {"gamma", "beta"};

static double get(const rlx_tensor *t, size_t i) { return rlx_elem_get(t->data, ru_dt(t), i); }

/* Mean and 1/sqrt(var + eps) (LayerNorm) or 1/sqrt(mean(x^2) + eps) (RmsNorm, mean = 0) of the
 * `len` elements of x at base, base + stride, ... */
static void line_stats(const rlx_tensor *x, size_t base, size_t stride, size_t len, double eps, bool rms, double *mean,
                       double *inv) {
  double m = 0.0, v = 0.0;
  if (!rms) {
    for (size_t i = 0; i < len; i++) m += get(x, base + i * stride);
    m /= (double)len;
  }
  for (size_t i = 0; i < len; i++) {
    double d = get(x, base + i * stride) - m;
    v += d * d;
  }
  v /= (double)len;
  *mean = m;
  *inv = 1.0 / sqrt(v + eps);
}

/* Normalises every line of `len` elements (start base, stride) and applies gamma/beta per element
 * position along the line. */
static void norm_line(const rlx_tensor *x, rlx_tensor *out, size_t base, size_t stride, size_t len, double eps,
                      bool rms, const rlx_tensor *g, const rlx_tensor *b) {
  double mean, inv;
  line_stats(x, base, stride, len, eps, rms, &mean, &inv);
  for (size_t i = 0; i < len; i++) {
    size_t o = base + i * stride;
    double y = (get(x, o) - mean) * inv;
    ru_store(out->data, ru_dt(out), o, y * get(g, i) + get(b, i));
  }
}

/* LayerNorm / RmsNorm over the last axis. RmsNorm may declare [prod(leading), C] for x [..., C]
 * (a folded Reshape); the data layout is the same. */
static rlx_status last_axis(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, rlx_tensor *out, double eps,
                            bool rms) {
  RLX_TRY(ru_prologue(n, in, n_in, 3, 3, out));
  const rlx_shape *x = &in[0].shape;
  bool folded = rms && out->shape.rank == 2 && x->rank > 2 && out->shape.dims[1] == x->dims[x->rank - 1] &&
                rlx_tensor_numel(out) == rlx_tensor_numel(&in[0]);
  if (folded) {
    RLX_TRY(rb_need_float(n, in, 0, "x"));
    RLX_TRY(ru_need_dtype(n, in, 0, ru_dt(out)));
  } else {
    RLX_TRY(need_x(n, in, out, 1));
  }
  size_t C = (size_t)x->dims[x->rank - 1];
  RLX_TRY(need_params(n, in, 1, 2, gamma_beta, C));
  if (C == 0) return RLX_OK;
  size_t rows = rlx_tensor_numel(&in[0]) / C;
  for (size_t r = 0; r < rows; r++) norm_line(&in[0], out, r * C, 1, C, eps, rms, &in[1], &in[2]);
  return RLX_OK;
}

RLX_CPU_KERNEL(LayerNorm) {
  (void)ctx;
  return last_axis(n, in, n_in, out, n->attrs.LayerNorm.eps, false);
}

RLX_CPU_KERNEL(RmsNorm) {
  (void)ctx;
  return last_axis(n, in, n_in, out, n->attrs.RmsNorm.eps, true);
}

/* x [N, C, H, W]: at every (n, h, w) normalise the C values. */
RLX_CPU_KERNEL(LayerNorm2d) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 3, 3, out));
  RLX_TRY(need_x(n, in, out, 4));
  const rlx_shape *x = &in[0].shape;
  if (x->rank != 4) return ru_error(RLX_ERR_INVALID_ARG, n, "operand 0 (x) has shape %s; expected NCHW", ru_fmt(x));
  size_t N = (size_t)x->dims[0], C = (size_t)x->dims[1], HW = rb_prod(x, 2, 4);
  RLX_TRY(need_params(n, in, 1, 2, gamma_beta, C));
  if (C == 0) return RLX_OK;
  for (size_t b = 0; b < N; b++)
    for (size_t p = 0; p < HW; p++)
      norm_line(&in[0], out, b * C * HW + p, HW, C, n->attrs.LayerNorm2d.eps, false, &in[1], &in[2]);
  return RLX_OK;
}

/* x [N, C, spatial...]: statistics over each group of C/G consecutive channels and all spatial
 * positions; affine per channel. */
RLX_CPU_KERNEL(GroupNorm) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 3, 3, out));
  RLX_TRY(need_x(n, in, out, 3));
  const rlx_shape *x = &in[0].shape;
  int64_t G = n->attrs.GroupNorm.num_groups;
  size_t N = (size_t)x->dims[0], C = (size_t)x->dims[1], S = rb_prod(x, 2, x->rank);
  if (G < 1 || (C % (uint64_t)G) != 0)
    return ru_error(RLX_ERR_INVALID_ARG, n, "attribute num_groups is %lld; it must be >= 1 and divide C = %zu",
                    (long long)G, C);
  RLX_TRY(need_params(n, in, 1, 2, gamma_beta, C));
  size_t cg = C / (size_t)G, len = cg * S;
  if (len == 0) return RLX_OK;
  double eps = n->attrs.GroupNorm.eps;
  rlx_dtype t = ru_dt(out);
  for (size_t b = 0; b < N; b++)
    for (size_t g = 0; g < (size_t)G; g++) {
      size_t base = (b * C + g * cg) * S;
      double mean, inv;
      line_stats(&in[0], base, 1, len, eps, false, &mean, &inv);
      for (size_t i = 0; i < len; i++) {
        size_t c = g * cg + i / S;
        double y = (get(&in[0], base + i) - mean) * inv;
        ru_store(out->data, t, base + i, y * get(&in[1], c) + get(&in[2], c));
      }
    }
  return RLX_OK;
}

/* Frozen statistics; the feature axis is the LAST axis of x. */
RLX_CPU_KERNEL(BatchNormInference) {
  (void)ctx;
  static const char *const names[] = {"gamma", "beta", "mean", "var"};
  RLX_TRY(ru_prologue(n, in, n_in, 5, 5, out));
  RLX_TRY(need_x(n, in, out, 1));
  const rlx_shape *x = &in[0].shape;
  size_t C = (size_t)x->dims[x->rank - 1];
  RLX_TRY(need_params(n, in, 1, 4, names, C));
  double eps = n->attrs.BatchNormInference.eps;
  size_t count = rlx_tensor_numel(&in[0]);
  rlx_dtype t = ru_dt(out);
  for (size_t i = 0; i < count; i++) {
    size_t c = i % C;
    double y = get(&in[1], c) * (get(&in[0], i) - get(&in[3], c)) / sqrt(get(&in[4], c) + eps) + get(&in[2], c);
    ru_store(out->data, t, i, y);
  }
  return RLX_OK;
}

/* norm(x) * (1 + scale) + shift; norm = LayerNorm or RmsNorm over the last axis, no affine;
 * scale and shift broadcast onto x. */
RLX_CPU_KERNEL(AdaLayerNorm) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 3, 3, out));
  RLX_TRY(need_x(n, in, out, 1));
  const rlx_shape *x = &in[0].shape;
  int kind = n->attrs.AdaLayerNorm.norm;
  if (kind != RLX_ADA_NORM_LAYER_NORM && kind != RLX_ADA_NORM_RMS_NORM)
    return ru_error(RLX_ERR_INVALID_ARG, n, "attribute norm: %d is not an AdaNormKind", kind);
  for (uint32_t i = 1; i < 3; i++) {
    RLX_TRY(ru_need_dtype(n, in, i, ru_dt(out)));
    RLX_TRY(ru_need_bcast(n, in, i, x));
  }
  size_t D = (size_t)x->dims[x->rank - 1];
  if (D == 0) return RLX_OK;
  size_t rows = rlx_tensor_numel(&in[0]) / D;
  double eps = n->attrs.AdaLayerNorm.eps;
  rlx_dtype t = ru_dt(out);
  for (size_t r = 0; r < rows; r++) {
    double mean, inv;
    line_stats(&in[0], r * D, 1, D, eps, kind == RLX_ADA_NORM_RMS_NORM, &mean, &inv);
    for (size_t j = 0; j < D; j++) {
      size_t i = r * D + j;
      double sc = get(&in[1], rlx_broadcast_offset(&in[1].shape, x, i));
      double sh = get(&in[2], rlx_broadcast_offset(&in[2].shape, x, i));
      ru_store(out->data, t, i, (get(&in[0], i) - mean) * inv * (1.0 + sc) + sh);
    }
  }
  return RLX_OK;
}

/* x + gate * y; y has x's shape, gate broadcasts onto x. Floats in double, integers exactly in
 * int64 with saturation, complex in double complex. */
RLX_CPU_KERNEL(GatedResidual) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 3, 3, out));
  rlx_dtype t = ru_dt(out);
  const rlx_shape *x = &in[0].shape;
  for (uint32_t i = 0; i < 3; i++) RLX_TRY(ru_need_dtype(n, in, i, t));
  RLX_TRY(ru_need_out_dims(n, out, x->rank, x->dims));
  if (!rlx_shape_equal(&in[1].shape, x))
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 1 (y) has shape %s; it must equal operand 0 (x) %s",
                    ru_fmt(&in[1].shape), ru_fmt(x));
  RLX_TRY(ru_need_bcast(n, in, 2, x));
  size_t count = rlx_tensor_numel(&in[0]);
  for (size_t i = 0; i < count; i++) {
    size_t gi = rlx_broadcast_offset(&in[2].shape, x, i);
    if (ru_is_complex(t)) {
      double xr, xi, yr, yi, gr, gim;
      rlx_elem_get_c(in[0].data, t, i, &xr, &xi);
      rlx_elem_get_c(in[1].data, t, i, &yr, &yi);
      rlx_elem_get_c(in[2].data, t, gi, &gr, &gim);
      double complex r = CMPLX(xr, xi) + CMPLX(gr, gim) * CMPLX(yr, yi);
      rlx_elem_set_c(out->data, t, i, creal(r), cimag(r));
    } else if (ru_is_intlike(t)) {
      int64_t r = rb_sat_add(rlx_elem_get_i64(in[0].data, t, i),
                             rb_sat_mul(rlx_elem_get_i64(in[2].data, t, gi), rlx_elem_get_i64(in[1].data, t, i)));
      ru_store_i64(out->data, t, i, r);
    } else {
      ru_store(out->data, t, i, get(&in[0], i) + get(&in[2], gi) * get(&in[1], i));
    }
  }
  return RLX_OK;
}
