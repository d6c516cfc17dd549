/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* ONNX Resize (opsets 10..19+) and Upsample (7..9). Nearest, linear and cubic interpolation are
 * separable, so each resized axis becomes Gathers with constant index lists, weighted by constant
 * per-position weights and summed: exact for every coordinate_transformation_mode and
 * nearest_mode. The common nearest 2x upsampling of NCHW maps to RLX's ResizeNearest2x. */
#include <math.h>
#include <string.h>

#include "io/onnx/onnx_internal.h"

typedef enum coord_mode {
  CM_HALF_PIXEL,
  CM_HALF_PIXEL_SYMMETRIC, /* opset 19 */
  CM_PYTORCH_HALF_PIXEL,
  CM_ALIGN_CORNERS,
  CM_ASYMMETRIC,
  CM_TF_HALF_PIXEL_NN,
  CM_TF_CROP
} coord_mode;
/* NM_SIMPLE (Upsample, Resize-10): round down when upsampling, up when downsampling */
typedef enum nearest_mode { NM_ROUND_PREFER_FLOOR, NM_ROUND_PREFER_CEIL, NM_FLOOR, NM_CEIL, NM_SIMPLE } nearest_mode;
typedef enum interp { IP_NEAREST, IP_LINEAR, IP_CUBIC } interp;

typedef struct rs_params {
  interp mode;
  coord_mode cm;
  nearest_mode nm;
  double cubic_a, extrapolation;
  bool exclude_outside;
  int keep_aspect; /* opset 18 keep_aspect_ratio_policy: 0 stretch, -1 not_larger, 1 not_smaller */
  bool antialias;  /* opset 18: linear / cubic filters widened by 1 / scale when downsampling */
} rs_params;

static double source_coord(const rs_params *p, double x, int64_t in, int64_t out, double scale, double r0, double r1) {
  switch (p->cm) {
  case CM_HALF_PIXEL: return (x + 0.5) / scale - 0.5;
  case CM_HALF_PIXEL_SYMMETRIC: { /* half_pixel about the centre of the unrounded output extent */
    double adjust = (double)out / ((double)in * scale), center = (double)in / 2;
    return center * (1 - adjust) + (x + 0.5) / scale - 0.5;
  }
  /* these use the unrounded output length in * scale (= out when sizes are given) */
  case CM_PYTORCH_HALF_PIXEL: return (double)in * scale > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
  case CM_ALIGN_CORNERS: return (double)in * scale == 1 ? 0.0 : x * (double)(in - 1) / ((double)in * scale - 1);
  case CM_ASYMMETRIC: return x / scale;
  case CM_TF_HALF_PIXEL_NN: return (x + 0.5) / scale;
  case CM_TF_CROP:
    return out > 1 ? r0 * (double)(in - 1) + x * (r1 - r0) * (double)(in - 1) / (double)(out - 1)
                   : 0.5 * (r0 + r1) * (double)(in - 1);
  }
  return 0;
}

static int64_t clampi(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

static void cubic_weights(double t, double a, double w[4]) {
  double s;
  s = t + 1, w[0] = ((a * s - 5 * a) * s + 8 * a) * s - 4 * a;
  s = t, w[1] = ((a + 2) * s - (a + 3)) * s * s + 1;
  s = 1 - t, w[2] = ((a + 2) * s - (a + 3)) * s * s + 1;
  s = 2 - t, w[3] = ((a * s - 5 * a) * s + 8 * a) * s - 4 * a;
}

/* Antialiased taps (opset 18, linear or cubic, scale < 1): the filter (triangle of support 1 or
 * cubic of support 2) stretched by 1 / scale around the source coordinate xo, over n =
 * 2 - 2 start taps at indices base + start + m (base = the nearest index at or left of xo,
 * one left when xo is integral), normalized to sum 1; edge indices clamp, or drop out with
 * exclude_outside. */
static int64_t aa_taps(const rs_params *p, double scale) {
  double support = p->mode == IP_LINEAR ? 1.0 : 2.0;
  int64_t start = (int64_t)floor(-support / scale) + 1;
  return 2 - 2 * start;
}

static void aa_weights(const rs_params *p, double xo, int64_t in, double scale, int64_t n, int64_t *idx, double *w) {
  double fl = floor(xo), ratio = xo == fl ? 1.0 : xo - fl, base = xo - ratio, sum = 0;
  int64_t start = 1 - n / 2;
  for (int64_t m = 0; m < n; m++) {
    double a = fabs(((double)(start + m) - ratio) * scale), c;
    if (p->mode == IP_LINEAR)
      c = a < 1 ? 1 - a : 0;
    else {
      double A = p->cubic_a;
      c = a <= 1 ? ((A + 2) * a - (A + 3)) * a * a + 1 : a < 2 ? ((A * a - 5 * A) * a + 8 * A) * a - 4 * A : 0;
    }
    int64_t j = (int64_t)base + start + m;
    if (p->exclude_outside && (j < 0 || j >= in)) c = 0;
    idx[m] = clampi(j, 0, in - 1);
    w[m] = c;
    sum += c;
  }
  for (int64_t m = 0; m < n; m++) w[m] = sum != 0 ? w[m] / sum : 0;
}

/* Resamples axis `ax` of x from `in` to `out` positions. */
static rlx_status resize_axis(oi_node *c, const rs_params *p, rlx_id x, uint32_t ax, int64_t out, double scale,
                              double r0, double r1, rlx_id *res) {
  const rlx_shape *xs = oi_shape(c, x);
  int64_t in = xs->dims[ax];
  uint32_t taps = p->mode == IP_NEAREST ? 1 : p->mode == IP_LINEAR ? 2 : 4;
  bool aa = p->antialias && p->mode != IP_NEAREST && scale < 1;
  if (aa) {
    int64_t n = aa_taps(p, scale);
    if (n > 1024) return oi_unsupported(c, "an antialiased downscale by %g (%lld filter taps)", scale, (long long)n);
    taps = (uint32_t)n;
  }
  if (out > ((int64_t)1 << 24) || (size_t)out * taps > ((size_t)1 << 26))
    return oi_unsupported(c, "a resized axis of %lld positions", (long long)out);
  int64_t *idx = oi_scratch(c, (size_t)(taps * out) * sizeof *idx);
  double *w = oi_scratch(c, (size_t)(taps * out) * sizeof *w);
  bool *outside = oi_scratch(c, (size_t)out * sizeof *outside);
  if (!idx || !w || !outside) return oi_nomem(c);
  bool identity = out == in, any_outside = false;
  for (int64_t o = 0; o < out; o++) {
    double xo = source_coord(p, (double)o, in, out, scale, r0, r1);
    outside[o] = p->cm == CM_TF_CROP && (xo < 0 || xo > (double)(in - 1));
    any_outside |= outside[o];
    if (aa) {
      aa_weights(p, xo, in, scale, taps, idx + (size_t)o * taps, w + (size_t)o * taps);
    } else if (p->mode == IP_NEAREST) {
      double r;
      switch (p->nm) {
      case NM_ROUND_PREFER_FLOOR: r = (xo == floor(xo) + 0.5) ? floor(xo) : round(xo); break;
      case NM_ROUND_PREFER_CEIL: r = (xo == floor(xo) + 0.5) ? ceil(xo) : round(xo); break;
      case NM_FLOOR: r = floor(xo); break;
      case NM_SIMPLE: r = scale < 1 ? ceil(xo) : trunc(xo); break;
      default: r = ceil(xo); break;
      }
      if (!isfinite(r)) r = 0;
      idx[o] = clampi((int64_t)r, 0, in - 1);
      w[o] = 1;
    } else if (p->mode == IP_LINEAR) {
      double xc = xo < 0 ? 0 : xo > (double)(in - 1) ? (double)(in - 1) : xo;
      int64_t x0 = (int64_t)floor(xc);
      int64_t x1 = x0 + 1 < in ? x0 + 1 : in - 1;
      double f = xc - (double)x0;
      idx[2 * o] = x0, idx[2 * o + 1] = x1;
      w[2 * o] = 1 - f, w[2 * o + 1] = f;
    } else {
      double fl = floor(xo), cw[4];
      cubic_weights(xo - fl, p->cubic_a, cw);
      double sum = 0;
      for (uint32_t k = 0; k < 4; k++) {
        int64_t j = (int64_t)fl - 1 + (int64_t)k;
        if (p->exclude_outside && (j < 0 || j >= in)) cw[k] = 0;
        sum += cw[k];
        idx[4 * o + k] = clampi(j, 0, in - 1);
      }
      for (uint32_t k = 0; k < 4; k++) w[4 * o + k] = p->exclude_outside && sum != 0 ? cw[k] / sum : cw[k];
    }
    for (uint32_t k = 0; k < taps && identity; k++)
      identity = w[taps * o + k] == 0 || (idx[taps * o + k] == o && w[taps * o + k] == 1);
  }
  if (identity && !any_outside) {
    *res = x;
    return RLX_OK;
  }
  rlx_dtype t = (rlx_dtype)xs->dtype;
  rlx_dim od = out;
  rlx_id y = RLX_NO_ID;
  int64_t *col = oi_scratch(c, (size_t)out * sizeof *col);
  double *wc = oi_scratch(c, (size_t)out * sizeof *wc);
  if (!col || !wc) return oi_nomem(c);
  for (uint32_t k = 0; k < taps; k++) {
    bool unit = true;
    for (int64_t o = 0; o < out; o++) {
      col[o] = idx[taps * o + k];
      wc[o] = w[taps * o + k];
      unit &= wc[o] == 1;
    }
    rlx_id ic, g, wt;
    RLX_TRY(oi_const(c, rlx_shape_make(RLX_I64, 1, &od), col, (size_t)out * 8, &ic));
    rlx_attrs_Gather ga = {.axis = ax};
    rlx_id in2[2] = {x, ic};
    RLX_TRY(oi_emit(c, RLX_OP_Gather, in2, 2, &ga, &g));
    if (!unit) {
      RLX_TRY(oi_const(c, rlx_shape_make(RLX_F64, 1, &od), wc, (size_t)out * 8, &wt));
      RLX_TRY(oi_cast(c, wt, t, &wt));
      RLX_TRY(oi_bcast_axis(c, wt, xs->rank, ax, &wt));
      RLX_TRY(oi_bin(c, RLX_BINOP_MUL, g, wt, &g));
    }
    if (y == RLX_NO_ID)
      y = g;
    else
      RLX_TRY(oi_bin(c, RLX_BINOP_ADD, y, g, &y));
  }
  if (any_outside) {
    uint8_t *m = oi_scratch(c, (size_t)out);
    if (!m) return oi_nomem(c);
    for (int64_t o = 0; o < out; o++) m[o] = outside[o];
    rlx_id mask, ev;
    RLX_TRY(oi_const(c, rlx_shape_make(RLX_BOOL, 1, &od), m, (size_t)out, &mask));
    RLX_TRY(oi_bcast_axis(c, mask, xs->rank, ax, &mask));
    RLX_TRY(oi_scalar(c, t, p->extrapolation, &ev));
    RLX_TRY(oi_where(c, mask, ev, y, &y));
  }
  *res = y;
  return RLX_OK;
}

static rlx_status parse_modes(oi_node *c, bool upsample, rs_params *p) {
  const char *mode, *cm = "asymmetric", *nm = "round_prefer_floor";
  RLX_TRY(oi_attr_s(c, "mode", "nearest", &mode));
  if (strcmp(mode, "nearest") == 0)
    p->mode = IP_NEAREST;
  else if (strcmp(mode, "linear") == 0 || strcmp(mode, "bilinear") == 0)
    p->mode = IP_LINEAR;
  else if (strcmp(mode, "cubic") == 0 && !upsample)
    p->mode = IP_CUBIC;
  else
    return oi_bad(c, "attribute mode is \"%s\"", mode);
  p->nm = NM_ROUND_PREFER_FLOOR;
  float a = -0.75f, ev = 0;
  int64_t excl = 0;
  if (upsample || c->opset < 11) {
    /* Upsample and Resize-10: asymmetric coordinates, nearest rounds down */
    p->cm = CM_ASYMMETRIC;
    p->nm = NM_SIMPLE;
  } else {
    RLX_TRY(oi_attr_s(c, "coordinate_transformation_mode", "half_pixel", &cm));
    RLX_TRY(oi_attr_s(c, "nearest_mode", "round_prefer_floor", &nm));
    RLX_TRY(oi_attr_f(c, "cubic_coeff_a", -0.75f, &a));
    RLX_TRY(oi_attr_f(c, "extrapolation_value", 0.0f, &ev));
    RLX_TRY(oi_attr_i(c, "exclude_outside", 0, &excl));
    static const struct {
      const char *n;
      coord_mode m;
      int32_t since;
    } cms[] = {{"half_pixel", CM_HALF_PIXEL, 11},
               {"half_pixel_symmetric", CM_HALF_PIXEL_SYMMETRIC, 19},
               {"pytorch_half_pixel", CM_PYTORCH_HALF_PIXEL, 11},
               {"align_corners", CM_ALIGN_CORNERS, 11},
               {"asymmetric", CM_ASYMMETRIC, 11},
               {"tf_half_pixel_for_nn", CM_TF_HALF_PIXEL_NN, 11},
               {"tf_crop_and_resize", CM_TF_CROP, 11}};
    bool found = false;
    for (size_t i = 0; i < sizeof cms / sizeof cms[0]; i++)
      if (strcmp(cms[i].n, cm) == 0 && c->opset >= cms[i].since) p->cm = cms[i].m, found = true;
    if (!found) return oi_unsupported(c, "coordinate_transformation_mode \"%s\"", cm);
    if (strcmp(nm, "round_prefer_floor") == 0)
      p->nm = NM_ROUND_PREFER_FLOOR;
    else if (strcmp(nm, "round_prefer_ceil") == 0)
      p->nm = NM_ROUND_PREFER_CEIL;
    else if (strcmp(nm, "floor") == 0)
      p->nm = NM_FLOOR;
    else if (strcmp(nm, "ceil") == 0)
      p->nm = NM_CEIL;
    else
      return oi_bad(c, "attribute nearest_mode is \"%s\"", nm);
    if (c->opset >= 18) {
      int64_t aa;
      const char *kp;
      RLX_TRY(oi_attr_i(c, "antialias", 0, &aa));
      RLX_TRY(oi_attr_s(c, "keep_aspect_ratio_policy", "stretch", &kp));
      p->antialias = aa != 0;
      if (strcmp(kp, "stretch") == 0)
        p->keep_aspect = 0;
      else if (strcmp(kp, "not_larger") == 0)
        p->keep_aspect = -1;
      else if (strcmp(kp, "not_smaller") == 0)
        p->keep_aspect = 1;
      else
        return oi_bad(c, "attribute keep_aspect_ratio_policy is \"%s\"", kp);
    }
  }
  p->cubic_a = a;
  p->extrapolation = ev;
  p->exclude_outside = excl != 0;
  return RLX_OK;
}

static rlx_status resize_common(oi_node *c, bool upsample) {
  RLX_TRY(oi_need(c, 0, "X"));
  rs_params p;
  memset(&p, 0, sizeof p);
  RLX_TRY(parse_modes(c, upsample, &p));
  rlx_id x = c->in[0];
  const rlx_shape xs = *oi_shape(c, x);
  RLX_TRY(oi_need_static(c, &xs, "input X"));
  uint32_t r = xs.rank;
  double scales[RLX_MAX_RANK], roi[2 * RLX_MAX_RANK];
  int64_t outd[RLX_MAX_RANK];
  for (uint32_t i = 0; i < r; i++) scales[i] = 1, outd[i] = xs.dims[i], roi[i] = 0, roi[r + i] = 1;
  /* which axes the scales / sizes / roi refer to (opset 18 `axes`) */
  uint32_t axes[RLX_MAX_RANK], na = r;
  for (uint32_t i = 0; i < r; i++) axes[i] = i;
  if (!upsample && c->opset >= 18 && oi_attr(c, "axes")) {
    const int64_t *av;
    size_t an;
    RLX_TRY(oi_attr_ints(c, "axes", &av, &an, NULL));
    if (an > r) return oi_bad(c, "attribute axes has %zu entries", an);
    na = (uint32_t)an;
    for (uint32_t i = 0; i < na; i++) RLX_TRY(oi_axis(c, av[i], r, "attribute axes entry", &axes[i]));
  }
  double *sv = NULL, *rv = NULL;
  int64_t *zv = NULL;
  size_t sn = 0, rn = 0, zn = 0;
  uint32_t k_scales = 1, k_sizes = 3, k_roi = 1;
  if (upsample && c->opset < 9) {
    const float *f;
    bool present;
    RLX_TRY(oi_attr_floats(c, "scales", &f, &sn, &present));
    if (!present) return oi_bad(c, "attribute scales is required");
    sv = oi_scratch(c, (sn + 1) * sizeof *sv);
    if (!sv) return oi_nomem(c);
    for (size_t i = 0; i < sn; i++) sv[i] = f[i];
  } else {
    if (!upsample && c->opset >= 11)
      k_scales = 2;
    else
      k_roi = 99;
    if (oi_has(c, k_scales)) {
      RLX_TRY(oi_in_f64s(c, k_scales, "scales", &sv, &sn));
      if (sn == 0) sv = NULL;
    }
    if (!upsample && c->opset >= 11 && oi_has(c, k_sizes)) {
      RLX_TRY(oi_in_ints(c, k_sizes, "sizes", &zv, &zn));
      if (zn == 0) zv = NULL;
    }
    if (k_roi != 99 && p.cm == CM_TF_CROP && oi_has(c, k_roi)) RLX_TRY(oi_in_f64s(c, k_roi, "roi", &rv, &rn));
  }
  if (sv && zv) return oi_bad(c, "only one of scales and sizes may be given");
  if (!sv && !zv) return oi_bad(c, "one of scales and sizes is required");
  if (rv) {
    if (rn != 2 * na) return oi_bad(c, "roi has %zu entries; expected %u", rn, 2 * na);
    for (uint32_t i = 0; i < na; i++) roi[axes[i]] = rv[i], roi[r + axes[i]] = rv[na + i];
  }
  if ((sv ? sn : zn) != na)
    return oi_bad(c, "%s has %zu entries; expected %u", sv ? "scales" : "sizes", sv ? sn : zn, na);
  double keep_scale = 0; /* sizes with a kept aspect ratio: one scale for every listed axis */
  if (zv && p.keep_aspect) {
    for (uint32_t i = 0; i < na; i++) {
      if (zv[i] < 0 || xs.dims[axes[i]] == 0)
        return oi_bad(c, "sizes[%u] is %lld for an axis of %lld", i, (long long)zv[i], (long long)xs.dims[axes[i]]);
      double q = (double)zv[i] / (double)xs.dims[axes[i]];
      if (i == 0 || (p.keep_aspect < 0 ? q < keep_scale : q > keep_scale)) keep_scale = q;
    }
  }
  for (uint32_t i = 0; i < na; i++) {
    uint32_t a = axes[i];
    int64_t in = xs.dims[a];
    if (sv) {
      if (!(sv[i] > 0) || !isfinite(sv[i])) return oi_bad(c, "scales[%u] is %g; scales must be positive", i, sv[i]);
      scales[a] = sv[i];
      double span = p.cm == CM_TF_CROP ? (roi[r + a] - roi[a]) : 1.0;
      double o = floor((double)in * span * sv[i]);
      if (!(o >= 0) || o > (double)((int64_t)1 << 24)) return oi_unsupported(c, "an output extent of %g", o);
      outd[a] = (int64_t)o;
    } else if (p.keep_aspect) {
      double o = floor(keep_scale * (double)in + 0.5); /* round half up */
      if (o > (double)((int64_t)1 << 24)) return oi_unsupported(c, "an output extent of %g", o);
      outd[a] = (int64_t)o;
      scales[a] = keep_scale;
    } else {
      if (zv[i] < 0 || zv[i] > ((int64_t)1 << 24)) return oi_bad(c, "sizes[%u] is %lld", i, (long long)zv[i]);
      outd[a] = zv[i];
      scales[a] = in ? (double)zv[i] / (double)in : 1.0;
    }
  }
  /* nearest 2x on the last two axes of NCHW with pixel replication */
  if (r == 4 && p.mode == IP_NEAREST && outd[0] == xs.dims[0] && outd[1] == xs.dims[1] && outd[2] == 2 * xs.dims[2] &&
      outd[3] == 2 * xs.dims[3] && scales[2] == 2 && scales[3] == 2) {
    bool repl = true;
    for (uint32_t a = 2; a < 4 && repl; a++)
      for (int64_t o = 0; o < outd[a] && repl; o++) {
        double xo = source_coord(&p, (double)o, xs.dims[a], outd[a], 2.0, roi[a], roi[r + a]);
        double rr = p.nm == NM_FLOOR || p.nm == NM_SIMPLE ? floor(xo)
                    : p.nm == NM_CEIL                     ? ceil(xo)
                    : p.nm == NM_ROUND_PREFER_FLOOR       ? ((xo == floor(xo) + 0.5) ? floor(xo) : round(xo))
                                                          : ((xo == floor(xo) + 0.5) ? ceil(xo) : round(xo));
        repl = clampi((int64_t)rr, 0, xs.dims[a] - 1) == o / 2 && p.cm != CM_TF_CROP;
      }
    if (repl) return oi_emit(c, RLX_OP_ResizeNearest2x, &x, 1, NULL, &c->out[0]);
  }
  for (uint32_t a = 0; a < r; a++) {
    if (outd[a] == xs.dims[a] && scales[a] == 1 && p.cm != CM_TF_CROP) continue;
    if (xs.dims[a] == 0) return oi_bad(c, "cannot resize the empty axis %u", a);
    RLX_TRY(resize_axis(c, &p, x, a, outd[a], scales[a], roi[a], roi[r + a], &x));
  }
  c->out[0] = x;
  return RLX_OK;
}

static rlx_status map_resize(oi_node *c) { return resize_common(c, false); }
static rlx_status map_upsample(oi_node *c) { return resize_common(c, true); }

const oi_op_entry oi_ops_resize[] = {
    {"Resize", 10, OI_MAX_OPSET, map_resize},
    {"Upsample", 7, 9, map_upsample},
};
const uint32_t oi_ops_resize_len = sizeof oi_ops_resize / sizeof oi_ops_resize[0];
