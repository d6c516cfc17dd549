/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* CPU reference kernels: element quantization (spec ir-special §1.4) — Quantize, Dequantize,
 * FakeQuantize (PerBatch / EMA / Fixed), FakeQuantizeBackward (every STE kind), FakeQuantizeLSQ and
 * its two backwards — and the int8-domain QMatMul / QConv2d with exact integer accumulation.
 *
 * Arithmetic is in double, results rounded once to the output dtype. Rounding (spec §9.1, decided
 * per op): Quantize, QMatMul and QConv2d round half away from zero (C round); the FakeQuantize
 * family rounds half to even, like the IR's Activation Round that its shared decomposition uses.
 * Quantize maps NaN to the zero point; infinities saturate. FakeQuantize with EMA computes the
 * blended scale from the state operand but does not write the state back (the executor has no
 * in-place operands; ir-decisions). QConv2d padding contributes x_zp (real zero). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/ref/ref_util_b.h"

/* ======================================================================================
 * Shared helpers
 * ====================================================================================== */

static double qmax_of(int64_t bits) { return bits == 8 ? 127.0 : bits == 4 ? 7.0 : bits == 2 ? 1.0 : 0.0; }

static rlx_status need_qmax(const rlx_node *n, int64_t bits, double *q) {
  *q = qmax_of(bits);
  if (*q == 0.0) return ru_error(RLX_ERR_INVALID_ARG, n, "attribute bits is %lld; use 8, 4 or 2", (long long)bits);
  return RLX_OK;
}

/* Channel geometry of x around `axis`: element i is in channel (i / inner) % chan. */
typedef struct chan_geom {
  size_t outer, chan, inner, numel;
} chan_geom;

static rlx_status chan_of(const rlx_node *n, const rlx_shape *x, int64_t axis, bool need_axis, chan_geom *g) {
  g->numel = ru_numel(x);
  g->outer = 1, g->chan = 1, g->inner = g->numel;
  if (!need_axis) return RLX_OK;
  uint32_t ax;
  RLX_TRY(ru_axis(n, "axis", axis, x->rank, &ax));
  ru_split_axis(x, ax, &g->outer, &g->chan, &g->inner);
  return RLX_OK;
}
static size_t chan_at(const chan_geom *g, size_t i) { return g->inner ? (i / g->inner) % (g->chan ? g->chan : 1) : 0; }

static double round_even(double v) { return nearbyint(v); } /* default rounding mode: half to even */
static double clampd(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }

/* Per-channel max |x| (NaN-ignoring) into amax[chan]. */
static void chan_amax(const rlx_tensor *x, const chan_geom *g, double *amax) {
  for (size_t c = 0; c < g->chan; c++) amax[c] = 0.0;
  rlx_dtype t = ru_dt(x);
  for (size_t i = 0; i < g->numel; i++) {
    double a = fabs(rlx_elem_get(x->data, t, i));
    size_t c = chan_at(g, i);
    if (a > amax[c]) amax[c] = a;
  }
}

/* A per-channel operand (1 element or one per channel), value for channel c. */
static double chan_value(const rlx_tensor *t, size_t c) {
  size_t k = rlx_tensor_numel(t);
  return rlx_elem_get(t->data, ru_dt(t), k == 1 ? 0 : c);
}
static rlx_status need_chan_operand(const rlx_node *n, const rlx_tensor *in, uint32_t i, const chan_geom *g,
                                    const char *what) {
  size_t k = rlx_tensor_numel(&in[i]);
  RLX_TRY(rb_need_float(n, in, i, what));
  if (k != 1 && k != g->chan)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand %u (%s) has %zu elements; expected 1 or %zu (one per channel)", i,
                    what, k, g->chan);
  return RLX_OK;
}

/* ======================================================================================
 * Quantize / Dequantize
 * ====================================================================================== */

static rlx_status qparams(const rlx_node *n, const rlx_flist *scales, const rlx_ilist *zps, const chan_geom *g) {
  if (scales->n != 1 && scales->n != g->chan)
    return ru_error(RLX_ERR_INVALID_ARG, n, "attribute scales has %u entries; expected 1 or %zu", scales->n, g->chan);
  if (zps->n > 1 && zps->n != scales->n)
    return ru_error(RLX_ERR_INVALID_ARG, n, "attribute zero_points has %u entries; expected 0, 1 or %u", zps->n,
                    scales->n);
  return RLX_OK;
}
static double scale_at(const rlx_flist *s, size_t c) { return (double)s->v[s->n == 1 ? 0 : c]; }
static int64_t zp_at(const rlx_ilist *z, size_t c) { return z->n == 0 ? 0 : z->v[z->n == 1 ? 0 : c]; }

RLX_CPU_KERNEL(Quantize) {
  (void)ctx;
  const rlx_attrs_Quantize *a = &n->attrs.Quantize;
  RLX_TRY(ru_prologue(n, in, n_in, 1, 1, out));
  RLX_TRY(rb_need_float(n, in, 0, "x"));
  chan_geom g;
  RLX_TRY(chan_of(n, &in[0].shape, a->axis, a->scales.n > 1, &g));
  RLX_TRY(qparams(n, &a->scales, &a->zero_points, &g));
  rlx_dtype t = ru_dt(&in[0]);
  int8_t *q = out->data;
  for (size_t i = 0; i < g.numel; i++) {
    size_t c = chan_at(&g, i);
    double x = rlx_elem_get(in[0].data, t, i), zp = (double)zp_at(&a->zero_points, c);
    double v = isnan(x) ? zp : round(x * (1.0 / scale_at(&a->scales, c))) + zp;
    q[i] = (int8_t)clampd(v, -128.0, 127.0);
  }
  return RLX_OK;
}

RLX_CPU_KERNEL(Dequantize) {
  (void)ctx;
  const rlx_attrs_Dequantize *a = &n->attrs.Dequantize;
  RLX_TRY(ru_prologue(n, in, n_in, 1, 1, out));
  RLX_TRY(ru_need_dtype(n, in, 0, RLX_I8));
  chan_geom g;
  RLX_TRY(chan_of(n, &in[0].shape, a->axis, a->scales.n > 1, &g));
  RLX_TRY(qparams(n, &a->scales, &a->zero_points, &g));
  const int8_t *q = in[0].data;
  for (size_t i = 0; i < g.numel; i++) {
    size_t c = chan_at(&g, i);
    ru_store(out->data, ru_dt(out), i, (double)(q[i] - zp_at(&a->zero_points, c)) * scale_at(&a->scales, c));
  }
  return RLX_OK;
}

/* ======================================================================================
 * FakeQuantize family
 * ====================================================================================== */

/* Per-channel scales s[chan] of a FakeQuantize forward. */
static rlx_status fq_scales(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, int32_t mode, double decay,
                            double qmax, const chan_geom *g, double *s) {
  bool stateful = mode != RLX_SCALE_MODE_PER_BATCH;
  if (stateful && n_in < 2)
    return ru_error(RLX_ERR_INVALID_ARG, n, "scale_mode %s needs operand 1 (state)", rlx_enum_scale_mode.names[mode]);
  if (stateful) RLX_TRY(need_chan_operand(n, in, 1, g, "state"));
  if (mode != RLX_SCALE_MODE_FIXED) chan_amax(&in[0], g, s);
  for (size_t c = 0; c < g->chan; c++) {
    double cur = mode != RLX_SCALE_MODE_FIXED ? fmax(s[c] / qmax, 1e-12) : 0.0;
    if (mode == RLX_SCALE_MODE_PER_BATCH)
      s[c] = cur;
    else if (mode == RLX_SCALE_MODE_FIXED)
      s[c] = fmax(chan_value(&in[1], c), 1e-12);
    else {
      double st = chan_value(&in[1], c);
      s[c] = st <= 0.0 ? cur : decay * st + (1.0 - decay) * cur;
    }
  }
  return RLX_OK;
}

RLX_CPU_KERNEL(FakeQuantize) {
  (void)ctx;
  const rlx_attrs_FakeQuantize *a = &n->attrs.FakeQuantize;
  RLX_TRY(ru_prologue(n, in, n_in, 1, 2, out));
  RLX_TRY(rb_need_float(n, in, 0, "x"));
  double qmax;
  RLX_TRY(need_qmax(n, a->bits, &qmax));
  chan_geom g;
  RLX_TRY(chan_of(n, &in[0].shape, a->axis, true, &g));
  double *s = NULL;
  RLX_TRY(rb_alloc(n, g.chan ? g.chan : 1, sizeof *s, &s));
  rlx_status st = fq_scales(n, in, n_in, a->scale_mode, (double)a->decay, qmax, &g, s);
  rlx_dtype t = ru_dt(&in[0]);
  for (size_t i = 0; st == RLX_OK && i < g.numel; i++) {
    double sc = s[chan_at(&g, i)], x = rlx_elem_get(in[0].data, t, i);
    ru_store(out->data, ru_dt(out), i, clampd(round_even(x / sc), -qmax, qmax) * sc);
  }
  free(s);
  return st;
}

/* [x, dy] -> dx with the PerBatch scale re-derived from x (spec §1.4). */
RLX_CPU_KERNEL(FakeQuantizeBackward) {
  (void)ctx;
  const rlx_attrs_FakeQuantizeBackward *a = &n->attrs.FakeQuantizeBackward;
  RLX_TRY(ru_prologue(n, in, n_in, 2, 2, out));
  RLX_TRY(rb_need_float(n, in, 0, "x"));
  RLX_TRY(rb_need_float(n, in, 1, "dy"));
  if (ru_numel(&in[1].shape) != ru_numel(&in[0].shape))
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 1 (dy) %s must have x's shape %s", ru_fmt(&in[1].shape),
                    ru_fmt(&in[0].shape));
  double qmax;
  RLX_TRY(need_qmax(n, a->bits, &qmax));
  chan_geom g;
  RLX_TRY(chan_of(n, &in[0].shape, a->axis, true, &g));
  double *s = NULL;
  RLX_TRY(rb_alloc(n, g.chan ? g.chan : 1, sizeof *s, &s));
  rlx_status st = fq_scales(n, in, 1, RLX_SCALE_MODE_PER_BATCH, 0.0, qmax, &g, s);
  rlx_dtype tx = ru_dt(&in[0]), td = ru_dt(&in[1]);
  for (size_t i = 0; st == RLX_OK && i < g.numel; i++) {
    double sc = s[chan_at(&g, i)], x = rlx_elem_get(in[0].data, tx, i), dy = rlx_elem_get(in[1].data, td, i), v;
    switch (a->ste) {
    case RLX_STE_CLIPPED_IDENTITY: v = fabs(x) <= qmax * sc ? dy : 0.0; break;
    case RLX_STE_TANH: {
      double th = tanh(x / sc);
      v = dy * (1.0 - th * th);
      break;
    }
    case RLX_STE_HARD_TANH: v = dy * fmax(0.0, 1.0 - fabs(x) / (qmax * sc)); break;
    default: v = dy; break;
    }
    ru_store(out->data, ru_dt(out), i, v);
  }
  free(s);
  return st;
}

/* LSQ: s = max(scale[c], 1e-12); z = x / s. */
static rlx_status lsq_setup(const rlx_node *n, const rlx_tensor *in, int64_t bits, int64_t axis, double *qmax,
                            chan_geom *g) {
  RLX_TRY(rb_need_float(n, in, 0, "x"));
  RLX_TRY(need_qmax(n, bits, qmax));
  RLX_TRY(chan_of(n, &in[0].shape, axis, true, g));
  return need_chan_operand(n, in, 1, g, "scale");
}
static double lsq_scale(const rlx_tensor *scale, size_t c) { return fmax(chan_value(scale, c), 1e-12); }

RLX_CPU_KERNEL(FakeQuantizeLSQ) {
  (void)ctx;
  const rlx_attrs_FakeQuantizeLSQ *a = &n->attrs.FakeQuantizeLSQ;
  RLX_TRY(ru_prologue(n, in, n_in, 2, 2, out));
  double qmax;
  chan_geom g;
  RLX_TRY(lsq_setup(n, in, a->bits, a->axis, &qmax, &g));
  rlx_dtype t = ru_dt(&in[0]);
  for (size_t i = 0; i < g.numel; i++) {
    double s = lsq_scale(&in[1], chan_at(&g, i)), x = rlx_elem_get(in[0].data, t, i);
    ru_store(out->data, ru_dt(out), i, clampd(round_even(x / s), -qmax, qmax) * s);
  }
  return RLX_OK;
}

RLX_CPU_KERNEL(FakeQuantizeLSQBackwardX) {
  (void)ctx;
  const rlx_attrs_FakeQuantizeLSQBackwardX *a = &n->attrs.FakeQuantizeLSQBackwardX;
  RLX_TRY(ru_prologue(n, in, n_in, 3, 3, out));
  double qmax;
  chan_geom g;
  RLX_TRY(lsq_setup(n, in, a->bits, a->axis, &qmax, &g));
  RLX_TRY(rb_need_float(n, in, 2, "dy"));
  rlx_dtype t = ru_dt(&in[0]), td = ru_dt(&in[2]);
  for (size_t i = 0; i < g.numel; i++) {
    double z = rlx_elem_get(in[0].data, t, i) / lsq_scale(&in[1], chan_at(&g, i));
    ru_store(out->data, ru_dt(out), i, fabs(z) <= qmax ? rlx_elem_get(in[2].data, td, i) : 0.0);
  }
  return RLX_OK;
}

RLX_CPU_KERNEL(FakeQuantizeLSQBackwardScale) {
  (void)ctx;
  const rlx_attrs_FakeQuantizeLSQBackwardScale *a = &n->attrs.FakeQuantizeLSQBackwardScale;
  RLX_TRY(ru_prologue(n, in, n_in, 3, 3, out));
  double qmax;
  chan_geom g;
  RLX_TRY(lsq_setup(n, in, a->bits, a->axis, &qmax, &g));
  RLX_TRY(rb_need_float(n, in, 2, "dy"));
  size_t ns = rlx_tensor_numel(&in[1]);
  double *acc = NULL;
  RLX_TRY(rb_calloc(n, ns ? ns : 1, sizeof *acc, &acc));
  rlx_dtype t = ru_dt(&in[0]), td = ru_dt(&in[2]);
  for (size_t i = 0; i < g.numel; i++) {
    size_t c = chan_at(&g, i);
    double z = rlx_elem_get(in[0].data, t, i) / lsq_scale(&in[1], c), dy = rlx_elem_get(in[2].data, td, i);
    double psi = z > qmax ? qmax : z < -qmax ? -qmax : round_even(z) - z;
    acc[ns == 1 ? 0 : c] += psi * dy;
  }
  for (size_t c = 0; c < ns; c++) ru_store(out->data, ru_dt(out), c, acc[c]);
  free(acc);
  return RLX_OK;
}

/* ======================================================================================
 * QMatMul / QConv2d: int8 operands, exact int64 accumulation, requantize
 * ====================================================================================== */

static int8_t requant(int64_t acc, double mult, int64_t out_zp) {
  return (int8_t)clampd(round((double)acc * mult) + (double)out_zp, -128.0, 127.0);
}

RLX_CPU_KERNEL(QMatMul) {
  (void)ctx;
  const rlx_attrs_QMatMul *a = &n->attrs.QMatMul;
  RLX_TRY(ru_prologue(n, in, n_in, 3, 3, out));
  RLX_TRY(ru_need_dtype(n, in, 0, RLX_I8));
  RLX_TRY(ru_need_dtype(n, in, 1, RLX_I8));
  RLX_TRY(ru_need_dtype(n, in, 2, RLX_I32));
  const rlx_shape *xs = &in[0].shape, *ws = &in[1].shape;
  if (xs->rank != 2 || ws->rank != 2 || ws->dims[0] != xs->dims[1] || in[2].shape.rank != 1 ||
      in[2].shape.dims[0] != ws->dims[1])
    return ru_error(RLX_ERR_INVALID_ARG, n, "operands x %s, w %s, bias %s must be [M, K], [K, N], [N]", ru_fmt(xs),
                    ru_fmt(ws), ru_fmt(&in[2].shape));
  size_t M = (size_t)xs->dims[0], K = (size_t)xs->dims[1], N = (size_t)ws->dims[1];
  const int8_t *x = in[0].data, *w = in[1].data;
  const int32_t *bias = in[2].data;
  int8_t *y = out->data;
  for (size_t i = 0; i < M; i++)
    for (size_t j = 0; j < N; j++) {
      int64_t acc = bias[j];
      for (size_t k = 0; k < K; k++) acc += (int64_t)(x[i * K + k] - a->x_zp) * (int64_t)(w[k * N + j] - a->w_zp);
      y[i * N + j] = requant(acc, (double)a->mult, a->out_zp);
    }
  return RLX_OK;
}

static int64_t geom_at(const rlx_ilist *l, int i, int64_t def) { return l->n == 2 ? l->v[i] : def; }

RLX_CPU_KERNEL(QConv2d) {
  (void)ctx;
  const rlx_attrs_QConv2d *a = &n->attrs.QConv2d;
  RLX_TRY(ru_prologue(n, in, n_in, 3, 3, out));
  RLX_TRY(ru_need_dtype(n, in, 0, RLX_I8));
  RLX_TRY(ru_need_dtype(n, in, 1, RLX_I8));
  RLX_TRY(ru_need_dtype(n, in, 2, RLX_I32));
  const rlx_shape *xs = &in[0].shape, *ws = &in[1].shape, *os = &out->shape;
  int64_t G = a->groups;
  if (xs->rank != 4 || ws->rank != 4 || os->rank != 4 || G < 1 || xs->dims[1] % G || ws->dims[0] % G ||
      ws->dims[1] * G != xs->dims[1])
    return ru_error(RLX_ERR_INVALID_ARG, n, "operands x %s and w %s do not fit groups %lld", ru_fmt(xs), ru_fmt(ws),
                    (long long)G);
  int64_t N = xs->dims[0], Ci = xs->dims[1], H = xs->dims[2], W = xs->dims[3];
  int64_t Co = ws->dims[0], Cg = ws->dims[1], kh = ws->dims[2], kw = ws->dims[3];
  int64_t sh = geom_at(&a->stride, 0, 1), sw = geom_at(&a->stride, 1, 1);
  int64_t dh = geom_at(&a->dilation, 0, 1), dw = geom_at(&a->dilation, 1, 1);
  int64_t ph = 0, pw = 0;
  if (a->padding.n == 2 || a->padding.n == 4) ph = a->padding.v[0], pw = a->padding.v[1];
  int64_t Ho = os->dims[2], Wo = os->dims[3], cog = Co / G;
  const int8_t *x = in[0].data, *w = in[1].data;
  const int32_t *bias = in[2].data;
  int8_t *y = out->data;
  for (int64_t b = 0; b < N; b++)
    for (int64_t co = 0; co < Co; co++) {
      int64_t g = co / cog;
      for (int64_t oh = 0; oh < Ho; oh++)
        for (int64_t ow = 0; ow < Wo; ow++) {
          int64_t acc = bias[co];
          for (int64_t ci = 0; ci < Cg; ci++)
            for (int64_t r = 0; r < kh; r++)
              for (int64_t s = 0; s < kw; s++) {
                int64_t ih = oh * sh - ph + r * dh, iw = ow * sw - pw + s * dw;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue; /* padding = x_zp: contributes 0 */
                int64_t xv = x[((b * Ci + g * Cg + ci) * H + ih) * W + iw] - a->x_zp;
                int64_t wv = w[((co * Cg + ci) * kh + r) * kw + s] - a->w_zp;
                acc += xv * wv;
              }
          y[((b * Co + co) * Ho + oh) * Wo + ow] = requant(acc, (double)a->mult, a->out_zp);
        }
    }
  return RLX_OK;
}
