/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* ONNX sampling ops: GridSample (opsets 16 and 20), AffineGrid (20) and RoiAlign (10, 16). RLX has
 * no op kind for any of them, so each becomes elementwise coordinate arithmetic (Floor, Round,
 * Clamp, Where), gathers from the flattened input and weighted sums. Sampling positions come from
 * run-time tensors (grid, rois), so nothing is specialised to their values, except RoiAlign with
 * sampling_ratio = 0, whose number of samples per bin depends on each roi's size. */
#include <math.h>
#include <string.h>

#include "io/onnx/onnx_internal.h"

/* Largest sampled position count (grid points, roi samples) the importer emits for one node. */
#define SM_MAX_POINTS ((int64_t)1 << 26)
/* ONNX's cubic convolution coefficient for GridSample. */
#define SM_CUBIC_A (-0.75)

/* ---- small emitters ---- */

static rlx_status sm_clamp(oi_node *c, rlx_id x, double lo, double hi, rlx_id *out) {
  rlx_attrs_Clamp a = {.min = (float)lo, .max = (float)hi};
  return oi_emit(c, RLX_OP_Clamp, &x, 1, &a, out);
}

/* a * x + b */
static rlx_status sm_affine(oi_node *c, rlx_id x, double a, double b, rlx_id *out) {
  if (a != 1) RLX_TRY(oi_bin_s(c, RLX_BINOP_MUL, x, a, &x));
  if (b != 0) RLX_TRY(oi_bin_s(c, RLX_BINOP_ADD, x, b, &x));
  *out = x;
  return RLX_OK;
}

/* a * b, where RLX_NO_ID stands for 1 */
static rlx_status sm_mul(oi_node *c, rlx_id a, rlx_id b, rlx_id *out) {
  if (a == RLX_NO_ID || b == RLX_NO_ID) {
    *out = a == RLX_NO_ID ? b : a;
    return RLX_OK;
  }
  return oi_bin(c, RLX_BINOP_MUL, a, b, out);
}

/* Mirrors x at the bounds lo and hi until it lies inside [lo, hi] (period 2 (hi - lo)); values
 * inside are returned unchanged. */
static rlx_status sm_reflect(oi_node *c, rlx_id x, double lo, double hi, rlx_id *out) {
  double span = hi - lo;
  if (!(span > 0)) return sm_clamp(c, x, lo, lo, out);
  rlx_id t, q, m, back, over, s;
  RLX_TRY(oi_bin_s(c, RLX_BINOP_SUB, x, lo, &t));
  RLX_TRY(oi_bin_s(c, RLX_BINOP_DIV, t, 2 * span, &q));
  RLX_TRY(oi_unary(c, RLX_ACT_FLOOR, q, &q));
  RLX_TRY(oi_bin_s(c, RLX_BINOP_MUL, q, 2 * span, &q));
  RLX_TRY(oi_bin(c, RLX_BINOP_SUB, t, q, &m)); /* t mod 2 span, in [0, 2 span) */
  RLX_TRY(sm_affine(c, m, -1, 2 * span, &back));
  RLX_TRY(oi_scalar(c, (rlx_dtype)oi_shape(c, m)->dtype, span, &s));
  RLX_TRY(oi_cmp(c, RLX_CMP_GT, m, s, &over));
  RLX_TRY(oi_where(c, over, back, m, &m));
  return oi_bin_s(c, RLX_BINOP_ADD, m, lo, out);
}

/* Input k's dims from `from` on must be static. */
static rlx_status sm_need_static_from(oi_node *c, uint32_t k, uint32_t from, const char *what) {
  const rlx_shape *s = oi_in_shape(c, k);
  for (uint32_t i = from; i < s->rank; i++)
    if (!rlx_dim_is_static(s->dims[i]))
      return oi_unsupported(c, "%s has shape %s; only its first (batch) dim may be symbolic", what, rlx_fmt_shape(s));
  return RLX_OK;
}

/* ---- GridSample ---- */

typedef enum gs_mode { GS_NEAREST, GS_LINEAR, GS_CUBIC } gs_mode;
typedef enum gs_pad { GS_ZEROS, GS_BORDER, GS_REFLECTION } gs_pad;

/* The taps of one spatial axis: offsets (I64, already times the axis stride) into the flattened
 * spatial dims and their weights (RLX_NO_ID = 1), each [N, P, 1]. */
typedef struct gs_axis {
  uint32_t n;
  rlx_id off[4], w[4];
} gs_axis;

typedef struct gs_params {
  gs_mode mode;
  gs_pad pad;
  bool align;
  rlx_dtype ft; /* dtype of the coordinate arithmetic */
} gs_params;

/* One tap at the integer-valued position p of an axis of `extent` cells: out-of-range positions
 * are read as zero (their weight is masked), from the border, or reflected at [lo, hi]. */
static rlx_status gs_tap(oi_node *c, const gs_params *p, rlx_id pos, rlx_id w, int64_t extent, double lo, double hi,
                         int64_t stride, rlx_id *off, rlx_id *wout) {
  rlx_id q;
  if (p->pad == GS_REFLECTION) RLX_TRY(sm_reflect(c, pos, lo, hi, &pos));
  RLX_TRY(sm_clamp(c, pos, 0, (double)(extent - 1), &q));
  if (p->pad == GS_ZEROS) {
    rlx_id inside, m;
    RLX_TRY(oi_cmp(c, RLX_CMP_EQ, q, pos, &inside));
    RLX_TRY(oi_cast(c, inside, p->ft, &m));
    RLX_TRY(sm_mul(c, w, m, &w));
  }
  RLX_TRY(oi_cast(c, q, RLX_I64, &q));
  if (stride != 1) RLX_TRY(oi_bin_s(c, RLX_BINOP_MUL, q, (double)stride, &q));
  *off = q;
  *wout = w;
  return RLX_OK;
}

/* Cubic convolution weights for |s| <= 1 and 1 <= |s| <= 2 (s >= 0 here). */
static rlx_status gs_cubic_near(oi_node *c, rlx_id s, rlx_id *out) {
  const double a = SM_CUBIC_A;
  rlx_id t, s2;
  RLX_TRY(sm_affine(c, s, a + 2, -(a + 3), &t));
  RLX_TRY(oi_bin(c, RLX_BINOP_MUL, s, s, &s2));
  RLX_TRY(oi_bin(c, RLX_BINOP_MUL, t, s2, &t));
  return oi_bin_s(c, RLX_BINOP_ADD, t, 1, out);
}

static rlx_status gs_cubic_far(oi_node *c, rlx_id s, rlx_id *out) {
  const double a = SM_CUBIC_A;
  rlx_id t;
  RLX_TRY(sm_affine(c, s, a, -5 * a, &t));
  RLX_TRY(oi_bin(c, RLX_BINOP_MUL, t, s, &t));
  RLX_TRY(oi_bin_s(c, RLX_BINOP_ADD, t, 8 * a, &t));
  RLX_TRY(oi_bin(c, RLX_BINOP_MUL, t, s, &t));
  return oi_bin_s(c, RLX_BINOP_ADD, t, -4 * a, out);
}

/* Taps of one axis for the unnormalised coordinate x. */
static rlx_status gs_axis_taps(oi_node *c, const gs_params *p, rlx_id x, int64_t extent, int64_t stride, gs_axis *ax) {
  double lo = p->align ? 0 : -0.5, hi = p->align ? (double)(extent - 1) : (double)extent - 0.5;
  if (p->mode == GS_NEAREST) RLX_TRY(oi_unary(c, RLX_ACT_ROUND, x, &x)); /* half to even */
  /* coordinates outside [lo, hi] move to the border or are reflected back inside; cubic border
   * padding instead clamps each tap (gs_tap), as PyTorch and onnxruntime do */
  if (p->pad == GS_BORDER && p->mode != GS_CUBIC) {
    rlx_id in, outside, clamped;
    RLX_TRY(sm_clamp(c, x, lo, hi, &in));
    RLX_TRY(oi_cmp(c, RLX_CMP_NE, in, x, &outside));
    RLX_TRY(sm_clamp(c, x, 0, (double)(extent - 1), &clamped));
    RLX_TRY(oi_where(c, outside, clamped, x, &x));
  } else if (p->pad == GS_REFLECTION) {
    RLX_TRY(sm_reflect(c, x, lo, hi, &x));
  }
  if (p->mode == GS_NEAREST) {
    ax->n = 1;
    return gs_tap(c, p, x, RLX_NO_ID, extent, lo, hi, stride, &ax->off[0], &ax->w[0]);
  }
  rlx_id x0, f;
  RLX_TRY(oi_unary(c, RLX_ACT_FLOOR, x, &x0));
  RLX_TRY(oi_bin(c, RLX_BINOP_SUB, x, x0, &f)); /* in [0, 1) */
  rlx_id pos[4], w[4];
  if (p->mode == GS_LINEAR) {
    ax->n = 2;
    pos[0] = x0;
    RLX_TRY(oi_bin_s(c, RLX_BINOP_ADD, x0, 1, &pos[1]));
    RLX_TRY(sm_affine(c, f, -1, 1, &w[0]));
    w[1] = f;
  } else {
    ax->n = 4;
    rlx_id s;
    for (uint32_t k = 0; k < 4; k++) RLX_TRY(oi_bin_s(c, RLX_BINOP_ADD, x0, (double)k - 1, &pos[k]));
    RLX_TRY(oi_bin_s(c, RLX_BINOP_ADD, f, 1, &s));
    RLX_TRY(gs_cubic_far(c, s, &w[0]));
    RLX_TRY(gs_cubic_near(c, f, &w[1]));
    RLX_TRY(sm_affine(c, f, -1, 1, &s));
    RLX_TRY(gs_cubic_near(c, s, &w[2]));
    RLX_TRY(sm_affine(c, f, -1, 2, &s));
    RLX_TRY(gs_cubic_far(c, s, &w[3]));
  }
  for (uint32_t k = 0; k < ax->n; k++)
    RLX_TRY(gs_tap(c, p, pos[k], w[k], extent, lo, hi, stride, &ax->off[k], &ax->w[k]));
  return RLX_OK;
}

static rlx_status map_grid_sample(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "X"));
  RLX_TRY(oi_need(c, 1, "grid"));
  bool v20 = c->opset >= 20;
  const char *mode_s, *pad_s;
  int64_t align;
  RLX_TRY(oi_attr_s(c, "mode", v20 ? "linear" : "bilinear", &mode_s));
  RLX_TRY(oi_attr_s(c, "padding_mode", "zeros", &pad_s));
  RLX_TRY(oi_attr_i(c, "align_corners", 0, &align));
  gs_params p;
  memset(&p, 0, sizeof p);
  if (strcmp(mode_s, "nearest") == 0)
    p.mode = GS_NEAREST;
  else if (strcmp(mode_s, v20 ? "linear" : "bilinear") == 0)
    p.mode = GS_LINEAR;
  else if (strcmp(mode_s, v20 ? "cubic" : "bicubic") == 0)
    p.mode = GS_CUBIC;
  else
    return oi_bad(c, "attribute mode is \"%s\"; GridSample-%d takes %s", mode_s, v20 ? 20 : 16,
                  v20 ? "\"linear\", \"nearest\" or \"cubic\"" : "\"bilinear\", \"nearest\" or \"bicubic\"");
  if (strcmp(pad_s, "zeros") == 0)
    p.pad = GS_ZEROS;
  else if (strcmp(pad_s, "border") == 0)
    p.pad = GS_BORDER;
  else if (strcmp(pad_s, "reflection") == 0)
    p.pad = GS_REFLECTION;
  else
    return oi_bad(c, "attribute padding_mode is \"%s\"; expected \"zeros\", \"border\" or \"reflection\"", pad_s);
  if (align != 0 && align != 1)
    return oi_bad(c, "attribute align_corners is %lld; it must be 0 or 1", (long long)align);
  p.align = align == 1;
  const rlx_shape xs = *oi_in_shape(c, 0), gsh = *oi_in_shape(c, 1);
  if (!rlx_dtype_is_float((rlx_dtype)gsh.dtype))
    return oi_bad(c, "input 1 (grid) must be floating-point, not %s", rlx_dtype_name((rlx_dtype)gsh.dtype));
  /* nearest copies cells, so any integer X works; interpolating integers has no agreed rounding */
  if (!rlx_dtype_is_float((rlx_dtype)xs.dtype) && !(rlx_dtype_is_int((rlx_dtype)xs.dtype) && p.mode == GS_NEAREST))
    return oi_unsupported(
        c, "input X of dtype %s with mode \"%s\" (floating-point X, or integer X with \"nearest\", is supported)",
        rlx_dtype_name((rlx_dtype)xs.dtype), mode_s);
  if (!v20 && xs.rank != 4)
    return oi_bad(c, "GridSample-16 takes a 4-D input X [N, C, H, W]; X is %s", rlx_fmt_shape(&xs));
  if (xs.rank < 3) return oi_bad(c, "input X is %s; it needs rank >= 3 [N, C, D1, ...]", rlx_fmt_shape(&xs));
  uint32_t r = xs.rank - 2;
  if (gsh.rank != xs.rank || gsh.dims[r + 1] != (rlx_dim)r || !rlx_dim_equal(gsh.dims[0], xs.dims[0]))
    return oi_bad(c, "input grid is %s; for X %s it must be [N, <%u output dims>, %u] with X's N", rlx_fmt_shape(&gsh),
                  rlx_fmt_shape(&xs), r, r);
  if (p.mode == GS_CUBIC && r > 3)
    return oi_unsupported(c, "cubic sampling over %u spatial axes (4^%u taps per point); at most 3 axes are supported",
                          r, r);
  RLX_TRY(sm_need_static_from(c, 0, 1, "input X"));
  RLX_TRY(sm_need_static_from(c, 1, 1, "input grid"));
  int64_t L = 1, P = 1, C = xs.dims[1];
  for (uint32_t i = 0; i < r; i++) {
    if (xs.dims[2 + i] == 0) return oi_unsupported(c, "sampling the empty input X %s", rlx_fmt_shape(&xs));
    L *= xs.dims[2 + i];
    P *= gsh.dims[1 + i];
  }
  if (P > SM_MAX_POINTS)
    return oi_unsupported(c, "%lld sampling points (the import limit is %lld)", (long long)P, (long long)SM_MAX_POINTS);
  p.ft = xs.dtype == RLX_F64 || gsh.dtype == RLX_F64 ? RLX_F64 : RLX_F32;
  rlx_dim N = xs.dims[0];
  /* X as [N, L, C] so one gather fetches all channels of a point; grid as [N, P, r] */
  rlx_id x, g;
  rlx_dim xd[3] = {N, C, L}, gd[3] = {N, P, r};
  static const int64_t swap12[3] = {0, 2, 1};
  RLX_TRY(oi_cast(c, c->in[0], p.ft, &x));
  RLX_TRY(oi_reshape_dims(c, x, 3, xd, &x));
  RLX_TRY(oi_transpose(c, x, swap12, &x));
  RLX_TRY(oi_cast(c, c->in[1], p.ft, &g));
  RLX_TRY(oi_reshape_dims(c, g, 3, gd, &g));
  gs_axis ax[RLX_MAX_RANK];
  int64_t stride = 1;
  for (uint32_t i = r; i-- > 0;) { /* grid component j addresses spatial axis r - 1 - j */
    int64_t extent = xs.dims[2 + i];
    rlx_id comp;
    RLX_TRY(oi_narrow(c, g, 2, (int64_t)(r - 1 - i), 1, &comp));
    /* align_corners: -1 and 1 are the corner cells' centres, else the outer edges */
    RLX_TRY(
        sm_affine(c, comp, p.align ? (double)(extent - 1) / 2 : (double)extent / 2, (double)(extent - 1) / 2, &comp));
    RLX_TRY(gs_axis_taps(c, &p, comp, extent, stride, &ax[i]));
    stride *= extent;
  }
  uint32_t combos = 1;
  for (uint32_t i = 0; i < r; i++) combos *= ax[i].n;
  rlx_id acc = RLX_NO_ID;
  for (uint32_t k = 0; k < combos; k++) {
    rlx_id off = RLX_NO_ID, w = RLX_NO_ID, v;
    uint32_t rest = k;
    for (uint32_t i = 0; i < r; i++) {
      uint32_t t = rest % ax[i].n;
      rest /= ax[i].n;
      if (off == RLX_NO_ID)
        off = ax[i].off[t];
      else
        RLX_TRY(oi_bin(c, RLX_BINOP_ADD, off, ax[i].off[t], &off));
      RLX_TRY(sm_mul(c, w, ax[i].w[t], &w));
    }
    rlx_attrs_GatherNd ga = {.batch_dims = 1};
    rlx_id gin[2] = {x, off};
    RLX_TRY(oi_emit(c, RLX_OP_GatherNd, gin, 2, &ga, &v)); /* [N, P, C] */
    RLX_TRY(sm_mul(c, v, w, &v));
    if (acc == RLX_NO_ID)
      acc = v;
    else
      RLX_TRY(oi_bin(c, RLX_BINOP_ADD, acc, v, &acc));
  }
  rlx_dim od[RLX_MAX_RANK];
  od[0] = N;
  od[1] = C;
  for (uint32_t i = 0; i < r; i++) od[2 + i] = gsh.dims[1 + i];
  RLX_TRY(oi_transpose(c, acc, swap12, &acc));
  RLX_TRY(oi_reshape_dims(c, acc, xs.rank, od, &acc));
  return oi_cast(c, acc, (rlx_dtype)xs.dtype, &c->out[0]);
}

/* ---- AffineGrid ---- */

/* Normalised coordinate of cell i of n along an axis. A single cell with align_corners sits at -1,
 * as in ONNX's reference implementation (PyTorch puts it at 0, onnxruntime at 1). */
static double ag_coord(int64_t i, int64_t n, bool align) {
  if (align) return n > 1 ? 2.0 * (double)i / (double)(n - 1) - 1.0 : -1.0;
  return (2.0 * (double)i + 1.0) / (double)n - 1.0;
}

static rlx_status map_affine_grid(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "theta"));
  int64_t align;
  RLX_TRY(oi_attr_i(c, "align_corners", 0, &align));
  if (align != 0 && align != 1)
    return oi_bad(c, "attribute align_corners is %lld; it must be 0 or 1", (long long)align);
  const rlx_shape ts = *oi_in_shape(c, 0);
  if (!rlx_dtype_is_float((rlx_dtype)ts.dtype))
    return oi_bad(c, "input 0 (theta) must be floating-point, not %s", rlx_dtype_name((rlx_dtype)ts.dtype));
  if (ts.rank != 3 || !((ts.dims[1] == 2 && ts.dims[2] == 3) || (ts.dims[1] == 3 && ts.dims[2] == 4)))
    return oi_bad(c, "input 0 (theta) is %s; it must be [N, 2, 3] (2-D) or [N, 3, 4] (3-D)", rlx_fmt_shape(&ts));
  uint32_t r = (uint32_t)ts.dims[1];
  int64_t *sz;
  size_t nsz;
  RLX_TRY(oi_in_ints(c, 1, "size", &sz, &nsz));
  if (nsz != r + 2)
    return oi_bad(c, "input 1 (size) has %zu entries; theta %s needs %u (%s)", nsz, rlx_fmt_shape(&ts), r + 2,
                  r == 2 ? "N, C, H, W" : "N, C, D, H, W");
  if (rlx_dim_is_static(ts.dims[0]) && sz[0] != ts.dims[0])
    return oi_bad(c, "input 1 (size) has N = %lld, but theta has %lld matrices", (long long)sz[0],
                  (long long)ts.dims[0]);
  int64_t P = 1;
  for (uint32_t i = 0; i < r; i++) {
    if (sz[2 + i] < 0) return oi_bad(c, "input 1 (size) has the negative extent %lld", (long long)sz[2 + i]);
    P *= sz[2 + i];
    if (P > SM_MAX_POINTS) return oi_unsupported(c, "a grid of more than %lld points", (long long)SM_MAX_POINTS);
  }
  /* base grid [P, r + 1]: (x, y[, z], 1) with x along the last axis */
  double *base = oi_scratch(c, (size_t)P * (r + 1) * sizeof *base);
  if (!base) return oi_nomem(c);
  for (int64_t pt = 0; pt < P; pt++) {
    int64_t rest = pt;
    for (uint32_t i = r; i-- > 0;) {
      int64_t n = sz[2 + i];
      base[pt * (r + 1) + (r - 1 - i)] = ag_coord(rest % n, n, align == 1);
      rest /= n;
    }
    base[pt * (r + 1) + r] = 1.0;
  }
  rlx_id b, th, y;
  rlx_dim bd[2] = {P, r + 1};
  RLX_TRY(oi_const(c, rlx_shape_make(RLX_F64, 2, bd), base, (size_t)P * (r + 1) * sizeof *base, &b));
  RLX_TRY(oi_cast(c, b, (rlx_dtype)ts.dtype, &b));
  static const int64_t swap12[3] = {0, 2, 1};
  RLX_TRY(oi_transpose(c, c->in[0], swap12, &th)); /* [N, r + 1, r] */
  rlx_id in[2] = {b, th};
  RLX_TRY(oi_emit(c, RLX_OP_MatMul, in, 2, NULL, &y)); /* [N, P, r] */
  rlx_dim od[RLX_MAX_RANK];
  od[0] = ts.dims[0];
  for (uint32_t i = 0; i < r; i++) od[1 + i] = sz[2 + i];
  od[r + 1] = r;
  return oi_reshape_dims(c, y, r + 2, od, &c->out[0]);
}

/* ---- RoiAlign ---- */

typedef struct ra_params {
  bool max_mode, half_pixel;
  int64_t out_h, out_w, ratio;
  double scale;
  rlx_dtype ft;
} ra_params;

/* Bilinear taps of one axis for every (roi, bin, sample): low / high cell index (I64) and their
 * weights, each [R, out * G]. The weights include the 1/G of the average and are 0 for samples
 * more than one cell outside the input. */
typedef struct ra_axis {
  int64_t g; /* samples per bin */
  rlx_id lo, hi, wlo, whi;
} ra_axis;

/* Run-time positions: rois [R, 4] (x1, y1, x2, y2), columns c0 (start) and c0 + 2 (end). */
static rlx_status ra_axis_rt(oi_node *c, const ra_params *p, rlx_id rois, uint32_t c0, int64_t extent, int64_t out,
                             ra_axis *a) {
  int64_t g = p->ratio;
  double off = p->half_pixel ? 0.5 : 0;
  rlx_id start, end, len, y, yc, m, in, lo, hi, l, h, pos;
  RLX_TRY(oi_narrow(c, rois, 1, c0, 1, &start)); /* [R, 1] */
  RLX_TRY(oi_narrow(c, rois, 1, c0 + 2, 1, &end));
  RLX_TRY(sm_affine(c, start, p->scale, -off, &start));
  RLX_TRY(sm_affine(c, end, p->scale, -off, &end));
  RLX_TRY(oi_bin(c, RLX_BINOP_SUB, end, start, &len));
  if (!p->half_pixel) RLX_TRY(oi_bin_s(c, RLX_BINOP_MAX, len, 1.0, &len)); /* legacy: rois at least 1 cell */
  RLX_TRY(oi_bin_s(c, RLX_BINOP_DIV, len, (double)out, &len));             /* bin size */
  /* sample k = (bin, s) sits at start + bin_size * (bin + (s + 0.5) / g) */
  double *t = oi_scratch(c, (size_t)(out * g) * sizeof *t);
  if (!t) return oi_nomem(c);
  for (int64_t b = 0; b < out; b++)
    for (int64_t s = 0; s < g; s++) t[b * g + s] = (double)b + ((double)s + 0.5) / (double)g;
  rlx_dim td[2] = {1, out * g};
  RLX_TRY(oi_const(c, rlx_shape_make(RLX_F64, 2, td), t, (size_t)(out * g) * sizeof *t, &pos));
  RLX_TRY(oi_cast(c, pos, p->ft, &pos));
  RLX_TRY(oi_bin(c, RLX_BINOP_MUL, len, pos, &y));
  RLX_TRY(oi_bin(c, RLX_BINOP_ADD, y, start, &y)); /* [R, out * g] */
  /* samples beyond [-1, extent] contribute nothing */
  RLX_TRY(sm_clamp(c, y, -1, (double)extent, &m));
  RLX_TRY(oi_cmp(c, RLX_CMP_EQ, m, y, &in));
  RLX_TRY(oi_cast(c, in, p->ft, &m));
  if (!p->max_mode) RLX_TRY(oi_bin_s(c, RLX_BINOP_DIV, m, (double)g, &m));
  RLX_TRY(sm_clamp(c, y, 0, (double)(extent - 1), &yc));
  RLX_TRY(oi_unary(c, RLX_ACT_FLOOR, yc, &lo));
  RLX_TRY(oi_bin_s(c, RLX_BINOP_ADD, lo, 1, &hi));
  RLX_TRY(sm_clamp(c, hi, 0, (double)(extent - 1), &hi));
  RLX_TRY(oi_bin(c, RLX_BINOP_SUB, yc, lo, &l));
  RLX_TRY(sm_affine(c, l, -1, 1, &h));
  RLX_TRY(oi_bin(c, RLX_BINOP_MUL, h, m, &a->wlo));
  RLX_TRY(oi_bin(c, RLX_BINOP_MUL, l, m, &a->whi));
  RLX_TRY(oi_cast(c, lo, RLX_I64, &a->lo));
  RLX_TRY(oi_cast(c, hi, RLX_I64, &a->hi));
  a->g = g;
  return RLX_OK;
}

/* Import-time positions for sampling_ratio = 0: each roi takes ceil(roi size / out) samples per
 * bin; rois with fewer than the most are padded with zero-weight samples (avg) or repeats of
 * their first sample (max). */
static rlx_status ra_axis_known(oi_node *c, const ra_params *p, const double *rois, int64_t R, uint32_t c0,
                                int64_t extent, int64_t out, ra_axis *a) {
  double off = p->half_pixel ? 0.5 : 0;
  int64_t g = 1;
  int64_t *gr = oi_scratch(c, (size_t)(R ? R : 1) * sizeof *gr);
  if (!gr) return oi_nomem(c);
  for (int64_t i = 0; i < R; i++) {
    double len = (rois[i * 4 + c0 + 2] - rois[i * 4 + c0]) * p->scale;
    if (!p->half_pixel && len < 1) len = 1;
    double n = ceil(len / (double)out);
    if (!isfinite(n) || n > (double)SM_MAX_POINTS) return oi_unsupported(c, "a roi of size %g (too many samples)", len);
    gr[i] = n > 0 ? (int64_t)n : 0;
    if (gr[i] > g) g = gr[i];
  }
  if (R * out * g > SM_MAX_POINTS)
    return oi_unsupported(c, "%lld roi samples per axis (the import limit is %lld)", (long long)(R * out * g),
                          (long long)SM_MAX_POINTS);
  size_t n = (size_t)(R * out * g);
  int64_t *lo = oi_scratch(c, (n ? n : 1) * sizeof *lo), *hi = oi_scratch(c, (n ? n : 1) * sizeof *hi);
  double *wlo = oi_scratch(c, (n ? n : 1) * sizeof *wlo), *whi = oi_scratch(c, (n ? n : 1) * sizeof *whi);
  if (!lo || !hi || !wlo || !whi) return oi_nomem(c);
  for (int64_t i = 0; i < R; i++) {
    double start = rois[i * 4 + c0] * p->scale - off, len = rois[i * 4 + c0 + 2] * p->scale - off - start;
    if (!p->half_pixel && len < 1) len = 1;
    double bin = len / (double)out;
    for (int64_t b = 0; b < out; b++)
      for (int64_t s = 0; s < g; s++) {
        size_t k = (size_t)((i * out + b) * g + s);
        int64_t ss = s < gr[i] ? s : 0; /* padding samples repeat sample 0 */
        double y = start + bin * ((double)b + ((double)ss + 0.5) / (double)(gr[i] ? gr[i] : 1));
        double m = y >= -1 && y <= (double)extent && gr[i] > 0 ? 1 : 0;
        if (!p->max_mode) m = s < gr[i] ? m / (double)gr[i] : 0;
        double yc = y < 0 ? 0 : y > (double)(extent - 1) ? (double)(extent - 1) : y;
        if (isnan(yc)) yc = 0, m = 0;
        double fl = floor(yc);
        lo[k] = (int64_t)fl;
        hi[k] = lo[k] + 1 < extent ? lo[k] + 1 : extent - 1;
        wlo[k] = (1 - (yc - fl)) * m;
        whi[k] = (yc - fl) * m;
      }
  }
  rlx_dim d[2] = {R, out * g};
  RLX_TRY(oi_const(c, rlx_shape_make(RLX_I64, 2, d), lo, n * sizeof *lo, &a->lo));
  RLX_TRY(oi_const(c, rlx_shape_make(RLX_I64, 2, d), hi, n * sizeof *hi, &a->hi));
  RLX_TRY(oi_const(c, rlx_shape_make(RLX_F64, 2, d), wlo, n * sizeof *wlo, &a->wlo));
  RLX_TRY(oi_const(c, rlx_shape_make(RLX_F64, 2, d), whi, n * sizeof *whi, &a->whi));
  RLX_TRY(oi_cast(c, a->wlo, p->ft, &a->wlo));
  RLX_TRY(oi_cast(c, a->whi, p->ft, &a->whi));
  a->g = g;
  return RLX_OK;
}

/* Reshapes a [R, k] table to rank 4 with k on axis `axis` (1 or 2) and unit axes elsewhere. */
static rlx_status ra_place(oi_node *c, rlx_id t, rlx_dim R, uint32_t axis, rlx_id *out) {
  const rlx_shape *s = oi_shape(c, t);
  rlx_dim d[4] = {R, 1, 1, 1};
  d[axis] = s->dims[1];
  return oi_reshape_dims(c, t, 4, d, out);
}

static rlx_status map_roi_align(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "X"));
  RLX_TRY(oi_need(c, 1, "rois"));
  RLX_TRY(oi_need(c, 2, "batch_indices"));
  ra_params p;
  memset(&p, 0, sizeof p);
  const char *mode, *ctm = "output_half_pixel";
  float scale;
  RLX_TRY(oi_attr_s(c, "mode", "avg", &mode));
  RLX_TRY(oi_attr_i(c, "output_height", 1, &p.out_h));
  RLX_TRY(oi_attr_i(c, "output_width", 1, &p.out_w));
  RLX_TRY(oi_attr_i(c, "sampling_ratio", 0, &p.ratio));
  RLX_TRY(oi_attr_f(c, "spatial_scale", 1.0f, &scale));
  if (c->opset >= 16) RLX_TRY(oi_attr_s(c, "coordinate_transformation_mode", "half_pixel", &ctm));
  if (strcmp(mode, "avg") == 0)
    p.max_mode = false;
  else if (strcmp(mode, "max") == 0)
    p.max_mode = true;
  else
    return oi_bad(c, "attribute mode is \"%s\"; expected \"avg\" or \"max\"", mode);
  if (strcmp(ctm, "half_pixel") == 0)
    p.half_pixel = true;
  else if (strcmp(ctm, "output_half_pixel") == 0)
    p.half_pixel = false;
  else
    return oi_bad(
        c, "attribute coordinate_transformation_mode is \"%s\"; expected \"half_pixel\" or \"output_half_pixel\"", ctm);
  if (p.out_h < 1 || p.out_w < 1 || p.out_h > ((int64_t)1 << 20) || p.out_w > ((int64_t)1 << 20))
    return oi_bad(c, "attributes output_height and output_width are %lld and %lld; they must be positive",
                  (long long)p.out_h, (long long)p.out_w);
  if (p.ratio < 0) return oi_bad(c, "attribute sampling_ratio is %lld; it must be >= 0", (long long)p.ratio);
  if (p.ratio > 1024)
    return oi_unsupported(c, "sampling_ratio %lld (at most 1024 samples per bin axis)", (long long)p.ratio);
  if (!isfinite(scale)) return oi_bad(c, "attribute spatial_scale is %g", (double)scale);
  p.scale = scale;
  const rlx_shape xs = *oi_in_shape(c, 0), rs = *oi_in_shape(c, 1), bs = *oi_in_shape(c, 2);
  if (xs.rank != 4) return oi_bad(c, "input 0 (X) is %s; RoiAlign takes [N, C, H, W]", rlx_fmt_shape(&xs));
  if (!rlx_dtype_is_float((rlx_dtype)xs.dtype) || !rlx_dtype_is_float((rlx_dtype)rs.dtype))
    return oi_bad(c, "inputs X and rois must be floating-point (X is %s, rois %s)", rlx_dtype_name((rlx_dtype)xs.dtype),
                  rlx_dtype_name((rlx_dtype)rs.dtype));
  if (rs.rank != 2 || rs.dims[1] != 4)
    return oi_bad(c, "input 1 (rois) is %s; it must be [num_rois, 4]", rlx_fmt_shape(&rs));
  if (bs.rank != 1 || !rlx_dim_equal(bs.dims[0], rs.dims[0]) || !rlx_dtype_is_int((rlx_dtype)bs.dtype))
    return oi_bad(c, "input 2 (batch_indices) is %s; it must be an integer [num_rois] matching rois %s",
                  rlx_fmt_shape(&bs), rlx_fmt_shape(&rs));
  RLX_TRY(sm_need_static_from(c, 0, 1, "input X"));
  int64_t C = xs.dims[1], H = xs.dims[2], W = xs.dims[3];
  if (H == 0 || W == 0) return oi_unsupported(c, "pooling from the empty input X %s", rlx_fmt_shape(&xs));
  rlx_dim R = rs.dims[0];
  p.ft = xs.dtype == RLX_F64 || rs.dtype == RLX_F64 ? RLX_F64 : RLX_F32;
  ra_axis ay, ax;
  if (p.ratio > 0) {
    if (p.out_h * p.ratio > SM_MAX_POINTS || p.out_w * p.ratio > SM_MAX_POINTS)
      return oi_unsupported(c, "more than %lld samples per roi axis", (long long)SM_MAX_POINTS);
    rlx_id rois;
    RLX_TRY(oi_cast(c, c->in[1], p.ft, &rois));
    RLX_TRY(ra_axis_rt(c, &p, rois, 1, H, p.out_h, &ay));
    RLX_TRY(ra_axis_rt(c, &p, rois, 0, W, p.out_w, &ax));
  } else {
    double *rv;
    size_t rn;
    RLX_TRY(oi_in_f64s(c, 1, "rois; with sampling_ratio = 0 the sample count depends on them", &rv, &rn));
    if (rn % 4 || (rlx_dim_is_static(R) && (size_t)R * 4 != rn))
      return oi_bad(c, "input 1 (rois) holds %zu values; expected 4 per roi", rn);
    RLX_TRY(ra_axis_known(c, &p, rv, (int64_t)(rn / 4), 1, H, p.out_h, &ay));
    RLX_TRY(ra_axis_known(c, &p, rv, (int64_t)(rn / 4), 0, W, p.out_w, &ax));
    R = (rlx_dim)(rn / 4);
  }
  /* X as [N * H * W, C]; row of (b, y, x) = (b * H + y) * W + x */
  rlx_id xf, base;
  static const int64_t to_nhwc[4] = {0, 2, 3, 1};
  int64_t flat[2] = {-1, C};
  RLX_TRY(oi_cast(c, c->in[0], p.ft, &xf));
  RLX_TRY(oi_transpose(c, xf, to_nhwc, &xf));
  RLX_TRY(oi_reshape(c, xf, 2, flat, &xf));
  rlx_dim bd[3] = {R, 1, 1};
  RLX_TRY(oi_cast(c, c->in[2], RLX_I64, &base));
  RLX_TRY(oi_bin_s(c, RLX_BINOP_MUL, base, (double)(H * W), &base));
  RLX_TRY(oi_reshape_dims(c, base, 3, bd, &base));
  rlx_id yi[2] = {ay.lo, ay.hi}, yw[2] = {ay.wlo, ay.whi}, xi[2] = {ax.lo, ax.hi}, xw[2] = {ax.wlo, ax.whi};
  for (int k = 0; k < 2; k++) {
    rlx_dim d3y[3] = {R, p.out_h * ay.g, 1}, d3x[3] = {R, 1, p.out_w * ax.g};
    RLX_TRY(oi_bin_s(c, RLX_BINOP_MUL, yi[k], (double)W, &yi[k]));
    RLX_TRY(oi_reshape_dims(c, yi[k], 3, d3y, &yi[k]));
    RLX_TRY(oi_reshape_dims(c, xi[k], 3, d3x, &xi[k]));
    RLX_TRY(ra_place(c, yw[k], R, 1, &yw[k]));
    RLX_TRY(ra_place(c, xw[k], R, 2, &xw[k]));
  }
  rlx_id acc = RLX_NO_ID;
  for (int a = 0; a < 2; a++)
    for (int b = 0; b < 2; b++) {
      rlx_id idx, v, w;
      RLX_TRY(oi_bin(c, RLX_BINOP_ADD, base, yi[a], &idx));
      RLX_TRY(oi_bin(c, RLX_BINOP_ADD, idx, xi[b], &idx)); /* [R, A, B] */
      rlx_attrs_Gather ga = {0};
      rlx_id gin[2] = {xf, idx};
      RLX_TRY(oi_emit(c, RLX_OP_Gather, gin, 2, &ga, &v)); /* [R, A, B, C] */
      RLX_TRY(oi_bin(c, RLX_BINOP_MUL, yw[a], xw[b], &w));
      RLX_TRY(oi_bin(c, RLX_BINOP_MUL, v, w, &v));
      if (acc == RLX_NO_ID)
        acc = v;
      else
        RLX_TRY(oi_bin(c, p.max_mode ? RLX_BINOP_MAX : RLX_BINOP_ADD, acc, v, &acc));
    }
  /* [R, out_h, gh, out_w, gw, C] -> pool the samples -> [R, C, out_h, out_w] */
  rlx_dim d6[6] = {R, p.out_h, ay.g, p.out_w, ax.g, C};
  static const int64_t pool_axes[2] = {2, 4};
  static const int64_t to_nchw[4] = {0, 3, 1, 2};
  RLX_TRY(oi_reshape_dims(c, acc, 6, d6, &acc));
  RLX_TRY(oi_reduce(c, p.max_mode ? RLX_REDUCE_MAX : RLX_REDUCE_SUM, acc, pool_axes, 2, false, &acc));
  RLX_TRY(oi_transpose(c, acc, to_nchw, &acc));
  return oi_cast(c, acc, (rlx_dtype)xs.dtype, &c->out[0]);
}

const oi_op_entry oi_ops_sample[] = {
    {"GridSample", 16, OI_MAX_OPSET, map_grid_sample}, /* 22 only widened the dtypes */
    {"AffineGrid", 20, OI_MAX_OPSET, map_affine_grid},
    {"RoiAlign", 10, OI_MAX_OPSET, map_roi_align}, /* 22 only widened the dtypes */
};
const uint32_t oi_ops_sample_len = sizeof oi_ops_sample / sizeof oi_ops_sample[0];
