/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* ONNX neural-network ops: Conv / ConvTranspose (1-D through a unit H axis, 2-D, 3-D; auto_pad,
 * asymmetric pads, bias), MaxPool / AveragePool (1-D and 2-D; ceil_mode as extra end padding,
 * count_include_pad through a constant correction factor), global pooling, the normalizations
 * (BatchNormalization for inference, Instance/Layer/Group normalization, LRN, MVN) and
 * Softmax / LogSoftmax / Hardmax with their opset-dependent axis semantics. */
#include <math.h>
#include <string.h>

#include "io/onnx/onnx_internal.h"

/* ======================================================================================
 * Geometry
 * ====================================================================================== */

typedef struct geom {
  uint32_t nsp;
  int64_t k[3], s[3], d[3], pb[3], pe[3], op[3];
} geom;

static rlx_status read_list(oi_node *c, const char *name, uint32_t n, int64_t def, int64_t lo, int64_t *out) {
  const int64_t *v;
  size_t cnt;
  bool present;
  RLX_TRY(oi_attr_ints(c, name, &v, &cnt, &present));
  for (uint32_t i = 0; i < n; i++) out[i] = def;
  if (!present) return RLX_OK;
  if (cnt != n) return oi_bad(c, "attribute %s has %zu entries; expected %u (one per spatial axis)", name, cnt, n);
  for (uint32_t i = 0; i < n; i++) {
    if (v[i] < lo || v[i] > ((int64_t)1 << 31))
      return oi_bad(c, "attribute %s[%u] is %lld; it must be in [%lld, 2^31]", name, i, (long long)v[i], (long long)lo);
    out[i] = v[i];
  }
  return RLX_OK;
}

rlx_status oi_spatial_list(oi_node *c, const char *name, uint32_t n, int64_t def, int64_t lo, int64_t *out) {
  return read_list(c, name, n, def, lo, out);
}

/* Strides, dilations and pads (explicit or auto_pad) for input spatial extents `in`. For
 * transposed convs auto_pad uses the transposed output rule and `op` holds output_padding. */
static rlx_status read_geom(oi_node *c, const rlx_shape *x, geom *g, bool dilations, bool transposed) {
  uint32_t n = g->nsp;
  RLX_TRY(read_list(c, "strides", n, 1, 1, g->s));
  if (dilations)
    RLX_TRY(read_list(c, "dilations", n, 1, 1, g->d));
  else
    for (uint32_t i = 0; i < n; i++) g->d[i] = 1;
  for (uint32_t i = 0; i < n; i++) g->op[i] = 0;
  if (transposed) RLX_TRY(read_list(c, "output_padding", n, 0, 0, g->op));
  const char *ap;
  RLX_TRY(oi_attr_s(c, "auto_pad", "NOTSET", &ap));
  int64_t pads[6];
  const int64_t *pv;
  size_t pn;
  bool present;
  RLX_TRY(oi_attr_ints(c, "pads", &pv, &pn, &present));
  if (present && pn != 2 * n) return oi_bad(c, "attribute pads has %zu entries; expected %u", pn, 2 * n);
  for (uint32_t i = 0; i < 2 * n; i++) {
    pads[i] = present ? pv[i] : 0;
    if (pads[i] < 0 || pads[i] > ((int64_t)1 << 31))
      return oi_bad(c, "attribute pads[%u] is %lld; it must be in [0, 2^31]", i, (long long)pads[i]);
  }
  for (uint32_t i = 0; i < n; i++) {
    g->pb[i] = pads[i];
    g->pe[i] = pads[n + i];
  }
  if (strcmp(ap, "NOTSET") == 0 || strcmp(ap, "") == 0) return RLX_OK;
  if (strcmp(ap, "VALID") == 0) {
    for (uint32_t i = 0; i < n; i++) g->pb[i] = g->pe[i] = 0;
    return RLX_OK;
  }
  bool upper = strcmp(ap, "SAME_UPPER") == 0;
  if (!upper && strcmp(ap, "SAME_LOWER") != 0)
    return oi_bad(c, "attribute auto_pad is \"%s\"; expected NOTSET, SAME_UPPER, SAME_LOWER or VALID", ap);
  for (uint32_t i = 0; i < n; i++) {
    rlx_dim in = x->dims[2 + i];
    if (!rlx_dim_is_static(in)) return oi_unsupported(c, "auto_pad %s with a symbolic spatial extent", ap);
    int64_t ke = (g->k[i] - 1) * g->d[i] + 1, total;
    if (transposed)
      total = g->s[i] * (in - 1) + g->op[i] + ke - in * g->s[i];
    else {
      int64_t out = (in + g->s[i] - 1) / g->s[i];
      total = (out - 1) * g->s[i] + ke - in;
    }
    if (total < 0) total = 0;
    /* SAME_UPPER puts the odd cell at the end, SAME_LOWER at the beginning */
    int64_t small = total / 2, big = total - small;
    g->pb[i] = upper ? small : big;
    g->pe[i] = upper ? big : small;
  }
  return RLX_OK;
}

/* [N, C, L] -> [N, C, 1, L] */
static rlx_status lift_1d(oi_node *c, rlx_id x, rlx_id *out) {
  const rlx_shape *s = oi_shape(c, x);
  rlx_dim d[4] = {s->dims[0], s->dims[1], 1, s->dims[2]};
  return oi_reshape_dims(c, x, 4, d, out);
}

static rlx_status drop_1d(oi_node *c, rlx_id y, rlx_id *out) {
  const rlx_shape *s = oi_shape(c, y);
  rlx_dim d[3] = {s->dims[0], s->dims[1], s->dims[3]};
  return oi_reshape_dims(c, y, 3, d, out);
}

static rlx_status add_bias(oi_node *c, rlx_id y, uint32_t k, rlx_id *out) {
  if (!oi_has(c, k)) {
    *out = y;
    return RLX_OK;
  }
  rlx_id b;
  RLX_TRY(oi_cast(c, c->in[k], (rlx_dtype)oi_shape(c, y)->dtype, &b));
  if (oi_shape(c, b)->rank != 1) return oi_bad(c, "input %u (B) must be 1-D, got %s", k, rlx_fmt_shape(oi_shape(c, b)));
  RLX_TRY(oi_bcast_axis(c, b, oi_shape(c, y)->rank, 1, &b));
  return oi_bin(c, RLX_BINOP_ADD, y, b, out);
}

static rlx_status kernel_of(oi_node *c, const rlx_shape *w, geom *g) {
  bool present;
  const int64_t *kv;
  size_t kn;
  RLX_TRY(oi_attr_ints(c, "kernel_shape", &kv, &kn, &present));
  for (uint32_t i = 0; i < g->nsp; i++) {
    rlx_dim d = w->dims[2 + i];
    if (!rlx_dim_is_static(d)) return oi_unsupported(c, "a weight with symbolic kernel dims %s", rlx_fmt_shape(w));
    if (present && (kn != g->nsp || kv[i] != d))
      return oi_bad(c, "attribute kernel_shape does not match the weight %s", rlx_fmt_shape(w));
    g->k[i] = d;
  }
  return RLX_OK;
}

/* ======================================================================================
 * Conv / ConvTranspose
 * ====================================================================================== */

rlx_status oi_conv(oi_node *c, bool transposed) {
  RLX_TRY(oi_need(c, 0, "X"));
  RLX_TRY(oi_need(c, 1, "W"));
  rlx_id x = c->in[0], w = c->in[1];
  const rlx_shape *xs = oi_shape(c, x), *ws = oi_shape(c, w);
  if (xs->rank < 3) return oi_bad(c, "input X must have rank >= 3 (N, C, spatial...), got %s", rlx_fmt_shape(xs));
  if (ws->rank != xs->rank) return oi_bad(c, "input W %s must have X's rank %u", rlx_fmt_shape(ws), xs->rank);
  geom g;
  memset(&g, 0, sizeof g);
  g.nsp = xs->rank - 2u;
  if (g.nsp > 3) return oi_unsupported(c, "%u spatial dims (RLX has 1-D, 2-D and 3-D convolutions)", g.nsp);
  if (!rlx_dtype_is_float((rlx_dtype)xs->dtype))
    return oi_unsupported(c, "%s convolution", rlx_dtype_name((rlx_dtype)xs->dtype));
  RLX_TRY(kernel_of(c, ws, &g));
  int64_t group;
  RLX_TRY(oi_attr_i(c, "group", 1, &group));
  if (group < 1) return oi_bad(c, "attribute group is %lld; it must be >= 1", (long long)group);
  RLX_TRY(read_geom(c, xs, &g, true, transposed));
  if (transposed) {
    const int64_t *os;
    size_t on;
    bool present;
    RLX_TRY(oi_attr_ints(c, "output_shape", &os, &on, &present));
    if (present) {
      if (on != g.nsp && on != g.nsp + 2) return oi_bad(c, "attribute output_shape has %zu entries", on);
      const char *ap;
      RLX_TRY(oi_attr_s(c, "auto_pad", "NOTSET", &ap));
      bool upper = strcmp(ap, "SAME_UPPER") == 0;
      for (uint32_t i = 0; i < g.nsp; i++) {
        rlx_dim in = xs->dims[2 + i];
        if (!rlx_dim_is_static(in)) return oi_unsupported(c, "attribute output_shape with a symbolic input extent");
        int64_t want = os[on - g.nsp + i];
        int64_t total = g.s[i] * (in - 1) + g.op[i] + (g.k[i] - 1) * g.d[i] + 1 - want;
        if (total < 0) {
          /* the output grows past the natural size: the extra cells come from output padding */
          g.op[i] += -total;
          total = 0;
        }
        g.pb[i] = upper ? total / 2 : total - total / 2;
        g.pe[i] = total - g.pb[i];
      }
    }
  }
  bool one_d = g.nsp == 1;
  if (one_d) {
    RLX_TRY(lift_1d(c, x, &x));
    RLX_TRY(lift_1d(c, w, &w));
    g.nsp = 2;
    g.k[1] = g.k[0], g.s[1] = g.s[0], g.d[1] = g.d[0], g.pb[1] = g.pb[0], g.pe[1] = g.pe[0], g.op[1] = g.op[0];
    g.k[0] = g.s[0] = g.d[0] = 1;
    g.pb[0] = g.pe[0] = g.op[0] = 0;
  }
  int64_t pad[6], ks[3], st[3], dl[3], op[3];
  for (uint32_t i = 0; i < g.nsp; i++) {
    pad[i] = g.pb[i];
    pad[g.nsp + i] = g.pe[i];
    ks[i] = g.k[i];
    st[i] = g.s[i];
    dl[i] = g.d[i];
    op[i] = g.op[i];
  }
  rlx_id y, in2[2] = {x, w};
  uint32_t n = g.nsp;
  if (!transposed && n == 2) {
    rlx_attrs_Conv a = {.kernel_size = {.v = ks, .n = n},
                        .stride = {.v = st, .n = n},
                        .padding = {.v = pad, .n = 2 * n},
                        .dilation = {.v = dl, .n = n},
                        .groups = group};
    RLX_TRY(oi_emit(c, RLX_OP_Conv, in2, 2, &a, &y));
  } else if (!transposed) {
    rlx_attrs_Conv3d a = {
        .stride = {.v = st, .n = n}, .padding = {.v = pad, .n = 2 * n}, .dilation = {.v = dl, .n = n}, .groups = group};
    RLX_TRY(oi_emit(c, RLX_OP_Conv3d, in2, 2, &a, &y));
  } else if (n == 2) {
    rlx_attrs_ConvTranspose2d a = {.kernel_size = {.v = ks, .n = n},
                                   .stride = {.v = st, .n = n},
                                   .padding = {.v = pad, .n = 2 * n},
                                   .dilation = {.v = dl, .n = n},
                                   .output_padding = {.v = op, .n = n},
                                   .groups = group};
    RLX_TRY(oi_emit(c, RLX_OP_ConvTranspose2d, in2, 2, &a, &y));
  } else {
    rlx_attrs_ConvTranspose3d a = {.stride = {.v = st, .n = n},
                                   .padding = {.v = pad, .n = 2 * n},
                                   .dilation = {.v = dl, .n = n},
                                   .output_padding = {.v = op, .n = n},
                                   .groups = group};
    RLX_TRY(oi_emit(c, RLX_OP_ConvTranspose3d, in2, 2, &a, &y));
  }
  RLX_TRY(add_bias(c, y, 2, &y));
  if (one_d) RLX_TRY(drop_1d(c, y, &y));
  c->out[0] = y;
  return RLX_OK;
}

static rlx_status map_conv(oi_node *c) { return oi_conv(c, false); }
static rlx_status map_conv_transpose(oi_node *c) { return oi_conv(c, true); }

/* ======================================================================================
 * Pooling
 * ====================================================================================== */

/* Number of window cells of output position o that lie in [lo, hi). */
static int64_t window_count(int64_t o, int64_t s, int64_t k, int64_t pb, int64_t lo, int64_t hi) {
  int64_t a = o * s - pb, b = a + k;
  if (a < lo) a = lo;
  if (b > hi) b = hi;
  return b > a ? b - a : 0;
}

/* Cells of window o (kernel k, dilation d) that lie in [lo, hi). */
static int64_t window_count_d(int64_t o, int64_t s, int64_t k, int64_t d, int64_t pb, int64_t lo, int64_t hi) {
  int64_t n = 0;
  for (int64_t j = 0; j < k; j++) {
    int64_t p = o * s - pb + j * d;
    n += p >= lo && p < hi;
  }
  return n;
}

/* Pooling of any rank with dilation. Windows are boxes, so max and sum are separable: axis by
 * axis, every kernel offset is a strided Slice of the padded input, combined with Max or summed;
 * an average then divides by the counted cells. */
/* Max, average or (`sum`, for LpPool) pooling by strided slices of the padded input. */
static rlx_status pool_by_slices(oi_node *c, rlx_id x, const geom *g, const int64_t *in, const int64_t *out,
                                 const int64_t *extra, bool is_max, bool cip, bool sum) {
  uint32_t n = g->nsp;
  size_t taps = 0, positions = 1;
  for (uint32_t i = 0; i < n; i++) {
    taps += (size_t)g->k[i];
    positions *= (size_t)out[i];
  }
  if (taps > 4096)
    return oi_unsupported(c, "a dilated or 3-D pooling window with more than 4096 cells per axis in total");
  const rlx_shape xs = *oi_shape(c, x);
  rlx_dtype t = (rlx_dtype)xs.dtype;
  if (is_max && !rlx_dtype_is_float(t)) return oi_unsupported(c, "integer MaxPool with dilation or 3-D");
  int64_t pads[2 * RLX_MAX_RANK] = {0};
  bool any_pad = false;
  for (uint32_t i = 0; i < n; i++) {
    pads[2 * (2 + i)] = g->pb[i];
    pads[2 * (2 + i) + 1] = g->pe[i] + extra[i];
    any_pad |= g->pb[i] || g->pe[i] + extra[i];
  }
  if (any_pad) {
    rlx_attrs_Pad pa = {
        .pads = {.v = pads, .n = 2 * xs.rank}, .mode = RLX_PAD_MODE_CONSTANT, .value = is_max ? -INFINITY : 0.0f};
    RLX_TRY(oi_emit(c, RLX_OP_Pad, &x, 1, &pa, &x));
  }
  rlx_id acc = x;
  for (uint32_t i = 0; i < n; i++) {
    rlx_id red = RLX_NO_ID;
    for (int64_t j = 0; j < g->k[i]; j++) {
      rlx_id v;
      rlx_attrs_Slice sa = {.axis = 2 + i, .start = j * g->d[i], .len = out[i], .step = g->s[i]};
      RLX_TRY(oi_emit(c, RLX_OP_Slice, &acc, 1, &sa, &v));
      if (red == RLX_NO_ID)
        red = v;
      else
        RLX_TRY(oi_bin(c, is_max ? RLX_BINOP_MAX : RLX_BINOP_ADD, red, v, &red));
    }
    acc = red;
  }
  if (is_max || sum) {
    c->out[0] = acc;
    return RLX_OK;
  }
  if (positions > ((size_t)1 << 26)) return oi_unsupported(c, "an average pool with %zu output positions", positions);
  double *f = oi_scratch(c, positions * sizeof *f);
  if (!f) return oi_nomem(c);
  for (size_t p = 0; p < positions; p++) {
    size_t rem = p;
    int64_t cnt = 1;
    for (int i = (int)n - 1; i >= 0; i--) {
      int64_t o = (int64_t)(rem % (size_t)out[i]);
      rem /= (size_t)out[i];
      cnt *= cip ? window_count_d(o, g->s[i], g->k[i], g->d[i], g->pb[i], -g->pb[i], in[i] + g->pe[i])
                 : window_count_d(o, g->s[i], g->k[i], g->d[i], g->pb[i], 0, in[i]);
    }
    f[p] = cnt > 0 ? 1.0 / (double)cnt : 0.0;
  }
  rlx_dim fd[3];
  for (uint32_t i = 0; i < n; i++) fd[i] = out[i];
  rlx_id fac;
  RLX_TRY(oi_const(c, rlx_shape_make(RLX_F64, n, fd), f, positions * sizeof *f, &fac));
  RLX_TRY(oi_cast(c, fac, t, &fac));
  return oi_bin(c, RLX_BINOP_MUL, acc, fac, &c->out[0]);
}

/* LpPool's |x|^p before the pooled sum (p from the attribute: a float in opset 1, an int later). */
static rlx_status lp_pool_power(oi_node *c, rlx_id x, double *p, rlx_id *out) {
  if (c->opset < 2) {
    float pf;
    RLX_TRY(oi_attr_f(c, "p", 2.0f, &pf));
    *p = pf;
  } else {
    int64_t pi;
    RLX_TRY(oi_attr_i(c, "p", 2, &pi));
    *p = (double)pi;
  }
  if (!(*p > 0) || !isfinite(*p)) return oi_bad(c, "attribute p is %g; it must be positive", *p);
  if (!rlx_dtype_is_float((rlx_dtype)oi_shape(c, x)->dtype)) return oi_bad(c, "input X must be floating-point");
  if (*p == 2) return oi_bin(c, RLX_BINOP_MUL, x, x, out);
  RLX_TRY(oi_unary(c, RLX_ACT_ABS, x, out));
  if (*p == 1) return RLX_OK;
  rlx_id e;
  RLX_TRY(oi_scalar(c, (rlx_dtype)oi_shape(c, x)->dtype, *p, &e));
  return oi_bin(c, RLX_BINOP_POW, *out, e, out);
}

/* (pooled sum)^(1/p) */
static rlx_status lp_pool_root(oi_node *c, double p, rlx_id *y) {
  if (p == 1) return RLX_OK;
  if (p == 2) return oi_unary(c, RLX_ACT_SQRT, *y, y);
  rlx_id e;
  RLX_TRY(oi_scalar(c, (rlx_dtype)oi_shape(c, *y)->dtype, 1.0 / p, &e));
  return oi_bin(c, RLX_BINOP_POW, *y, e, y);
}

/* MaxPool, AveragePool and LpPool ((sum of |x|^p over the zero-padded window)^(1/p)). */
static rlx_status map_pool(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "X"));
  bool is_max = strcmp(c->np->op_type, "MaxPool") == 0, is_lp = strcmp(c->np->op_type, "LpPool") == 0;
  rlx_id x = c->in[0];
  double p = 1;
  if (is_lp) RLX_TRY(lp_pool_power(c, x, &p, &x));
  const rlx_shape *xs = oi_shape(c, x);
  if (xs->rank < 3) return oi_bad(c, "input X must have rank >= 3, got %s", rlx_fmt_shape(xs));
  geom g;
  memset(&g, 0, sizeof g);
  g.nsp = xs->rank - 2u;
  if (g.nsp > 3) return oi_unsupported(c, "%u-D pooling (1-D to 3-D are supported)", g.nsp);
  if (!is_max && c->n_out > 1) return oi_bad(c, "%s has one output, not %u", c->np->op_type, c->n_out);
  RLX_TRY(oi_need_static(c, xs, "input X"));
  RLX_TRY(read_list(c, "kernel_shape", g.nsp, 0, 1, g.k));
  if (!oi_attr(c, "kernel_shape")) return oi_bad(c, "attribute kernel_shape is required");
  /* dilations: MaxPool always, AveragePool from opset 19, LpPool from 18 (with ceil_mode) */
  RLX_TRY(read_geom(c, xs, &g, is_max || c->opset >= 19 || (is_lp && c->opset >= 18), false));
  int64_t ceil_mode = 0, cip = 0;
  if (!is_lp || c->opset >= 18) RLX_TRY(oi_attr_i(c, "ceil_mode", 0, &ceil_mode));
  if (!is_max && !is_lp) RLX_TRY(oi_attr_i(c, "count_include_pad", 0, &cip));
  /* output extents, ceil_mode as extra end padding */
  int64_t in[3], out[3], extra[3];
  bool dilated = false;
  for (uint32_t i = 0; i < g.nsp; i++) {
    in[i] = xs->dims[2 + i];
    int64_t ke = (g.k[i] - 1) * g.d[i] + 1;
    dilated |= g.d[i] != 1;
    int64_t span = in[i] + g.pb[i] + g.pe[i] - ke;
    if (span < 0)
      return oi_bad(c, "the kernel (%lld) is larger than the padded input (%lld) on spatial axis %u", (long long)ke,
                    (long long)(in[i] + g.pb[i] + g.pe[i]), i);
    out[i] = span / g.s[i] + 1;
    if (ceil_mode && span % g.s[i]) {
      out[i]++;
      if ((out[i] - 1) * g.s[i] >= in[i] + g.pb[i]) out[i]--; /* windows must start inside input or left pad */
    }
    extra[i] = (out[i] - 1) * g.s[i] + ke - (in[i] + g.pb[i] + g.pe[i]);
    if (extra[i] < 0) extra[i] = 0;
  }
  if (is_max && c->n_out > 1 && c->out_used[1]) { /* Indices (ops_pool_index.c), only when read */
    int64_t so, pe[3];
    RLX_TRY(oi_attr_i(c, "storage_order", 0, &so));
    for (uint32_t i = 0; i < g.nsp; i++) pe[i] = g.pe[i] + extra[i];
    RLX_TRY(oi_maxpool_indices(c, x, g.nsp, g.k, g.s, g.d, g.pb, pe, out, so, &c->out[1]));
  }
  if (g.nsp == 3 || dilated) {
    RLX_TRY(pool_by_slices(c, x, &g, in, out, extra, is_max, cip != 0, is_lp));
    return is_lp ? lp_pool_root(c, p, &c->out[0]) : RLX_OK;
  }
  bool one_d = g.nsp == 1;
  /* 2-D view: a 1-D pool gets a unit leading spatial axis */
  int64_t k2[2] = {1, 1}, s2[2] = {1, 1}, pb2[2] = {0, 0}, pe2[2] = {0, 0}, pex2[2] = {0, 0}, in2[2] = {1, 1},
          out2[2] = {1, 1};
  if (one_d) RLX_TRY(lift_1d(c, x, &x));
  for (uint32_t i = 0; i < g.nsp; i++) {
    uint32_t j = one_d ? 1 : i;
    k2[j] = g.k[i], s2[j] = g.s[i], pb2[j] = g.pb[i], pex2[j] = g.pe[i], pe2[j] = g.pe[i] + extra[i];
    in2[j] = in[i], out2[j] = out[i];
  }
  /* RLX's Pool needs padding smaller than the kernel: pad explicitly otherwise */
  bool explicit_pad = false;
  for (uint32_t i = 0; i < 2; i++) explicit_pad |= pb2[i] >= k2[i] || pe2[i] >= k2[i];
  int64_t padding[4] = {pb2[0], pb2[1], pe2[0], pe2[1]};
  rlx_dtype t = (rlx_dtype)xs->dtype;
  if (explicit_pad) {
    if (is_max && !rlx_dtype_is_float(t))
      return oi_unsupported(c, "integer MaxPool with padding as large as the kernel");
    int64_t pads[8] = {0, 0, 0, 0, pb2[0], pe2[0], pb2[1], pe2[1]};
    rlx_attrs_Pad pa = {.pads = {.v = pads, .n = 8}, .mode = RLX_PAD_MODE_CONSTANT, .value = is_max ? -INFINITY : 0.0f};
    RLX_TRY(oi_emit(c, RLX_OP_Pad, &x, 1, &pa, &x));
    memset(padding, 0, sizeof padding);
  }
  rlx_attrs_Pool pa = {.kind = is_max ? RLX_REDUCE_MAX : RLX_REDUCE_MEAN,
                       .kernel_size = {.v = k2, .n = 2},
                       .stride = {.v = s2, .n = 2},
                       .padding = {.v = padding, .n = 4}};
  rlx_id y;
  RLX_TRY(oi_emit(c, RLX_OP_Pool, &x, 1, &pa, &y));
  if (is_lp) { /* Pool's mean over the zero-padded window, times the window size: the sum */
    RLX_TRY(oi_bin_s(c, RLX_BINOP_MUL, y, (double)(k2[0] * k2[1]), &y));
    RLX_TRY(lp_pool_root(c, p, &y));
  } else if (!is_max) {
    /* Pool's mean divides by the window size; ONNX divides by the cells that count */
    size_t n = (size_t)(out2[0] * out2[1]);
    if (n > ((size_t)1 << 26)) return oi_unsupported(c, "an average pool with %zu output positions", n);
    double *f = oi_scratch(c, n * sizeof *f);
    if (!f) return oi_nomem(c);
    bool trivial = true;
    for (int64_t a = 0; a < out2[0]; a++)
      for (int64_t b = 0; b < out2[1]; b++) {
        /* counted cells: the explicitly padded input (count_include_pad) or the input only */
        int64_t ca = cip ? window_count(a, s2[0], k2[0], pb2[0], -pb2[0], in2[0] + pex2[0])
                         : window_count(a, s2[0], k2[0], pb2[0], 0, in2[0]);
        int64_t cb = cip ? window_count(b, s2[1], k2[1], pb2[1], -pb2[1], in2[1] + pex2[1])
                         : window_count(b, s2[1], k2[1], pb2[1], 0, in2[1]);
        double v = ca > 0 && cb > 0 ? (double)(k2[0] * k2[1]) / (double)(ca * cb) : 0.0;
        f[a * out2[1] + b] = v;
        trivial &= v == 1.0;
      }
    if (!trivial) {
      rlx_dim fd[2] = {out2[0], out2[1]};
      rlx_shape fs = rlx_shape_make(RLX_F64, 2, fd);
      rlx_id fac;
      RLX_TRY(oi_const(c, fs, f, n * sizeof *f, &fac));
      RLX_TRY(oi_cast(c, fac, t, &fac));
      RLX_TRY(oi_bin(c, RLX_BINOP_MUL, y, fac, &y));
    }
  }
  if (one_d) RLX_TRY(drop_1d(c, y, &y));
  c->out[0] = y;
  return RLX_OK;
}

/* Col2Im (opset 18): sums column blocks [N, C * prod(block), L] back into an image
 * [N, C, image...]. Every (kernel offset, block) pair lands on one cell of the padded image,
 * computed here as a constant index list; a ScatterElements with reduction add into zeros
 * accumulates the overlaps, then the padding is cut off. Shapes, image_shape and block_shape must
 * be known at import time. */
static rlx_status map_col2im(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "input"));
  int64_t *img, *blk;
  size_t ni, nb;
  RLX_TRY(oi_in_ints(c, 1, "image_shape", &img, &ni));
  RLX_TRY(oi_in_ints(c, 2, "block_shape", &blk, &nb));
  rlx_id x = c->in[0];
  const rlx_shape xs = *oi_shape(c, x);
  RLX_TRY(oi_need_static(c, &xs, "input"));
  if (xs.rank != 3) return oi_bad(c, "input must be 3-D [N, C * prod(block_shape), L], got %s", rlx_fmt_shape(&xs));
  if (ni != nb || ni < 1 || ni + 2 > RLX_MAX_RANK)
    return oi_bad(c, "image_shape (%zu entries) and block_shape (%zu) must have the same length", ni, nb);
  uint32_t n = (uint32_t)ni;
  int64_t st[RLX_MAX_RANK], dl[RLX_MAX_RANK], pd[2 * RLX_MAX_RANK], grid[RLX_MAX_RANK], padded[RLX_MAX_RANK];
  RLX_TRY(read_list(c, "strides", n, 1, 1, st));
  RLX_TRY(read_list(c, "dilations", n, 1, 1, dl));
  RLX_TRY(read_list(c, "pads", 2 * n, 0, 0, pd));
  int64_t K = 1, L = 1, P = 1;
  for (uint32_t i = 0; i < n; i++) {
    if (img[i] < 1 || blk[i] < 1) return oi_bad(c, "image_shape and block_shape entries must be positive");
    padded[i] = img[i] + pd[i] + pd[n + i];
    int64_t span = padded[i] - dl[i] * (blk[i] - 1) - 1;
    if (span < 0)
      return oi_bad(c, "the dilated block (%lld) is larger than the padded image (%lld) on axis %u",
                    (long long)(dl[i] * (blk[i] - 1) + 1), (long long)padded[i], i);
    grid[i] = span / st[i] + 1;
    K *= blk[i], L *= grid[i], P *= padded[i];
  }
  if (xs.dims[1] % K)
    return oi_bad(c, "input dim 1 (%lld) is not a multiple of the block size %lld", (long long)xs.dims[1],
                  (long long)K);
  if (xs.dims[2] != L)
    return oi_bad(c, "input has %lld blocks; image_shape, block_shape, pads, strides and dilations give %lld",
                  (long long)xs.dims[2], (long long)L);
  int64_t N = xs.dims[0], C = xs.dims[1] / K;
  size_t cnt = (size_t)(K * L);
  if (cnt > ((size_t)1 << 26) || P > ((int64_t)1 << 30)) return oi_unsupported(c, "a Col2Im of %zu column cells", cnt);
  int64_t *idx = oi_scratch(c, cnt * sizeof *idx);
  if (!idx) return oi_nomem(c);
  for (int64_t k = 0; k < K; k++)
    for (int64_t l = 0; l < L; l++) {
      int64_t kr = k, lr = l, pos = 0, stride = 1;
      for (int i = (int)n - 1; i >= 0; i--) { /* row-major offsets within the block and the block grid */
        int64_t ko = kr % blk[i], lo = lr % grid[i];
        kr /= blk[i], lr /= grid[i];
        pos += (lo * st[i] + ko * dl[i]) * stride;
        stride *= padded[i];
      }
      idx[k * L + l] = pos;
    }
  rlx_dim id3[3] = {1, 1, (rlx_dim)cnt};
  int64_t upd[3] = {N, C, (int64_t)cnt}, e3[3] = {N, C, (int64_t)cnt};
  rlx_id ic, u, zeros, y;
  RLX_TRY(oi_const(c, rlx_shape_make(RLX_I64, 3, id3), idx, cnt * 8, &ic));
  rlx_attrs_Expand ea = {.target_shape = {.v = e3, .n = 3}};
  RLX_TRY(oi_emit(c, RLX_OP_Expand, &ic, 1, &ea, &ic));
  RLX_TRY(oi_reshape(c, x, 3, upd, &u)); /* [N, C, K, L] flattened: cell k * L + l */
  rlx_dim zd[3] = {N, C, P};
  RLX_TRY(oi_fill(c, rlx_shape_make((rlx_dtype)xs.dtype, 3, zd), 0.0, &zeros));
  rlx_attrs_ScatterElements sa = {.axis = 2, .reduction = RLX_SCATTER_REDUCTION_ADD};
  rlx_id si[3] = {zeros, ic, u};
  RLX_TRY(oi_emit(c, RLX_OP_ScatterElements, si, 3, &sa, &y));
  int64_t od[RLX_MAX_RANK];
  od[0] = N, od[1] = C;
  for (uint32_t i = 0; i < n; i++) od[2 + i] = padded[i];
  RLX_TRY(oi_reshape(c, y, n + 2, od, &y));
  for (uint32_t i = 0; i < n; i++)
    if (pd[i] || pd[n + i]) RLX_TRY(oi_narrow(c, y, 2 + i, pd[i], img[i], &y));
  c->out[0] = y;
  return RLX_OK;
}

/* DeformConv (opsets 19, 22), 2-D: each kernel tap k of output position (oh, ow) samples X
 * bilinearly at (oh sH - pT + kh dH + dy, ow sW - pL + kw dW + dx), (dy, dx) from `offset`
 * ([N, offset_group * kH * kW * 2, oH, oW], y first), corners outside X contributing 0, times
 * `mask`; the samples form im2col columns [N, C kH kW, oH oW] (channels of offset group g read
 * its offsets) multiplied by W per group, plus B. The four corners are GatherElements from X
 * viewed as [N, offset_group, C / offset_group, H W] with run-time indices. */
static rlx_status map_deform_conv(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "X"));
  RLX_TRY(oi_need(c, 1, "W"));
  RLX_TRY(oi_need(c, 2, "offset"));
  const rlx_shape xs = *oi_in_shape(c, 0), ws = *oi_in_shape(c, 1), os = *oi_in_shape(c, 2);
  RLX_TRY(oi_need_static(c, &xs, "X"));
  RLX_TRY(oi_need_static(c, &ws, "W"));
  RLX_TRY(oi_need_static(c, &os, "offset"));
  if (xs.rank != 4 || ws.rank != 4 || os.rank != 4)
    return oi_unsupported(c, "DeformConv that is not 2-D (X %s)", rlx_fmt_shape(&xs));
  rlx_dtype t = (rlx_dtype)xs.dtype;
  if (!rlx_dtype_is_float(t)) return oi_bad(c, "X must be floating-point");
  int64_t grp, og;
  RLX_TRY(oi_attr_i(c, "group", 1, &grp));
  RLX_TRY(oi_attr_i(c, "offset_group", 1, &og));
  int64_t st[2], dl[2], pd[4], ks[2];
  RLX_TRY(read_list(c, "strides", 2, 1, 1, st));
  RLX_TRY(read_list(c, "dilations", 2, 1, 1, dl));
  RLX_TRY(read_list(c, "pads", 4, 0, 0, pd));
  RLX_TRY(read_list(c, "kernel_shape", 2, 0, 1, ks));
  int64_t N = xs.dims[0], C = xs.dims[1], H = xs.dims[2], Wd = xs.dims[3], OC = ws.dims[0], kH = ws.dims[2],
          kW = ws.dims[3];
  if (oi_attr(c, "kernel_shape") && (ks[0] != kH || ks[1] != kW))
    return oi_bad(c, "kernel_shape does not match W %s", rlx_fmt_shape(&ws));
  if (grp < 1 || og < 1 || C % grp || OC % grp || C % og || ws.dims[1] != C / grp)
    return oi_bad(c, "group %lld / offset_group %lld do not fit X %s and W %s", (long long)grp, (long long)og,
                  rlx_fmt_shape(&xs), rlx_fmt_shape(&ws));
  int64_t oH = (H + pd[0] + pd[2] - dl[0] * (kH - 1) - 1) / st[0] + 1,
          oW = (Wd + pd[1] + pd[3] - dl[1] * (kW - 1) - 1) / st[1] + 1;
  int64_t K = kH * kW, L = oH * oW, Cg = C / og;
  if (oH < 1 || oW < 1) return oi_bad(c, "the dilated kernel is larger than the padded input");
  if (os.dims[0] != N || os.dims[1] != og * K * 2 || os.dims[2] != oH || os.dims[3] != oW)
    return oi_bad(c, "offset is %s; expected [%lld, %lld, %lld, %lld]", rlx_fmt_shape(&os), (long long)N,
                  (long long)(og * K * 2), (long long)oH, (long long)oW);
  if ((size_t)(K * L) > ((size_t)1 << 24))
    return oi_unsupported(c, "a DeformConv with %lld sampling positions", (long long)(K * L));
  /* base sampling coordinates [1, 1, K, L] (y, x) */
  double *by = oi_scratch(c, (size_t)(K * L) * sizeof *by), *bx = oi_scratch(c, (size_t)(K * L) * sizeof *bx);
  if (!by || !bx) return oi_nomem(c);
  for (int64_t kh = 0; kh < kH; kh++)
    for (int64_t kw = 0; kw < kW; kw++)
      for (int64_t oh = 0; oh < oH; oh++)
        for (int64_t ow = 0; ow < oW; ow++) {
          size_t i = (size_t)((kh * kW + kw) * L + oh * oW + ow);
          by[i] = (double)(oh * st[0] - pd[0] + kh * dl[0]);
          bx[i] = (double)(ow * st[1] - pd[1] + kw * dl[1]);
        }
  rlx_dim kd[4] = {1, 1, K, L};
  rlx_id py, px, off, oy, ox;
  RLX_TRY(oi_const(c, rlx_shape_make(RLX_F64, 4, kd), by, (size_t)(K * L) * 8, &py));
  RLX_TRY(oi_const(c, rlx_shape_make(RLX_F64, 4, kd), bx, (size_t)(K * L) * 8, &px));
  RLX_TRY(oi_cast(c, py, t, &py));
  RLX_TRY(oi_cast(c, px, t, &px));
  int64_t od5[5] = {N, og, K, 2, L}, od4[4] = {N, og, K, L};
  RLX_TRY(oi_cast(c, c->in[2], t, &off));
  RLX_TRY(oi_reshape(c, off, 5, od5, &off));
  RLX_TRY(oi_narrow(c, off, 3, 0, 1, &oy));
  RLX_TRY(oi_narrow(c, off, 3, 1, 1, &ox));
  RLX_TRY(oi_reshape(c, oy, 4, od4, &oy));
  RLX_TRY(oi_reshape(c, ox, 4, od4, &ox));
  rlx_id y, x, y0, x0, ly, lx;
  RLX_TRY(oi_bin(c, RLX_BINOP_ADD, py, oy, &y)); /* [N, og, K, L] */
  RLX_TRY(oi_bin(c, RLX_BINOP_ADD, px, ox, &x));
  RLX_TRY(oi_unary(c, RLX_ACT_FLOOR, y, &y0));
  RLX_TRY(oi_unary(c, RLX_ACT_FLOOR, x, &x0));
  RLX_TRY(oi_bin(c, RLX_BINOP_SUB, y, y0, &ly));
  RLX_TRY(oi_bin(c, RLX_BINOP_SUB, x, x0, &lx));
  rlx_id xv, sum = RLX_NO_ID;
  int64_t xd4[4] = {N, og, Cg, H * Wd}, gd[4] = {N, og, Cg, K * L};
  RLX_TRY(oi_reshape(c, c->in[0], 4, xd4, &xv));
  for (int corner = 0; corner < 4; corner++) {
    int dy = corner >> 1, dx = corner & 1;
    rlx_id yc, xc, wy, wx, w, ok, t1, idx, g, zero;
    RLX_TRY(oi_bin_s(c, RLX_BINOP_ADD, y0, dy, &yc));
    RLX_TRY(oi_bin_s(c, RLX_BINOP_ADD, x0, dx, &xc));
    wy = ly, wx = lx;
    if (!dy) { /* 1 - ly */
      RLX_TRY(oi_bin_s(c, RLX_BINOP_SUB, ly, 1.0, &wy));
      RLX_TRY(oi_unary(c, RLX_ACT_NEG, wy, &wy));
    }
    if (!dx) {
      RLX_TRY(oi_bin_s(c, RLX_BINOP_SUB, lx, 1.0, &wx));
      RLX_TRY(oi_unary(c, RLX_ACT_NEG, wx, &wx));
    }
    RLX_TRY(oi_bin(c, RLX_BINOP_MUL, wy, wx, &w));
    /* inside X: 0 <= yc < H and 0 <= xc < W */
    rlx_id lim;
    RLX_TRY(oi_scalar(c, t, 0, &zero));
    RLX_TRY(oi_cmp(c, RLX_CMP_GE, yc, zero, &ok));
    RLX_TRY(oi_scalar(c, t, (double)H, &lim));
    RLX_TRY(oi_cmp(c, RLX_CMP_LT, yc, lim, &t1));
    RLX_TRY(oi_bin(c, RLX_BINOP_BIT_AND, ok, t1, &ok));
    RLX_TRY(oi_cmp(c, RLX_CMP_GE, xc, zero, &t1));
    RLX_TRY(oi_bin(c, RLX_BINOP_BIT_AND, ok, t1, &ok));
    RLX_TRY(oi_scalar(c, t, (double)Wd, &lim));
    RLX_TRY(oi_cmp(c, RLX_CMP_LT, xc, lim, &t1));
    RLX_TRY(oi_bin(c, RLX_BINOP_BIT_AND, ok, t1, &ok));
    RLX_TRY(oi_where(c, ok, w, zero, &w));
    /* flat index, clamped into X */
    rlx_id ycl, xcl, hmax, wmax;
    RLX_TRY(oi_scalar(c, t, (double)(H - 1), &hmax));
    RLX_TRY(oi_scalar(c, t, (double)(Wd - 1), &wmax));
    RLX_TRY(oi_bin(c, RLX_BINOP_MAX, yc, zero, &ycl));
    RLX_TRY(oi_bin(c, RLX_BINOP_MIN, ycl, hmax, &ycl));
    RLX_TRY(oi_bin(c, RLX_BINOP_MAX, xc, zero, &xcl));
    RLX_TRY(oi_bin(c, RLX_BINOP_MIN, xcl, wmax, &xcl));
    RLX_TRY(oi_bin_s(c, RLX_BINOP_MUL, ycl, (double)Wd, &idx));
    RLX_TRY(oi_bin(c, RLX_BINOP_ADD, idx, xcl, &idx));
    RLX_TRY(oi_cast(c, idx, RLX_I64, &idx));
    int64_t i1[4] = {N, og, 1, K * L};
    RLX_TRY(oi_reshape(c, idx, 4, i1, &idx));
    rlx_attrs_Expand ea = {.target_shape = {.v = gd, .n = 4}};
    RLX_TRY(oi_emit(c, RLX_OP_Expand, &idx, 1, &ea, &idx));
    rlx_attrs_GatherElements ga = {.axis = 3};
    rlx_id gi[2] = {xv, idx};
    RLX_TRY(oi_emit(c, RLX_OP_GatherElements, gi, 2, &ga, &g)); /* [N, og, Cg, K L] */
    RLX_TRY(oi_reshape(c, w, 4, i1, &w));
    RLX_TRY(oi_bin(c, RLX_BINOP_MUL, g, w, &g));
    if (sum == RLX_NO_ID)
      sum = g;
    else
      RLX_TRY(oi_bin(c, RLX_BINOP_ADD, sum, g, &sum));
  }
  if (oi_has(c, 4)) { /* mask [N, og K, oH, oW] */
    rlx_id mk;
    int64_t m4[4] = {N, og, 1, K * L};
    RLX_TRY(oi_cast(c, c->in[4], t, &mk));
    RLX_TRY(oi_reshape(c, mk, 4, m4, &mk));
    RLX_TRY(oi_bin(c, RLX_BINOP_MUL, sum, mk, &sum));
  }
  /* columns [N, group, C / group * K, L] times W [group, OC / group, C / group * K] */
  int64_t cd[4] = {N, grp, (C / grp) * K, L}, wd3[3] = {grp, OC / grp, (C / grp) * K}, yd[4] = {N, OC, oH, oW};
  rlx_id cols, wm, y4, mm[2];
  RLX_TRY(oi_reshape(c, sum, 4, cd, &cols));
  RLX_TRY(oi_cast(c, c->in[1], t, &wm));
  RLX_TRY(oi_reshape(c, wm, 3, wd3, &wm));
  mm[0] = wm, mm[1] = cols;
  RLX_TRY(oi_emit(c, RLX_OP_MatMul, mm, 2, NULL, &y4)); /* [N, group, OC / group, L] */
  RLX_TRY(oi_reshape(c, y4, 4, yd, &y4));
  if (oi_has(c, 3)) {
    rlx_id b;
    RLX_TRY(oi_cast(c, c->in[3], t, &b));
    RLX_TRY(oi_bcast_axis(c, b, 4, 1, &b));
    RLX_TRY(oi_bin(c, RLX_BINOP_ADD, y4, b, &y4));
  }
  c->out[0] = y4;
  return RLX_OK;
}

static rlx_status map_global_pool(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "X"));
  const rlx_shape *xs = oi_in_shape(c, 0);
  if (xs->rank < 3) return oi_bad(c, "input X must have rank >= 3, got %s", rlx_fmt_shape(xs));
  int64_t axes[RLX_MAX_RANK];
  uint32_t n = 0;
  for (uint32_t i = 2; i < xs->rank; i++) axes[n++] = i;
  const char *op = c->np->op_type;
  if (strcmp(op, "GlobalLpPool") == 0) {
    int64_t p;
    RLX_TRY(oi_attr_i(c, "p", 2, &p));
    rlx_id a, s;
    RLX_TRY(oi_unary(c, RLX_ACT_ABS, c->in[0], &a));
    RLX_TRY(oi_bin_s(c, RLX_BINOP_POW, a, (double)p, &a));
    RLX_TRY(oi_reduce(c, RLX_REDUCE_SUM, a, axes, n, true, &s));
    return oi_bin_s(c, RLX_BINOP_POW, s, 1.0 / (double)p, &c->out[0]);
  }
  return oi_reduce(c, strcmp(op, "GlobalMaxPool") == 0 ? RLX_REDUCE_MAX : RLX_REDUCE_MEAN, c->in[0], axes, n, true,
                   &c->out[0]);
}

/* ======================================================================================
 * Normalization
 * ====================================================================================== */

static rlx_status map_batch_norm(oi_node *c) {
  for (uint32_t k = 0; k < 5; k++)
    RLX_TRY(oi_need(c, k, k == 0 ? "X" : k == 1 ? "scale" : k == 2 ? "B" : k == 3 ? "mean" : "var"));
  int64_t training = 0, spatial = 1;
  if (c->opset >= 14) RLX_TRY(oi_attr_i(c, "training_mode", 0, &training));
  if (c->opset < 7) {
    int64_t is_test;
    RLX_TRY(oi_attr_i(c, "is_test", 0, &is_test));
    training = !is_test;
  }
  if (c->opset < 9) RLX_TRY(oi_attr_i(c, "spatial", 1, &spatial));
  if (training && c->opset < 14) return oi_unsupported(c, "training mode before opset 14 (saved statistics outputs)");
  if (!training)
    for (uint32_t k = 1; k < c->n_out; k++)
      if (c->out_used[k]) return oi_unsupported(c, "output %u (training statistics)", k);
  float eps, momentum;
  RLX_TRY(oi_attr_f(c, "epsilon", 1e-5f, &eps));
  RLX_TRY(oi_attr_f(c, "momentum", 0.9f, &momentum));
  rlx_id x = c->in[0], p[4];
  const rlx_shape *xs = oi_shape(c, x);
  rlx_dtype t = (rlx_dtype)xs->dtype;
  if (!rlx_dtype_is_float(t)) return oi_bad(c, "input X must be floating-point");
  if (xs->rank < 2) return oi_bad(c, "input X must have rank >= 2, got %s", rlx_fmt_shape(xs));
  for (uint32_t k = 0; k < 4; k++) RLX_TRY(oi_cast(c, c->in[k + 1], t, &p[k]));
  if (training) {
    /* batch statistics over every axis but 1 (population variance); running stats updated */
    int64_t axes[RLX_MAX_RANK];
    uint32_t na = 0;
    for (uint32_t i = 0; i < xs->rank; i++)
      if (i != 1) axes[na++] = i;
    rlx_id bm, bmb, d, bv, old, upd;
    RLX_TRY(oi_reduce(c, RLX_REDUCE_MEAN, x, axes, na, false, &bm));
    RLX_TRY(oi_bcast_axis(c, bm, xs->rank, 1, &bmb));
    RLX_TRY(oi_bin(c, RLX_BINOP_SUB, x, bmb, &d));
    RLX_TRY(oi_bin(c, RLX_BINOP_MUL, d, d, &d));
    RLX_TRY(oi_reduce(c, RLX_REDUCE_MEAN, d, axes, na, false, &bv));
    for (uint32_t k = 1; k < c->n_out && k < 3; k++) {
      if (!c->out_used[k]) continue;
      RLX_TRY(oi_bin_s(c, RLX_BINOP_MUL, p[k + 1], momentum, &old));
      RLX_TRY(oi_bin_s(c, RLX_BINOP_MUL, k == 1 ? bm : bv, 1.0 - (double)momentum, &upd));
      RLX_TRY(oi_bin(c, RLX_BINOP_ADD, old, upd, &c->out[k]));
    }
    p[2] = bm;
    p[3] = bv;
  }
  /* inv = scale / sqrt(var + eps); shift = B - mean * inv; y = x * inv + shift (folds for
   * constant parameters) */
  rlx_id inv, shift, y;
  RLX_TRY(oi_bin_s(c, RLX_BINOP_ADD, p[3], eps, &inv));
  RLX_TRY(oi_unary(c, RLX_ACT_RSQRT, inv, &inv));
  RLX_TRY(oi_bin(c, RLX_BINOP_MUL, p[0], inv, &inv));
  RLX_TRY(oi_bin(c, RLX_BINOP_MUL, p[2], inv, &shift));
  RLX_TRY(oi_bin(c, RLX_BINOP_SUB, p[1], shift, &shift));
  (void)spatial; /* spatial = 0 parameters are [C, D1, ...]: they line up at axis 1 as well */
  RLX_TRY(oi_bcast_axis(c, inv, xs->rank, 1, &inv));
  RLX_TRY(oi_bcast_axis(c, shift, xs->rank, 1, &shift));
  RLX_TRY(oi_bin(c, RLX_BINOP_MUL, x, inv, &y));
  return oi_bin(c, RLX_BINOP_ADD, y, shift, &c->out[0]);
}

static rlx_status map_instance_norm(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "input"));
  RLX_TRY(oi_need(c, 1, "scale"));
  RLX_TRY(oi_need(c, 2, "B"));
  float eps;
  RLX_TRY(oi_attr_f(c, "epsilon", 1e-5f, &eps));
  rlx_id x = c->in[0], gm, bt;
  const rlx_shape *xs = oi_shape(c, x);
  rlx_dtype t = (rlx_dtype)xs->dtype;
  if (!rlx_dtype_is_float(t)) return oi_bad(c, "input must be floating-point");
  if (xs->rank < 2) return oi_bad(c, "input must have rank >= 2, got %s", rlx_fmt_shape(xs));
  rlx_dim C = xs->dims[1];
  if (!rlx_dim_is_static(C)) return oi_unsupported(c, "a symbolic channel count");
  RLX_TRY(oi_cast(c, c->in[1], t, &gm));
  RLX_TRY(oi_cast(c, c->in[2], t, &bt));
  bool lifted = xs->rank == 2;
  if (lifted) {
    rlx_dim d[3] = {xs->dims[0], C, 1};
    RLX_TRY(oi_reshape_dims(c, x, 3, d, &x));
  }
  rlx_attrs_GroupNorm a = {.num_groups = C, .eps = eps};
  rlx_id in[3] = {x, gm, bt}, y;
  RLX_TRY(oi_emit(c, RLX_OP_GroupNorm, in, 3, &a, &y));
  if (lifted) {
    rlx_dim d[2] = {xs->dims[0], C};
    RLX_TRY(oi_reshape_dims(c, y, 2, d, &y));
  }
  c->out[0] = y;
  return RLX_OK;
}

/* Opset 18: scale and bias per group; 21: per channel, and stash_type (the precision of the
 * normalization; RLX's GroupNorm computes in at least f32 whatever the input dtype). */
static rlx_status map_group_norm(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "X"));
  RLX_TRY(oi_need(c, 1, "scale"));
  RLX_TRY(oi_need(c, 2, "bias"));
  float eps;
  int64_t G;
  RLX_TRY(oi_attr_f(c, "epsilon", 1e-5f, &eps));
  RLX_TRY(oi_attr_i(c, "num_groups", 0, &G));
  rlx_id x = c->in[0], p[2];
  const rlx_shape *xs = oi_shape(c, x);
  if (xs->rank < 3) return oi_bad(c, "input X must have rank >= 3");
  rlx_dim C = xs->dims[1];
  if (!rlx_dim_is_static(C)) return oi_unsupported(c, "a symbolic channel count");
  if (G < 1 || C % G)
    return oi_bad(c, "attribute num_groups (%lld) must divide the channels (%lld)", (long long)G, (long long)C);
  if (c->opset >= 21) {
    int64_t stash;
    RLX_TRY(oi_attr_i(c, "stash_type", 1, &stash));
    if (stash != 1 && stash != 10 && stash != 11 && stash != 16)
      return oi_bad(c, "attribute stash_type is %s; expected a floating-point dtype",
                    oi_onnx_dtype_name((int32_t)stash));
  }
  for (uint32_t k = 0; k < 2; k++) {
    RLX_TRY(oi_cast(c, c->in[k + 1], (rlx_dtype)xs->dtype, &p[k]));
    const rlx_shape *ps = oi_shape(c, p[k]);
    if (c->opset >= 21) {
      if (ps->rank != 1 || ps->dims[0] != C)
        return oi_bad(c, "input %u must be [channels], got %s", k + 1, rlx_fmt_shape(ps));
      continue;
    }
    if (ps->rank != 1 || ps->dims[0] != G)
      return oi_bad(c, "input %u must be [num_groups], got %s", k + 1, rlx_fmt_shape(ps));
    int64_t g1[2] = {G, 1}, ge[2] = {G, C / G}, cc[1] = {C};
    RLX_TRY(oi_reshape(c, p[k], 2, g1, &p[k]));
    rlx_attrs_Expand ea = {.target_shape = {.v = ge, .n = 2}};
    RLX_TRY(oi_emit(c, RLX_OP_Expand, &p[k], 1, &ea, &p[k]));
    RLX_TRY(oi_reshape(c, p[k], 1, cc, &p[k]));
  }
  rlx_attrs_GroupNorm a = {.num_groups = G, .eps = eps};
  rlx_id in[3] = {x, p[0], p[1]};
  return oi_emit(c, RLX_OP_GroupNorm, in, 3, &a, &c->out[0]);
}

/* RMSNormalization (opset 23): X / sqrt(mean(X^2 over axes [axis, rank)) + epsilon) in the
 * stash_type precision (f32 for 16-bit X when stash_type = 1), cast back to X's dtype, then times
 * Scale (broadcast to X; the output takes Scale's dtype). */
static rlx_status map_rms_norm(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "X"));
  RLX_TRY(oi_need(c, 1, "scale"));
  int64_t axis, stash;
  float eps;
  RLX_TRY(oi_attr_i(c, "axis", -1, &axis));
  RLX_TRY(oi_attr_f(c, "epsilon", 1e-5f, &eps));
  RLX_TRY(oi_attr_i(c, "stash_type", 1, &stash));
  rlx_id x = c->in[0];
  const rlx_shape xs = *oi_shape(c, x);
  rlx_dtype t = (rlx_dtype)xs.dtype, st = t;
  if (!rlx_dtype_is_float(t)) return oi_bad(c, "input X must be floating-point");
  if (stash == 1)
    st = (t == RLX_F16 || t == RLX_BF16) ? RLX_F32 : t;
  else if (stash != 10 && stash != 11 && stash != 16)
    return oi_bad(c, "attribute stash_type is %s; expected a floating-point dtype", oi_onnx_dtype_name((int32_t)stash));
  uint32_t a;
  RLX_TRY(oi_axis(c, axis, xs.rank, "attribute axis", &a));
  int64_t axes[RLX_MAX_RANK];
  uint32_t na = xs.rank - a;
  for (uint32_t i = 0; i < na; i++) axes[i] = a + i;
  rlx_id xw, sq, ms, y;
  RLX_TRY(oi_cast(c, x, st, &xw));
  RLX_TRY(oi_bin(c, RLX_BINOP_MUL, xw, xw, &sq));
  RLX_TRY(oi_reduce(c, RLX_REDUCE_MEAN, sq, axes, na, true, &ms));
  RLX_TRY(oi_bin_s(c, RLX_BINOP_ADD, ms, eps, &ms));
  RLX_TRY(oi_unary(c, RLX_ACT_SQRT, ms, &ms));
  RLX_TRY(oi_bin(c, RLX_BINOP_DIV, xw, ms, &y));
  RLX_TRY(oi_cast(c, y, t, &y));
  rlx_dtype vt = (rlx_dtype)oi_in_shape(c, 1)->dtype;
  if (!rlx_dtype_is_float(vt)) return oi_bad(c, "input scale must be floating-point");
  RLX_TRY(oi_cast(c, y, vt, &y));
  return oi_bin(c, RLX_BINOP_MUL, y, c->in[1], &c->out[0]);
}

/* LpNormalization: x / ||x||_p along axis (p = 1 or 2); zero where the norm is zero. */
static rlx_status map_lp_norm(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "input"));
  int64_t axis, p;
  RLX_TRY(oi_attr_i(c, "axis", -1, &axis));
  RLX_TRY(oi_attr_i(c, "p", 2, &p));
  if (p != 1 && p != 2) return oi_bad(c, "attribute p is %lld; only 1 and 2 are defined", (long long)p);
  rlx_id x = c->in[0], n, zero, isz, q;
  const rlx_shape *xs = oi_shape(c, x);
  rlx_dtype t = (rlx_dtype)xs->dtype;
  if (!rlx_dtype_is_float(t)) return oi_bad(c, "input must be floating-point");
  uint32_t a;
  RLX_TRY(oi_axis(c, axis, xs->rank, "attribute axis", &a));
  int64_t ax = a;
  if (p == 1)
    RLX_TRY(oi_unary(c, RLX_ACT_ABS, x, &n));
  else
    RLX_TRY(oi_bin(c, RLX_BINOP_MUL, x, x, &n));
  RLX_TRY(oi_reduce(c, RLX_REDUCE_SUM, n, &ax, 1, true, &n));
  if (p == 2) RLX_TRY(oi_unary(c, RLX_ACT_SQRT, n, &n));
  RLX_TRY(oi_scalar(c, t, 0, &zero));
  RLX_TRY(oi_cmp(c, RLX_CMP_EQ, n, zero, &isz));
  RLX_TRY(oi_bin(c, RLX_BINOP_DIV, x, n, &q));
  return oi_where(c, isz, zero, q, &c->out[0]);
}

static rlx_status map_layer_norm(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "X"));
  RLX_TRY(oi_need(c, 1, "Scale"));
  int64_t axis;
  float eps;
  RLX_TRY(oi_attr_i(c, "axis", -1, &axis));
  RLX_TRY(oi_attr_f(c, "epsilon", 1e-5f, &eps));
  rlx_id x = c->in[0];
  const rlx_shape xs = *oi_shape(c, x);
  rlx_dtype t = (rlx_dtype)xs.dtype;
  if (!rlx_dtype_is_float(t)) return oi_bad(c, "input X must be floating-point");
  uint32_t a;
  RLX_TRY(oi_axis(c, axis, xs.rank, "attribute axis", &a));
  rlx_dim tail[RLX_MAX_RANK];
  int64_t D = 1;
  for (uint32_t i = a; i < xs.rank; i++) {
    if (!rlx_dim_is_static(xs.dims[i]))
      return oi_unsupported(c, "normalizing over symbolic dims %s", rlx_fmt_shape(&xs));
    tail[i - a] = xs.dims[i];
    D *= xs.dims[i];
  }
  uint32_t nt = xs.rank - a;
  /* Scale and B: broadcast to the normalized dims, flattened to [D] */
  rlx_id p[2];
  for (uint32_t k = 0; k < 2; k++) {
    if (!oi_has(c, k + 1)) {
      rlx_dim dd = D;
      RLX_TRY(oi_fill(c, rlx_shape_make(t, 1, &dd), 0.0, &p[k]));
      continue;
    }
    RLX_TRY(oi_cast(c, c->in[k + 1], t, &p[k]));
    const rlx_shape *ps = oi_shape(c, p[k]);
    size_t numel;
    if (rlx_shape_numel(ps, &numel) != RLX_OK || (int64_t)numel != D) {
      int64_t tl[RLX_MAX_RANK];
      for (uint32_t i = 0; i < nt; i++) tl[i] = tail[i];
      rlx_attrs_Expand ea = {.target_shape = {.v = tl, .n = nt}};
      RLX_TRY(oi_emit(c, RLX_OP_Expand, &p[k], 1, &ea, &p[k]));
    }
    RLX_TRY(oi_reshape(c, p[k], 1, &D, &p[k]));
  }
  rlx_id xx = x;
  rlx_dim flat[RLX_MAX_RANK];
  for (uint32_t i = 0; i < a; i++) flat[i] = xs.dims[i];
  flat[a] = D;
  if (nt != 1) RLX_TRY(oi_reshape_dims(c, x, a + 1, flat, &xx));
  rlx_attrs_LayerNorm la = {.axis = -1, .eps = eps};
  rlx_id in[3] = {xx, p[0], p[1]}, y;
  RLX_TRY(oi_emit(c, RLX_OP_LayerNorm, in, 3, &la, &y));
  if (nt != 1) RLX_TRY(oi_reshape_dims(c, y, xs.rank, xs.dims, &y));
  c->out[0] = y;
  /* optional Mean and InvStdDev (kept dims) */
  bool want_mean = c->n_out > 1 && c->out_used[1], want_inv = c->n_out > 2 && c->out_used[2];
  if (want_mean || want_inv) {
    int64_t axes[RLX_MAX_RANK];
    for (uint32_t i = 0; i < nt; i++) axes[i] = a + i;
    rlx_id mean, d, var;
    RLX_TRY(oi_reduce(c, RLX_REDUCE_MEAN, x, axes, nt, true, &mean));
    if (want_mean) c->out[1] = mean;
    if (want_inv) {
      RLX_TRY(oi_bin(c, RLX_BINOP_SUB, x, mean, &d));
      RLX_TRY(oi_bin(c, RLX_BINOP_MUL, d, d, &d));
      RLX_TRY(oi_reduce(c, RLX_REDUCE_MEAN, d, axes, nt, true, &var));
      RLX_TRY(oi_bin_s(c, RLX_BINOP_ADD, var, eps, &var));
      RLX_TRY(oi_unary(c, RLX_ACT_RSQRT, var, &c->out[2]));
    }
  }
  return RLX_OK;
}

static rlx_status map_lrn(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "X"));
  int64_t size;
  float alpha, beta, bias;
  RLX_TRY(oi_attr_i(c, "size", 0, &size));
  RLX_TRY(oi_attr_f(c, "alpha", 1e-4f, &alpha));
  RLX_TRY(oi_attr_f(c, "beta", 0.75f, &beta));
  RLX_TRY(oi_attr_f(c, "bias", 1.0f, &bias));
  if (size < 1 || size > 65535) return oi_bad(c, "attribute size is %lld; it must be in [1, 65535]", (long long)size);
  rlx_id x = c->in[0], sq, y;
  const rlx_shape xs = *oi_shape(c, x);
  if (xs.rank < 3) return oi_bad(c, "input X must have rank >= 3");
  RLX_TRY(oi_need_static(c, &xs, "input X"));
  int64_t rest = 1;
  for (uint32_t i = 2; i < xs.rank; i++) rest *= xs.dims[i];
  /* sum of squares over a channel window = mean pool over [N, 1, C, rest] times size */
  RLX_TRY(oi_bin(c, RLX_BINOP_MUL, x, x, &sq));
  int64_t d4[4] = {xs.dims[0], 1, xs.dims[1], rest};
  RLX_TRY(oi_reshape(c, sq, 4, d4, &sq));
  int64_t k[2] = {size, 1}, s[2] = {1, 1}, pad[4] = {(size - 1) / 2, 0, size - 1 - (size - 1) / 2, 0};
  rlx_attrs_Pool pa = {.kind = RLX_REDUCE_MEAN,
                       .kernel_size = {.v = k, .n = 2},
                       .stride = {.v = s, .n = 2},
                       .padding = {.v = pad, .n = 4}};
  RLX_TRY(oi_emit(c, RLX_OP_Pool, &sq, 1, &pa, &sq));
  RLX_TRY(oi_reshape(c, sq, xs.rank, xs.dims, &sq));
  /* (bias + alpha/size * sum)^beta with sum = size * mean */
  RLX_TRY(oi_bin_s(c, RLX_BINOP_MUL, sq, alpha, &y));
  RLX_TRY(oi_bin_s(c, RLX_BINOP_ADD, y, bias, &y));
  RLX_TRY(oi_bin_s(c, RLX_BINOP_POW, y, beta, &y));
  return oi_bin(c, RLX_BINOP_DIV, x, y, &c->out[0]);
}

static rlx_status map_mvn(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "X"));
  const int64_t *av;
  size_t an;
  bool present;
  RLX_TRY(oi_attr_ints(c, "axes", &av, &an, &present));
  static const int64_t def[3] = {0, 2, 3};
  if (!present) av = def, an = 3;
  rlx_id x = c->in[0], m, m2, ex2, var, sd, d;
  if (an > RLX_MAX_RANK) return oi_bad(c, "attribute axes has %zu entries", an);
  RLX_TRY(oi_reduce(c, RLX_REDUCE_MEAN, x, av, (uint32_t)an, true, &m));
  RLX_TRY(oi_bin(c, RLX_BINOP_MUL, m, m, &m2));
  RLX_TRY(oi_bin(c, RLX_BINOP_MUL, x, x, &ex2));
  RLX_TRY(oi_reduce(c, RLX_REDUCE_MEAN, ex2, av, (uint32_t)an, true, &ex2));
  RLX_TRY(oi_bin(c, RLX_BINOP_SUB, ex2, m2, &var));
  RLX_TRY(oi_unary(c, RLX_ACT_SQRT, var, &sd));
  RLX_TRY(oi_bin_s(c, RLX_BINOP_ADD, sd, 1e-9, &sd));
  RLX_TRY(oi_bin(c, RLX_BINOP_SUB, x, m, &d));
  return oi_bin(c, RLX_BINOP_DIV, d, sd, &c->out[0]);
}

/* ======================================================================================
 * Softmax family
 * ====================================================================================== */

/* op over one axis of x: 0 softmax, 1 log-softmax, 2 hardmax */
static rlx_status softmax_axis(oi_node *c, int kind, rlx_id x, uint32_t axis, rlx_id *out) {
  const rlx_shape *xs = oi_shape(c, x);
  int64_t ax = axis;
  if (kind == 0) {
    rlx_attrs_Softmax a = {.axis = ax};
    return oi_emit(c, RLX_OP_Softmax, &x, 1, &a, out);
  }
  if (kind == 1) {
    rlx_id mx, z, e, s;
    RLX_TRY(oi_reduce(c, RLX_REDUCE_MAX, x, &ax, 1, true, &mx));
    RLX_TRY(oi_bin(c, RLX_BINOP_SUB, x, mx, &z));
    RLX_TRY(oi_unary(c, RLX_ACT_EXP, z, &e));
    RLX_TRY(oi_reduce(c, RLX_REDUCE_SUM, e, &ax, 1, true, &s));
    RLX_TRY(oi_unary(c, RLX_ACT_LOG, s, &s));
    return oi_bin(c, RLX_BINOP_SUB, z, s, out);
  }
  rlx_dim n = xs->dims[axis];
  if (!rlx_dim_is_static(n)) return oi_unsupported(c, "Hardmax over a symbolic axis");
  rlx_attrs_ArgMax am = {.axis = ax, .keep_dim = true};
  rlx_id idx, iota, eq;
  rlx_shape is = rlx_shape_make(RLX_I64, 1, &n);
  int64_t *v = oi_scratch(c, (size_t)n * sizeof *v);
  if (!v) return oi_nomem(c);
  for (int64_t i = 0; i < n; i++) v[i] = i;
  RLX_TRY(rlx_graph_add(c->g, RLX_OP_ArgMax, &x, 1, &am, NULL, NULL, &idx));
  RLX_TRY(oi_const(c, is, v, (size_t)n * 8, &iota));
  RLX_TRY(oi_bcast_axis(c, iota, xs->rank, axis, &iota));
  RLX_TRY(oi_cast(c, idx, RLX_I64, &idx));
  RLX_TRY(oi_cmp(c, RLX_CMP_EQ, idx, iota, &eq));
  return oi_cast(c, eq, (rlx_dtype)xs->dtype, out);
}

static rlx_status map_softmax(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "input"));
  const char *op = c->np->op_type;
  int kind = strcmp(op, "Softmax") == 0 ? 0 : strcmp(op, "LogSoftmax") == 0 ? 1 : 2;
  rlx_id x = c->in[0];
  const rlx_shape xs = *oi_shape(c, x);
  if (!rlx_dtype_is_float((rlx_dtype)xs.dtype)) return oi_bad(c, "input must be floating-point");
  if (xs.rank == 0) return oi_bad(c, "input must have rank >= 1");
  int64_t axis;
  uint32_t a;
  RLX_TRY(oi_attr_i(c, "axis", c->opset >= 13 ? -1 : 1, &axis));
  RLX_TRY(oi_axis(c, axis, xs.rank, "attribute axis", &a));
  if (c->opset >= 13 || a == xs.rank - 1u)
    return softmax_axis(c, kind, x, c->opset >= 13 ? a : xs.rank - 1u, &c->out[0]);
  /* opsets < 13: the input is viewed as [prod(dims[:axis]), prod(dims[axis:])] */
  RLX_TRY(oi_need_static(c, &xs, "input"));
  int64_t rows = 1, cols = 1;
  for (uint32_t i = 0; i < xs.rank; i++) *(i < a ? &rows : &cols) *= xs.dims[i];
  int64_t d2[2] = {rows, cols};
  rlx_id y;
  RLX_TRY(oi_reshape(c, x, 2, d2, &x));
  RLX_TRY(softmax_axis(c, kind, x, 1, &y));
  return oi_reshape(c, y, xs.rank, xs.dims, &c->out[0]);
}

const oi_op_entry oi_ops_nn[] = {
    {"Conv", 1, OI_MAX_OPSET, map_conv},
    {"ConvTranspose", 1, OI_MAX_OPSET, map_conv_transpose},
    {"MaxPool", 1, OI_MAX_OPSET, map_pool},
    {"AveragePool", 1, OI_MAX_OPSET, map_pool},
    {"LpPool", 1, OI_MAX_OPSET, map_pool},
    {"Col2Im", 18, OI_MAX_OPSET, map_col2im},
    {"DeformConv", 19, OI_MAX_OPSET, map_deform_conv},
    {"GlobalAveragePool", 1, OI_MAX_OPSET, map_global_pool},
    {"GlobalMaxPool", 1, OI_MAX_OPSET, map_global_pool},
    {"GlobalLpPool", 2, OI_MAX_OPSET, map_global_pool},
    {"BatchNormalization", 1, OI_MAX_OPSET, map_batch_norm},
    {"InstanceNormalization", 1, OI_MAX_OPSET, map_instance_norm},
    {"GroupNormalization", 18, OI_MAX_OPSET, map_group_norm},
    {"LayerNormalization", 17, OI_MAX_OPSET, map_layer_norm},
    {"RMSNormalization", 23, OI_MAX_OPSET, map_rms_norm},
    {"LpNormalization", 1, OI_MAX_OPSET, map_lp_norm},
    {"LRN", 1, OI_MAX_OPSET, map_lrn},
    {"MeanVarianceNormalization", 9, OI_MAX_OPSET, map_mvn},
    {"Softmax", 1, OI_MAX_OPSET, map_softmax},
    {"LogSoftmax", 1, OI_MAX_OPSET, map_softmax},
    {"Hardmax", 1, OI_MAX_OPSET, map_softmax},
};
const uint32_t oi_ops_nn_len = sizeof oi_ops_nn / sizeof oi_ops_nn[0];
