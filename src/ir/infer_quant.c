/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Shape rules: quantization ops (spec ir-special §1.3, §1.4). */
#include "infer_special.h"

/* ---- Quantize / Dequantize ---- */

/* scales: 1 (per tensor) or dim(axis) finite positive values; zero_points: none, 1 or one per
 * scale, each an i8 value. */
static rlx_status check_qparams(const rlx_shape *x, int64_t axis, const rlx_flist *scales, const rlx_ilist *zps) {
  if (!scales->n) return rlx_shape_error("attribute scales: needs 1 (per-tensor) or dim(axis) entries, got none");
  for (uint32_t i = 0; i < scales->n; i++)
    if (!sp_finite(scales->v[i]) || !(scales->v[i] > 0))
      return rlx_shape_error("attribute scales: entry %u is %g; scales must be finite and positive", i,
                             (double)scales->v[i]);
  if (scales->n > 1) {
    uint32_t ax;
    if (!rlx_norm_axis(axis, x->rank, &ax))
      return rlx_shape_error("attribute axis: %lld is out of range for operand 0 of shape %s", (long long)axis,
                             rlx_fmt_shape(x));
    if (sp_conflict(x->dims[ax], (rlx_dim)scales->n))
      return rlx_shape_error("attribute scales: has %u entries but operand 0 %s has %s channels along "
                             "axis %u (use 1 scale or one per channel)",
                             scales->n, rlx_fmt_shape(x), sp_dim(x->dims[ax]), ax);
  }
  if (zps->n != 0 && zps->n != 1 && zps->n != scales->n)
    return rlx_shape_error("attribute zero_points: has %u entries; expected none, 1 or %u (one per scale)", zps->n,
                           scales->n);
  for (uint32_t i = 0; i < zps->n; i++)
    if (zps->v[i] < -128 || zps->v[i] > 127)
      return rlx_shape_error("attribute zero_points: entry %u is %lld; an i8 zero point must be in -128..127", i,
                             (long long)zps->v[i]);
  return RLX_OK;
}

rlx_status rlx_infer_Quantize(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_Quantize *a = &c->a->Quantize;
  RLX_TRY(sp_arity(c, 1, "x"));
  RLX_TRY(sp_float(c, 0, "x"));
  RLX_TRY(check_qparams(c->in[0], a->axis, &a->scales, &a->zero_points));
  *out = *c->in[0];
  out->dtype = RLX_I8;
  return RLX_OK;
}

rlx_status rlx_infer_Dequantize(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_Dequantize *a = &c->a->Dequantize;
  RLX_TRY(sp_arity(c, 1, "q"));
  RLX_TRY(sp_dtype(c, 0, "q", RLX_I8));
  RLX_TRY(check_qparams(c->in[0], a->axis, &a->scales, &a->zero_points));
  *out = *c->in[0];
  out->dtype = RLX_F32;
  return RLX_OK;
}

/* ---- FakeQuantize family ---- */

static rlx_status check_bits(int64_t bits) {
  if (bits != 8 && bits != 4 && bits != 2)
    return rlx_shape_error("attribute bits: %lld is not supported; use 8, 4 or 2", (long long)bits);
  return RLX_OK;
}

/* x: float, rank >= 1, `axis` valid; *chan = dim(axis). */
static rlx_status check_fq_x(const rlx_infer_ctx *c, int64_t axis, rlx_dim *chan) {
  RLX_TRY(sp_float(c, 0, "x"));
  uint32_t ax;
  if (!rlx_norm_axis(axis, c->in[0]->rank, &ax))
    return rlx_shape_error("attribute axis: %lld is out of range for operand 0 (x) of shape %s", (long long)axis,
                           rlx_fmt_shape(c->in[0]));
  *chan = c->in[0]->dims[ax];
  return RLX_OK;
}

/* A per-channel scale/state operand: float, 1 element or dim(axis) elements. */
static rlx_status check_chan_operand(const rlx_infer_ctx *c, uint32_t i, const char *role, rlx_dim chan) {
  RLX_TRY(sp_float(c, i, role));
  int64_t n = 0;
  RLX_TRY(sp_numel(c->in[i], &n));
  if (n >= 0 && n != 1 && sp_conflict(n, chan))
    return rlx_shape_error("operand %u (%s) has shape %s; expected 1 element or one per channel (%s)", i, role,
                           rlx_fmt_shape(c->in[i]), sp_dim(chan));
  return RLX_OK;
}

rlx_status rlx_infer_FakeQuantize(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_FakeQuantize *a = &c->a->FakeQuantize;
  RLX_TRY(check_bits(a->bits));
  if (a->scale_mode < 0 || a->scale_mode >= RLX_SCALE_MODE_COUNT)
    return rlx_shape_error("attribute scale_mode: %d is not a ScaleMode", a->scale_mode);
  if (a->ste < 0 || a->ste >= RLX_STE_COUNT) return rlx_shape_error("attribute ste: %d is not a SteKind", a->ste);
  bool stateful = a->scale_mode != RLX_SCALE_MODE_PER_BATCH;
  RLX_TRY(sp_arity(c, stateful ? 2 : 1, stateful ? "x, state for scale_mode EMA/Fixed" : "x for scale_mode PerBatch"));
  rlx_dim chan;
  RLX_TRY(check_fq_x(c, a->axis, &chan));
  if (stateful) RLX_TRY(check_chan_operand(c, 1, "state", chan));
  if (a->scale_mode == RLX_SCALE_MODE_EMA && !(a->decay >= 0.0f && a->decay <= 1.0f))
    return rlx_shape_error("attribute decay: %g must be in [0, 1]", (double)a->decay);
  *out = *c->in[0];
  return RLX_OK;
}

rlx_status rlx_infer_FakeQuantizeLSQ(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_FakeQuantizeLSQ *a = &c->a->FakeQuantizeLSQ;
  RLX_TRY(sp_arity(c, 2, "x, scale"));
  RLX_TRY(check_bits(a->bits));
  rlx_dim chan;
  RLX_TRY(check_fq_x(c, a->axis, &chan));
  RLX_TRY(check_chan_operand(c, 1, "scale", chan));
  *out = *c->in[0];
  return RLX_OK;
}

static rlx_status lsq_backward(const rlx_infer_ctx *c, int64_t bits, int64_t axis) {
  RLX_TRY(sp_arity(c, 3, "x, scale, dy"));
  RLX_TRY(check_bits(bits));
  rlx_dim chan;
  RLX_TRY(check_fq_x(c, axis, &chan));
  RLX_TRY(check_chan_operand(c, 1, "scale", chan));
  return sp_shape_eq(c, 2, "dy", c->in[0], "the upstream gradient has x's shape");
}

rlx_status rlx_infer_FakeQuantizeLSQBackwardX(const rlx_infer_ctx *c, rlx_shape *out) {
  RLX_TRY(lsq_backward(c, c->a->FakeQuantizeLSQBackwardX.bits, c->a->FakeQuantizeLSQBackwardX.axis));
  *out = *c->in[0];
  return RLX_OK;
}

rlx_status rlx_infer_FakeQuantizeLSQBackwardScale(const rlx_infer_ctx *c, rlx_shape *out) {
  RLX_TRY(lsq_backward(c, c->a->FakeQuantizeLSQBackwardScale.bits, c->a->FakeQuantizeLSQBackwardScale.axis));
  *out = *c->in[1];
  return RLX_OK;
}

/* ---- integer matmul / conv ---- */

static rlx_status check_zp(const char *name, int64_t v) {
  if (v < -128 || v > 127)
    return rlx_shape_error("attribute %s: %lld is not an i8 zero point (-128..127)", name, (long long)v);
  return RLX_OK;
}

static rlx_status check_requant(int64_t x_zp, int64_t w_zp, int64_t out_zp, float mult) {
  RLX_TRY(check_zp("x_zp", x_zp));
  RLX_TRY(check_zp("w_zp", w_zp));
  RLX_TRY(check_zp("out_zp", out_zp));
  if (!sp_finite(mult)) return rlx_shape_error("attribute mult: %g must be finite", (double)mult);
  return RLX_OK;
}

rlx_status rlx_infer_QMatMul(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_QMatMul *a = &c->a->QMatMul;
  RLX_TRY(sp_arity(c, 3, "x, w, bias"));
  RLX_TRY(check_requant(a->x_zp, a->w_zp, a->out_zp, a->mult));
  RLX_TRY(sp_dtype(c, 0, "x", RLX_I8));
  RLX_TRY(sp_dtype(c, 1, "w", RLX_I8));
  RLX_TRY(sp_dtype(c, 2, "bias", RLX_I32));
  RLX_TRY(sp_rank(c, 0, "x", 2));
  RLX_TRY(sp_rank(c, 1, "w", 2));
  RLX_TRY(sp_rank(c, 2, "bias", 1));
  const rlx_shape *x = c->in[0], *w = c->in[1];
  RLX_TRY(sp_dim_eq(c, 1, "w", 0, x->dims[1], "K = x's axis 1"));
  RLX_TRY(sp_dim_eq(c, 2, "bias", 0, w->dims[1], "N = w's axis 1"));
  rlx_dim d[2] = {x->dims[0], sp_pick(w->dims[1], c->in[2]->dims[0])};
  *out = sp_make(RLX_I8, 2, d);
  return RLX_OK;
}

/* One spatial axis of a convolution: out = floor((in + pb + pe - d(k-1) - 1) / s) + 1. */
static rlx_status conv_axis(rlx_dim in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe, const char *axis_name,
                            rlx_dim *out) {
  if (in < 0 || k < 0) {
    *out = SP_UNKNOWN;
    return RLX_OK;
  }
  int64_t span, padded;
  if (!ck_mul(d, k - 1, &span) || !ck_add(span, 1, &span) || !ck_add(in, pb, &padded) || !ck_add(padded, pe, &padded))
    return sp_overflow("convolution geometry");
  if (padded < span)
    return rlx_shape_error("operand 0 (x): padded %s %lld is smaller than the dilated kernel extent %lld", axis_name,
                           (long long)padded, (long long)span);
  *out = (padded - span) / s + 1;
  return RLX_OK;
}

/* A 2-entry geometry list: empty = `def`; entries >= lo. */
static rlx_status geom2(const rlx_ilist *l, const char *name, int64_t def, int64_t lo, int64_t v[2]) {
  if (l->n == 0) {
    v[0] = v[1] = def;
    return RLX_OK;
  }
  if (l->n != 2) return rlx_shape_error("attribute %s: has %u entries; expected 2 (h, w) or none", name, l->n);
  for (int i = 0; i < 2; i++) {
    if (l->v[i] < lo)
      return rlx_shape_error("attribute %s: entry %d is %lld; must be >= %lld", name, i, (long long)l->v[i],
                             (long long)lo);
    v[i] = l->v[i];
  }
  return RLX_OK;
}

rlx_status rlx_infer_QConv2d(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_QConv2d *a = &c->a->QConv2d;
  RLX_TRY(sp_arity(c, 3, "x, w, bias"));
  RLX_TRY(check_requant(a->x_zp, a->w_zp, a->out_zp, a->mult));
  RLX_TRY(sp_dtype(c, 0, "x", RLX_I8));
  RLX_TRY(sp_dtype(c, 1, "w", RLX_I8));
  RLX_TRY(sp_dtype(c, 2, "bias", RLX_I32));
  RLX_TRY(sp_rank(c, 0, "x", 4));
  RLX_TRY(sp_rank(c, 1, "w", 4));
  RLX_TRY(sp_rank(c, 2, "bias", 1));
  const rlx_shape *x = c->in[0], *w = c->in[1];
  int64_t g = a->groups;
  if (g < 1) return rlx_shape_error("attribute groups: %lld must be >= 1", (long long)g);
  rlx_dim cin = x->dims[1], cout = w->dims[0];
  if (sp_static(cin) && cin % g)
    return rlx_shape_error("operand 0 (x) has %lld channels, not divisible by attribute groups (%lld)", (long long)cin,
                           (long long)g);
  if (sp_static(cout) && cout % g)
    return rlx_shape_error("operand 1 (w) has %lld output channels, not divisible by attribute groups (%lld)",
                           (long long)cout, (long long)g);
  if (sp_static(cin)) RLX_TRY(sp_dim_eq(c, 1, "w", 1, cin / g, "input channels per group = C_in / groups"));
  RLX_TRY(sp_dim_eq(c, 2, "bias", 0, cout, "one bias per output channel"));
  int64_t k[2] = {w->dims[2], w->dims[3]}, s[2] = {1, 1}, d[2] = {1, 1}, p[4] = {0, 0, 0, 0};
  if (a->kernel_size.n) {
    int64_t ks[2];
    RLX_TRY(geom2(&a->kernel_size, "kernel_size", 1, 1, ks));
    for (int i = 0; i < 2; i++) {
      if (sp_conflict(k[i], ks[i]))
        return rlx_shape_error("attribute kernel_size: [%lld, %lld] disagrees with operand 1 (w) %s", (long long)ks[0],
                               (long long)ks[1], rlx_fmt_shape(w));
      k[i] = ks[i];
    }
  }
  for (int i = 0; i < 2; i++)
    if (k[i] == 0) return rlx_shape_error("operand 1 (w) has shape %s; the kernel is empty", rlx_fmt_shape(w));
  RLX_TRY(geom2(&a->stride, "stride", 1, 1, s));
  RLX_TRY(geom2(&a->dilation, "dilation", 1, 1, d));
  if (a->padding.n == 2 || a->padding.n == 4) {
    for (uint32_t i = 0; i < a->padding.n; i++)
      if (a->padding.v[i] < 0)
        return rlx_shape_error("attribute padding: entry %u is %lld; must be >= 0", i, (long long)a->padding.v[i]);
    if (a->padding.n == 2) {
      p[0] = p[2] = a->padding.v[0];
      p[1] = p[3] = a->padding.v[1];
    } else
      memcpy(p, a->padding.v, sizeof p);
  } else if (a->padding.n) {
    return rlx_shape_error("attribute padding: has %u entries; expected none, 2 (h, w) or 4 "
                           "(begin_h, begin_w, end_h, end_w)",
                           a->padding.n);
  }
  rlx_dim o[4] = {x->dims[0], sp_pick(cout, c->in[2]->dims[0]), 0, 0};
  RLX_TRY(conv_axis(x->dims[2], k[0], s[0], d[0], p[0], p[2], "height", &o[2]));
  RLX_TRY(conv_axis(x->dims[3], k[1], s[1], d[1], p[1], p[3], "width", &o[3]));
  *out = sp_make(RLX_I8, 4, o);
  return sp_resolve(c, out);
}

/* ---- scaled low-precision formats (ir-special §1.3) ---- */

static rlx_status check_format(const char *name, int32_t fmt, bool custom_ok, int64_t e, int64_t m, int64_t bias) {
  if (fmt < 0 || fmt >= RLX_SCALED_FORMAT_COUNT)
    return rlx_shape_error("attribute %s: %d is not a ScaledFormat", name, fmt);
  if (fmt != RLX_SCALED_FORMAT_CUSTOM) return RLX_OK;
  if (!custom_ok)
    return rlx_shape_error("attribute %s: Custom formats need custom_exp/custom_mant/custom_bias, which this "
                           "op does not carry; decode with ScaledDequantize first",
                           name);
  if (e < 1 || e > 7) return rlx_shape_error("attribute custom_exp: %lld must be in 1..7", (long long)e);
  if (m < 0 || m > 7 - e)
    return rlx_shape_error("attribute custom_mant: %lld must be in 0..%lld (1 + custom_exp + custom_mant <= 8)",
                           (long long)m, (long long)(7 - e));
  if (bias < -128 || bias > 127)
    return rlx_shape_error("attribute custom_bias: %lld must fit in a signed byte", (long long)bias);
  return RLX_OK;
}

static rlx_status check_layout(int32_t layout, int64_t block) {
  if (layout < 0 || layout >= RLX_SCALE_LAYOUT_COUNT)
    return rlx_shape_error("attribute layout: %d is not a ScaleLayout", layout);
  if (layout != RLX_SCALE_LAYOUT_PER_TENSOR && block < 1)
    return rlx_shape_error("attribute block: %lld must be >= 1 for block scale layouts", (long long)block);
  return RLX_OK;
}

/* Scale operand `si` for data operand `di` viewed as [rows, K] (K = last axis):
 * PerTensor: one f32; block layouts: u8 with last axis ceil(K/block) and rows * that many elements. */
static rlx_status check_scale(const rlx_infer_ctx *c, uint32_t si, const char *role, uint32_t di, int32_t layout,
                              int64_t block) {
  const rlx_shape *s = c->in[si], *x = c->in[di];
  int64_t n = 0;
  RLX_TRY(sp_numel(s, &n));
  if (layout == RLX_SCALE_LAYOUT_PER_TENSOR) {
    RLX_TRY(sp_dtype(c, si, role, RLX_F32));
    if (n != 1)
      return rlx_shape_error("operand %u (%s) has shape %s; a PerTensor scale holds exactly 1 element", si, role,
                             rlx_fmt_shape(s));
    return RLX_OK;
  }
  RLX_TRY(sp_dtype(c, si, role, RLX_U8));
  RLX_TRY(sp_min_rank(c, si, role, 1));
  if (!x->rank) return rlx_shape_error("operand %u is a scalar; block scale layouts need a last (K) axis", di);
  rlx_dim k = x->dims[x->rank - 1], nblk = sp_static(k) ? ck_ceil_div(k, block) : SP_UNKNOWN;
  RLX_TRY(sp_dim_eq(c, si, role, s->rank - 1, nblk, "ceil(K / block) scale blocks per row"));
  rlx_shape rows = *x;
  rows.rank--;
  int64_t nrows = 0, want = 0;
  RLX_TRY(sp_numel(&rows, &nrows));
  if (nrows >= 0 && sp_static(nblk) && n >= 0) {
    RLX_TRY(ck_mul_or(nrows, nblk, &want, "the scale element count rows * ceil(K / block)"));
    if (n != want)
      return rlx_shape_error("operand %u (%s) has shape %s; expected %lld rows x %lld blocks of scales for "
                             "operand %u %s",
                             si, role, rlx_fmt_shape(s), (long long)nrows, (long long)nblk, di, rlx_fmt_shape(x));
  }
  return RLX_OK;
}

#define SCALED_ATTRS(A) (A)->format, (A)->layout, (A)->block, (A)->custom_exp, (A)->custom_mant, (A)->custom_bias
static rlx_status check_scaled_attrs(int32_t fmt, int32_t layout, int64_t block, int64_t e, int64_t m, int64_t bias) {
  RLX_TRY(check_format("format", fmt, true, e, m, bias));
  return check_layout(layout, block);
}

rlx_status rlx_infer_ScaledQuantScale(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_ScaledQuantScale *a = &c->a->ScaledQuantScale;
  RLX_TRY(sp_arity(c, 1, "x"));
  RLX_TRY(check_scaled_attrs(SCALED_ATTRS(a)));
  RLX_TRY(sp_float(c, 0, "x"));
  if (a->layout == RLX_SCALE_LAYOUT_PER_TENSOR) {
    rlx_dim one = 1;
    *out = sp_make(RLX_F32, 1, &one);
    return RLX_OK;
  }
  RLX_TRY(sp_min_rank(c, 0, "x", 1));
  *out = *c->in[0];
  out->dtype = RLX_U8;
  rlx_dim k = out->dims[out->rank - 1];
  out->dims[out->rank - 1] = sp_static(k) ? ck_ceil_div(k, a->block) : SP_UNKNOWN;
  return sp_resolve(c, out);
}

rlx_status rlx_infer_ScaledQuantize(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_ScaledQuantize *a = &c->a->ScaledQuantize;
  RLX_TRY(sp_arity(c, 2, "x, scale"));
  RLX_TRY(check_scaled_attrs(SCALED_ATTRS(a)));
  RLX_TRY(sp_float(c, 0, "x"));
  RLX_TRY(check_scale(c, 1, "scale", 0, a->layout, a->block));
  *out = *c->in[0];
  out->dtype = RLX_U8;
  return RLX_OK;
}

rlx_status rlx_infer_ScaledDequantize(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_ScaledDequantize *a = &c->a->ScaledDequantize;
  RLX_TRY(sp_arity(c, 2, "codes, scale"));
  RLX_TRY(check_scaled_attrs(SCALED_ATTRS(a)));
  RLX_TRY(sp_dtype(c, 0, "codes", RLX_U8));
  RLX_TRY(check_scale(c, 1, "scale", 0, a->layout, a->block));
  *out = *c->in[0];
  out->dtype = RLX_F32;
  return RLX_OK;
}

rlx_status rlx_infer_ScaledMatMul(const rlx_infer_ctx *c, rlx_shape *out) {
  const rlx_attrs_ScaledMatMul *a = &c->a->ScaledMatMul;
  RLX_TRY(check_format("lhs_format", a->lhs_format, false, 0, 0, 0));
  RLX_TRY(check_format("rhs_format", a->rhs_format, false, 0, 0, 0));
  RLX_TRY(check_layout(a->layout, a->block));
  RLX_TRY(
      sp_arity(c, a->has_bias ? 5 : 4,
               a->has_bias ? "lhs, rhs, lhs_scale, rhs_scale, bias for has_bias" : "lhs, rhs, lhs_scale, rhs_scale"));
  RLX_TRY(sp_dtype(c, 0, "lhs", RLX_U8));
  RLX_TRY(sp_dtype(c, 1, "rhs", RLX_U8));
  RLX_TRY(sp_rank(c, 0, "lhs", 2));
  RLX_TRY(sp_rank(c, 1, "rhs", 2));
  const rlx_shape *l = c->in[0], *r = c->in[1];
  RLX_TRY(sp_dim_eq(c, 1, "rhs", 1, l->dims[1], "rhs is [N, K] with lhs's K"));
  RLX_TRY(check_scale(c, 2, "lhs_scale", 0, a->layout, a->block));
  RLX_TRY(check_scale(c, 3, "rhs_scale", 1, a->layout, a->block));
  rlx_dim n = r->dims[0];
  if (a->has_bias) {
    RLX_TRY(sp_dtype(c, 4, "bias", RLX_F32));
    RLX_TRY(sp_rank(c, 4, "bias", 1));
    RLX_TRY(sp_dim_eq(c, 4, "bias", 0, n, "one bias per output column N"));
    n = sp_pick(n, c->in[4]->dims[0]);
  }
  rlx_dim d[2] = {l->dims[0], n};
  *out = sp_make(RLX_F32, 2, d);
  return RLX_OK;
}
